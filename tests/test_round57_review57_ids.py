"""Round 57, review57: a text session id is a name exactly where tiersim reads no number in
it. Python's ``float`` reads ``1001_1`` (digits around an underscore), Arabic-Indic digits and a
trailing no-break space as numbers, which the trace's own reader (pandas) does not: a CSV of
ids such as ``1001_1`` was refused "session id is not a number ...; write a number", and
``conv_1`` beside ``1_2`` "is a name where row 3's is a number".
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.trace import load_trace
from tiersim.trace.canonical import text_ids
from tiersim.trace.checks import to_floats
from tiersim.trace.loader import TraceWarning

ROWS = "arrival_s,input_tokens,output_tokens,session_id,step\n"


def _csv(path, ids: list[str]) -> str:
    """A session trace of one two-step session per id."""
    body = "".join(f"{2 * k + s},100,10,{sid},{s}\n" for k, sid in enumerate(ids) for s in (0, 1))
    path.write_text(ROWS + body)
    return str(path)


@pytest.mark.parametrize("ids", [["1001_1", "1001_2"], ["conv_1", "1_2"], ["s\u0661", "\u0662"]])
def test_ids_the_reader_reads_no_number_in_are_names(tmp_path, ids):
    with pytest.warns(TraceWarning, match="holds text ids"):
        df = load_trace(_csv(tmp_path / "t.csv", ids))
    assert df["session_id"].tolist() == [0, 0, 1, 1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=6).filter(str.strip), min_size=1, max_size=4))
def test_names_are_the_ids_read_as_no_number(ids):
    """Every id read as no number (NaN) is a name, so a column of them alone is text ids."""
    s = pd.Series(ids, dtype=object)
    unread = bool(pd.isna(to_floats(s)).all())
    assert text_ids(s) == unread
