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


def test_a_request_longer_than_a_max_model_len_at_the_model_context_is_not_told_to_raise_it(
        tmp_path, capsys):
    """A tier setting scheduler.max_model_len to its model's very context (262,144): a longer
    request was told to "raise that (up to its model's context)", which cannot be done; it is
    told the truth: longer than the model's context, served by no setting of this model."""
    from test_round23_extremes import _run

    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 300_000, 10)],
                     {"scheduler": {"max_model_len": 262_144}})
    assert code == 0, err
    assert ("the first is request_id 1 (300,010 tokens on tier bf16, which serves at most "
            "262,144, its model's context): shorten or remove such rows, or serve them on a "
            "model with a longer context") in err


def test_plan_of_a_tier_at_its_model_context_is_not_told_to_raise_it(tmp_path, capsys):
    """Both of tiny.yaml's tiers set max_model_len: w4a16 1,000, bf16 its model's 262,144
    exactly. The two-tier design told to raise bf16's, already the most its model takes."""
    from test_round29_small import two_tier_plan_words

    both = two_tier_plan_words([1000, 262_144], tmp_path, capsys)
    assert ("(w4a16's max_model_len 1,000, bf16's max_model_len 262,144) and are dropped at "
            "any size; bf16's is its model's context: serve its requests on a model with a "
            "longer context; 2 on w4a16 exceed its model's maximum context (262,144 tokens), "
            "which no max_model_len serves: serve them on a model with a longer context or "
            "leave them out of the trace") in both, both  # round 35: w4a16's are beyond its model


@pytest.mark.parametrize("name", ["follows_id", "output_hashes"])
def test_a_trace_column_named_as_an_internal_one_is_refused(tmp_path, name):
    """A plain trace with a column ``follows_id`` ended ``tiersim run`` in a traceback
    (KeyError: 'tool_s': the engine took it for the session links tiersim makes); with
    ``session_id``, ``step`` and ``tool_s`` under ``sessions.source: off`` it linked the rows
    and reported a sessions block. Such a column is refused in one line naming it."""
    from tiersim.errors import TraceError
    from tiersim.trace.loader import read_trace

    path = tmp_path / "t.csv"
    pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 1.0], "input_tokens": [10, 10],
                  "output_tokens": [5, 5], name: [-1, 0]}).to_csv(path, index=False)
    with pytest.raises(TraceError) as info:
        read_trace(path, keep=())
    assert str(info.value) == (
        f"{path}: column '{name}': {name} is the name of a column tiersim makes itself (for "
        "agentic sessions); rename the column, or remove it")
