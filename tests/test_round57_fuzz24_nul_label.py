"""Round 57, hostile-input round (fuzz24): a label whose last character is NUL.

A ``task_type`` / ``step_type`` / ``subject`` of ``"a\\x00"`` is refused for its control
character, and the refusal names the first row holding it. That row was found with numpy's
``==``, which drops a text's trailing NUL characters: ``"a\\x00"`` matched ``"a"``, so the line
named an earlier row of ``"a"`` (row 1 of a JSON lines file whose row 2 held it), and where no
such row was in the chunk a Parquet read checks (row groups), ``tiersim trace inspect`` ended
in a traceback (IndexError).
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
from test_hostile_inputs import run_cli


def test_a_trailing_nul_in_a_json_label_names_its_own_row(tmp_path, capsys):
    """The exact line names row 2 (file line 2), not row 1's plain "a"."""
    rows = [
        {"arrival_s": 0, "input_tokens": 1, "output_tokens": 1, "task_type": "a"},
        {"arrival_s": 1, "input_tokens": 1, "output_tokens": 1, "task_type": "a\x00"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {path}: row 2, column 'task_type': task_type contains the control or format "
        "character U+0000; use printable text (file line 2)"
    )


def test_a_trailing_nul_in_a_later_row_group_is_one_line(tmp_path, capsys):
    """A Parquet file of two row groups, the NUL label in the second: the exact line."""
    path = tmp_path / "t.parquet"
    table = pa.table(
        {
            "arrival_s": [0.0, 1.0, 2.0, 3.0],
            "input_tokens": [10] * 4,
            "output_tokens": [5] * 4,
            "step_type": ["a", "b", "c", "a\x00"],
        }
    )
    pq.write_table(table, path, row_group_size=2)
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert code == 1
    assert err.splitlines()[-1] == (
        f"Error: {path}: row 4, column 'step_type': step_type contains the control or format "
        "character U+0000; use printable text"
    )
