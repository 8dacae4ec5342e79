"""The bundled example scenarios run from the CLI and report the router and the savings.

default.yaml (the planned fleet: uniform BF16), routing.yaml (lagrangian
with injected confusion) and cascade.yaml (nvfp4 first, escalate to bf16) each run once through
``python -m tiersim run`` into a temporary folder; the tests read its summary.json and
requests.parquet. The last test explains the tiny-scenario FPR report (issue 4): injected FPR
only moves requests whose realised answers needed the top tier.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, run_cli, tiny_doc, write_yaml

from tiersim import runner
from tiersim.routing.accuracy import needed_tier, realised_matrix
from tiersim.scenario import load_scenario

EXAMPLES = ("default", "routing", "cascade")
ROUTER_KEYS = ("policy", "fpr", "fnr", "escalation_rate", "silent_failure_rate")
SAVINGS_KEYS = ("routed_cost_usd", "baseline_uniform_tier", "vs_uniform_usd", "vs_uniform_frac",
                "static_split_cost_usd", "vs_static_split_usd", "vs_static_split_frac")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Per example: the CLI's completed process, its summary and its requests table."""
    out = {}
    for name in EXAMPLES:
        folder = tmp_path_factory.mktemp(name)
        proc = run_cli("run", str(REPO / "scenarios" / f"{name}.yaml"), "--out", str(folder),
                       "--no-report")
        summary = json.loads((folder / "summary.json").read_text()) if proc.returncode == 0 else {}
        requests = (pd.read_parquet(folder / "requests.parquet") if proc.returncode == 0
                    else pd.DataFrame())
        out[name] = (proc, summary, requests)
    return out


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_and_reports_router_and_savings(runs, name):
    proc, summary, _ = runs[name]
    assert proc.returncode == 0, proc.stderr
    router = summary["router"]
    assert set(ROUTER_KEYS) <= set(router)
    single = len(summary["tiers"]) == 1  # one tier: no request can be sent below or above
    for key in ROUTER_KEYS[1:]:
        if single and key in ("fpr", "fnr"):
            assert router[key] is None
            continue
        assert 0.0 <= router[key] <= 1.0, (key, router[key])
    savings = summary["savings"]
    assert set(SAVINGS_KEYS) <= set(savings)
    comparable = savings["routed_slo_met"] is not False and savings["routed_floor_met"] is not False
    for key in SAVINGS_KEYS:  # a saving over fleets held to what this one missed is none
        assert (savings[key] is None) == (key.startswith("vs_") and not comparable), key
    assert f"router ({router['policy']})" in proc.stdout
    assert summary["dropped"] == 0


def test_default_is_the_planned_fleet_and_its_saving_is_simulated(runs):
    """default.yaml is what `tiersim plan scenarios/plan_default.yaml` chose: FP8 10 + BF16 7,
    one GPU each, behind the floor router (p99 TPOT sets the size, through the host time of eager
    prefill steps, which no precision shortens; uniform FP8 misses the floor). It meets its SLOs
    and floor, and the saving the run prints is against the uniform BF16 fleet it sizes again
    by simulation: 18 x 1 GPU, one replica more, so 1/18 an hour."""
    _, summary, _ = runs["default"]
    shape = {n: (t["replicas"], t["gpus_per_replica"]) for n, t in summary["tiers"].items()}
    assert shape == {"fp8": (10, 1), "bf16": (7, 1)}
    assert summary["router"]["policy"] == "floor"
    assert summary["ttft_p99_s"] <= summary["slo_ttft_p99_s"]
    assert summary["tpot_p99_s"] <= summary["slo_tpot_p99_s"]
    assert summary["accuracy"] >= summary["accuracy_floor"]
    saved = summary["savings"]
    assert saved["method"] == "simulated" and saved["cost_model"] == "provisioned"
    assert saved["uniform"]["bf16"]["replicas"] == 18
    assert saved["uniform"]["bf16"]["gpus_per_replica"] == 1
    assert saved["vs_uniform_frac"] == pytest.approx(1 / 18, rel=1e-6)
    assert summary["cost_usd"] == summary["provisioned_cost_usd"] > summary["attributed_cost_usd"]


def test_the_run_notes_a_tier_over_an_slo_the_fleet_meets_as_the_plan_does(runs):
    """The default fleet meets its 0.1 s p99 TPOT (94.7 ms) while its BF16 tier, about half the
    requests, reads 110 ms: the plan said so, the run did not (round 38, helper review45)."""
    proc, summary, _ = runs["default"]
    text = " ".join(proc.stdout.split())
    bf16 = summary["tiers"]["bf16"]
    assert summary["tpot_p99_s"] <= 0.1 < bf16["tpot_p99_s"]
    assert ("note: tier bf16's own tpot_p99_s is 0.110 s (modelled), "
            "over the 0.1 s SLO, which the fleet's "
            "p99 meets (49% of the requests go to it)") in text
    assert "note: tier fp8's own" not in text


def test_routing_example_uses_several_tiers_and_realises_injected_errors(runs):
    _, summary, _ = runs["routing"]
    router = summary["router"]
    assert router["policy"] == "lagrangian"
    assert sum(share > 0 for share in router["first_tier_shares"].values()) >= 2
    assert router["fpr"] > 0 and router["silent_failure_rate"] > 0
    assert router["escalation_rate"] == 0.0


def test_cascade_escalates_and_escalated_requests_pay_both_passes(runs):
    _, summary, requests = runs["cascade"]
    router = summary["router"]
    assert router["policy"] == "cascade" and router["escalation_rate"] > 0
    assert router["escalation_rate"] == pytest.approx(requests["escalated"].mean())
    esc = requests[requests["escalated"]]
    assert (esc["tier"] == "nvfp4").all() and (esc["final_tier"] == "bf16").all()
    assert (requests.loc[~requests["escalated"], "final_tier"] == "nvfp4").all()
    # Per output token, a request that ran twice costs more than one that ran once.
    per_token = requests["cost_usd"] / requests["output_tokens"]
    assert per_token[requests["escalated"]].median() > per_token[~requests["escalated"]].median()


def oracle_on_tiny(tmp_path, fpr: float) -> tuple[np.ndarray, np.ndarray]:
    """Tiny scenario with the oracle and injected ``fpr``: first tiers and needed tiers."""
    doc = tiny_doc(router={"policy": "oracle", "confusion": {"fpr": fpr}})
    path = write_yaml(tmp_path / f"oracle_{fpr}.yaml", doc)
    scenario = load_scenario(path)
    infos = runner.tier_infos(scenario, [runner.step_model(scenario, t) for t in scenario.tiers])
    workload_rng, train_rng, router_rng, _ = (
        np.random.default_rng(s) for s in np.random.SeedSequence(scenario.seed).spawn(4))
    df = runner.prepare(runner.load_scenario_trace(scenario, str(path)), infos, scenario,
                        workload_rng, str(path)).df
    assignment = runner.route(scenario, df, infos, (train_rng, router_rng), str(path))
    return assignment.tier, needed_tier(realised_matrix(df, infos))


def test_injected_fpr_on_tiny_moves_only_requests_that_needed_bf16(tmp_path):
    # Reported: on tiny.yaml with the oracle, FPR 0 -> 0.3 left w4a16's share at 0. Not a bug:
    # with the prior accuracies (w4a16 93.4%, bf16 95.0%) and draws shared across tiers, only the
    # few requests right on bf16 and wrong on w4a16 needed bf16; FPR acts on those alone.
    tier0, need = oracle_on_tiny(tmp_path, 0.0)
    tier1, need1 = oracle_on_tiny(tmp_path, 1.0)
    assert (need == need1).all() and 0 < (need > 0).sum() < 0.05 * len(need)
    assert (tier0 == 1).all()
    assert ((tier1 == 0) == (need > 0)).all()
