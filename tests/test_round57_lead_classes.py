"""Round 57, lead (class57's leftover): a trace's ``difficulty_class`` names a row of the
accuracy-by-class table and a key of summary.json each; nothing capped how many, so a column of
a million distinct names made a summary and a report of a million rows. More than 64 distinct
names are refused at the row of the 65th."""

from __future__ import annotations

import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace import read_trace


def _trace(tmp_path, classes: list[str], suffix: str = ".csv"):
    n = len(classes)
    df = pd.DataFrame({"arrival_s": [float(i) for i in range(n)], "input_tokens": [10] * n,
                       "output_tokens": [5] * n, "difficulty_class": classes})
    path = tmp_path / f"t{suffix}"
    if suffix == ".csv":
        df.to_csv(path, index=False)
    else:
        df.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_more_than_64_classes_are_refused_at_the_65th(tmp_path, suffix):
    classes = ["easy", "hard"] * 10 + [f"c{k}" for k in range(70)]
    path = _trace(tmp_path, classes, suffix)
    with pytest.raises(TraceError) as err:
        read_trace(path, format="canonical")
    where = "row 83, column 'difficulty_class'"  # the 65th name's row, 0-based: 20 + 63
    tail = " (file line 84)" if suffix == ".csv" else ""
    assert str(err.value) == (
        f"{path}: {where}: difficulty_class names more than 64 classes (this row's 'c62' is "
        "class 65); a class is a row of the accuracy-by-class table: group the requests into "
        f"a few classes (easy, hard, ...){tail}"
    )


def test_64_classes_read(tmp_path):
    classes = ["easy", "hard"] + [f"c{k}" for k in range(62)]
    table = read_trace(_trace(tmp_path, classes), format="canonical").table
    assert table["difficulty_class"].nunique() == 64
