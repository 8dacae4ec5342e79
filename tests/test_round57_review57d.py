"""Round 57 review (review57d): fixes found reviewing hard57, price57b and fresh57's plan reason.

A multi-tier design's latency reason named the GPU counts per replica left out after every
tier tried, the tier that met its limits too, and "; " between tiers left it unclear which
tier a "not considered" belonged to (review57c: ``tiersim plan scenarios/tiny.yaml
--gpus-per-replica 1 --slo-tpot-p99 0.0045 --check-seeds 0`` read "tried w4a16 on 1 GPU per
replica; not considered: 2 GPUs per replica, which fit (...); bf16 on 1 GPU per replica; not
considered: 2, 4, 8 GPUs per replica, which fit (...)", bf16 at 3.71 ms against 4.5 ms).
"""

from pathlib import Path

from tests.test_round57_fresh57 import _gpus_plan


def test_a_multi_tier_reason_names_the_counts_left_out_for_the_missing_tier_alone():
    """fp8 misses its TPOT at 1 GPU per replica whatever the replica count; bf16 meets it."""
    from tiersim.plan.testing import FakeTier

    result = _gpus_plan(
        (1,),
        [
            FakeTier("fp8", accuracy=0.8, base_tpot_s=0.08),
            FakeTier("bf16", accuracy=0.9, base_tpot_s=0.01),
        ],
    )
    (pair,) = [d for d in result.runners_up if d["design"] == "fp8+bf16"]
    assert pair["missed"].endswith(
        "(tpot_p99_s 0.0800 vs limit 0.05; tried fp8 on 1 GPU per replica; bf16 on 1 GPU per "
        "replica; not considered for fp8: 2, 4, 8 GPUs per replica, which fit (add them to "
        "--gpus-per-replica or limits.gpus_per_replica))"
    )
    assert pair["missed"].count("not considered") == 1


GOLDEN = Path(__file__).parent / "golden"


def _class_table(name: str) -> str:
    """The report's class section of golden summary ``name``."""
    from tiersim.report.page import class_section
    from tiersim.results import RunResult

    run = RunResult.from_json((GOLDEN / f"{name}_summary.json").read_text())
    return class_section(run, "prior")


def test_an_expected_class_interval_says_it_is_of_the_mean_expected_value():
    """On the expected basis a class's interval holds the spread of its requests' expected
    values, not the answers' draws: the default job's hard class read 78.71 % with 78.53 -
    78.78 % under a bare "95% interval" column, narrower than the overall 79.38 - 80.81 %
    (modelled), as if the hard requests' accuracy were known to a quarter of a point."""
    page = _class_table("tiny")
    assert "<th>95% interval of the mean expected value</th>" in page
    assert (
        " On the expected basis a class's interval is of the mean of its requests' expected "
        "correctness: it holds how those expectations spread over the requests, not each "
        "answer's right-or-wrong draw, so a class whose requests expect alike reads narrower "
        "than the overall interval; it is not the range the class's realised accuracy would "
        "fall in (docs/metrics.md in tiersim's source repository, accuracy_by_class).</p>"
    ) in page


def test_a_realised_class_interval_keeps_its_plain_label():
    """On the realised basis the interval is Wilson's of the 0/1 answers themselves."""
    page = _class_table("cascade_models")
    assert "<th>95% interval</th>" in page
    assert "expected correctness" not in page
