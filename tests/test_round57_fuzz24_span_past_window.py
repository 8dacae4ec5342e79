"""Round 57, hostile-input round (fuzz24): an arrival of 1e300 s past a trace's window.

A Parquet trace whose row 3 arrives at 1e300 s is refused at row 3 without a window, but with
``window: [0, 10]`` the span check saw only the window's rows: the run went through, and its
one word on the file was a note that the arrivals "span 11,574,074,074,074,075,286,... days"
(300 digits) and that ``time_scale: 1000`` would fix them. Such a row is now refused wherever
it lies, naming it, as a session trace's step past the window already was; a file of Unix
seconds windowed at them still reads.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from test_hostile_inputs import run_cli


def _trace(tmp_path, arrivals: list[float]):
    path = tmp_path / "t.parquet"
    table = pa.table(
        {
            "arrival_s": arrivals,
            "input_tokens": [1] * len(arrivals),
            "output_tokens": [1] * len(arrivals),
        }
    )
    pq.write_table(table, path)
    return path


def test_an_arrival_of_1e300_past_the_window_is_refused_at_its_row(tmp_path, capsys):
    """The exact line names row 3, outside the window."""
    path = _trace(tmp_path, [0.0, 1.0, 1e300])
    code, err = run_cli(capsys, "trace", "inspect", path, "--window", "0", "10")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {path}: row 3, column 'arrival_s': arrival 1e+300 s is more than 1e+09 s (31 "
        "years) after the window start; check the time unit"
    )


def test_unix_seconds_windowed_at_them_still_read(tmp_path, capsys):
    """Arrivals past 1e9 s from time 0 but near the window start are no fault."""
    path = _trace(tmp_path, [1.7e9, 1.7e9 + 1, 1.7e9 + 20])
    code, err = run_cli(capsys, "trace", "inspect", path, "--window", "1700000000", "1700000010")
    assert code == 0, err
