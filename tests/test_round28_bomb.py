"""Round 28 (bomb): a small canonical Parquet file whose extra text column repeats one long
string (stored once, in the column's dictionary) is read without a copy of the string per row;
a Mooncake JSONL file is read once by ``tiersim trace inspect``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tiersim.trace import load_trace

ROWS = 2000
LONG = 100_000
"""A 2,000-row file of one 100,000-character string: 200 MB were it copied into each row."""


def _bomb(path, store_schema: bool = True):
    """A canonical Parquet trace with an extra column ``x`` holding one long string in every
    row, dictionary-encoded (``store_schema=False``: no Arrow schema says so, as files written
    by other tools)."""
    column = pa.array(["x" * LONG]).take(np.zeros(ROWS, dtype=int)).dictionary_encode()
    pq.write_table(pa.table({"arrival_s": np.arange(ROWS, dtype=float),
                             "input_tokens": np.full(ROWS, 10),
                             "output_tokens": np.full(ROWS, 5), "x": column}),
                   path, store_schema=store_schema)
    return path


PEAK = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, {tests!r})
    from {module} import {function}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    {function}(sys.argv[1])
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
""")
"""A child process's growth of its peak resident memory (MB) while reading a trace."""


def _peak_mb(path, module: str, function: str) -> int:
    script = PEAK.format(module=module, function=function, tests=str(Path(__file__).parent))
    run = subprocess.run([sys.executable, "-c", script, str(path)],
                         capture_output=True, text=True, check=True)
    return int(run.stdout.split()[-1])


@pytest.mark.parametrize("store_schema", [True, False])
@pytest.mark.parametrize("read", ["tiersim.trace.load_trace", "tiersim.trace.source.read_raw"])
def test_a_repeated_long_string_is_not_copied_into_every_row(tmp_path, store_schema, read):
    """The chunked read of a canonical file, and the whole read (of a file refused, or of
    token lengths): 380 MB before (a copy per row, as text objects and as Arrow text)."""
    path = _bomb(tmp_path / "b.parquet", store_schema)
    assert _peak_mb(path, *read.rsplit(".", 1)) < 60


@pytest.mark.parametrize("store_schema", [True, False])
def test_the_extra_column_keeps_its_values(tmp_path, store_schema):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = load_trace(_bomb(tmp_path / "b.parquet", store_schema))
    assert len(table) == ROWS
    assert (table["x"].astype(object) == "x" * LONG).all()


MOONCAKE = "../shared/data/traces/synthetic_trace.jsonl"


def _lines(path, rows: int):
    """The first ``rows`` lines of the real Mooncake synthetic trace."""
    if not Path(MOONCAKE).exists():  # the raw trace is shared data, not in the checkout
        pytest.skip(f"{MOONCAKE} not checked out beside the repository (../shared/data)")
    with open(MOONCAKE) as source:
        path.write_text("".join(line for _, line in zip(range(rows), source)))
    return path


def _inspect_reads(monkeypatch, path, *options) -> tuple[list[str], dict]:
    """How many times ``tiersim trace inspect --json`` parsed the JSONL file, and its output."""
    from typer.testing import CliRunner

    from tiersim.cli.trace import trace_app
    from tiersim.trace import read_jsonl as source

    reads = []
    parse = source._read_jsonl
    monkeypatch.setattr(source, "_read_jsonl", lambda p: reads.append(p) or parse(p))
    result = CliRunner().invoke(trace_app, ["inspect", str(path), "--json", *options])
    assert result.exit_code == 0, result.output
    return reads, json.loads(result.output)


@pytest.mark.parametrize("options", [(), ("--window", "10", "200"), ("--time-scale", "2")])
def test_inspect_reads_a_jsonl_file_once(tmp_path, monkeypatch, options):
    """It was read whole for its column names, then again for the trace (~40% of its time)."""
    reads, stats = _inspect_reads(monkeypatch, _lines(tmp_path / "m.jsonl", 500), *options)
    assert len(reads) == 1
    assert stats["format"] == "mooncake" and stats["rows"] > 0


def test_inspect_reads_a_jsonl_file_of_token_lengths_once(tmp_path, monkeypatch):
    path = tmp_path / "l.jsonl"
    path.write_text("".join(json.dumps({"num_prefill_tokens": 10 + i, "num_decode_tokens": 5})
                            + "\n" for i in range(20)))
    reads, stats = _inspect_reads(monkeypatch, path)
    assert len(reads) == 1
    assert stats["format"] == "lengths (no arrival times)" and stats["rows"] == 20
