"""Round 10 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace.loader import load_trace
from tiersim.trace.source import read_raw


@pytest.mark.parametrize("column", ["session_id", "request_id"])
def test_an_id_column_of_booleans_is_refused(tmp_path, column):
    """True and False were read as ids 1 and 0: two sessions (or requests) named by a flag."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": 10, "output_tokens": 5,
                       "session_id": [3, 4], "step": 0})
    df[column] = [True, False]
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    label = column.replace("_", " ")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: row 1, column '{column}': {label} must be a whole "
                              "number, not true/false; write the ids as numbers")
    read_raw(path)  # the raw reader keeps the file as it is
