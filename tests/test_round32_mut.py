"""Round 32, helper mut: tests that kill mutants of last session's code which its tests let
survive (a flipped comparison, a dropped sign or tie-break), each a change a user could see.

Numbers (:mod:`tiersim.numbers`): a negative misspelling keeps its sign in the number to write
(``-0x10``: write -16), a sign is no digit of a number too long to read, YAML's ``.inf`` is
read as infinity (and refused by the flag's range, in one line), and a refused spelling of
exactly :data:`~tiersim.numbers.LONGEST_SHOWN` characters, or a number of exactly
:data:`~tiersim.numbers.MAX_INT_BITS` bits, is still shown whole.

Savings (:mod:`tiersim.results`): fleets of one cost go to the fewer tiers before the fewer
replicas, then to the more accurate; a fleet of unknown rate comes last; only provisioned cost
compares per hour; " per hour" follows a share only; a share within float noise of 0 is 0 but
a real loss stays one; the drain words print 10,000 USD/hour and a 3-hour drain as whole
numbers with separators and two close drains at the digits that tell them apart.

MLA keys (:mod:`tiersim.perf.profile`): an MLA model whose queries have no low-rank
projection (``q_lora_rank`` 0) is keyed ``q_lora`` = its hidden size, so it reads a table
keyed so.

Interrupted commands (:mod:`tiersim.cli.run`): the line after an interrupted rerun names the
files it removed (a rerun without a report removes the earlier ``report.html``) as well as
those it wrote; the console's saving reads "per hour" where it is one, as the plan's does.

Static split (:func:`tiersim.routing.metrics.static_split_saving`): a uniform fleet whose rate
is not known leaves the share per hour unknown (no TypeError), the share over the trace kept;
the attributed (per-request) savings of a routing score give the split's share over the trace.

Response cache keys (:mod:`tiersim.response_cache`): no format's time or token column, nor
BurstGPT's ``Total tokens``, is a prompt key; a long column name holding a list is cut in the
error line; a request without a prompt (``""``: none read) is never a hit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import TINY
from test_round19 import error_line, run_cli

from tiersim.numbers import LONGEST_SHOWN, MAX_INT_BITS, misspelt, read_number, shown
from tiersim.results import (
    OVER_THE_TRACE,
    PER_HOUR,
    basis_words,
    drain_words,
    paid_order,
    paid_share,
    saving_basis,
    without_noise,
)

ANALYTIC = ("analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3")
"""``tiersim analytic`` up to its ``--dc`` flag, which takes a number."""


# ---------------------------------------------------------------- tiersim.numbers


@pytest.mark.parametrize(("written", "why"), [
    ("-1:30", "-1:30 is base 60 to YAML 1.1 (-90); write -90"),
    ("-0x10", "-0x10 is hexadecimal; write -16"),
    ("-010", "-010 has a leading zero, which YAML 1.1 reads as octal (-8); write -10"),
])
def test_a_negative_misspelling_says_the_negative_number_to_write(capsys, written, why):
    """The sign is kept in the number to write (a mutant that drops it says 'write 16')."""
    assert error_line(*run_cli(capsys, *ANALYTIC, f"--dc={written}")) == (
        f"Error: --dc: {why}; see tiersim analytic --help")


def test_the_sign_is_no_digit_of_a_number_too_long_to_read(capsys):
    """'-' and 5,000 nines are 5,000 digits, as 5,000 nines are."""
    assert error_line(*run_cli(capsys, "plan", TINY, f"--max-replicas=-{'9' * 5000}")) == (
        "Error: --max-replicas: a whole number of 5,000 digits is beyond any setting; see "
        "tiersim plan --help")


@pytest.mark.parametrize(("written", "value"), [(".inf", float("inf")), ("-.inf", float("-inf")),
                                                ("+.INF", float("inf"))])
def test_yaml_infinity_is_read_as_infinity(written, value):
    assert read_number(written) == value


def test_yaml_infinity_on_a_flag_is_refused_by_its_range_in_one_line(capsys):
    assert error_line(*run_cli(capsys, *ANALYTIC, "--dc", ".inf")) == (
        "Error: tiersim analytic: --dc: must be from 0 to 1e12 (got .inf)")  # as typed (round 49)


def test_a_refused_spelling_of_the_longest_shown_length_is_shown_whole():
    """:data:`LONGEST_SHOWN` characters are repeated whole; one more is cut."""
    whole = "1__" + "0" * (LONGEST_SHOWN - 3)
    assert misspelt(whole) == f"{whole} has a _ that is not between two digits; write 1{'0' * 37}"
    assert shown(whole) == whole
    longer = whole + "0"
    assert shown(longer) == f"{longer[:LONGEST_SHOWN]}... ({LONGEST_SHOWN + 1} characters)"
    assert misspelt(longer) == (f"{shown(longer)} has a _ that is not between two digits; "
                                "write it without it")


def test_a_prefixed_number_of_the_most_bits_is_written_in_decimal():
    """:data:`MAX_INT_BITS` bits are written out; one bit more is beyond any setting."""
    most = "0x" + "f" * (MAX_INT_BITS // 4)
    assert misspelt(most) == f"{most} is hexadecimal; write {2 ** MAX_INT_BITS - 1}"
    over = "0x1" + "0" * (MAX_INT_BITS // 4)
    assert misspelt(over) == (f"{shown(over)} is hexadecimal, a whole number of 3,001 bits is "
                              "beyond any setting (at most 3,000 bits, about 900 digits)")


def test_a_base_sixty_number_beyond_a_float_is_refused_in_one_line(capsys, tmp_path):
    """``1:00:00:...`` of 601 characters (60 ** 200, over 10 ** 355) ended in a traceback,
    'OverflowError: int too large to convert to float', on a flag and in a scenario alike: its
    value was printed as a float. It is beyond any setting, as a longer one was said to be."""
    from test_quoted_numbers import edited

    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    written = "1" + ":00" * 200
    why = f"{shown(written)} is base 60 to YAML 1.1, and beyond any setting"
    assert misspelt(written) == why
    assert error_line(*run_cli(capsys, *ANALYTIC, "--dc", written)) == (
        f"Error: --dc: {why}; see tiersim analytic --help")
    path = edited(tmp_path, ("seed: 0", f"seed: {written}"))
    with pytest.raises(ScenarioError, match="and beyond any setting"):
        load_scenario(path, fit=False)
    assert misspelt("1" + ":00" * 100) == (  # 60 ** 100 fits a float: written out
        f"{'1' + ':00' * 100} is base 60 to YAML 1.1 ({60 ** 100:g}); write {60 ** 100}")


# ---------------------------------------------------------------- tiersim.results (savings)


def test_a_tie_goes_to_the_fewer_tiers_before_the_fewer_replicas():
    """At one USD/hour, uniform 12 replicas rank before 2 tiers of 10 replicas in all (the
    order the plan documents), and at one size the more accurate fleet ranks first."""
    one_tier = paid_order("provisioned", 10.0, 12.0, 1, 12, 0.9)
    assert one_tier < paid_order("provisioned", 9.0, 12.0, 2, 10, 0.9)
    assert paid_order("provisioned", 10.0, 12.0, 1, 12, 0.95) < one_tier


def test_a_fleet_of_unknown_rate_ranks_after_every_priced_one():
    priced = paid_order("provisioned", 500.0, 100.0, 2, 20, 0.9)
    assert priced < paid_order("provisioned", 5.0, None, 1, 1, 0.9)


@pytest.mark.parametrize(("cost_model", "basis"), [
    ("provisioned", PER_HOUR), ("attributed", OVER_THE_TRACE),
    ("fixed_per_request", OVER_THE_TRACE), (None, OVER_THE_TRACE)])
def test_only_provisioned_cost_compares_fleets_per_hour(cost_model, basis):
    assert saving_basis(cost_model) == basis


def test_per_hour_follows_a_share_only():
    """A free baseline's gap (no share: USD over the trace) is not labelled per hour."""
    assert basis_words(PER_HOUR, 0.1) == " per hour"
    assert basis_words(PER_HOUR, None) == ""
    assert basis_words(OVER_THE_TRACE, 0.1) == ""


def test_a_share_within_float_noise_is_zero_but_a_loss_stays_a_loss():
    assert without_noise(-1e-13) == 0.0 and without_noise(1e-13) == 0.0
    assert without_noise(-0.05) == -0.05 and without_noise(None) is None
    # per hour under provisioned cost: one rate is no saving, whatever the drain
    assert paid_share("provisioned", (10.0, 12.0), (11.0, 12.0)) == 0.0
    assert paid_share("attributed", (9.0, 12.0), (10.0, 6.0)) == pytest.approx(0.1)
    assert paid_share("provisioned", (9.0, 13.2), (10.0, 12.0)) == pytest.approx(-0.1)


@pytest.mark.parametrize(("rate", "durations", "words"), [
    (10000.0, (3599.0, 3600.0), "both 10,000 USD/hour: the gap is the drain after the last "
     "arrival, 3599 s against 3600 s, not a cheaper fleet"),
    (28673.0, (10800.4, 10812.2), "both 28,673 USD/hour: the gap is the drain after the last "
     "arrival, 10,800 s against 10,812 s, not a cheaper fleet"),
    (14.0, (346.79, 346.82), "both 14 USD/hour: the gap is the drain after the last arrival, "
     "346.79 s against 346.82 s, not a cheaper fleet"),
])
def test_the_drain_words_print_plain_numbers_told_apart(rate, durations, words):
    assert drain_words((rate, rate), durations, "provisioned") == words


# ---------------------------------------------------------------- MLA table keys


def test_an_mla_model_without_a_query_projection_reads_a_table_keyed_at_its_hidden_size(
        tmp_path):
    """``q_lora`` is the hidden size where ``q_lora_rank`` is 0 (null in DeepSeek-V2-Lite's
    config): such a model reads a table keyed at its shapes (a key of 0 matched no table)."""
    import json

    from test_round31_keys import DEEPSEEK, attention_sources, mla_doc

    from tiersim.perf.profile import load_profile

    doc, picked = mla_doc()
    for i in picked:
        doc["tables"][i]["key"].update(hidden=7168, q_lora=7168, rope=64, nope=128, v_dim=128)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    no_q_lora = dataclasses.replace(DEEPSEEK, q_lora_rank=0)
    found = attention_sources(no_q_lora, load_profile(path))
    assert len(found) == 2 and all(v.startswith("measured:") for v in found.values()), found


# ---------------------------------------------------------------- interrupted commands


def test_an_interrupted_rerun_names_the_report_it_removed(tmp_path, capsys, monkeypatch):
    """A rerun with --no-report stopped after its files landed names report.html, which it
    removed, among the files it changed (a mutant that compares only the files left after
    the run said 'manifest.json, requests.parquet, scenario.yaml and 2 more')."""
    from conftest import cheap_first_tiers, tiny_doc, write_yaml
    from test_round31_fuzz2 import _interrupt_with

    import tiersim.cli.run

    # tiny cheapest first: no tier-order note on stderr (round 53)
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(tiers=cheap_first_tiers()))
    out = tmp_path / "o"
    assert run_cli(capsys, "run", scenario, "--out", out, "--no-baselines")[0] == 0
    assert (out / "report.html").exists()
    monkeypatch.setattr(tiersim.cli.run, "print_summary", _interrupt_with(KeyboardInterrupt()))
    code, err = run_cli(capsys, "run", scenario, "--out", out, "--no-baselines", "--no-report")
    assert not (out / "report.html").exists()
    assert (code, err) == (130, f"interrupted after this run's files were written to {out} "
                                "(manifest.json, report.html, requests.parquet and 3 more)\n")



def test_the_consoles_saving_says_per_hour_where_it_is_one():
    """``tiersim run``'s row: '25.0 % per hour' under provisioned cost (ranked per hour, as the
    plan quotes it), a plain share over the trace, no label on a free baseline's USD gap."""
    from tiersim.cli.run import saving_row
    from tiersim.results import SavingsResult

    saving = SavingsResult(method="simulated", cost_model="provisioned", routed_cost_usd=9.0,
                           accuracy=0.9, accuracy_floor=0.85, uniform=(),
                           baseline_uniform_tier="bf16", vs_uniform_usd=3.0, vs_uniform_frac=0.25,
                           static_split_cost_usd=None, vs_static_split_usd=None,
                           vs_static_split_frac=None, saving_basis=PER_HOUR)
    assert saving_row(saving) == ("saved vs uniform bf16", "25.0 % per hour",
                                  "provisioned; uniform fleets simulated")
    over = dataclasses.replace(saving, cost_model="attributed", saving_basis=OVER_THE_TRACE)
    assert saving_row(over)[1] == "25.0 %"
    free = dataclasses.replace(saving, vs_uniform_frac=None, vs_uniform_usd=-2.0)
    # the dearer fleet worded as tiersim plan words it (round 49; it read "-2 USD (...)")
    assert saving_row(free)[1] == "costs 2 USD more (the baseline costs 0 USD: no percentage)"

# ---------------------------------------------------------------- the static split's saving


def test_a_static_split_with_a_rate_unknown_has_no_share_per_hour():
    """Per hour the split is 12 USD/hour (half of 8 and 16) against the fleet's 13; a fleet
    whose rate is unknown leaves that share unknown, where a mutant that splits the rates
    anyway raised TypeError (None times a float); over the trace the split is 11 USD."""
    from tiersim.routing.metrics import static_split_saving

    uniform = [(10.0, 8.0, 0.8), (12.0, 16.0, 0.9)]
    known = static_split_saving("provisioned", 0.85, (10.0, 13.0), uniform)
    assert known["static_split_cost_per_hour_usd"] == pytest.approx(12.0)
    assert known["vs_static_split_frac"] == pytest.approx(1 - 13.0 / 12.0)
    assert known["vs_static_split_over_trace_frac"] == pytest.approx(1 - 10.0 / 11.0)
    unknown = static_split_saving("provisioned", 0.85, (10.0, 13.0),
                                  [uniform[0], (12.0, None, 0.9)])
    assert unknown["static_split_cost_per_hour_usd"] is None
    assert unknown["vs_static_split_frac"] is None
    assert unknown["static_split_cost_usd"] == pytest.approx(11.0)
    assert unknown["vs_static_split_over_trace_frac"] == pytest.approx(1 - 10.0 / 11.0)



def test_the_attributed_savings_give_the_static_splits_share_over_the_trace():
    """:func:`tiersim.routing.metrics.savings` (per-request costs, no rate) compares with the
    split over the trace: a share, not None (a mutant that asked for it per hour had none)."""
    from test_routing import TIERS3, route, workload

    from tiersim.routing.metrics import savings

    df = workload()
    a = route({"policy": "oracle", "lambda": 0.1}, df)
    tokens = (df["input_tokens"] + df["output_tokens"]).to_numpy(float)
    cost = np.array([t.cost_weight for t in TIERS3])[a.tier] * tokens * 1e-6
    s = savings(df, a.final_tier, cost, TIERS3)
    assert s["static_split_cost_per_hour_usd"] is None
    assert s["vs_static_split_frac"] == pytest.approx(1 - s["routed_cost_usd"] /
                                                      s["static_split_cost_usd"])
    assert s["vs_static_split_frac"] == s["vs_static_split_over_trace_frac"] > 0



# ---------------------------------------------------------------- response cache keys


@pytest.mark.parametrize("column", ["Total tokens", "Request tokens", "Response tokens",
                                    "Timestamp", "ContextTokens", "GeneratedTokens", "TIMESTAMP",
                                    "input_length", "output_length", "timestamp", "arrival_s"])
def test_no_time_or_token_column_of_a_trace_format_is_a_prompt_key(column):
    """``key: Total tokens`` on a BurstGPT log would answer every request of one total length
    from the first one's answer."""
    from pydantic import ValidationError

    from tiersim.response_cache import ResponseCacheConfig

    with pytest.raises(ValidationError, match=f"'{column}' is not a prompt key"):
        ResponseCacheConfig(mode="lru", size=5, key=column)


def test_a_long_key_column_holding_a_list_is_named_shortly():
    import pandas as pd

    from tiersim.errors import ScenarioError
    from tiersim.response_cache import ResponseCacheConfig, keys

    name = "m" * 60
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [5, 5], "output_tokens": [5, 5],
                       name: ["x", [1, 2]]})
    with pytest.raises(ScenarioError) as info:
        keys(df, ResponseCacheConfig(mode="lru", size=5, key=name), np.random.default_rng(0))
    assert str(info.value) == (
        f"scenario: router.response_cache.key: the trace's column '{'m' * 37}...' holds a list "
        "in request 2; name a column of one number or text per row (the prompt's hash)")



def test_requests_without_a_prompt_are_never_hits():
    """``key: prompt``: the trace reader keeps a missing prompt as ``""``, which is no key (two
    requests without one would otherwise be one prompt, the second a hit)."""
    import pandas as pd

    from tiersim.response_cache import ResponseCacheConfig, hits, keys

    df = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0, 3.0], "input_tokens": [5] * 4,
                       "output_tokens": [5] * 4, "prompt": ["a", "", "a", ""]})
    cfg = ResponseCacheConfig(mode="lru", size=5, key="prompt")
    found, source = keys(df, cfg, np.random.default_rng(0))
    assert source == "trace column prompt (2 rows without one: never a hit)"
    assert hits(found, cfg).tolist() == [False, False, True, False]
