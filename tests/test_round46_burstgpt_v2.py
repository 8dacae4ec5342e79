"""Round 46: BurstGPT's v2.0 release (``BurstGPT_3.csv``, HPMLL/BurstGPT, CC-BY-4.0) is read a
chunk at a time, as its v1 files are.

That release inserts two columns, ``Session ID`` (a UUID on ``Conversation log`` rows, empty on
``API log`` rows) and ``Elapsed time`` (seconds), after ``Timestamp``, and writes the times as
decimals (``19440110.0``). The chunked reader took only files of BurstGPT's own six columns, so
a windowed run of the v2.0 layout read the whole file: 5,344,021 rows in that layout (the
release's count), ``window: [600, 900]``, peaked at 780-782 MiB, against 201 MiB for the same
rows without the two columns; read in chunks, 182 MiB (docs/speed.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_round27_burstgpt import _read
from test_round27_tracestream import _same

from tiersim.trace import windowed_burstgpt

# The header and first four data rows of BurstGPT_3.csv (HPMLL/BurstGPT release v2.0), as a
# public replay tool's notes quote them; the rows _burstgpt_v2 adds are written in their style.
BURSTGPT_3 = """Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type
19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log
19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,36,29,65,Conversation log
19440192.0,a5c69b35-4fbc-45e9-955e-18715e376d74,8,GPT-4,1779,123,1902,Conversation log
19440254.0,8b74c7d8-1643-4bba-8c69-91cb4548c506,3,ChatGPT,935,178,1113,Conversation log
"""  # noqa: E501

UNREAD = ("column(s) 'Session ID', 'Elapsed time' not read (neither this format's nor a "
          "canonical optional column such as prompt_hash or correct_<tier>)")


def _burstgpt_v2(tmp_path, rows: int = 600):
    """The four rows above and ``rows`` more in their style (API log rows with an empty Session
    ID, failed requests with 0 response tokens, some with 0 request tokens too), written to
    ``tmp_path / BurstGPT_3.csv``."""
    rng = np.random.default_rng(46)
    t = 19440254.0 + np.cumsum(rng.integers(0, 4, rows)).astype(float)
    out = rng.integers(1, 600, rows)
    failed = rng.random(rows) < 0.07
    out[failed] = 0
    inp = rng.integers(1, 3000, rows)
    inp[failed & (rng.random(rows) < 0.5)] = 0
    api = rng.random(rows) < 0.9
    session = np.where(api, "", [f"{n:08x}-0a46-4bf0-aa08-89794e7a2b3f" for n in range(rows)])
    more = pd.DataFrame({"Timestamp": [f"{x:.1f}" for x in t], "Session ID": session,
                         "Elapsed time": rng.integers(1, 60, rows),
                         "Model": np.where(rng.random(rows) < 0.85, "ChatGPT", "GPT-4"),
                         "Request tokens": inp, "Response tokens": out,
                         "Total tokens": inp + out,
                         "Log Type": np.where(api, "API log", "Conversation log")})
    path = tmp_path / "BurstGPT_3.csv"
    path.write_text(BURSTGPT_3 + more.to_csv(index=False, header=False))
    return path


@pytest.mark.parametrize("chunk_rows", [None, 64])
@pytest.mark.parametrize("window", [None, (0, 60), (300, 900), (1000.5, 1e6)])
def test_v2_layout_is_read_in_chunks_as_the_whole_read(tmp_path, window, chunk_rows):
    """Every window of the v2.0 layout gives the whole read's requests, arrivals (bit for bit),
    origin and notes, the two columns noted as not read first, and the chunked read gives it
    (it fell back to the whole read)."""
    path = _burstgpt_v2(tmp_path)
    got, chunked = _read(path, window, False, chunk_rows)
    _same(got, _read(path, window, True)[0])
    assert chunked
    assert got[1][0] == f"{path}: {UNREAD}"


def test_v2_layout_counts_as_pandas_reads_them(tmp_path):
    """The requests kept are the rows with response tokens, times in seconds since the first
    of them, as pandas reads the file."""
    path = _burstgpt_v2(tmp_path)
    raw = pd.read_csv(path, keep_default_na=False, dtype={"Session ID": str})
    served = raw[raw["Response tokens"] > 0]
    t = served["Timestamp"] - served["Timestamp"].iloc[0]
    inside = (t >= 300) & (t < 900)
    (loaded, _), chunked = _read(path, (300, 900), False)
    assert chunked
    assert len(loaded.table) == int(inside.sum())
    assert loaded.table["input_tokens"].tolist() == served["Request tokens"][inside].tolist()
    assert loaded.table["arrival_s"].to_numpy() == pytest.approx((t[inside] - 300).to_numpy())


def test_a_canonical_optional_column_is_still_read_whole(tmp_path):
    """A v2.0 file carrying a canonical optional column (checked against rows far apart) is
    read whole, as is one read as another format."""
    path = _burstgpt_v2(tmp_path, 20)
    pd.read_csv(path).assign(prompt_hash=1).to_csv(tmp_path / "h.csv", index=False)
    assert windowed_burstgpt.suits(path, "auto")
    assert not windowed_burstgpt.suits(tmp_path / "h.csv", "auto")
    assert not windowed_burstgpt.suits(path, "azure")
