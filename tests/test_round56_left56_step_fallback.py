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


def _notes_with(doc: dict, present: set[str] | None) -> list[str]:
    import warnings

    from tiersim.errors import Note
    from tiersim.inputs import note_prior_floor
    from tiersim.scenario import scenario_from_dict

    scenario = scenario_from_dict(doc, "s.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        note_prior_floor(scenario, {"w4a16": "prior", "bf16": "prior"}, "s.yaml", present)
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_a_map_that_takes_every_step_leaves_the_fallback_nothing():
    """review56d: where the map names every step type the trace carries, the fallback routes
    no row, so the run does not route on the priors and gets no note; one step type the map
    lacks, or a trace whose types are not known, keeps it."""
    doc = _step_type("threshold")
    assert _notes_with(doc, {"plan"}) == []
    assert len(_notes_with(doc, {"plan", "tool_call"})) == 1
    assert len(_notes_with(doc, None)) == 1
    default_map = tiny_doc(router={"policy": "step_type", "step_fallback": "threshold"})
    assert _notes_with(default_map, {"planning", "tool_call", "final"}) == []
    assert len(_notes_with(default_map, {"planning", "search"})) == 1
