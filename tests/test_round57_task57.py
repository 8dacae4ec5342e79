"""Round 57 (helper task57): each uniform baseline fleet's task success beside the routed
fleet's, for runs with agentic sessions (``savings.uniform.<tier>.task_success``).

A new user found no command gave a uniform fleet's task success: the run's uniform-fleets table
gave per-request accuracy only, so routing ``scenarios/agentic.yaml`` from 80.20 % task success
(all bf16) to 69.15 % (routed) showed nowhere beside the uniform fleets (modelled).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario, scenario_from_dict

AGENTIC = Path(__file__).parents[1] / "tiersim" / "scenarios" / "agentic.yaml"
_RUNS: dict[str, object] = {}


def _agentic(baselines: bool):
    """The agentic example's run, its uniform fleets estimated or simulated (once each)."""
    key = f"baselines={baselines}"
    if key not in _RUNS:
        _RUNS[key] = run_scenario(
            load_scenario(AGENTIC), scenario_path=AGENTIC, baselines=baselines
        )
    return _RUNS[key]


def _one_tier(name: str):
    """The agentic example with tier ``name`` alone: the uniform fleet, run as itself."""
    data = yaml.safe_load(AGENTIC.read_text())
    data["tiers"] = [t for t in data["tiers"] if t["name"] == name]
    data.pop("router")
    return run_scenario(scenario_from_dict(data, str(AGENTIC)), scenario_path=AGENTIC)


@pytest.mark.parametrize("baselines", [False, True])
def test_each_uniform_fleet_gives_its_task_success(baselines):
    """Estimated and simulated alike: all bf16 80.20 %, all fp8 60.88 %, beside the routed
    fleet's 69.15 % (modelled); before, savings.uniform gave accuracy alone."""
    r = _agentic(baselines)
    uniform = {b.tier: b for b in r.savings.uniform}
    assert uniform["bf16"].task_success == pytest.approx(0.8020082437, rel=1e-9)
    assert uniform["fp8"].task_success == pytest.approx(0.6088244068, rel=1e-9)
    assert r.sessions.task_success == pytest.approx(0.69146186, rel=1e-7)
    saved = r.to_json()["savings"]["uniform"]
    assert saved["bf16"]["task_success"] == pytest.approx(0.8020082437, rel=1e-9)


def test_a_uniform_fleets_task_success_is_that_fleets_own_run():
    """Same definition and basis: the routed run's estimate for all bf16 equals the task
    success of the scenario run with bf16 alone (its own sessions.task_success)."""
    alone = _one_tier("bf16")
    uniform = {b.tier: b for b in _agentic(False).savings.uniform}
    assert uniform["bf16"].task_success == pytest.approx(alone.sessions.task_success, rel=1e-12)
    assert uniform["bf16"].accuracy == pytest.approx(alone.accuracy, rel=1e-12)


def test_no_sessions_no_task_success(tmp_path, capsys):
    """A run without sessions writes no new key, and its table has no task success column."""
    from tiersim.cli import main

    capsys.readouterr()
    assert main(["run", "tiny", "--baselines", "--out", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert all("task_success" not in u for u in data["savings"]["uniform"].values())
    assert "task success" not in out


def test_the_console_table_shows_each_fleets_task_success(tmp_path, capsys):
    """The uniform-fleets table of ``tiersim run agentic --baselines`` has a task success
    column: each uniform fleet's, and the routed fleet's own (modelled)."""
    from tiersim.cli import main

    capsys.readouterr()
    assert (
        main(["run", str(AGENTIC), "--baselines", "--out", str(tmp_path / "a"), "--no-report"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("uniform fleets"))
    table = lines[start : start + 12]
    cells = [
        [c.strip() for c in line.strip("│┃ ").split("│" if "│" in line else "┃")]
        for line in table
        if line.startswith(("│", "┃"))
    ]
    assert cells[1] == [
        "fleet",
        "replicas x GPUs",
        "meets SLOs",
        "meets floor",
        "accuracy",
        "task success",
        "cost USD",
    ]
    rows = {row[0]: row for row in cells[2:]}
    assert rows["all fp8"] == ["all fp8", "1 x 1", "yes", "no", "92.04 %", "60.88 %", "0.352"]
    assert rows["all bf16"] == ["all bf16", "1 x 1", "yes", "yes", "96.40 %", "80.20 %", "0.363"]
    assert rows["routed (this run)"][4:6] == ["94.02 %", "69.15 %"]


def test_the_report_table_shows_each_fleets_task_success():
    """The report's savings table: a task success column where the run has sessions."""
    from tiersim.report.page import savings_section

    section = savings_section(_agentic(True))
    assert "<th>task success</th>" in section
    assert "0.8020" in section and "0.6088" in section and "0.6915" in section


def test_an_old_summary_reads_back_without_it(tmp_path):
    """The agentic golden as written before the key (the key taken out) reads back: no task
    success."""
    import json

    from tiersim.results import RunResult

    data = json.loads((Path(__file__).parent / "golden" / "agentic_summary.json").read_text())
    for fleet in data["savings"]["uniform"].values():
        del fleet["task_success"]  # the golden gained it in round 57
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(data))
    old = RunResult.read(path)
    assert all(b.task_success is None for b in old.savings.uniform)
    assert all("task_success" not in v for v in old.to_json()["savings"]["uniform"].values())


@given(st.lists(st.tuples(st.integers(0, 5), st.floats(0, 1)), min_size=1, max_size=30))
def test_task_success_is_the_mean_of_each_tasks_product(steps):
    """The helper's definition, as session_result's: mean over tasks of the steps' product."""
    from tiersim.session_metrics import task_success

    df = pd.DataFrame({"session_id": [s for s, _ in steps], "follows_id": -1})
    values = np.array([v for _, v in steps])
    by_task: dict[int, float] = {}
    for s, v in steps:
        by_task[s] = by_task.get(s, 1.0) * v
    assert task_success(df, values) == pytest.approx(np.mean(list(by_task.values())))
    assert task_success(df.drop(columns="follows_id"), values) is None


# ------------------------------------------------------------ the plan


def test_the_plan_gives_each_designs_task_success(tmp_path, capsys):
    """plan.json gives each design's task success, and the console a line of the plan's
    beside the uniform fleets' (agentic.yaml, no floor: the plan is all fp8, modelled)."""
    from tiersim.cli import main

    capsys.readouterr()
    out = tmp_path / "p"
    assert main(["plan", str(AGENTIC), "--out", str(out), "--check-seeds", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  task success: plan 60.88%; uniform bf16 80.20% (modelled)" in lines
    data = json.loads((out / "plan.json").read_text())
    assert data["plan"]["task_success"] == pytest.approx(0.6088244068, rel=1e-9)
    uniform = {u["design"]: u["task_success"] for u in data["uniform"]}
    assert uniform["bf16"] == pytest.approx(0.8020082437, rel=1e-9)
    routed = {r["design"]: r for r in data["runners_up"]}["fp8+bf16"]
    assert routed["task_success"] == pytest.approx(0.69146186, rel=1e-7)
    assert (
        "task success: plan 60.88%; uniform bf16 80.20% (modelled)"
        in (out / "report.html").read_text()
    )


def test_the_plan_line_against_a_distinct_baseline():
    """Against a baseline that is not the plan: that baseline first, then the others; none
    without sessions."""
    from tiersim.results_plan_lines import task_line

    chosen = {
        "design": "fp8+bf16",
        "task_success": 0.6914618,
        "savings": {"baseline_uniform_design": "bf16"},
    }
    uniform = [
        {"design": "fp8", "task_success": 0.6088244},
        {"design": "bf16", "task_success": 0.8020082},
        {"design": "w4", "feasible": False},
    ]
    assert task_line(chosen, uniform) == (
        "task success: plan 69.15% vs uniform bf16 80.20%; uniform fp8 60.88% (modelled)"
    )
    assert task_line({"design": "fp8", "accuracy": 0.9}, uniform) is None


def test_tiny_plan_has_no_task_success(tmp_path, capsys):
    """No sessions: no task_success in plan.json, no task line."""
    from tiersim.cli import main

    capsys.readouterr()
    out = tmp_path / "p"
    assert main(["plan", "tiny", "--out", str(out), "--check-seeds", "0", "--no-report"]) == 0
    assert "task success" not in capsys.readouterr().out
    data = json.loads((out / "plan.json").read_text())
    assert "task_success" not in data["plan"]
    assert all("task_success" not in u for u in data["uniform"])
