"""Round 52 (left52, item 2): the accuracy of a run no request reached.

A response cache that answers every request leaves the fleet nothing to serve. Before, its
accuracy read None in summary.json and "-" on the console, NaN in the results' router and
savings (a mean over no request), 1.0 in the plan ("100.00%" printed, ``accuracy: 1.0`` in
plan.json and its seed check), and with an accuracy floor the run's saving said its own fleet
MISSED the floor (NaN < floor). Now every surface holds None ("n/a: no request reached the
fleet" where a line prints it) and no floor is judged on it.
"""

from __future__ import annotations

import json
import re
import warnings

import pandas as pd
import pytest
from rich.console import Console

from tiersim.cli.plan import plan_capacity
from tiersim.cli.plan_text import format_plan
from tiersim.cli.run_summary import headline_table
from tiersim.errors import Note
from tiersim.report.page import run_headline
from tiersim.results import RunResult
from tiersim.runner import run_into, run_scenario
from tiersim.scenario import load_scenario

NO = RunResult.NO_ACCURACY

SCENARIO = """\
name: {name}
seed: 0
model: Qwen3-Coder-30B-A3B
gpu: H200
trace:
  path: azure2023_conv.parquet
  window: [0, 30]
tiers:
{tiers}
router:
  policy: uniform
  response_cache: {{mode: top_n, size: 1, popularity: {{distinct: 1}}}}
cost_model: attributed
slo: {{ttft_p99_s: 2.0, tpot_p99_s: 0.1}}
"""

ONE = "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}"
TWO = ("  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5}\n" + ONE
       + "\naccuracy_floor: 0.9")


def _scenario(tmp_path, floor: bool = False):
    """One prompt key, cached from the start: every request is a cache hit."""
    path = tmp_path / ("floor.yaml" if floor else "empty.yaml")
    path.write_text(SCENARIO.format(name="empty_floor" if floor else "empty_run",
                                    tiers=TWO if floor else ONE))
    return path


def _quiet(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        return call(*args, **kwargs)


def _text(renderable) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("floor", [False, True])
def test_results_hold_none_not_nan(tmp_path, floor):
    r = _quiet(run_scenario, load_scenario(_scenario(tmp_path, floor)))
    assert r.requests == 0 and r.response_cache.hits == r.response_cache.requests
    assert r.accuracy is None
    assert r.router.accuracy is None and r.router.accuracy_ci95 == (None, None)
    assert r.savings.accuracy is None
    assert all(u.accuracy is None for u in r.savings.uniform)
    assert r.router.floor_met is None
    # with a floor: nothing was served, so nothing missed it (it read routed_floor_met False)
    assert r.savings.routed_floor_met is None
    if not floor:
        assert r.savings.accuracy_floor is None


def test_summary_console_and_report(tmp_path):
    out = tmp_path / "run"
    scn = load_scenario(_scenario(tmp_path))
    _quiet(run_into, scn, out, str(_scenario(tmp_path)))
    doc = json.loads((out / "summary.json").read_text())
    assert doc["accuracy"] is None and doc["router"]["accuracy"] is None
    assert doc["router"]["accuracy_ci95"] == [None, None]
    assert doc["savings"]["accuracy"] is None
    assert doc["savings"]["uniform"]["bf16"]["accuracy"] is None
    r = RunResult.from_json(doc)
    console = " ".join(_text(headline_table(r)).split())
    assert "n/a: no request reached" in console
    page = run_headline(r)
    assert page.count(NO) == 2  # the headline's accuracy and the router's
    assert not re.search(r"\bnan\b", page.lower())


def test_sweep_rows_hold_none(tmp_path):
    from tiersim.sweep.run import run_sweep

    path = _scenario(tmp_path)
    path.write_text(path.read_text() + "sweep:\n  tiers.0.replicas: [1, 2]\n")
    _quiet(run_sweep, path, tmp_path / "sweep", workers=1, report=False)
    rows = pd.read_parquet(tmp_path / "sweep" / "sweep.parquet")
    for column in ("accuracy", "router.accuracy", "savings.accuracy"):
        assert rows[column].isna().all() and all(v is None for v in rows[column])


@pytest.mark.parametrize("floor", [False, True])
def test_plan_says_no_accuracy(tmp_path, floor):
    result = _quiet(plan_capacity, _scenario(tmp_path, floor), out_dir=tmp_path / "plan",
                    report=False, check_seeds=1)
    chosen = result.plan
    assert chosen["accuracy"] is None  # it read 1.0 ("100.00%")
    assert all(u["accuracy"] is None for u in result.uniform)
    assert [row["accuracy"] for row in result.seed_check["per_seed"]] == [None, None]
    assert result.seed_check["ranges"]["accuracy"] is None
    if floor:  # no request to hold to the floor: met, with no value and no margin
        assert chosen["margins"]["accuracy"] == {"limit": 0.9, "value": None, "margin": None,
                                                 "met": True}
    text = format_plan(result)
    assert f"expected accuracy: {NO} (a response cache answered every one)" in text
    assert "100.00%" not in text
    assert "expected accuracy -" in text  # the seed check's range, as its unknown p99s
    doc = json.loads((tmp_path / "plan" / "plan.json").read_text())
    assert doc["plan"]["accuracy"] is None
