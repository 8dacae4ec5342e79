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


# BurstGPT_1.csv's first rows (HPMLL/BurstGPT, CC-BY-4.0): ChatGPT, ChatGPT, GPT-4. Repeated
# below as a log whose first minutes call one model and whose later ones the other.
BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
CHATGPT_ROW = "ChatGPT,472,18,490,Conversation log"
GPT4_ROW = "GPT-4,417,276,693,Conversation log"


def _model_log(tmp_path):
    rows = [f"{5 + 10 * i},{CHATGPT_ROW}" for i in range(20)]
    rows += [f"{1000 + 10 * i},{GPT4_ROW}" for i in range(20)]
    p = tmp_path / "BurstGPT_1.csv"
    p.write_text(BURSTGPT_HEADER + "\n".join(rows) + "\n")
    return p


def _model_notes(loaded) -> list[str]:
    return [n for n in loaded.origin.notes if "Model column" in n]


def test_burstgpt_model_mix_note_counts_the_rows_a_window_keeps(tmp_path):
    """The model-mix note describes the requests replayed: a window of ChatGPT rows alone was
    told "2 models (ChatGPT 50%, GPT-4 50%); their requests are served as one stream"."""
    p = _model_log(tmp_path)
    with pytest.warns(Warning):
        whole = read_trace(p)
    assert _model_notes(whole) == [
        "its Model column names 2 models (ChatGPT 50%, GPT-4 50%); their requests are served "
        "as one stream by the scenario's model (filter the rows to study one)"]
    only_chatgpt = read_trace(p, window=(0, 150))
    assert len(only_chatgpt.table) == 15 and _model_notes(only_chatgpt) == []
    with pytest.warns(Warning):
        mixed = read_trace(p, window=(100, 1090))
    assert len(mixed.table) == 20 and _model_notes(mixed) == [
        "its Model column names 2 models (ChatGPT 50%, GPT-4 50%) in the window's requests; "
        "their requests are served as one stream by the scenario's model (filter the rows to "
        "study one)"]
    assert all(type(n) is str for n in mixed.origin.notes)


def test_inspect_window_of_one_model_has_no_mix_note(tmp_path, capsys):
    from tiersim.cli import main

    p = _model_log(tmp_path)
    capsys.readouterr()
    assert main(["trace", "inspect", str(p), "--window", "0", "150", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"rows": 15' in out and "Model column" not in out
