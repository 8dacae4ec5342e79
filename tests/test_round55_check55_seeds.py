"""Round 55, check55: the seed check and ``--robust`` give the end-to-end and task p99s they
judge by.

A plan holding ``--slo-e2e-p99`` or ``--slo-session-p99`` judged its seed check and its
robust sizing on those p99s ("p99 task latency missed at seeds 1, 2") while its per-seed
figures, their ranges, the report's table of seeds and the robust "worst over" line gave only
TTFT, TPOT and accuracy: the figure that failed was nowhere to read. Each is now given where
its limit is set (and absent, the plan reading as before, where none is).

Every latency here is modelled: the session generator's 60 tasks of ``agentic.yaml``
(Qwen3-Coder-30B-A3B on H200), uniform FP8 2 x 1 GPU. Checked by hand (check55,
2026-12-07) with ``tiersim run`` of a one-tier copy at seeds 0, 1, 2 and numpy over its
requests.parquet: p99 end-to-end 8.669, 9.599, 8.622 s and p99 task latency (first arrival to
last finish per ``session_id``) 58.94, 64.03, 77.89 s.
"""

from __future__ import annotations

import json

import pytest
from conftest import TINY, agentic_file, run_cli


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seeds")
    path = agentic_file(folder, session_p99_s=60)
    out = run_cli("plan", str(path), "--slo-e2e-p99", "10", "--check-seeds", "2",
                  "--out", str(folder / "p"))
    assert out.returncode == 0, out.stderr
    return folder / "p", out.stdout


def test_the_seed_check_gives_each_seeds_end_to_end_and_task_p99(checked):
    folder, stdout = checked
    assert ("    p99 TTFT 0.153 s to 0.158 s, p99 TPOT 0.00926 s to 0.0108 s, p99 end-to-end "
            "8.62 s to 9.60 s, p99 task latency 58.9 s to 77.9 s, expected accuracy 90.70% to "
            "93.20%") in stdout.splitlines()
    assert ("    the fleet is not robust to the seed's draws: p99 task latency missed at seeds "
            "1, 2 (`tiersim plan --robust` sizes for every seed checked)") in stdout.splitlines()
    check = json.loads((folder / "plan.json").read_text())["seed_check"]
    rows = check["per_seed"]
    assert [round(r["e2e_p99_s"], 3) for r in rows] == [8.669, 9.599, 8.622]
    assert [round(r["session_p99_s"], 2) for r in rows] == [58.94, 64.03, 77.89]
    assert [r["missed"] for r in rows] == [[], ["session_p99_s"], ["session_p99_s"]]
    assert check["ranges"]["e2e_p99_s"] == [rows[2]["e2e_p99_s"], rows[1]["e2e_p99_s"]]
    assert check["ranges"]["session_p99_s"] == [rows[0]["session_p99_s"],
                                                rows[2]["session_p99_s"]]
    # the planned seed's figures are the plan's own
    margins = json.loads((folder / "plan.json").read_text())["plan"]["margins"]
    assert rows[0]["e2e_p99_s"] == margins["e2e_p99_s"]["value"]
    assert rows[0]["session_p99_s"] == margins["session_p99_s"]["value"]


def test_the_reports_table_of_seeds_gives_them_too(checked):
    folder, _ = checked
    page = (folder / "report.html").read_text()
    section = page[page.index("<h3>At other seeds</h3>"):]
    section = section[:section.index("</table>")]
    assert "<th>p99 end-to-end (s)</th><th>p99 task latency (s)</th>" in section
    assert "p99 end-to-end 8.62 s to 9.60 s, p99 task latency 58.9 s to 77.9 s" in section


def test_a_seed_rows_figure_is_read_strictly(checked):
    from tiersim.errors import TiersimError
    from tiersim.results import PlanResult

    folder, _ = checked
    doc = json.loads((folder / "plan.json").read_text())
    PlanResult.from_json(doc)  # as written: read
    doc["seed_check"]["per_seed"][1]["session_p99_s"] = "64 s"
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(doc)
    assert str(err.value) == (
        "plan.json: malformed plan ('plan.seed_check.per_seed[1].session_p99_s': input should "
        'be a valid number, got "64 s"); rerun `tiersim plan` to rewrite it')


def test_a_plan_without_the_limits_reads_and_prints_as_before(tmp_path):
    out = run_cli("plan", str(TINY), "--check-seeds", "1", "--out", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    check = json.loads((tmp_path / "p" / "plan.json").read_text())["seed_check"]
    assert all("e2e_p99_s" not in r and "session_p99_s" not in r for r in check["per_seed"])
    assert sorted(check["ranges"]) == ["accuracy", "tpot_p99_s", "ttft_p99_s",
                                       "vs_uniform_frac"]
    figures = [line for line in out.stdout.splitlines() if line.startswith("    p99 TTFT ")]
    assert len(figures) == 1 and "end-to-end" not in figures[0] and "task" not in figures[0]


def test_the_robust_line_names_the_seed_of_the_worst_end_to_end_and_task_p99(tmp_path):
    path = agentic_file(tmp_path, session_p99_s=60)
    out = run_cli("plan", str(path), "--slo-e2e-p99", "10", "--slo-session-p99", "80",
                  "--check-seeds", "2", "--robust", "--out", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    assert ("  robust (--robust): sized for seeds 0, 1, 2, each design and uniform fleet held "
            "to the SLOs at every one; figures are the worst over them: p99 TTFT at seed 0, p99 "
            "TPOT at seed 1, p99 end-to-end at seed 1, p99 task latency at seed 2, expected "
            "accuracy at seed 0, cost of the trace at seed 2; USD/hour the same at every seed"
            ) in out.stdout.splitlines()
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    robust = plan["robust"]
    assert [round(r["e2e_p99_s"], 3) for r in robust["per_seed"]] == [8.669, 9.599, 8.622]
    assert [round(r["session_p99_s"], 2) for r in robust["per_seed"]] == [58.94, 64.03, 77.89]
    assert robust["worst_seed"]["e2e_p99_s"] == 1
    assert robust["worst_seed"]["session_p99_s"] == 2
    # the worst of them is the plan's figure
    assert plan["plan"]["margins"]["session_p99_s"]["value"] == robust["per_seed"][2][
        "session_p99_s"]
    # the seed check reads the robust search's rows: the same figures
    assert [r["session_p99_s"] for r in plan["seed_check"]["per_seed"]] == [
        r["session_p99_s"] for r in robust["per_seed"]]
