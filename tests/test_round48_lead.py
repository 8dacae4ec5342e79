"""Round 48 (lead): a CSV trace's header is judged before its whole file is scanned.

The header checks read at most 64 kB; the NUL-byte scan reads every byte. A file that is not a
trace by its header (too many columns) is refused for that, whatever its rows hold, without the
scan (README, "Hostile input": a 205 MB CSV with a 200,000-column header is refused in about
0.4 ms). A file whose header is fine still has its NUL bytes found.
"""

from __future__ import annotations

import pytest

from tiersim.errors import TraceError
from tiersim.trace import load_trace


def test_a_too_wide_header_is_refused_for_its_width_even_with_nul_bytes_below(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_bytes(",".join(f"c{i}" for i in range(1203)).encode() + b"\n1,2\n\0\0\0\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (f"{path}: has 1,203 columns or more, above the 1,000 a trace may "
                              "have; not a trace")


def test_a_good_header_with_nul_bytes_below_is_refused_for_the_nul(tmp_path):
    path = tmp_path / "nul.csv"
    path.write_bytes(b"arrival_time,prompt_tokens,output_tokens\n0,10,5\n\0\0\0\n")
    with pytest.raises(TraceError) as err:
        load_trace(path)
    assert str(err.value) == (
        f"{path}: file line 3 holds a NUL byte, which no text trace holds (zeros a write cut "
        "short by a crash left, or damage); remove the NUL bytes (tr -d '\\000' < FILE > FIXED) "
        "or restore the file")
