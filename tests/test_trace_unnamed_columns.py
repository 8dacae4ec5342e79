"""Column and key names a trace error may show: a trace column's name, never any other (a file
that is no trace, say KEY=value text, is named by its positions only; docs/security.md)."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_hostile_inputs import one_error_line, run_cli

SECRET = "PASSWORD=hunter2"
KEEP_ONE = "keep one (which copy holds the data cannot be known)"


def _parquet(path, names):
    pq.write_table(pa.table([[1]] * len(names), names=names), path)


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("secret.csv", f"{SECRET},{SECRET}\nx,y\n",
     f"columns 1 and 2 share a name (the header, file line 1); {KEEP_ONE}"),
    ("t.csv", "arrival_s,input_tokens,output_tokens,input_tokens\n0,3,4,5\n",
     f"names the column 'input_tokens' twice (the header, file line 1); {KEEP_ONE}"),
    ("secret.jsonl", f'{{"{SECRET}": 1, "{SECRET}": 2}}\n',
     f"row 1: keys 1 and 2 of an object share a name; {KEEP_ONE} (file line 1)"),
    ("t.jsonl", '{"timestamp": 0, "input_length": 1, "timestamp": 1, "output_length": 1}\n',
     f"row 1: names the key 'timestamp' twice; {KEEP_ONE} (file line 1)"),
    ("kinds.jsonl", f'{{"{SECRET}": "a"}}\n{{"{SECRET}": 3}}\n',
     "row 2: key 1 of this line is a number here and text on earlier lines; write every "
     "line's value of that key the same way (file line 2)"),
    ("inside.jsonl", f'{{"arrival_s": 0, "{SECRET}": ["a"]}}\n{{"arrival_s": 1, "{SECRET}": '
                     '[3]}\n',
     "row 2: a value inside key 2 of this line is a number here and text in earlier items or "
     "lines; write every line's value of that key the same way (file line 2)"),
])
def test_only_trace_columns_are_named(tmp_path, capsys, name, content, expected):
    path = tmp_path / name
    path.write_text(content)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    assert line == f"Error: {path}: {expected}"


@pytest.mark.parametrize(("names", "expected"), [
    ([SECRET, "x", SECRET], f"columns 1 and 3 share a name; {KEEP_ONE}"),
    (["arrival_s", "input_tokens", "output_tokens", "input_tokens"],
     f"names the column 'input_tokens' twice; {KEEP_ONE}"),
])
def test_parquet_columns_named_twice(tmp_path, capsys, names, expected):
    path = tmp_path / "t.parquet"
    _parquet(path, names)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    assert line == f"Error: {path}: {expected}"


def test_a_parquet_index_named_as_another_column_is_named_by_position(tmp_path, capsys):
    path = tmp_path / "t.parquet"
    frame = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [1, 2],
                          "output_tokens": [1, 2], SECRET: [3, 4]})
    frame.set_index(pd.Index([5.0, 6.0], name=SECRET)).to_parquet(path)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    assert line == (f"Error: {path}: its pandas index and column 4 share a name; keep one "
                    "(drop the index with reset_index(drop=True), or rename it) and write the "
                    "file again")


def test_pandas_metadata_renaming_a_recognised_column_is_one_line(tmp_path, capsys):
    """The schema says input_tokens (recognised), the pandas metadata renames it to a secret:
    reading it raised a KeyError traceback."""
    import json

    table = pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [10, 20],
                      "output_tokens": [5, 6]})
    columns = [{"name": SECRET if n == "input_tokens" else n, "field_name": n,
                "pandas_type": "int64", "numpy_type": "int64", "metadata": None}
               for n in table.column_names]
    meta = {"index_columns": [], "column_indexes": [], "columns": columns}
    path = tmp_path / "renamed.parquet"
    pq.write_table(table.replace_schema_metadata({b"pandas": json.dumps(meta).encode()}), path)
    code, err = run_cli(capsys, "trace", "inspect", str(path))
    assert one_error_line(code, err) == (
        f"Error: {path}: its pandas metadata names column 2 otherwise than its schema does; "
        "write the file again without that metadata (pyarrow: table.replace_schema_metadata())")
    assert SECRET not in err
