"""Round 31 hand mutation audit: each test here kills a hand-made mutant that the suite let
live (a floor not applied, a split priced at the wrong accuracy, a rate per half hour), with a
hand-computed case."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from test_round28_mut import _one_tier_run, _tier, _uniform
from test_round30_lbl import _logged

from tiersim import metrics, savings
from tiersim.results import drain_words, figure_text, round_sig
from tiersim.routing import TierInfo
from tiersim.routing import savings as routing_savings
from tiersim.routing.metrics import static_split_cost
from tiersim.trace.loader import read_trace

CHEAP_TOP = [TierInfo("cheap"), TierInfo("top")]


def _saved(uniform, floor=None, cost_model="provisioned"):
    """savings_result of one request on the cheap tier ($3.6/hour, 3 s), answered wrong
    there and right on the top tier, against the sized uniform fleets ``uniform``."""
    df = pd.DataFrame({"correct_cheap": [0.0], "correct_top": [1.0]})
    fleet = SimpleNamespace(tiers=[_tier("cheap", gpus=1)])
    return savings.savings_result(cost_model, fleet, df, _one_tier_run(3.0), CHEAP_TOP, floor,
                                  "realised", uniform=uniform)


def test_a_uniform_fleet_below_the_floor_is_no_baseline():
    # cheap ($1) scores 0 and misses the 0.9 floor: the baseline is top ($5)
    out = _saved([_uniform("cheap", 0.0, cost=1.0), _uniform("top", 1.0, cost=5.0)], floor=0.9)
    assert out.baseline_uniform_tier == "top"
    assert out.vs_uniform_usd == pytest.approx(5.0 - 0.003)


def test_the_static_split_lands_on_the_runs_accuracy_not_the_floor():
    # the run scores 0: cheap alone reaches it ($1); at the 0.9 floor it would be
    # 0.1 x $1 + 0.9 x $5 = $4.6
    out = _saved([_uniform("cheap", 0.0, cost=1.0), _uniform("top", 1.0, cost=5.0)], floor=0.9)
    assert out.static_split_cost_usd == pytest.approx(1.0)


def test_a_baseline_of_the_runs_hourly_rate_names_the_drain_gap():
    # the run's fleet is $3.6/hour for 3 s; its baseline, also $3.6/hour, lasted 2 s
    base = dataclasses.replace(_uniform("cheap", 0.0, cost=0.002), cost_per_hour_usd=3.6,
                               duration_s=2.0)
    out = _saved([base])
    assert out.drain_gap == ("both 3.6 USD/hour: the gap is the drain after the last "
                             "arrival, 3 s against 2 s, not a cheaper fleet")


def test_a_one_token_answer_at_the_context_is_longer_than_it():
    # a prompt as long as the context leaves no room for the one token every answer has,
    # however short its trace output (0 tokens, or 1 token at multiplier 0.4)
    tier = SimpleNamespace(name="fp8", limits=SimpleNamespace(max_model_len=100),
                           config=SimpleNamespace(output_length_multiplier=0.4))
    df = pd.DataFrame({"input_tokens": [100, 100, 99], "output_tokens": [0, 1, 1]})
    longer, _ = savings.longer_than_context(SimpleNamespace(tiers=[tier]), df)
    assert longer[:, 0].tolist() == [True, True, False]


def test_a_sized_uniform_fleet_is_paid_until_the_run_ends(monkeypatch):
    # the planner sized cheap at one replica ($3.6/hour) that served its requests in 2 s;
    # a response cache answered until 100 s, so it is paid, and lasts, 100 s
    outcome = SimpleNamespace(cost_usd=0.002, duration_s=2.0, cost_per_hour_usd=3.6,
                              attributed_cost_usd=0.001, accuracy=1.0, dropped=0,
                              ttft_p99_s=0.1, tpot_p99_s=0.01, e2e_p99_s=1.0, task_success=None,
                              tiers={"cheap": SimpleNamespace(prefill=None, techniques=None)})
    sized = SimpleNamespace(design=SimpleNamespace(tiers=["cheap"], gpus_per_replica=[1]),
                            replicas={"cheap": 1}, feasible=True, outcome=outcome,
                            missed=None, infeasible=None)
    monkeypatch.setattr("tiersim.plan.SimEvaluator", lambda *args, **kwargs: None)
    monkeypatch.setattr("tiersim.plan.Planner",
                        lambda *args, **kwargs: SimpleNamespace(uniform=lambda: [sized]))
    scenario = SimpleNamespace(slo=SimpleNamespace(ttft_p99_s=1.0, tpot_p99_s=0.1,
                                                   e2e_p99_s=None, session_p99_s=None),
                               all_tiers=[SimpleNamespace(name="cheap")], cost_model="provisioned",
                               limits=SimpleNamespace(gpus_per_replica=[1], max_replicas=8))
    [run] = savings.sized_uniform_runs(scenario, "trace", SimpleNamespace(gpus=1), df=None,
                                       end_s=100.0)
    assert (run.cost_usd, run.duration_s) == pytest.approx((0.1, 100.0))


def test_a_static_split_mixes_a_tier_listed_after_the_one_above_it():
    # the less accurate tier listed second: half of each ($3 at 0.9, $1 at 0.7) reaches 0.8
    # for $2, where the accurate tier alone costs $3
    assert static_split_cost(0.8, np.array([3.0, 1.0]), np.array([0.9, 0.7])) == \
        pytest.approx(2.0)


def test_a_tolerance_lets_the_cheapest_tier_within_it_be_the_baseline():
    # routed accuracy 1.0 at $1; less 0.25 the floor is 0.75, which cheap ($2) reaches and
    # top ($10) passes: the cheaper, cheap, is the baseline
    df = pd.DataFrame({"correct_cheap": [1.0, 1.0, 1.0, 0.0], "correct_top": [1.0] * 4})
    out = routing_savings(df, np.array([0, 0, 0, 1]), np.full(4, 0.25), CHEAP_TOP,
                          uniform_costs=np.array([2.0, 10.0]), tolerance=0.25, basis="realised")
    assert out["accuracy_floor"] == pytest.approx(0.75)
    assert (out["baseline_uniform_tier"], out["vs_uniform_usd"]) == ("cheap", pytest.approx(1.0))


def test_a_split_with_no_slo_scores_zero():
    # nothing to miss: the score plan and disagg print is 0, not 1 (as if at the limit)
    assert metrics.slo_score(0.5, 0.05, (None, None), dropped=False) == 0.0
    assert metrics.split_rank(0.5, 0.05, (None, None), dropped=2) == (2, 0.0)


@pytest.mark.parametrize(("value", "unit", "scale", "text"), [
    (5e-7, " USD", 1.0, "5.00e-07 USD"),  # only within 1e-9 of 0 reads 0
    (3, " ms", 1000.0, "3,000 ms"),  # a whole number scaled is scaled
    (1000.0, "", 1.0, "1,000"),  # 10 ** digits is a whole number
    (999.7, " s", 1.0, "1,000 s"),  # rounds to 10 ** digits: a whole number
    (100.0, "", 1.0, "100"),  # no trailing point
    (float("nan"), " s", 1.0, "-"),  # a mean over no request
    (12345.6, "", 1.0, "12,346"),  # thousands separated
])
def test_a_figure_reads_as_the_console_prints_it(value, unit, scale, text):
    assert figure_text(value, unit, scale) == text


def test_a_written_value_keeps_ten_significant_digits_and_no_infinity():
    assert round_sig(1.234567891234) == 1.234567891
    assert round_sig(float("inf")) is None


@pytest.mark.parametrize(("rates", "durations", "cost_model"), [
    ((3.6, 3.6), (2.0, 2.0), "provisioned"),  # no gap
    ((3.6, 3.61), (3.0, 2.0), "provisioned"),  # rates 0.3 % apart: a dearer fleet
    ((3.6, 3.6), (3.0, 2.0), "attributed"),  # nothing is paid while idle
    ((3.6, 3.6), (3.0, None), "provisioned"),  # a duration not known
])
def test_no_drain_gap_is_named_where_it_is_not_the_whole_gap(rates, durations, cost_model):
    assert drain_words(rates, durations, cost_model) is None


def test_drain_durations_read_at_four_significant_digits():
    assert drain_words((3.6, 3.6), (123.4, 456.7), "provisioned") == (
        "both 3.6 USD/hour: the gap is the drain after the last arrival, 123.4 s against "
        "456.7 s, not a cheaper fleet")


@pytest.mark.parametrize("fmt", ["azure", "burstgpt", "mooncake"])
def test_a_logged_trace_keyed_on_its_prompt_hash_carries_it_once(tmp_path, fmt):
    # a response cache keyed on prompt_hash, a canonical optional column the converters carry
    # anyway: asked for and carried, it was taken twice and the read ended in a traceback
    path = tmp_path / "t.csv"
    _logged(fmt).rename(columns={"mykey": "prompt_hash"}).to_csv(path, index=False)
    table = read_trace(path, keep=("prompt_hash",)).table
    assert list(table.columns).count("prompt_hash") == 1
    assert list(table["prompt_hash"].astype(str)) == ["k0", "k1", "k1", "k0", "k1"]
