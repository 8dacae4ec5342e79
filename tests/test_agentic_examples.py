"""The agentic, response-cache and cross-model cascade examples: golden summaries, and the
properties each example is there to show.

Regenerate the golden files after a deliberate model change and review the diff:

    TIERSIM_REGEN_GOLDEN=1 python -m pytest tests/test_agentic_examples.py
"""

from __future__ import annotations

import json
import os

import pytest
from conftest import REPO
from test_golden import differences

from tiersim.errors import ScenarioError
from tiersim.fleet import build_fleet
from tiersim.results import RunResult
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario, scenario_from_dict

SCENARIOS = REPO / "tiersim" / "scenarios"
EXAMPLES = ["agentic", "response_cache", "cascade_models"]
_RUNS: dict[str, RunResult] = {}


def run(name: str) -> RunResult:
    """The example's run (once per test session)."""
    if name not in _RUNS:
        path = SCENARIOS / f"{name}.yaml"
        _RUNS[name] = run_scenario(load_scenario(path), scenario_path=path)
    return _RUNS[name]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_matches_its_golden_summary(name):
    """summary.json of each example against the committed one (floats to 1e-6 relative)."""
    golden = REPO / "tests" / "golden" / f"{name}_summary.json"
    result = run(name)
    if os.environ.get("TIERSIM_REGEN_GOLDEN"):
        golden.write_text(result.dumps())
    expected = RunResult.read(golden)
    diffs = differences(expected.to_json(), result.to_json())
    assert not diffs, f"{name} summary moved (regenerate if intended):\n" + "\n".join(diffs[:20])
    assert expected.to_json() == json.loads(golden.read_text())  # sections read back whole


def test_agentic_tasks_compound_errors_and_wait_for_their_steps():
    """Task success is below per-request accuracy (errors compound); a task lasts longer than
    its requests; the step map put planning and final answers on the strong tier."""
    s = run("agentic").sessions
    assert s is not None and s.tasks == 150
    assert s.task_success < s.per_request_accuracy - 0.1
    assert s.success_misjudged_by == pytest.approx(s.per_request_accuracy - s.task_success)
    assert s.latency_ratio_p50 > s.steps_per_task_mean  # steps plus tool time
    kinds = {k.step_type: k for k in s.step_types}
    assert kinds["planning"].final_tier_shares == {"bf16": 1.0}
    assert kinds["tool_call"].final_tier_shares == {"fp8": 1.0}
    assert 0 < kinds["code"].final_tier_shares.get("bf16", 0) < 1  # the classifier's split
    assert any(t.prefix_hit_rate and t.prefix_hit_rate > 0.3 for t in run("agentic").tiers)


def test_response_cache_answers_hits_without_gpu_time():
    """The cache answers its hits; the fleet serves the rest; latency over all requests falls."""
    r = run("response_cache")
    c = r.response_cache
    assert c is not None and c.hits > 0 and r.requests == c.requests - c.hits
    assert c.gpu_hours_busy < c.gpu_hours_busy_without
    assert c.e2e_mean_s < c.e2e_mean_without_s


def test_cascade_models_tiers_serve_their_own_models():
    """Each tier built from its own model: different KV capacity and step times; the small
    model's tier reports its model."""
    path = SCENARIOS / "cascade_models.yaml"
    fleet = build_fleet(load_scenario(path))
    small, large = fleet.tiers
    assert small.step_model.step_time is not large.step_model.step_time
    assert small.num_blocks != large.num_blocks
    assert [t.model for t in run("cascade_models").tiers] == ["Llama-3.1-8B", "Llama-3.1-70B"]
    assert 0 < run("cascade_models").router.escalation_rate < 1


def _scenario(**tier) -> dict:
    base = {"name": "x", "trace": {"path": "azure2023_conv.parquet"},
            "tiers": [{"name": "a", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 1,
                       **tier}]}
    return base


def test_tier_model_errors_name_the_tier():
    """An unknown tier model and a tier model without accuracy are one-line errors."""
    with pytest.raises(ScenarioError, match=r"tiers\[0\]\.model: .*no-such-model"):
        scenario_from_dict(_scenario(model="no-such-model", accuracy=0.9), "s.yaml")
    with pytest.raises(ScenarioError, match=r"tiers\[0\]\.accuracy: tier 'a' serves its own"):
        scenario_from_dict(_scenario(model="Llama-3.1-8B"), "s.yaml")


def test_report_and_printout_show_the_agentic_sections(tmp_path):
    """The HTML report and `tiersim run` show per-task beside per-request figures, the step
    types and the response cache, with the run's numbers."""
    import io

    from rich.console import Console

    from tiersim.cli.run import agentic_tables
    from tiersim.report.page import agentic_section, fmt

    agentic, cached = run("agentic"), run("response_cache")
    page = agentic_section(agentic)
    assert "per request vs per task" in page and "planning" in page
    assert fmt(agentic.sessions.task_success) in page  # 3 figures, as tiersim run prints it
    assert "Response cache" in agentic_section(cached)
    assert agentic_section(run("cascade_models")) == ""
    text = io.StringIO()
    console = Console(file=text, width=160)
    for table in agentic_tables(cached):
        console.print(table)
    assert f"hit rate {cached.response_cache.hit_rate:.1%}" in text.getvalue()


def test_requests_table_names_each_requests_task_and_step(tmp_path):
    """requests.parquet carries session_id, step and step_type for agentic traffic, and in it
    a step never arrives before its predecessor in the same task has finished."""
    import pandas as pd

    from tiersim.cli import main

    out = tmp_path / "agentic"
    assert main(["run", str(REPO / "scenarios" / "agentic.yaml"), "--out", str(out),
                 "--no-report", "--no-baselines"]) == 0
    table = pd.read_parquet(out / "requests.parquet")
    assert list(table.columns[-4:]) == ["session_id", "step", "step_type",
                                        "difficulty_class"]  # two_type: each class, last
    ordered = table.sort_values(["session_id", "step"])
    before = ordered.groupby("session_id")["finish_s"].shift()
    later = before.notna()
    assert later.sum() == len(table) - 150
    assert (ordered["arrival_s"][later] >= before[later] - 1e-9).all()
