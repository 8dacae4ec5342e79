"""Round 55, check55: the uniform fleets' task latency p99, where a task limit is held.

A run or plan holding ``slo.session_p99_s`` sizes its uniform fleets to it (one FP8 replica
misses it at 70.0 s, two meet it at 58.9 s), yet the p99 line under the uniform fleets and
summary.json's ``savings.uniform`` gave no fleet's task latency: the figure that set the
sizes was nowhere beside them. The line now gives it after the end-to-end figure ("p99 TTFT /
TPOT / end-to-end / task latency (SLOs ... / 60.0 s)"), summary.json each sized fleet's
``session_p99_s``, and the report's table of uniform fleets a column; none of it where no task
limit is set.

Every latency here is modelled: the session generator's 60 tasks of ``agentic.yaml``
(Qwen3-Coder-30B-A3B on H200). Checked by hand (check55, 2026-12-07) with ``tiersim run`` of
one-tier copies and numpy over their requests.parquet: task latency p99 (first arrival to
last finish per ``session_id``) FP8 2 x 1 58.94 s, BF16 4 x 1 56.74 s (BF16 3 x 1: 60.94 s,
over), the routed FP8 1 + BF16 1 69.57 s.
"""

from __future__ import annotations

import json

import pytest
from conftest import agentic_file, run_cli


@pytest.fixture(scope="module")
def run_both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("uniform_task")
    out = run_cli("run", str(agentic_file(folder, e2e_p99_s=30, session_p99_s=60)), "--out",
                  str(folder / "out"))
    assert out.returncode == 0, out.stderr
    return folder / "out", out.stdout


def test_the_runs_p99_line_gives_each_fleets_task_latency(run_both):
    folder, stdout = run_both
    assert ("p99 TTFT / TPOT / end-to-end / task latency (SLOs 2.00 s / 100 ms / 30.0 s / "
            "60.0 s): all fp8 0.158 s / 10.4 ms / 8.67 s / 58.9 s; all bf16 0.169 s / 9.78 ms / "
            "7.16 s / 56.7 s; routed (this run) 0.168 s / 13.4 ms / 13.7 s / 69.6 s"
            ) in " ".join(stdout.split())
    summary = json.loads((folder / "summary.json").read_text())
    uniform = summary["savings"]["uniform"]
    assert round(uniform["fp8"]["session_p99_s"], 2) == 58.94
    assert round(uniform["bf16"]["session_p99_s"], 2) == 56.74
    assert all(u["session_p99_s"] <= 60 for u in uniform.values())  # sized to it


def test_the_reports_uniform_table_gives_it_too(run_both):
    folder, _ = run_both
    page = (folder / "report.html").read_text()
    assert "<th>end-to-end p99</th><th>task latency p99</th>" in page
    assert "<td>8.67 s</td><td>58.9 s</td>" in page  # all fp8
    assert "<td>13.7 s</td><td>69.6 s</td>" in page  # routed (this run)


def test_a_task_limit_alone_gives_the_task_latency_alone():
    from tiersim.results import p99_words

    assert p99_words([("all fp8", 0.158, 0.0104, None, 58.94)], 2.0, 0.1, None, 60.0) == (
        "p99 TTFT / TPOT / task latency (SLOs 2.00 s / 100 ms / 60.0 s): all fp8 0.158 s / "
        "10.4 ms / 58.9 s")
    assert p99_words([("all fp8", 0.158, 0.0104)], 2.0, 0.1) == (
        "p99 TTFT / TPOT (SLOs 2.00 s / 100 ms): all fp8 0.158 s / 10.4 ms")


def test_a_run_without_a_task_limit_gives_no_task_figure(tmp_path):
    out = run_cli("run", str(agentic_file(tmp_path, e2e_p99_s=30)), "--out", str(tmp_path / "o"),
                  "--no-report")
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert all("session_p99_s" not in u for u in summary["savings"]["uniform"].values())
    assert "p99 TTFT / TPOT / end-to-end (SLOs 2.00 s / 100 ms / 30.0 s): all fp8" in \
        " ".join(out.stdout.split())


def test_the_plans_p99_line_gives_it(tmp_path):
    out = run_cli("plan", str(agentic_file(tmp_path, session_p99_s=60)), "--slo-e2e-p99", "10",
                  "--check-seeds", "0", "--no-report", "--out", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    assert ("  p99 TTFT / TPOT / end-to-end / task latency (SLOs 2.00 s / 100 ms / 10.0 s / "
            "60.0 s): uniform fp8 0.158 s / 10.4 ms / 8.67 s / 58.9 s; uniform bf16 0.169 s / "
            "9.78 ms / 7.16 s / 56.7 s; plan 0.158 s / 10.4 ms / 8.67 s / 58.9 s"
            ) in out.stdout.splitlines()
