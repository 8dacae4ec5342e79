"""Round 57, review57b: a canonical trace of Unix seconds windowed as if from its first arrival
(``--window 0 600``). Round 56 said the window selected no request and the trace's span; round
57's check of arrivals past the window (fuzz24) refused row 1 as "more than 1e+09 s (31 years)
after the window start; check the time unit", though the unit is right. It now says what the
check without a window says: the window is in the file's own seconds, with the window shifted
to the first arrival; an arrival 1e300 s out is still told to check the time unit.
"""

from __future__ import annotations

import pandas as pd
import pytest
from test_hostile_inputs import run_cli


def _unix(tmp_path, suffix: str):
    path = tmp_path / f"unix.{suffix}"
    table = pd.DataFrame(
        {"arrival_s": [1.7e9 + 0.5 * i for i in range(10)], "input_tokens": 100, "output_tokens": 9}
    )
    if suffix == "csv":
        table.to_csv(path, index=False)
    else:
        table.to_parquet(path)
    return path


def test_unix_seconds_windowed_from_zero_are_told_the_window_to_set(tmp_path, capsys):
    path = _unix(tmp_path, "csv")
    code, err = run_cli(capsys, "trace", "inspect", path, "--window", "0", "600")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {path}: row 1, column 'arrival_s': arrival 1700000000 s is more than 1e+09 s "
        "(31 years) after the window start; a window is in the file's own arrival_s, which "
        "start at 1700000000 s: set trace.window: [1700000000, 1700000600] (tiersim trace "
        "inspect: --window 1700000000 1700000600) for the same span from its first arrival, "
        "or subtract the first arrival from every row (file line 2)"
    )


def test_a_window_with_no_end_gets_the_whole_trace(tmp_path, capsys):
    from tiersim.errors import TraceError
    from tiersim.trace import read_trace

    path = _unix(tmp_path, "parquet")
    with pytest.raises(TraceError) as err:
        read_trace(path, window=(0.0, None))
    assert str(err.value).endswith(
        "set trace.window: [1700000000, 1700000005] (tiersim trace inspect: --window "
        "1700000000 1700000005) for the same span from its first arrival, or subtract the "
        "first arrival from every row"
    )
