"""Round 30, review rev2: step types of a session's steps, the context hint of a prompt longer
than the model's context, the folder suggested for ``--out /``, and the windowed Parquet read's
columns."""

from __future__ import annotations

import pandas as pd
import pytest

from tiersim.session_metrics import step_type_results


@pytest.mark.parametrize("categories", [False, True])
def test_a_step_without_a_type_is_counted_as_step(categories):
    """A step with no step_type was left out of the per-step-type figures (3 of 4 steps
    counted); it is counted under the default type ``step``, as the trace readers read an
    empty cell, so the counts sum to the steps."""
    types = pd.Series(["code", None, "plan", "code"], dtype="category" if categories else object)
    req = pd.DataFrame({"final_tier": ["a", "b", "a", "a"],
                        "expected_accuracy": [0.9, 0.5, 0.8, 0.7]})
    got = step_type_results(pd.DataFrame({"step_type": types}), req)
    assert [(r.step_type, r.requests) for r in got] == [("code", 2), ("plan", 1), ("step", 1)]
    assert got[2].accuracy == 0.5 and got[2].final_tier_shares == {"b": 1.0}
