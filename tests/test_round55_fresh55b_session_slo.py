"""Round 55, fresh55b: an SLO per agent task (``slo.session_p99_s``, ``--slo-session-p99``).

An agent's user waits for the whole task, its first step's arrival to its last step's finish
(the ``sessions`` block's ``task_latency_p99_s``). The limit is held by a run (meets SLOs, the
uniform baselines sized to it) and by a plan (every design), with the planned run's own task
latency equal to the plan's figure to summary.json's digits; traffic without sessions is
refused in one line. Every latency here is modelled (the session generator's 60 tasks of
``agentic.yaml``, Qwen3-Coder-30B-A3B on H200).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import TINY, agentic_file, run_cli


@pytest.fixture(scope="module")
def run_60(tmp_path_factory):
    folder = tmp_path_factory.mktemp("session_run")
    out = run_cli("run", str(agentic_file(folder, session_p99_s=60)), "--out", str(folder / "out"))
    assert out.returncode == 0, out.stderr
    return folder / "out", out.stdout


def test_a_run_over_the_task_limit_misses_its_slos(run_60):
    folder, stdout = run_60
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["slo_session_p99_s"] == 60
    assert round(summary["sessions"]["task_latency_p99_s"], 2) == 69.57
    assert summary["savings"]["routed_slo_met"] is False  # its TTFT and TPOT are within theirs
    # by hand over requests.parquet: the run's task latency, first arrival to last finish
    req = pd.read_parquet(folder / "requests.parquet")
    assert "session_id" in req.columns
    g = req.groupby("session_id")
    task = (g["finish_s"].max() - g["arrival_s"].min()).to_numpy()
    assert float(pd.Series(task).quantile(0.99)) == pytest.approx(
        summary["sessions"]["task_latency_p99_s"], rel=1e-9)
    # the uniform baselines are sized to it: each meets it
    assert all(u["slo_met"] for u in summary["savings"]["uniform"].values())
    text = " ".join(stdout.split())
    assert "task latency p99 SLO │ 60.0 s │ scenario (slo.session_p99_s)" in text
    from tiersim.results import RunResult

    assert RunResult.from_json(summary).missed_words() == \
        "its SLOs (task latency p99 69.6 s over its 60 s)"  # the saving's "not comparable"


def test_a_plan_sizes_to_the_task_limit_and_its_run_agrees(tmp_path):
    path = agentic_file(tmp_path, session_p99_s=60)
    out = run_cli("plan", str(path), "--check-seeds", "0", "--out", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "  session_p99_s: 58.9 vs limit 60 (modelled)" in lines
    assert "  one fewer fp8: misses: session_p99_s 70.0 vs limit 60" in lines
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["constraints"]["session_p99_s"] == 60
    assert plan["plan"]["replicas"] == {"fp8": 2}
    summary = json.loads((tmp_path / "p" / "summary.json").read_text())
    # the planned run's own task latency is the plan's figure, to summary.json's digits
    assert summary["sessions"]["task_latency_p99_s"] == \
        plan["plan"]["margins"]["session_p99_s"]["value"]
    assert summary["slo_session_p99_s"] == 60
    assert "  session_p99_s: 60.0\n" in (tmp_path / "p" / "scenario.yaml").read_text()


NO_SESSIONS = ("the traffic has no agent sessions to hold it over (a trace with session_id and "
               "step columns, or workload.sessions.source: generate); ")


def test_a_task_limit_without_sessions_is_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(TINY.read_text().replace("  tpot_p99_s: 0.1\n",
                                             "  tpot_p99_s: 0.1\n  session_p99_s: 60\n"))
    for command in ("run", "plan"):
        out = run_cli(command, str(path), "--out", str(tmp_path / command))
        assert out.returncode == 1 and "Traceback" not in out.stderr
        assert out.stderr.strip().splitlines()[-1].endswith(
            "slo.session_p99_s: " + NO_SESSIONS + "remove it, or hold each request with "
            "slo.e2e_p99_s"), out.stderr
        assert not (tmp_path / command).exists()
    out = run_cli("plan", str(TINY), "--slo-session-p99", "60", "--out", str(tmp_path / "f"))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines()[-1] == (
        f"Error: --slo-session-p99: {TINY}: " + NO_SESSIONS + "leave the flag out, or hold each "
        "request with --slo-e2e-p99")
