"""What the command line prints and exits with, word for word (round 32, helper ``words``)."""

from __future__ import annotations

import pytest
from conftest import run_cli

from tiersim.cli import main


@pytest.mark.parametrize("argv", [[], ["trace"]])
def test_no_command_shows_the_help_and_exits_1_as_every_usage_mistake(capsys, argv):
    """``tiersim`` (or ``tiersim trace``) without its command runs nothing: the help, status 1,
    as an unknown command or option is (README: command-line mistakes exit 1)."""
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"Usage: {' '.join(['tiersim', *argv])} [OPTIONS] COMMAND [ARGS]..." in out


def test_bare_tiersim_exits_1_through_the_console_entry_point():
    result = run_cli()
    assert result.returncode == 1 and "Usage: tiersim [OPTIONS] COMMAND" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


def _plan_saving(frac: float) -> str:
    """``tiersim plan``'s saving line for a share of ``frac`` per hour."""
    from tiersim.cli.plan import _saving_line

    return _saving_line({"vs_uniform_frac": frac, "vs_uniform_usd": -1.0,
                         "saving_basis": "per_hour", "baseline_uniform_tier": "bf16"})


@pytest.mark.parametrize(("frac", "expected"), [
    (-5e-12, "costs 0.000000000500 % more per hour than"),  # read "costs 0 % more"
    (5e-12, "saves 0.000000000500 % per hour against"),  # read "saves 0 %"
    (-2.86e-8, "costs 0.00000286 % more per hour than"),  # read "costs 2.86e-06 % more"
    (0.0, "costs the same per hour as"),  # read "saves 0 %"
    (5e-13, "costs the same per hour as"),  # float noise: no saving
    (-0.02, "costs 2.00 % more per hour than"),  # as it was
])
def test_a_plans_saving_reads_in_plain_digits_and_a_zero_as_the_same_cost(frac, expected):
    assert _plan_saving(frac) == (f"  {expected} the cheapest sized uniform fleet (bf16), "
                                  "simulated")


@pytest.mark.parametrize(("frac", "expected"), [
    (5e-12, "0.000000000500 % dearer than the plan"),  # read "0 % dearer"
    (-2.86e-8, "0.00000286 % cheaper than the plan"),  # read "2.86e-06 % cheaper"
    (0.0, "costs the same as the plan"),  # read "0 % dearer"
    (0.02, "2.00 % dearer than the plan"),  # as it was
])
def test_a_runner_ups_share_reads_in_plain_digits_and_a_zero_as_the_same_cost(frac, expected):
    from tiersim.plan.planner import _dearer

    assert _dearer(frac) == expected


@pytest.mark.parametrize(("frac", "expected"), [
    (-2.86e-8, "-0.00000286 %"), (5e-12, "0.000000000500 %"), (5e-13, "0 %"),
    (0.0123456, "1.23 %"), (12.3456, "1,235 %")])
def test_a_runs_saving_and_the_reports_share_print_in_plain_digits(frac, expected):
    """``tiersim run``'s saving row and the report's percentages: "-2.86e-06 %" before."""
    from types import SimpleNamespace

    from tiersim.cli.run import saving_row
    from tiersim.report.page import fmt, percent

    saving = SimpleNamespace(baseline_uniform_tier="bf16", comparable=True, estimated=False,
                             vs_uniform_frac=frac, vs_uniform_usd=1.0, drain_gap=None,
                             saving_basis="per_hour", cost_model="provisioned",
                             priced_per_request=False)  # round 52: read by the row
    # a dearer fleet's row is worded as tiersim plan words it (round 49): "costs ... more"
    row = (f"costs {expected.removeprefix('-')} more" if expected.startswith("-") else expected)
    assert saving_row(saving)[1] == f"{row} per hour"
    assert fmt(percent(frac)) == expected


NOT_A_PROMPT = ("(requests with the same value are not the same prompt); name a column of "
                "prompt hashes, or set popularity: {distinct: N}")


@pytest.mark.parametrize("column", ["tool_s", "session_id", "step", "parent", "task_type",
                                    "step_type", "subject", "difficulty", "spec_acceptance"])
def test_no_column_but_the_prompts_own_is_a_response_cache_key(tmp_path, column):
    """A key names a prompt (docs/agentic.md): ``key: tool_s`` (a time) or ``key: task_type``
    answered 49 of 50 requests of one type or tool time from the first one's answer."""
    import pandas as pd
    from conftest import tiny_doc, write_yaml

    trace = tmp_path / "t.parquet"
    pd.DataFrame({"request_id": range(50), "arrival_s": [float(i) for i in range(50)],
                  "input_tokens": [100 + i for i in range(50)], "output_tokens": 10,
                  column: ["code" if column in ("task_type", "step_type", "subject")
                           else 0 for _ in range(50)]}).to_parquet(trace)
    doc = tiny_doc(trace={"path": str(trace)})
    doc["tiers"] = doc["tiers"][1:]
    doc["router"] = {"policy": "uniform",
                     "response_cache": {"mode": "lru", "size": 100, "key": column}}
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    result = run_cli("run", str(scenario), "--no-baselines", "--no-report")
    assert result.returncode == 1 and result.stdout == ""
    line = next(i for i, text in enumerate(scenario.read_text().splitlines(), 1)
                if text.strip() == f"key: {column}")
    assert result.stderr == (f"Error: {scenario}: line {line}: router.response_cache.key: "
                             f"'{column}' is not a prompt key {NOT_A_PROMPT}\n")


@pytest.mark.parametrize("column", ["prompt", "prompt_hash", "my_hash"])
def test_a_prompts_own_column_is_still_a_key(column):
    from tiersim.response_cache import ResponseCacheConfig

    assert ResponseCacheConfig(mode="lru", size=5, key=column).key == column


def _error_line(capsys, argv: list[str]) -> str:
    """The one stderr line of a refused command (status 1, nothing on stdout)."""
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    return captured.err.strip()


def test_max_replicas_1e30_names_the_range_and_what_to_give(capsys, tmp_path):
    """``--max-replicas 1e30`` read "unable to parse input string as an integer, exceeded
    maximum size": 1e30 is 10**30 (the one number rule), held to the scenario's cap as its
    digits are; above what any scenario may set, raising the cap is no fix. The flag is quoted
    as typed (``1e30``, ``2e3``), as a float flag is (round 50: it printed 10**30's 31 digits
    and 2000)."""
    from conftest import TINY, tiny_doc, write_yaml

    line = _error_line(capsys, ["plan", str(TINY), "--max-replicas", "1e30"])
    assert line == (f"Error: --max-replicas 1e30 is above {TINY}'s "
                    "limits.max_replicas (1024) and the most a scenario may set (100000); give "
                    "1 to 1024, or raise limits: {max_replicas: N} in the scenario, N up to "
                    "100000")
    capped = write_yaml(tmp_path / "capped.yaml", tiny_doc(limits={"max_replicas": 100000}))
    line = _error_line(capsys, ["plan", str(capped), "--max-replicas", "1e30"])
    assert line == (f"Error: --max-replicas 1e30 is above "
                    f"{capped}'s limits.max_replicas (100000, the most a scenario may set); "
                    "give 1 to 100000")
    line = _error_line(capsys, ["plan", str(TINY), "--max-replicas", "2e3"])  # as typed
    assert line == (f"Error: --max-replicas 2e3 is above {TINY}'s limits.max_replicas (1024); "
                    "lower it, or raise limits: {max_replicas: N} in the scenario")


def test_a_bounded_int_flag_given_1e30_names_its_bound(capsys):
    line = _error_line(capsys, ["sweep", "scenarios/tiny.yaml", "--out", "x",
                                "--max-points", "1e30"])
    assert line == ("Error: --max-points: input should be less than or equal to 1000000; see "
                    "tiersim sweep --help")


def test_a_whole_flag_with_an_exponent_is_read_exactly():
    from tiersim.cli.usage import read_flag_number

    assert read_flag_number(int, 1, None, "1e30") == 10**30  # int(1e30) is 10**30 + 1.99e13
    assert read_flag_number(int, 1, None, "2.0") == 2


@pytest.mark.parametrize(("setting", "key", "expected"), [  # round 50: the number as written
    ("limits: {max_replicas: 1e30}", "limits.max_replicas", "must be <= 100000 (got 1e30)"),
    ("limits: {max_replicas: -1e30}", "limits.max_replicas", "must be >= 1 (got -1e30)"),
    ("seed: 1e30", "seed", "must be <= 9223372036854775807 (got 1e30)"),
    ("limits: {gpus_per_replica: [1, 1e30]}", "limits.gpus_per_replica[1]",
     "must be <= 4096 (got 1e30)"),
])
def test_a_yaml_whole_number_1e30_is_refused_by_its_keys_bound(tmp_path, setting, key,
                                                               expected):
    """``max_replicas: 1e30`` read "unable to parse input string as an integer, exceeded
    maximum size (got 1e+30)"; 10**30 in digits read "must be <= 100000", as it now does."""
    from conftest import TINY

    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    text = TINY.read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text.replace("seed: 0", setting) if setting.startswith("seed")
                    else f"{setting}\n{text}")
    line = 4 if setting.startswith("seed") else 1
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == f"{path}: line {line}: {key}: {expected}"


def test_a_whole_number_1e30_for_a_key_without_a_bound_says_to_write_digits(tmp_path):
    from conftest import TINY

    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(TINY.read_text().replace("replicas: 1\n", "replicas: 1e30\n", 1))
    # round 50: the number as the file writes it (was 1e+30, as Python writes it)
    with pytest.raises(ScenarioError, match=r": tiers\[0\]\.replicas: must be a whole number "
                       r"\(got 1e30: written with an exponent, one must be below 2\*\*63\); "
                       "write it in digits$"):
        load_scenario(path)


def test_analytic_refuses_a_dc_its_figures_cannot_show(capsys):
    """``--dc 5e-324`` underflowed: "dC* = 0 per request (0.0% of dc)"."""
    line = _error_line(capsys, ["analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3",
                                "--dc", "5e-324"])
    assert line == ("Error: tiersim analytic: --dc: must be at least 2.225e-308 (got 5e-324), "
                    "the smallest number a float holds to its full digits: below it dC* and the "
                    "frontiers' costs round to 0; give dc in a larger unit (per 1,000 or 10^6 "
                    "requests)")


@pytest.mark.parametrize(("p", "dc", "expected"), [
    ("1e-9", "1", "dC* = 9.66667e-10 per request (0.0000000967 % of dc) at the kink"),  # 0.0%
    ("0.8", "2.3e-308", "dC* = 1.56941e-308 per request (68.2 % of dc) at the kink"),
    ("0.8", "1.0", "dC* = 0.682353 per request (68.2 % of dc) at the kink"),
])
def test_analytic_prints_dc_stars_share_in_plain_digits(capsys, p, dc, expected):
    assert main(["analytic", "--p", p, "--eps", "0.01", "--delta", "0.3", "--dc", dc]) == 0
    assert capsys.readouterr().out.splitlines()[1] == (
        f"{expected}; source: two-type closed form of p / eps / delta and dc")
