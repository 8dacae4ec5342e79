"""Round 53, fresh53 (a new user planning a cascade against uniform BF16).

A plan sized on realised draws (a cascade, chosen with ``--choose router.policy=cascade``) that
keeps one tier writes that tier with ``confusion: {fpr: 0, fnr: 0}``, so that a run of its
``scenario.yaml`` scores accuracy on the realised draws as the plan did. The seed check
simulates that scenario at the seeds after the plan's, but it used to score those seeds on the
expected accuracy (a one-tier scenario never counted as realised), under the plan's "accuracy
(realised draws)" label: seed 0 realised, seeds 1 and 2 expected, one range. The scenario is
tiny's FP8 + BF16 pair with illustrative per-class accuracies and a floor only BF16 meets.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def cascade_doc() -> dict:
    """Two tiers behind a cascade; only all-BF16 meets the 0.79 floor on realised draws."""
    doc = tiny_doc(name="cascade_seeds", seed=0, accuracy_floor=0.79,
                   accuracy_values="illustrative",
                   router={"policy": "cascade",
                           "cascade": {"from_tier": "fp8", "to_tier": "bf16",
                                       "threshold": 0.5, "signal_noise": 0.3}})
    doc["workload"] = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14}}
    doc["tiers"] = [
        {"name": "fp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.50,
         "accuracy": {"easy": 0.99, "hard": 0.70, "hopeless": 0.0}},
        {"name": "bf16", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 3.50,
         "accuracy": {"easy": 1.0, "hard": 0.80, "hopeless": 0.0}},
    ]
    return doc


def cli(*args: str) -> tuple[int, str]:
    """``tiersim ARGS``: (exit status, stdout)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue()


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """The cascade scenario planned with two seeds checked: its plan.json and folder."""
    tmp = tmp_path_factory.mktemp("cascade_seeds")
    path = write_yaml(tmp / "s.yaml", cascade_doc())
    code, _ = cli("plan", str(path), "--choose", "router.policy=cascade", "--check-seeds", "2",
                  "--gpus-per-replica", "1", "--no-report", "--out", str(tmp / "p"))
    assert code == 0
    return json.loads((tmp / "p" / "plan.json").read_text()), tmp


def test_the_premise_a_one_tier_plan_scored_on_realised_draws(planned):
    """The plan keeps BF16 alone, scored on realised draws, and its scenario keeps that basis."""
    plan, tmp = planned
    assert list(plan["plan"]["replicas"]) == ["bf16"]
    assert plan["seed_check"]["accuracy_basis"] == "realised"
    assert "confusion:" in (tmp / "p" / "scenario.yaml").read_text()


def test_each_checked_seed_reads_what_a_run_of_the_planned_scenario_reads(planned):
    """At every seed of the check, the accuracy is the one ``tiersim run`` of the planned
    scenario.yaml at that seed prints (realised draws), not the expected one."""
    plan, tmp = planned
    text = (tmp / "p" / "scenario.yaml").read_text()
    for row in plan["seed_check"]["per_seed"]:
        seeded = tmp / f"seed{row['seed']}.yaml"
        seeded.write_text(text.replace("\nseed: 0\n", f"\nseed: {row['seed']}\n", 1))
        out = tmp / f"run{row['seed']}"
        code, _ = cli("run", str(seeded), "--no-baselines", "--no-report", "--out", str(out))
        assert code == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["router"]["basis"] == "realised"
        assert row["accuracy"] == pytest.approx(summary["accuracy"], abs=1e-9), row["seed"]


def test_a_sweep_whose_every_point_missed_its_slos_says_not_comparable(tmp_path):
    """A three-point sweep of ``router.cascade.signal_noise`` whose every point missed its
    p99 TTFT had no "saved vs uniform" column at all (no point had a saving figure), where
    each point's run prints "saved vs uniform ...: not comparable"; README promises the
    column's "not comparable". The column shows, and one with nothing to say stays out."""
    import pandas as pd

    from tiersim.report.load import ReportData
    from tiersim.report.page import point_verdicts, sweep_headline

    sweep = pd.DataFrame({
        "point_id": ["p0", "p1", "p2"], "status": ["ok"] * 3,
        "router.cascade.signal_noise": [0.0, 0.3, 0.6],
        "savings.routed_slo_met": [False] * 3, "savings.routed_floor_met": [True] * 3,
        "accuracy_floor": [0.79] * 3,
        "savings.vs_uniform_frac": [None] * 3, "savings.vs_uniform_usd": [None] * 3,
        "savings.saving_basis": ["per_hour"] * 3,
        "savings.baseline_uniform_tier": ["bf16"] * 3})
    assert point_verdicts(sweep) == {
        "meets SLOs": ["no"] * 3, "meets accuracy floor 79.0 %": ["yes"] * 3,
        "saved vs uniform": ["not comparable: misses its SLOs"] * 3}
    page = sweep_headline(ReportData(tmp_path, sweep=sweep,
                                     sweep_axes=["router.cascade.signal_noise"]))
    assert "<th>saved vs uniform</th>" in page
    assert "<td>not comparable: misses its SLOs</td>" in page
    met = sweep.assign(**{"savings.routed_slo_met": [True] * 3,
                          "savings.baseline_uniform_tier": [None] * 3})
    assert "saved vs uniform" not in point_verdicts(met)


def test_generated_sessions_say_their_requests_are_not_the_traces(tmp_path):
    """``workload.sessions.source: generate`` replaces the trace's rows, yet the request counts'
    source read "trace" on the console and in the report (and summary.json named the trace file
    alone), so a run naming Mooncake's trace read as a replay of it. The source now says the
    requests are generated; a trace's run writes no such field (its bytes are unchanged)."""
    from tiersim.results import RunResult

    words = ("generated sessions (workload.sessions.generate, illustrative shapes; the trace's "
             "rows are not replayed)")
    doc = tiny_doc(name="generated", workload={"sessions": {
        "source": "generate", "generate": {"tasks": 4, "task_rate_rps": 1.0}}})
    path = write_yaml(tmp_path / "g.yaml", doc)
    code, out = cli("run", str(path), "--no-baselines", "--out", str(tmp_path / "g"))
    assert code == 0
    row = next(line for line in out.splitlines() if "requests (completed / dropped)" in line)
    assert "generated sessions" in row and "│ trace " not in row
    summary = json.loads((tmp_path / "g" / "summary.json").read_text())
    assert summary["sources"]["requests"] == words
    assert RunResult.read(tmp_path / "g" / "summary.json").sources.requests == words
    page = (tmp_path / "g" / "report.html").read_text()
    assert ("<td>requests</td><td class=\"num\">"
            f"{summary['requests']:,}</td><td></td><td>generated sessions") in page
    trace = write_yaml(tmp_path / "t.yaml", tiny_doc(name="traced"))
    code, _ = cli("run", str(trace), "--no-baselines", "--no-report", "--out",
                  str(tmp_path / "t"))
    assert code == 0
    assert "requests" not in json.loads((tmp_path / "t" / "summary.json").read_text())["sources"]


@pytest.mark.parametrize(("put", "said"), [
    ({"router": {"policy": "cascade", "from_tier": "w4a16"}},
     "router.from_tier: unknown key (a key of 'cascade': write it as router.cascade.from_tier)"),
    ({"tiers": [{"name": "bf16", "precision": "bf16", "replicas": 1,
                 "cost_per_gpu_hour": 3.5, "enable_prefix_caching": True}]},
     "tiers[0].enable_prefix_caching: unknown key (a key of 'scheduler': write it as "
     "tiers[0].scheduler.enable_prefix_caching)"),
    ({"workload": {"sessions": {"source": "generate", "tasks": 20}}},
     "workload.sessions.tasks: unknown key (a key of 'generate': write it as "
     "workload.sessions.generate.tasks)"),
])
def test_a_key_written_a_level_too_high_is_told_where_it_belongs(tmp_path, put, said):
    """A cascade's ``from_tier`` written under ``router:`` read "did you mean 'tier'?" (the
    uniform router's key, a wrong fix), and ``enable_prefix_caching`` beside a tier's
    ``replicas`` or ``tasks`` beside ``source: generate`` listed every known key of that level
    without saying which block holds it. The one key below that has it is named."""
    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    path = write_yaml(tmp_path / "s.yaml", tiny_doc(**put))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value).endswith(said)
