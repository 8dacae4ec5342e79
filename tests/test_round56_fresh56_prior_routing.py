"""Round 56, fresh56: a run that routes two tiers or more by a router that reads accuracy
(threshold, lagrangian, oracle, cascade, budget), with no floor, no tier stating its accuracy
and no correct_<tier> labels, is told it routes on the per-precision priors: fresh56's FP8 +
BF16 threshold run sent every request to FP8 (94.78 % against 95.00 %, placeholders alike for
every model) and printed "expected accuracy 94.78 % | prior" with no note, which reads as
"FP8 loses 0.22 points". A floor judged on them keeps its own note; a static split, or a run
whose tiers state their accuracy, gets none."""

from __future__ import annotations

import warnings

import pytest
from conftest import tiny_doc

from tiersim.errors import Note
from tiersim.inputs import note_prior_floor
from tiersim.scenario import scenario_from_dict

PRIOR = {"w4a16": "prior", "bf16": "prior"}


def _notes(doc: dict, sources: dict = PRIOR) -> list[str]:
    scenario = scenario_from_dict(doc, "s.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        note_prior_floor(scenario, sources, "s.yaml")
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


@pytest.mark.parametrize(
    ("policy", "extra"), [("threshold", {}), ("lagrangian", {"lambda": 0.1}), ("cascade", {})]
)
def test_an_accuracy_router_on_priors_is_told(policy, extra):
    assert _notes(tiny_doc(router={"policy": policy, **extra})) == [
        "s.yaml: no tier states its accuracy and the trace has no correct_<tier> labels, so "
        f"router.policy {policy} routes on qllm-eval's per-precision priors, and the run's "
        'accuracy is read from them, alike for every model (README.md, "Accuracy"): '
        "placeholders, not the model's measured accuracy; state each tier's accuracy, or "
        "give the trace correct_<tier> labels"
    ]


def test_a_static_split_or_stated_accuracies_get_no_note():
    assert _notes(tiny_doc()) == []  # tiny: a static split
    stated = {"w4a16": "scenario", "bf16": "prior"}
    assert _notes(tiny_doc(router={"policy": "threshold"}), stated) == []


def test_one_routed_tier_gets_no_note():
    doc = tiny_doc(router={"policy": "threshold"})
    doc["tiers"] = doc["tiers"][1:]
    assert _notes(doc, {"bf16": "prior"}) == []


def test_a_floor_keeps_its_own_words():
    notes = _notes(tiny_doc(router={"policy": "threshold"}, accuracy_floor=0.94))
    assert len(notes) == 1 and "so accuracy_floor 0.94 is judged on qllm-eval's" in notes[0]
