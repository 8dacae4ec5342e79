"""Round 57, review57b: a ``step_type`` router sends a row whose ``step_type`` is missing to its
``step_fallback`` (:meth:`tiersim.routing.step_type.StepType._routed`: a missing type's tier is
-1). Round 57's :func:`tiersim.inputs.step_types` left missing types out, so a trace whose
present types the map all takes, with one row of no type, was said to route none on the
fallback: a fallback that reads accuracy (threshold) routed that row on the per-precision
priors without the note (a plain trace of arrival_s, input_tokens, output_tokens, step_type
with some cells empty, under ``step_tiers: {plan: bf16}``: no note before; a session trace's
rows of no type read as ``step``, so it had the note). The types are now read as the router
reads them (text, a category column's used categories), and a row of no type keeps the note.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_round56_left56_step_fallback import _notes_with, _step_type

from tiersim.inputs import step_types


def test_a_row_without_a_step_type_keeps_the_fallback_note():
    doc = _step_type("threshold")
    present = step_types(pd.DataFrame({"step_type": ["plan", None, "plan"]}))
    assert len(_notes_with(doc, present)) == 1


def test_every_row_typed_and_mapped_still_gets_no_note():
    doc = _step_type("threshold")
    assert _notes_with(doc, step_types(pd.DataFrame({"step_type": ["plan", "plan"]}))) == []


def test_types_are_read_as_the_router_reads_them():
    """A category column's unused categories are no row's type; whole numbers read '1'."""
    column = pd.Categorical(["plan"], categories=["plan", "search"])
    assert step_types(pd.DataFrame({"step_type": column})) == {"plan"}
    assert step_types(pd.DataFrame({"step_type": np.array([1, 2])})) == {"1", "2"}
    assert step_types(pd.DataFrame({"x": [1]})) is None
