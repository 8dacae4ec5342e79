"""Round 29 (harden): a bad prompt cell is described, never echoed; ``--out`` refuses a
folder a typo could scatter files into; old Ray sweep folders are ignored and removed on
resume; sweep values that resolve alike are refused as one value given twice."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.errors import TraceError
from tiersim.trace import load_trace


def _prompt_trace(path, cells: pa.Array):
    """A one-row canonical Parquet trace whose prompt is ``cells``."""
    pq.write_table(pa.table({"arrival_s": [0.0], "input_tokens": [5], "output_tokens": [2],
                             "prompt": cells}), path)
    return path


@pytest.mark.parametrize(("cells", "shown"), [
    (pa.array([b"my password is hunter2"], pa.binary()), "binary data of 22 bytes"),
    (pa.array([b"\xff"], pa.binary()), "binary data of 1 byte"),
    (pa.array([4111111111111111]), "a number"),
    (pa.array([2.5]), "a number"),
    (pa.array([True]), "true/false"),
])
def test_a_prompt_that_is_not_text_is_described_not_echoed(tmp_path, cells, shown):
    """A prompt may hold a secret (docs/security.md: a bad text cell is described by its size,
    never quoted): the bytes' text and the number were echoed, cut to 40 characters."""
    path = _prompt_trace(tmp_path / "p.parquet", cells)
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: row 1, column 'prompt': prompt must be text (got "
                               f"{shown}); write the prompt as a string, or leave the cell "
                               "empty")
    assert "hunter2" not in str(info.value) and "4111" not in str(info.value)
