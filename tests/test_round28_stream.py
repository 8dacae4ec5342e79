"""Round 28 (stream): trace reads that held a whole file now read it a chunk at a time where
their result is the whole read's (an Azure CSV with columns beyond its three), and the
chunked and whole reads name the same fault in a file with two."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_round27_tracestream import WINDOWS, _azure, _read, _same

from tiersim.trace import windowed


def _with_columns(tmp_path, columns: dict, rows: int = 3000):
    """The first ``rows`` rows of the real Azure trace with ``columns`` (name: cells) added."""
    path = _azure(tmp_path, rows)
    raw = pd.read_csv(path)
    for name, cells in columns.items():
        raw[name] = cells
    raw.to_csv(path, index=False)
    return path


EXTRA = {"user": lambda n: [f"u{i % 17}" for i in range(n)],
         "request_id": lambda n: np.arange(n) * 3,
         "sesion_id": lambda n: np.arange(n) % 5}
"""Columns beyond Azure's three that are no canonical optional column: text, a canonical core
column and a typo of one (each noted as not read)."""


@pytest.mark.parametrize("chunk_rows", [None, 64])
@pytest.mark.parametrize("window", WINDOWS)
def test_azure_with_other_columns_read_a_chunk_at_a_time(tmp_path, window, chunk_rows):
    """An Azure CSV with columns beyond its three that nothing reads takes the chunked read
    (it was read whole), with the whole read's table, origin, notes (those columns named as
    not read) or error."""
    path = _with_columns(tmp_path, {name: make(3000) for name, make in EXTRA.items()})
    assert windowed.suits(path, "auto") and windowed.suits(path, "azure")
    got = _read(path, window, False, chunk_rows)
    whole = _read(path, window, True)
    end = None if window is None or window[1] is None else window[1]
    _same(got, whole, end)
    if not isinstance(whole, str):
        assert any("not read" in note for note in whole[1])


def test_azure_with_other_columns_refuses_a_long_row_as_before(tmp_path):
    """A row with a field more than the header is refused by the chunked read as by the whole
    read (the other columns are parsed, not skipped)."""
    path = _with_columns(tmp_path, {"user": EXTRA["user"](400)}, 400)
    text = path.read_text().splitlines()
    text[200] += ",7"
    path.write_text("\n".join(text) + "\n")
    got, whole = _read(path, (0, 1e6), False, 64), _read(path, (0, 1e6), True)
    assert isinstance(whole, str) and got == whole


def test_azure_with_an_optional_column_still_read_whole(tmp_path):
    """A canonical optional column (checked against rows far apart) still sends an Azure CSV
    to the whole read; a column named twice is refused by either read in one line."""
    path = _with_columns(tmp_path, {"user": EXTRA["user"](50), "prompt_hash": np.arange(50)},
                         50)
    assert not windowed.suits(path, "auto")
    twice = _azure(tmp_path, 50, name="twice.csv")
    lines = twice.read_text().splitlines()
    twice.write_text("\n".join([lines[0] + ",user,user"] + [x + ",a,b" for x in lines[1:]]))
    got, whole = _read(twice, None, False, 16), _read(twice, None, True)
    assert isinstance(whole, str) and "share a name" in whole and got == whole


def _two_faults(tmp_path):
    """An Azure CSV with a bad prompt length at row 11 and an earlier time at row 301."""
    path = _azure(tmp_path, 400)
    text = path.read_text().splitlines()
    time, _, out = text[11].split(",")
    text[11] = f"{time},-5,{out}"
    text[301] = text[100].split(",")[0] + "," + text[301].split(",", 1)[1]
    path.write_text("\n".join(text) + "\n")
    return path


@pytest.mark.parametrize("window", [None, (0, 1e6)])
@pytest.mark.parametrize("chunk_rows", [16, 64, 1000])
def test_two_faults_named_alike_by_either_read(tmp_path, window, chunk_rows):
    """A file with two faults gets one line whichever read takes it, whatever the chunks'
    size: the chunked read leaves a fault to the whole read, which checks the time column
    first (the unsorted time at row 301, not the prompt at row 11)."""
    path = _two_faults(tmp_path)
    whole = _read(path, window, True)
    assert isinstance(whole, str) and "row 301" in whole, whole
    assert _read(path, window, False, chunk_rows) == whole


def test_a_burst_load_series_costs_little_beside_the_requests():
    """20,000 requests at t = 0 (the series' grid at its 1 ms floor: 14,621 rows): simulate's
    peak traced memory with the load series is under 290 bytes a request (344 with a tuple of
    Python numbers a row; 232 without the series)."""
    from test_round27_reqmem import burst, tier, traced_peak

    from tiersim.engine import simulate
    n = 20_000
    work, spec = burst(n), tier(num_blocks=20_000, max_num_seqs=256,
                                max_num_batched_tokens=8192)
    peak = traced_peak(lambda: simulate([spec], work))
    assert peak / n < 290, f"{peak / n:.0f} bytes a request"


def test_load_series_rows_read_as_the_tuples_they_were():
    """The stored rows read back as the tuples written (means as floats, the peak an int),
    compare equal to them, and timeseries.parquet's frame is the one built a tuple a row."""
    from test_round27_reqmem import burst, tier

    from tiersim.engine import simulate
    from tiersim.engine.load_series import SeriesRows
    from tiersim.summary import TIMESERIES_COLUMNS, timeseries_table
    res = simulate([tier(replicas=2, num_blocks=4000)], burst(500), sample_every=0.5)
    rows = res.samples["t"][0]
    assert isinstance(rows, SeriesRows) and len(rows) > 3
    listed = list(rows)
    assert rows == listed and rows[1:3] == listed[1:3] and rows[-1] == listed[-1]
    assert all(isinstance(r[4], int) and isinstance(r[2], float) for r in rows)

    class Fleet:
        tiers = [type("Tier", (), {"name": "t"})]
    by_tuples = pd.DataFrame([
        ("t", replica, t, running, waiting, kv, res.num_blocks["t"], peak, res.interval_s)
        for replica, samples in enumerate(res.samples["t"])
        for t, running, waiting, kv, peak in samples], columns=TIMESERIES_COLUMNS)
    pd.testing.assert_frame_equal(timeseries_table(res, Fleet), by_tuples, check_exact=True)


def _places_by_lexsort(src, hashes, column):
    """check_hash_places as it was (a lexsort of every id's id, row and place): the reference
    the leaner check must match, error text included."""
    from tiersim.trace import canonical
    lengths = np.fromiter((len(h) for h in hashes), dtype=np.int64, count=len(hashes))
    if lengths.sum() < 2:
        return
    ids = np.concatenate([np.asarray(h, dtype=np.int64) for h in hashes if len(h)])
    rows = np.repeat(np.arange(len(hashes)), lengths)
    places = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    order = np.lexsort((places, rows, ids))
    ids, rows, places = ids[order], rows[order], places[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    first = np.repeat(starts, np.diff(np.r_[starts, len(ids)]))
    moved = np.flatnonzero(places != places[first])
    if not len(moved):
        return
    k = moved[np.lexsort((places[moved], rows[moved]))[0]]
    j = first[k]
    where = (f"both block {places[j] + 1} and block {places[k] + 1} of this prompt"
             if rows[j] == rows[k] else f"block {places[k] + 1} of this prompt but block "
             f"{places[j] + 1} of the prompt of row {src.row(int(rows[j]))}")
    raise src.error(f"hash id {ids[k]} is {where}; a block's id names it with every block "
                    "before it, so it has one place in every prompt (a repeated or moved id "
                    "would count tokens as cached that were never computed): give each "
                    f"block its own id, or remove the column {column} to replay without "
                    "prefix caching", int(rows[k]), column)
    assert canonical  # the module whose message this copies


@pytest.mark.parametrize("bucket", [None, 1, 5, 64])
@pytest.mark.parametrize("seed", range(40))
def test_hash_places_check_names_what_the_lexsort_named(seed, bucket, monkeypatch):
    """Random tables of hash ids (shared prefixes, some ids moved or repeated, empty lists):
    the leaner check refuses or passes each as the lexsort did, in the same words, whatever
    the ids sorted at a time (``bucket``; None: the default, one bucket here)."""
    from tiersim.errors import TraceError
    from tiersim.trace import canonical
    from tiersim.trace.filecheck import Source
    if bucket is not None:
        monkeypatch.setattr(canonical, "PLACES_SORTED_IDS", bucket)
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(int(rng.integers(1, 60))):
        base = int(rng.integers(0, 5)) * 100
        row = list(range(base, base + int(rng.integers(0, 8))))
        if row and rng.random() < 0.08:  # a moved or repeated id
            row[int(rng.integers(0, len(row)))] = int(rng.choice(row + [base + 50]))
        rows.append(np.array(row, dtype=np.int64))
    hashes = np.empty(len(rows), dtype=object)
    hashes[:] = rows
    src = Source("t.jsonl", 0, 3)
    said = []
    for check in (canonical.check_hash_places, _places_by_lexsort):
        try:
            check(src, hashes, "hash_ids")
            said.append(None)
        except TraceError as err:
            said.append(str(err))
    assert said[0] == said[1]


def test_hash_places_check_holds_few_bytes_an_id(monkeypatch):
    """1,000,000 ids (100,000 prompts of 10 blocks sharing prefixes), sorted 250,000 at a
    time: the check's peak traced memory is under 30 bytes an id beside the table (the lexsort
    of ids, rows and places took 57)."""
    from test_round27_reqmem import traced_peak

    from tiersim.trace import canonical
    from tiersim.trace.filecheck import Source
    hashes = np.empty(100_000, dtype=object)
    hashes[:] = [np.arange(10, dtype=np.int64) + (i % 1000) * 10 for i in range(100_000)]
    monkeypatch.setattr(canonical, "PLACES_SORTED_IDS", 250_000)
    peak = traced_peak(lambda: canonical.check_hash_places(Source("t", 0), hashes, "hash_ids"))
    assert peak / 1_000_000 < 30, f"{peak / 1_000_000:.0f} bytes an id"
