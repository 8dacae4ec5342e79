"""Round 30 (cols): follow-ups to reading a trace for the columns tiersim uses (5c9bda0): a
column kept for the response cache is not noted as used by nothing."""

from __future__ import annotations

import json
import warnings

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import tiny_doc

from tiersim.cli.app import main
from tiersim.inputs import load_scenario_trace
from tiersim.scenario import scenario_from_dict

ROWS = 40


def _columns() -> dict:
    """A canonical trace's columns, a response cache key ``mykey`` and an unread ``note``."""
    return {"request_id": list(range(ROWS)), "arrival_s": [i * 0.5 for i in range(ROWS)],
            "input_tokens": [100 + i for i in range(ROWS)], "output_tokens": [10] * ROWS,
            "mykey": [i % 3 for i in range(ROWS)], "note": [f"n{i}" for i in range(ROWS)]}


def _write(path):
    """The trace of :func:`_columns` at ``path`` (Parquet or CSV, by its suffix)."""
    table = pa.table(_columns())
    if path.suffix == ".csv":
        table.to_pandas().to_csv(path, index=False)
    else:
        pq.write_table(table, path)
    return path


def _notes(path) -> tuple[str, ...]:
    """The notes of the trace as a run whose response cache keys on ``mykey`` reads it."""
    doc = tiny_doc(trace={"path": str(path)},
                   router={"policy": "static_split", "fractions": [0.5, 0.5],
                           "response_cache": {"size": 5, "key": "mykey"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = load_scenario_trace(scenario_from_dict(doc, "s.yaml"), "s.yaml")
    assert "mykey" in loaded.table.columns
    return loaded.origin.notes


@pytest.mark.parametrize("name", ["t.parquet", "t.csv"])
def test_the_response_cache_key_column_is_not_called_unused(tmp_path, name):
    """The key column was noted "not a canonical column: carried in the table, used by
    nothing" while the response cache read it; only the column nothing reads is noted."""
    notes = _notes(_write(tmp_path / name))
    assert not [n for n in notes if "mykey" in n], notes
    assert [n for n in notes if n.startswith("column(s) 'note' not read (not a canonical "
                                             "column:")], notes


def _labelled(path):
    """:func:`_columns` as a Parquet trace with tier labels ``correct_a`` and ``correct_b``."""
    pq.write_table(pa.table({**_columns(), "correct_a": [i % 4 > 0 for i in range(ROWS)],
                             "correct_b": [True] * ROWS}), path)
    return path


def test_analytic_trace_never_decodes_a_column_nothing_reads(tmp_path, decoded, capsys):
    """``tiersim analytic --trace FILE`` decoded every column of a Parquet trace (the default
    read_trace); it reads the canonical ones."""
    path = _labelled(tmp_path / "t.parquet")
    assert main(["analytic", "--trace", str(path), "--cheap", "a", "--top", "b", "--json"]) == 0
    assert decoded and all(c is not None and "note" not in c and "mykey" not in c
                           for c in decoded), decoded
    assert "'mykey', 'note' not read (not a canonical column: left out of the table, used " \
           "by nothing)" in capsys.readouterr().err


def test_analytic_trace_keeps_its_scenarios_response_cache_key(tmp_path, decoded, capsys):
    """With ``--scenario``, the trace is read as the scenario's run reads it: the response
    cache's key column too (the cache answers requests before the estimate), no other."""
    path = _labelled(tmp_path / "t.parquet")
    doc = tiny_doc(router={"policy": "static_split", "fractions": [0.5, 0.5],
                           "response_cache": {"size": 5, "key": "mykey"}})
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    assert main(["analytic", "--scenario", str(scenario), "--trace", str(path), "--json"]) == 0
    assert decoded and all(c is not None and "note" not in c and "mykey" in c
                           for c in decoded), decoded
    assert json.loads(capsys.readouterr().out)["estimated_from"]["n"] == 0  # every row a hit


def test_a_length_file_is_read_for_its_token_columns(tmp_path, decoded, capsys):
    """``tiersim trace inspect`` of a Parquet file of token lengths (load_lengths) decoded
    every column: a 1M-row file with a 300-byte text column peaked at 1.4 GB."""
    path = tmp_path / "lengths.parquet"
    columns = _columns()
    pq.write_table(pa.table({"num_prefill_tokens": columns["input_tokens"],
                             "num_decode_tokens": columns["output_tokens"],
                             "note": columns["note"]}), path)
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    assert decoded == [["num_prefill_tokens", "num_decode_tokens"]]
    stats = json.loads(capsys.readouterr().out)
    assert (stats["rows"], stats["input_tokens"]["p50"]) == (ROWS, 119.5)
