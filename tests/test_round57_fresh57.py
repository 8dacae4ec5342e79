"""Round 57 (fresh57): a new user's pass over `tiersim sweep` of a router's false-positive rate.

1. The report's FPR figure was captioned "Each false positive saves money and silently loses
   accuracy" whatever its points cost. Under provisioned cost a sweep over
   ``router.confusion.fpr`` keeps its fleet, so every point costs the same (Llama-3.1-70B on
   Mooncake's trace, FP8 1 x 4 GPU + BF16 5 x 8 GPU behind the floor router: 154 USD/hour and
   73.5 USD per 1M output tokens at FPR 0, 0.05, 0.1 and 0.2, modelled) and its "cost saved"
   panel is a flat 0 % line under a caption that says the opposite. Where the plotted cost is
   the same at every point drawn the caption now says so, and what would price the errors.
2. `tiersim plan --gpus-per-replica 2` of that fleet (the user's TP2 replicas) found no fleet:
   "fp8@2: latency: more replicas do not help at 128 fp8 replicas: the p99 is set by what
   replicas cannot shorten (...) (ttft_p99_s 5.70 vs limit 3; ...) (tried fp8 on 2 GPUs per
   replica)", with no word that 4 and 8 GPUs per replica, which fit, were left out by the flag
   (the default plan meets the SLOs on BF16 5 x 8 GPU, modelled). Such a reason now names the
   larger counts that fit and were not considered, and the flag that adds them.
All figures modelled.
"""

from __future__ import annotations

import pandas as pd

FLAT = (
    "The cost is the same at every point drawn (73.5 USD per 1M output tokens), so these "
    "false positives save nothing and only lose accuracy: the fleet is kept at every rate, "
    "and under provisioned cost it is paid whoever serves a request; to price a sloppier "
    "classifier, size a fleet at each rate with tiersim plan (router.confusion set in the "
    "scenario)."
)


def _fpr_data(tmp_path, cost: list[float], model: str = "provisioned"):
    from tiersim.report.load import ReportData

    sweep = pd.DataFrame(
        {
            "router.confusion.fpr": [0.0, 0.05, 0.1, 0.2],
            "status": ["ok"] * 4,
            "cost_model": [model] * 4,
            "cost_per_1m_output_tokens": cost,
            "accuracy": [0.9701, 0.9696, 0.9684, 0.9676],
            "savings.routed_slo_met": [True] * 4,
            "savings.routed_floor_met": [True] * 4,
        }
    )
    return ReportData(directory=tmp_path, sweep=sweep, sweep_axes=["router.confusion.fpr"])


def test_a_flat_cost_fpr_figure_does_not_say_false_positives_save_money(tmp_path):
    from tiersim.report.figures import fpr_sweep

    flat = fpr_sweep(_fpr_data(tmp_path, [73.53504414] * 4))
    assert flat.caption.startswith(FLAT)
    assert "saves money" not in flat.caption


def test_a_moving_cost_fpr_figure_keeps_its_caption(tmp_path):
    from tiersim.report.figures import fpr_sweep

    moving = fpr_sweep(_fpr_data(tmp_path, [3.5, 3.4, 3.3, 3.2], model="fixed_per_request"))
    assert moving.caption.startswith(
        "Each false positive saves money and silently loses accuracy: compare the slopes"
    )
    assert "The cost is the same" not in moving.caption


def _gpus_plan(gpu_options, tiers):
    from tiersim.plan import Constraints, Planner
    from tiersim.plan.testing import FakeEvaluator, fake_scenario

    scenario = fake_scenario(tiers, ttft=1.0, tpot=0.05, floor=None)
    return Planner(
        scenario, Constraints.of(scenario), FakeEvaluator(tiers), gpu_options=gpu_options
    ).plan()


UNASKED = (
    "; not considered: 2, 4, 8 GPUs per replica, which fit (add them to "
    "--gpus-per-replica or limits.gpus_per_replica))"
)


def test_a_latency_miss_names_the_larger_gpu_counts_left_out_that_fit():
    """bf16's TPOT misses at 1 GPU per replica whatever the replica count, and 2 GPUs fix it
    (tests/test_plan.py), but the search was held to 1."""
    from tiersim.plan.testing import FakeTier

    result = _gpus_plan((1,), [FakeTier("bf16", accuracy=0.9, base_tpot_s=0.08)])
    assert result.plan is None
    assert result.reason.startswith("bf16: latency: more replicas do not help")
    assert result.reason.endswith("(tried bf16 on 1 GPU per replica" + UNASKED)


def test_no_larger_count_is_named_where_none_fits_or_all_were_tried():
    from tiersim.plan.testing import FakeTier

    held = _gpus_plan((1,), [FakeTier("bf16", accuracy=0.9, base_tpot_s=1.0, max_gpus=1)])
    assert held.reason.endswith("(tried bf16 on 1 GPU per replica)")
    every = _gpus_plan((1, 2, 4, 8), [FakeTier("bf16", accuracy=0.9, base_tpot_s=1.0)])
    assert every.reason.endswith("(tried bf16 on 1, 2, 4, 8 GPUs per replica)")
    assert "not considered" not in every.reason
