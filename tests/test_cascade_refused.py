"""A cascade whose first tier refuses a request at admission (longer than its context, or more
KV than a replica holds) sends it on at once to its escalation tier, as a cascade client does on
that immediate refusal; it is dropped only when that tier refuses it too. The refused pass ran
nothing and costs nothing (found by a tester: 112 of 200 requests dropped, none escalated, all
counted as false positives)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml

from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel
from tiersim.runner import run_with_requests
from tiersim.scenario import load_scenario


def _run(tmp_path, cheap_len: int, top_len: int | None = None, cost_model="fixed_per_request"):
    """Four requests through a perfect-verifier cascade (w4a16 -> bf16): two short ones the
    cheap tier answers right, one long one it would answer right (and the top tier wrong), one
    long one it would get wrong; the cheap tier's context is ``cheap_len`` tokens, the top
    tier's ``top_len``; a pass costs $1 on the cheap tier, $5 on the top one."""
    pd.DataFrame({"request_id": [0, 1, 2, 3], "arrival_s": [0.0, 0.1, 0.2, 0.3],
                  "input_tokens": [100, 100, 900, 900], "output_tokens": [20, 20, 50, 50],
                  "correct_w4a16": [1.0, 1.0, 1.0, 0.0],
                  "correct_bf16": [1.0, 1.0, 0.0, 1.0]}).to_csv(tmp_path / "t.csv", index=False)
    doc = tiny_doc(trace={"path": "t.csv", "format": "canonical"},
                   workload={"difficulty": {"kind": "labels"}}, cost_model=cost_model,
                   router={"policy": "cascade", "cascade": {"signal_noise": 0.0}})
    doc["tiers"][0].update(scheduler={"max_model_len": cheap_len}, cost_per_request_usd=1.0)
    doc["tiers"][1]["cost_per_request_usd"] = 5.0
    if top_len is not None:
        doc["tiers"][1]["scheduler"] = {"max_model_len": top_len}
    path = write_yaml(tmp_path / "s.yaml", doc)
    return run_with_requests(load_scenario(path))


def test_a_refused_first_pass_goes_on_to_the_escalation_tier(tmp_path):
    run, requests = _run(tmp_path, cheap_len=500)
    rows = requests.frame()
    assert run.dropped == 0
    assert rows["final_tier"].tolist() == ["w4a16", "w4a16", "bf16", "bf16"]
    assert rows["escalated"].tolist() == [False, False, True, True]
    assert rows["refused"].tolist() == [False, False, True, True]
    assert run.router.escalation_rate == 0.5
    assert run.router.escalation_refused_rate == 0.5
    assert run.to_json()["router"]["escalation_refused_rate"] == 0.5
    assert run.accuracy == 0.75 and run.router.fpr == 0.0  # answered by the top tier
    # the refused pass costs nothing: one cheap pass each for the short ones, one top pass each
    # for the long ones; the tiers add up to the headline
    assert rows["cost_usd"].tolist() == [1.0, 1.0, 5.0, 5.0]
    passes = {t.name: t.passes for t in run.tiers}
    assert passes == {"w4a16": 2, "bf16": 2}
    assert sum(t.cost_usd for t in run.tiers) == pytest.approx(run.cost_usd) == 12.0


def test_a_request_both_tiers_refuse_is_dropped_by_the_last_one(tmp_path):
    run, requests = _run(tmp_path, cheap_len=500, top_len=500)
    rows = requests.frame()
    assert run.dropped == 2
    assert rows["completed"].tolist() == [True, True, False, False]
    assert rows["final_tier"].tolist() == ["w4a16", "w4a16", "bf16", "bf16"]
    assert rows["refused"].tolist() == [False, False, True, True]
    assert {t.name: t.dropped for t in run.tiers} == {"w4a16": None, "bf16": 2}
    assert {t.name: t.passes for t in run.tiers} == {"w4a16": 2, "bf16": 0}
    assert run.cost_usd == 2.0 and rows["cost_usd"].tolist() == [1.0, 1.0, 0.0, 0.0]


def test_no_refusal_leaves_the_summary_without_the_refused_rate(tmp_path):
    run, requests = _run(tmp_path, cheap_len=2000)
    assert run.router.escalation_rate == 0.25  # the wrong answer, on confidence
    assert run.router.escalation_refused_rate is None
    assert "escalation_refused_rate" not in run.to_json()["router"]
    assert requests.frame()["refused"].tolist() == [False] * 4


def _spec(name: str, max_model_len: int = 0) -> TierSpec:
    return TierSpec(name, 1, 2000, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=16, max_num_batched_tokens=512,
                                    max_model_len=max_model_len))


def test_the_engine_sends_a_refused_pass_on_at_once_and_charges_it_nothing():
    work = Workload(arrival_s=np.array([0.0, 1.0]), input_tokens=np.array([100, 900]),
                    output_tokens=np.array([10, 10]), tier=np.array([0, 0]),
                    escalate_to=np.array([-1, -1]), refused_to=np.array([1, 1]))
    res = simulate([_spec("cheap", max_model_len=500), _spec("top")], work)
    assert res.refused.tolist() == [False, True]
    assert res.escalated.tolist() == [False, True]
    assert res.final_tier.tolist() == [0, 1] and not res.dropped.any()
    assert res.gpu_s_first[1] == 0.0 and res.gpu_s_final[1] > 0.0
    assert res.first_token_s[1] > 1.0 and res.arrival_s[1] == 1.0  # from its own arrival


@pytest.mark.parametrize("cost_model", ["fixed_per_request", "provisioned"])
def test_a_plan_judges_the_design_as_the_run_serves_it(tmp_path, cost_model):
    """The planner simulates a cascade's refused requests as the run does: sent on, answered
    by the top tier, the refused pass not charged."""
    from tiersim.plan.evaluate import Design, SimEvaluator

    run, _ = _run(tmp_path, cheap_len=500, cost_model=cost_model)
    scenario = load_scenario(tmp_path / "s.yaml")
    got = SimEvaluator(scenario, str(tmp_path / "s.yaml")).evaluate(
        Design(("w4a16", "bf16"), (1, 1)), {"w4a16": 1, "bf16": 1})
    assert (got.dropped, got.accuracy) == (run.dropped, run.accuracy) == (0, 0.75)
    assert got.cost_usd == pytest.approx(run.cost_usd, rel=1e-9)


def _dropped_note(tmp_path, rows) -> str:
    """The dropped-requests note of a perfect-verifier cascade (w4a16 -> bf16) over ``rows``
    (input tokens, output tokens, right on the cheap tier), the cheap tier's context 1,200
    tokens and the top tier's 1,000. Routing by capability (round 35) cancels an escalation the
    top tier cannot hold where the cheap tier holds the request; it is switched off here, so the
    top tier refuses it after its first pass, as it refuses one larger than its KV cache."""
    inputs, outputs, right = zip(*rows, strict=True)
    n = len(rows)
    pd.DataFrame({"request_id": range(n), "arrival_s": np.arange(n) * 0.1,
                  "input_tokens": inputs, "output_tokens": outputs, "correct_w4a16": right,
                  "correct_bf16": [1.0] * n}).to_csv(tmp_path / "t.csv", index=False)
    doc = tiny_doc(trace={"path": "t.csv", "format": "canonical"},
                   workload={"difficulty": {"kind": "labels"}},
                   router={"policy": "cascade", "cascade": {"signal_noise": 0.0}})
    doc["tiers"][0]["scheduler"] = {"max_model_len": 1200}
    doc["tiers"][1]["scheduler"] = {"max_model_len": 1000}
    path = write_yaml(tmp_path / "s.yaml", doc)
    with mock.patch("tiersim.routing.base.by_capability", lambda a, df, tiers: a):
        run, _ = run_with_requests(load_scenario(path))
    return next(n for n in run.notes if "were dropped" in n)


def test_the_dropped_note_says_an_escalation_the_second_tier_dropped_had_its_first_pass(
        tmp_path):
    """Before: "2 of 3 requests were dropped, never served", though the cheap tier ran both
    (and was paid for them) before the top tier refused their escalations."""
    note = _dropped_note(tmp_path, [(500, 600, 0.0), (500, 600, 0.0), (100, 10, 1.0)])
    assert note.endswith(
        "2 of 3 requests were dropped (2 longer (prompt + output) than their tier's context, "
        "up to 1,100 tokens), each an escalation its second tier refused after its first pass "
        "ran: answered by no tier, that first pass paid for; they count as dropped in every "
        "figure; the first is "
        "request_id 0 (1,100 tokens on tier bf16, which serves at most 1,000, its "
        "scheduler.max_model_len): raise that (up to its model's context), or shorten or "
        "remove such rows")


def test_the_dropped_note_counts_first_passes_that_ran_apart(tmp_path):
    note = _dropped_note(tmp_path, [(500, 600, 0.0), (1500, 10, 1.0), (100, 10, 1.0)])
    assert note.endswith(
        "2 of 3 requests were dropped (2 longer (prompt + output) than their tier's context, "
        "up to 1,510 tokens): 1 an escalation its second tier refused after its first pass ran "
        "(answered by no tier, that first pass paid for), 1 never served; they count as "
        "dropped in every figure; the first is "
        "request_id 0 (1,100 tokens on tier bf16, which serves at most 1,000, its "
        "scheduler.max_model_len): raise that (up to its model's context), or shorten or "
        "remove such rows")


def test_the_estimated_saving_prices_a_refused_request_as_one_pass_on_its_second_tier(
        tmp_path):
    """The estimate (no simulated baselines) scales this run's per-token costs: a request the
    cheap tier refused ran one pass, on the top tier, and is priced so. Before, it counted as
    an escalation (a cheap pass that never ran, and no single pass on the top tier), so the
    top tier's uniform cost came from the run-wide scale instead of its own rate."""
    run, requests = _run(tmp_path, cheap_len=500, cost_model="attributed")
    rows = requests.frame()
    tokens = (rows["input_tokens"] + rows["output_tokens"]).to_numpy(float)
    cost = rows["cost_usd"].to_numpy(float)
    top = rows["refused"].to_numpy(bool)  # each answered by bf16 in its only pass
    uniform = {u.tier: u.cost_usd for u in run.savings.uniform}
    assert run.savings.method == "estimated"
    assert uniform["bf16"] == pytest.approx(cost[top].sum() / tokens[top].sum() * tokens.sum())
    # a uniform w4a16 fleet at this context cannot serve the refused requests at any size:
    # no estimate, as the simulated baseline finds it infeasible (test_round23_extremes)
    w4a16 = next(u for u in run.savings.uniform if u.tier == "w4a16")
    assert uniform["w4a16"] is None and "longer (prompt + output) than w4a16's" in w4a16.infeasible
