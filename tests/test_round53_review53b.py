"""Round 53, review53b: an independent review of the round's changes.

Each test here failed before the fix committed after it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import norm

from tiersim.routing.quality import realised_quality


def _coverage(positives: int, negatives: int, d: float, samples: int, seed: int) -> float:
    """How often the interval ``router.quality`` gives holds the true AUROC, Phi(d / sqrt 2),
    of two unit Gaussian score classes ``d`` apart (trace labels: positive where the cheapest
    tier answers wrong)."""
    rng = np.random.default_rng(seed)
    true, held = norm.cdf(d / math.sqrt(2.0)), 0
    wrong = np.r_[np.ones(positives, bool), np.zeros(negatives, bool)]
    df = pd.DataFrame({"correct_fp8": (~wrong).astype(np.float32)})
    for _ in range(samples):
        score = d * wrong + rng.standard_normal(len(wrong))
        q = realised_quality(df, score, "fp8", "floor", True, None, None)
        lo, hi = q.auroc_ci95
        held += lo <= true <= hi
    return held / samples


def test_the_auroc_interval_holds_where_most_requests_are_positive():
    """Hanley and McNeil's standard error assumes exponential score classes, and is not
    symmetric in the two classes: where most requests are positive (a weak cheapest tier, or
    ``p_easy`` low) it is too narrow, and held the true AUROC in 86.8 % of 400 samples of
    900 positive, 100 negative (d = 1.5), and with the classes swapped in 98.5 %. DeLong's
    (nonparametric) variance held it in 95.3 % and 94.3 % (2026-12-07)."""
    assert _coverage(900, 100, 1.5, 300, 5) >= 0.925
    assert _coverage(100, 900, 1.5, 300, 6) <= 0.975


def test_a_fault_simulating_a_rejected_fleet_is_not_read_as_its_router_refused(monkeypatch):
    """The seed check's rejected fleets (``seed_check.rejected``) caught TiersimError and
    ValueError around the whole of ``evaluate`` (routing and simulation) and wrote any of them
    as ``missed: ["router"]``, "router refused": a fault of the simulation was hidden as a
    verdict. Only the routing's refusal is that verdict; anything else stops the check, as it
    stops the plan's own search (:meth:`tiersim.plan.planner.Planner._size`)."""
    from types import SimpleNamespace

    import pytest

    from tiersim.cli import plan_seeds
    from tiersim.plan import evaluate

    class Scenario:
        baselines = ()

        def model_copy(self, update):
            return self

    class Evaluator:
        def __init__(self, scenario, source, cost_model=None):
            self.slo = (None, None)

        def score_realised_if_read(self, settings):
            pass

        def routing(self, design):
            return None, None, 0.9

        def evaluate(self, design, replicas):
            raise ValueError("a fault of the simulation")

    monkeypatch.setattr(evaluate, "SimEvaluator", Evaluator)
    chosen = {"design": "bf16", "tiers": ["bf16"], "replicas": {"bf16": 3},
              "gpus_per_replica": {"bf16": 1}, "cost_usd": 2.0, "cost_per_hour_usd": 10.0,
              "accuracy": 0.9}
    cheap = {"design": "fp8", "tiers": ["fp8"], "replicas": {"fp8": 3},
             "gpus_per_replica": {"fp8": 1}, "cost_usd": 1.8, "cost_per_hour_usd": 9.0,
             "accuracy": 0.7, "feasible": False, "margins": {}}
    result = SimpleNamespace(plan=chosen, runners_up=[], uniform=[cheap],
                             cost_model="provisioned")
    c = SimpleNamespace(ttft_p99_s=1.0, tpot_p99_s=0.1, e2e_p99_s=None)
    with pytest.raises(ValueError, match="a fault of the simulation"):
        plan_seeds.rejected_check(Scenario(), result, "s.yaml", c, None, {2: (2.0, 10.0)})


def test_a_key_of_an_offload_level_written_a_level_too_high_is_told_the_list_item(tmp_path):
    """A key written a level too high names the block it belongs in (fresh53); where that
    block is a list of levels (``scheduler.kv_offload``) its fix wrote
    ``tiers[0].scheduler.kv_offload.capacity_gb``, a mapping, which the file then refuses as
    no list: the key is an item's, ``kv_offload[0].capacity_gb``."""
    import pytest
    from conftest import tiny_doc, write_yaml

    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    doc = tiny_doc(tiers=[{"name": "bf16", "precision": "bf16", "replicas": 1,
                           "cost_per_gpu_hour": 3.5,
                           "scheduler": {"enable_prefix_caching": True, "capacity_gb": 64}}])
    path = write_yaml(tmp_path / "s.yaml", doc)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value).endswith(
        "tiers[0].scheduler.capacity_gb: unknown key (a key of each item of 'kv_offload': "
        "write it as tiers[0].scheduler.kv_offload[0].capacity_gb)")


def test_an_aiperf_client_row_too_long_for_the_kv_cache_says_so():
    """``--aiperf-client`` replays the warm-up alone to find when it drains; a request too long
    for the replica's KV cache is dropped there, its finish NaN, and the measured phase then
    arrived at NaN: the row read "its replay failed: workload arrival_s must be finite ..."
    where every other client says the request exceeds the replica's KV cache."""
    import sys
    from pathlib import Path

    import pytest

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    import fidelity_silicon as fs

    from tiersim.engine import SchedulerLimits, TierSpec
    from tiersim.perf.base import LinearStepModel

    model = LinearStepModel(overhead=0.005, per_prefill_token=2e-5, per_decode_seq=1e-4,
                            per_context_token=1e-8)
    small = TierSpec("t", 1, 20, model, SchedulerLimits(enable_prefix_caching=True))  # 320
    for proto in (fs.Protocol(per_client=3), fs.Protocol(**fs.AIPERF_CLIENT)):  # tokens
        with pytest.raises(fs.Unrepresentable, match="exceeds the replica's KV cache"):
            fs.replay(small, 400, 20, 4, proto)


def test_a_report_of_an_auroc_wrong_without_its_count_is_no_traceback(hand_edited_run, tmp_path,
                                                                      capsys):
    """``router.quality.wrong_positives`` may be null as read (``int | None``), and the
    console's line leaves its count out then; the report's row formatted it with ``:,`` and
    ended in a TypeError traceback on a summary whose ``auroc_wrong`` has no count."""
    import json

    from conftest import copy_folder
    from test_hostile_inputs import run_cli

    folder = copy_folder(hand_edited_run, tmp_path / "r")
    doc = json.loads((folder / "summary.json").read_text())
    doc["router"]["quality"].update({"auroc_wrong": 0.7, "auroc_wrong_ci95": [0.6, 0.8],
                                     "wrong_target": "the cheapest tier fp8 answering wrong",
                                     "wrong_positives": None})
    (folder / "summary.json").write_text(json.dumps(doc))
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err
    page = (folder / "report.html").read_text()
    assert ("<td>classifier AUROC for the cheapest tier fp8 answering wrong</td><td>0.700 (95% "
            "CI 0.600 - 0.800)</td><td>against the drawn correctness of 317 requests: what a "
            "routing error costs</td>") in page
