"""Round 24: real public traces, read as their own tools read them.

Rows below are copied from public releases, with their attribution beside them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.trace import checks, read_trace

# First rows of Azure's week-long 2024 conversation trace (AzureLLMInferenceTrace_conv_1week.csv,
# Azure/AzurePublicDataset, CC-BY-4.0, as its analysis notebook prints them): a time on the
# whole second is written without a fraction, the others with microseconds.
AZURE_2024 = """TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-12 00:00:00+00:00,1452,3
2024-05-12 00:00:00.041683+00:00,584,3
2024-05-12 00:00:00.157988+00:00,862,38
2024-05-12 00:00:00.158932+00:00,1569,3
2024-05-12 00:00:00.248279+00:00,617,104
"""


def test_azure_2024_week_rows_read_exactly(tmp_path):
    p = tmp_path / "AzureLLMInferenceTrace_conv_1week.csv"
    p.write_text(AZURE_2024)
    table = read_trace(p).table
    assert table["arrival_s"].tolist() == pytest.approx([0, 0.041683, 0.157988, 0.158932,
                                                         0.248279], abs=1e-9)
    assert table["input_tokens"].tolist() == [1452, 584, 862, 1569, 617]
    assert table["output_tokens"].tolist() == [3, 3, 38, 3, 104]


def test_dated_timestamps_are_not_copied_to_look_for_words(monkeypatch):
    """Only a cell that does not open with a date is stripped and folded to be checked for a
    relative word or a bare number: a copy of every cell doubled the peak memory of reading
    Azure's week-long 2024 traces (2 million rows: 825 MB peak RSS before, 474 MB after)."""
    seen = []
    strip = pd.core.strings.accessor.StringMethods.strip

    def counting(self, *args, **kwargs):
        seen.append(len(self._data))
        return strip(self, *args, **kwargs)

    monkeypatch.setattr(pd.core.strings.accessor.StringMethods, "strip", counting)
    rows = AZURE_2024.splitlines()[1:]
    cells = [r.split(",")[0] for r in rows] * 200 + [" Now ", "1715472000", "2024-05-12T00:00Z"]
    text = pd.Series(cells, dtype="string")
    bad = checks._not_absolute(text)
    assert np.flatnonzero(bad).tolist() == [1000, 1001]
    assert sum(seen) <= 2
