"""Round 26 (bigcsv): a big Azure CSV's timestamp checks run in pyarrow, not a cell at a time."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from pandas.core.strings.object_array import ObjectStringArrayMixin

from tiersim.trace import checks
from tiersim.trace.filecheck import Source
from tiersim.trace.loader import load_trace

CELLS = ["2024-05-12 00:00:00.001163+00:00", "2023-11-16 18:15:46.6805900", " 2023-11-16T18:15Z",
         "2023-11-16 18:15:46 +02:00\n", "2023-11-16 18:15:46Z\n\n", "2023-11", "2023-11-16",
         "2023-11-16\n", "+12023-01-02", "1700000000", "-1.5e3", ".5", "now", None, "",
         "\x0b2023-11-16 18:15:46", "\x1c2023-11-16", "\u00a02023-11-16 18:15:46",
         "\u20032023-11-16 18:15:46+01:00", "\uff12\uff10\uff12\uff13-11-16",
         "2023-11-16\u300018:15:46Z",
         "2023-11-16 18:15:46\x1f+01:00", "2023-11-16 18:15:46+01:00\x0b", "2023-\u0661\u0661-16"]
PATTERNS = [checks._DATED, checks._ZONE, checks._DATE_ONLY, checks._MONTH_ONLY,
            checks._BARE_NUMBER]


@pytest.mark.parametrize("how", ["match", "search", "fullmatch"])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_cells_is_python_re_cell_by_cell(pattern, how):
    """pyarrow's RE2 on the ASCII cells and Python's re on the others find what Python's re
    finds in every cell: ASCII whitespace RE2's \\s misses (\\x0b, \\x1c-\\x1f), a final newline
    before $, Unicode spaces and digits, a missing cell."""
    text = pd.Series(CELLS, dtype="string")
    method = getattr(re.compile(pattern), how)
    want = [cell is not None and method(cell) is not None for cell in CELLS]
    assert checks.regex_cells(text, pattern, how).tolist() == want


def test_azure_timestamps_read_without_a_python_regex_per_cell(monkeypatch):
    """An Azure trace's timestamps (ASCII) are checked in pyarrow: pandas ran the zone and
    date patterns (they hold \\s) through Python's re a cell at a time, 12 of the 15 s that
    reading a million-row Azure CSV took."""
    def refused(*args, **kwargs):
        raise AssertionError("a Python regex a cell")
    for name in ("_str_contains", "_str_match", "_str_fullmatch"):
        monkeypatch.setattr(ObjectStringArrayMixin, name, refused)
    for cell in ("2024-05-12 00:00:00.001163+00:00", "2023-11-16 18:15:46.6805900"):
        text = pd.Series([cell, cell], dtype="str")
        ns = checks.datetimes_ns(Source("t.csv", 1), text, "TIMESTAMP")
        assert ns.tolist() == [pd.Timestamp(cell).tz_localize(None).value] * 2


def test_mixed_zones_still_refused_with_unicode_space(tmp_path):
    """A cell that only Python's re reads as zoned (a Unicode space before its time) still
    counts: the column mixes zones and is refused as before."""
    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46,10,5\n2023-11-16\u300018:15:47+01:00,10,5\n",
                    encoding="utf-8")
    with pytest.raises(Exception, match="mixes timestamps with a UTC offset"):
        load_trace(path)


def test_azure_rows_unchanged(tmp_path):
    """The requests of an Azure trace are those written."""
    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2024-05-12 00:00:00.001163+00:00,10,5\n"
                    "2024-05-12 00:00:01.501163+00:00,20,0\n"
                    "2024-05-12 00:00:02.000000+00:00,30,7\n")
    table = load_trace(path)
    np.testing.assert_array_equal(table["arrival_s"].to_numpy(), [0.0, 1.998837])
    assert table["request_id"].tolist() == [0, 2]


PLAIN_COLUMNS = [
    ["2024-05-12 00:00:00.001163+00:00", "2024-05-12 00:00:01.5+02:00", "2024-05-12T03:00:00Z"],
    ["2023-11-16 18:15:46.6805900", "2023-11-16T18:15:47", "2023-11-16 18:15:47.123456789"],
    ["2023-11-16 18:15:46", "2023-11-16 18:15:47+00:00"], ["2023-02-30 00:00:00"],
    ["2023-11-16 24:00:00"], ["2023-11-16 23:59:60"], ["2263-01-01 00:00:00"],
    ["1677-09-21 00:12:44"], ["2262-04-11 23:47:16"], ["0000-01-01 00:00:00"],
    ["9999-12-31 23:59:59+23:59"], ["2023-11-16 18:15:46", None], ["2023-11-16 18:15:46 "],
    ["2023-11-16 18:15:46.1234567891"], ["2023-11-16 18:15:46-00:30"], ["2023-11-16"],
]


def _read(cells: list, monkeypatch=None):
    """datetimes_ns of a column, or the one-line error it raises."""
    try:
        return checks.datetimes_ns(Source("t.csv", 1), pd.Series(cells, dtype="str"),
                                   "TIMESTAMP").tolist()
    except Exception as err:  # noqa: BLE001 - the message is compared
        return f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("cells", PLAIN_COLUMNS)
def test_plain_times_read_by_pyarrow_as_pandas_reads_them(cells, monkeypatch):
    """A column of plain date-times parsed by pyarrow gives the nanoseconds, or the error,
    that pandas' ISO 8601 parse and the checks after it give: 30 February, 24:00, a leap
    second, years out of nanosecond range, nine decimals and ten, offsets, a missing cell."""
    fast = _read(cells)
    monkeypatch.setattr(checks, "_plain_times", lambda s: None)
    assert fast == _read(cells)


def test_plain_times_take_no_python_string_a_cell():
    """A plain column is parsed by pyarrow (pandas made a Python string a cell: 58 MiB of the
    peak of reading a million-row Azure CSV); another goes to pandas."""
    assert checks._plain_times(pd.Series(PLAIN_COLUMNS[0], dtype="str")) is not None
    assert checks._plain_times(pd.Series(PLAIN_COLUMNS[2], dtype="str")) is None

