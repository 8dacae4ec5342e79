"""Round 32 (helper fuzz): hostile input through the CLI, round 5 (timestamps beyond the
dates a trace holds, ...)."""

from __future__ import annotations

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

AZURE_HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.mark.parametrize(("cell", "row", "date"), [
    ("0001-01-01 00:00:00.0000000", 1, "0001-01-01"),
    ("9999-12-31T23:59:59.9999999", 2, "9999-12-31"),
    ("2262-04-12 00:00:00", 2, "2262-04-12"),
])
def test_a_timestamp_beyond_the_dates_a_trace_holds_says_so(tmp_path, capsys, cell, row, date):
    """An Azure timestamp written as the format asks but dated year 1 or 9999 (outside the
    days nanoseconds since 1970 reach) was 'cannot parse timestamp (text of 27 characters);
    write it as YYYY-MM-DD HH:MM:SS.fffffff', the form it had; now the line names its date and
    the dates a trace can hold, by trace inspect and by a run's windowed read alike."""
    first = "2023-11-16 18:17:03.9799600,4808,10\n"
    cells = f"{cell},5,5\n"
    trace = tmp_path / "azure.csv"
    trace.write_text(AZURE_HEADER + (cells + first if row == 1 else first + cells))
    want = (f"row {row}, column 'TIMESTAMP': timestamp dated {date} is outside the dates a "
            "trace can hold (1677-09-21 to 2262-04-11, nanoseconds since 1970 in 64 bits); "
            f"fix the date (file line {row + 1})")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == f"Error: {trace}: {want}"
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace),
                                                               "window": [0, 60]}))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line.endswith(want)


def test_a_timestamp_pandas_cannot_read_for_another_reason_keeps_its_words(tmp_path, capsys):
    """A cell that is no date-time at all keeps the line that asks for the format."""
    trace = tmp_path / "azure.csv"
    trace.write_text(AZURE_HEADER + "2023-13-45 99:00:00,5,5\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line.endswith("cannot parse timestamp (text of 19 characters); write it as "
                         "YYYY-MM-DD HH:MM:SS.fffffff (file line 2)")
