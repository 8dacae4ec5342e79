"""Round 22 of hostile input, request traces: each a failure found from outside and fixed, with
the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_round19 import error_line, run_cli

# ------------------------------------------------------------------ label columns


def _table(**extra) -> pa.Table:
    return pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [10, 20],
                     "output_tokens": [5, 5], **extra})


@pytest.mark.parametrize(("column", "cells", "got"), [
    ("task_type", [["code"], ["chat"]], "a list of 1 item"),
    ("step_type", [{"k": "plan"}, {"k": "act"}], "an object of 1 key"),
])
def test_a_label_cell_holding_a_list_or_object_is_refused(tmp_path, capsys, column, cells, got):
    """A Parquet list or struct (a JSON array or object) in ``task_type`` or ``step_type`` was
    read as its Python text (``"['plan']"``): a router's ``step_tiers: {plan: ...}`` then met
    no such step ("did you mean \\"['plan']\\"?"), and task labels read as ``{'k': 'plan'}``."""
    path = tmp_path / "t.parquet"
    pq.write_table(_table(**{column: cells}), path)
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column '{column}': {column} must be one number or "
                    f"text per row (got {got}); write each row's {column} as one value")


def test_a_label_cell_holding_a_json_array_is_refused(tmp_path, capsys):
    """The same from JSON lines: ``"task_type": ["code"]``."""
    path = tmp_path / "t.jsonl"
    path.write_text('{"arrival_s":0,"input_tokens":10,"output_tokens":5,"task_type":["code"]}\n'
                    '{"arrival_s":1,"input_tokens":10,"output_tokens":5,"task_type":["chat"]}\n')
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 1, column 'task_type': task_type must be one number or "
                    "text per row (got a list of 1 item); write each row's task_type as one "
                    "value (file line 1)")
