"""Round 57, hostile-input round (fuzz24): a session trace's ``parent`` of empty text.

A Parquet (or JSON lines) ``parent`` column of text, ``""`` for a step that follows none and
``"0"``, ``"1"`` for the others, was refused at its first row: "parent must be a whole
number, -1 or an earlier step of the session (got text of 0 characters); fix it, or leave it
empty (as -1) for a step that follows none": told to leave empty the cell it had left empty.
Text of spaces alone is now an empty cell, as a CSV's empty cell is; other text is refused as
before, at its own row.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from test_hostile_inputs import TINY, run_cli


def _scenario(tmp_path, parents: list[str]):
    """The tiny scenario over a 3-step session whose ``parent`` column is text."""
    table = pa.table(
        {
            "session_id": ["a", "a", "a"],
            "step": [0, 1, 2],
            "parent": parents,
            "arrival_s": [0.0, 1.0, 2.0],
            "input_tokens": [10] * 3,
            "output_tokens": [5] * 3,
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    text = TINY.replace("azure2023_code.parquet", "t.parquet").replace("  window: [240, 360]\n", "")
    path = tmp_path / "s.yaml"
    path.write_text(text + "workload:\n  sessions: {source: trace}\n")
    return path


def test_an_empty_text_parent_is_a_step_that_follows_none(tmp_path, capsys):
    """``""`` and ``" "`` read as an empty cell: the run goes through."""
    scenario = _scenario(tmp_path, ["", "0", " "])
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "o", "--no-baselines")
    assert code == 0, err
    assert (tmp_path / "o" / "summary.json").is_file()


def test_other_text_in_a_parent_is_refused_at_its_row(tmp_path, capsys):
    """The exact line names row 2, not the empty cell of row 1."""
    scenario = _scenario(tmp_path, ["", "zero", "1"])
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "o", "--no-baselines")
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {tmp_path / 't.parquet'}: row 2, column 'parent': parent must be a whole "
        "number, -1 or an earlier step of the session (got text of 4 characters); fix it, or "
        "leave it empty (as -1) for a step that follows none"
    )
