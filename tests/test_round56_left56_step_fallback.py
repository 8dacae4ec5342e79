"""Round 56, left56: a ``step_type`` router whose ``step_fallback`` reads accuracy (threshold,
lagrangian, ...) routes the step types it does not map on each tier's accuracy, as that router
alone does; with no floor, no tier stating its accuracy and no correct_<tier> labels, it got no
note that those are qllm-eval's per-precision priors (placeholders), where the router alone
got one (fresh56). It gets the same note, naming the fallback.
"""

from __future__ import annotations

import pytest
from conftest import tiny_doc
from test_round56_fresh56_prior_routing import _notes


def _step_type(fallback: str, **extra) -> dict:
    return tiny_doc(
        router={
            "policy": "step_type",
            "step_tiers": {"plan": "bf16"},
            "step_fallback": fallback,
            **extra,
        }
    )


@pytest.mark.parametrize(
    ("fallback", "extra"), [("threshold", {}), ("lagrangian", {"lambda": 0.1}), ("cascade", {})]
)
def test_a_fallback_that_reads_accuracy_gets_the_note(fallback, extra):
    assert _notes(_step_type(fallback, **extra)) == [
        "s.yaml: no tier states its accuracy and the trace has no correct_<tier> labels, so "
        f"router.policy step_type (step_fallback {fallback}) routes on qllm-eval's "
        "per-precision priors, and the run's accuracy is read from them, alike for every "
        'model (README.md, "Accuracy"): placeholders, not the model\'s measured accuracy; '
        "state each tier's accuracy, or give the trace correct_<tier> labels"
    ]


def test_a_fallback_that_reads_none_gets_none():
    assert _notes(_step_type("uniform", tier="w4a16")) == []
    stated = {"w4a16": "scenario", "bf16": "prior"}
    assert _notes(_step_type("threshold"), stated) == []
