"""Round 30 (trace readers): four readings that were wrong, each from a tiny file.

1. a whole-number ``step_type`` column with a missing row read as floats ('1.0');
2. an out-of-order arrival time was shown as parsed, not as the file writes it;
3. a file of token lengths dropped its session and prefix columns without a word;
4. a CSV ``correct_<tier>`` column of True/False with one bad cell was refused at row 1.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace.loader import read_trace
from tiersim.workload import sessions


def _session_rows(step_types: list) -> list[dict]:
    """Rows of one session, one step each, with the given ``step_type`` values."""
    return [{"arrival_s": float(i), "input_tokens": 100, "output_tokens": 10, "session_id": 1,
             "step": i, "step_type": kind} for i, kind in enumerate(step_types)]


def _write(path, rows: list[dict]):
    """``rows`` as a JSON-lines file, a Parquet file (integers nullable) or a CSV, by suffix."""
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        df = pd.DataFrame(rows)
        df["step_type"] = df["step_type"].astype("Int64")
        df.to_parquet(path) if path.suffix == ".parquet" else df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet", ".csv"])
def test_whole_number_step_types_with_a_missing_row_read_as_written(tmp_path, suffix):
    """Integers with a missing row read as '2', '1' (pandas made them floats: '2.0', '1.0'),
    and the missing row takes the default type, 'step', as an empty cell does."""
    path = _write(tmp_path / f"t{suffix}", _session_rows([2, 1, None, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # pandas' FutureWarning on filling floats with text
        loaded = read_trace(path)
        table = loaded.table.assign(request_id=np.arange(4))
        replayed = sessions.checked(table, str(path))
    assert loaded.origin.step_types == frozenset({"1", "2"})
    assert list(replayed["step_type"]) == ["2", "1", "step", "1"]


def _flags_csv(path, cells: list[str]):
    """A canonical CSV of one request per cell, ``correct_small`` holding ``cells``."""
    lines = [f"{i * 0.1:.1f},10,5,{cell}" for i, cell in enumerate(cells)]
    path.write_text("arrival_s,input_tokens,output_tokens,correct_small\n" + "\n".join(lines)
                    + "\n")
    return path


def test_a_bad_cell_among_true_false_labels_is_named_at_its_row(tmp_path):
    """True/False labels with one bad cell at row 5,000 were refused at row 1 (pandas left the
    column text, and 'False' read as no number); now the bad cell's row and what it is."""
    cells = ["True" if i % 2 else "False" for i in range(6000)]
    cells[4999] = "maybe"
    path = _flags_csv(tmp_path / "flags.csv", cells)
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    assert str(caught.value) == (
        f"{path}: row 5000, column 'correct_small': correct_small is not a number (got text of "
        "5 characters); write a number or true/false (file line 5001)")


def test_true_false_labels_as_text_read_as_one_and_zero(tmp_path):
    """The words pandas reads as true/false, beside a number, read as 1 and 0."""
    path = _flags_csv(tmp_path / "flags.csv", ["True", "false", "TRUE", "0.5"])
    values = read_trace(path).table["correct_small"].to_numpy()
    assert np.array_equal(values, [1, 0, 1, 0.5])


UNSORTED = {
    "c.csv": ("arrival_s,input_tokens,output_tokens\n1700000000.000000,10,5\n"
              "1700000005.500000,10,5\n\n1700000001.250000,10,5\n"),
    "c.jsonl": ('{"arrival_s": 1700000000.000000, "input_tokens": 10, "output_tokens": 5}\n'
                '{"arrival_s": 1700000005.500000, "input_tokens": 10, "output_tokens": 5}\n\n'
                '{"arrival_s": 1.70000000125e9, "input_tokens": 10, "output_tokens": 5}\n'),
}


@pytest.mark.parametrize("name", UNSORTED)
def test_an_unsorted_time_is_shown_as_the_file_writes_it(tmp_path, name):
    """1700000001.250000 after 1700000005.500000 was shown as parsed (1700000001.25, and
    1.70000000125e9 so too); now each cell as written, at its row and file line."""
    path = tmp_path / name
    path.write_text(UNSORTED[name])
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    now, line = ("1700000001.250000", 5) if name.endswith(".csv") else ("1.70000000125e9", 4)
    assert str(caught.value) == (
        f"{path}: row 3, column 'arrival_s': timestamp {now} is earlier than the row before "
        f"(1700000005.500000); sort the file by arrival_s (file line {line})")


def test_an_unsorted_logged_time_is_shown_as_written_too(tmp_path):
    """A BurstGPT CSV (read in chunks) and a Mooncake JSON-lines file, their own time columns."""
    burst = tmp_path / "b.csv"
    burst.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     + "".join(f"{t},ChatGPT,10,5,15,Conversation log\n"
                               for t in ("5.000", "7.50", "6.25e0")))
    moon = tmp_path / "m.jsonl"
    moon.write_text("".join(f'{{"timestamp": {t}, "input_length": 10, "output_length": 5, '
                            '"hash_ids": [1]}\n' for t in ("1000", "3000.0", "2.5e3")))
    for path, column, now, before in ((burst, "Timestamp", "6.25e0", "7.50"),
                                      (moon, "timestamp", "2.5e3", "3000.0")):
        with pytest.raises(TraceError) as caught:
            read_trace(path)
        assert f"column '{column}': timestamp {now} is earlier than the row before ({before})" \
            in str(caught.value)


LENGTHS_NOTE = (
    "column(s) 'session_id', 'step', 'prefix_hashes' not read (a file of token lengths gives "
    "its lengths alone, for synthetic arrivals (tiersim.workload.synthetic), whose resampled "
    "rows would fake sessions and prefix-cache hits)")


def _lengths_file(tmp_path):
    """A file of token lengths (no arrival times) with session and prefix columns."""
    path = tmp_path / "len.csv"
    path.write_text("input_tokens,output_tokens,session_id,step,prefix_hashes\n"
                    '10,5,1,0,"[1, 2]"\n12,5,1,1,"[1, 2, 3]"\n')
    return path


def test_a_file_of_lengths_names_the_session_and_prefix_columns_it_drops(tmp_path):
    """load_lengths kept the two token columns and dropped the others without a word."""
    from tiersim.trace import load_lengths
    from tiersim.trace.loader import TraceWarning

    path = _lengths_file(tmp_path)
    with pytest.warns(TraceWarning) as notes:
        lengths = load_lengths(path)
    assert list(lengths.columns) == ["input_tokens", "output_tokens"]
    assert [str(n.message) for n in notes] == [f"{path}: {LENGTHS_NOTE}"]


def test_trace_inspect_of_a_file_of_lengths_notes_the_columns_dropped(tmp_path, capsys):
    """``tiersim trace inspect`` shows the note once, with its table's other notes."""
    from tiersim.cli.app import main

    path = _lengths_file(tmp_path)
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["notes"] == [LENGTHS_NOTE] and not err.strip()
