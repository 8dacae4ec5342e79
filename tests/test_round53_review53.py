"""Round 53 (helper review53): an independent review of turn 52's changes
(``git diff 08deb0d9..6cc7eb9e -- tiersim``); each test pins a defect it found."""

from __future__ import annotations

import pytest
from conftest import run_cli, tiny_doc, write_yaml


@pytest.fixture(scope="module")
def floored_sweep(tmp_path_factory):
    """A two-point sweep of the tiny scenario's 40 s under an accuracy floor (its points carry
    ``accuracy_floor`` and ``savings.vs_uniform_frac``, which the Points table's verdicts
    read); tests copy it and tamper with the copy."""
    tmp = tmp_path_factory.mktemp("sweep")
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 280]},
                   accuracy_floor=0.5)
    doc["sweep"] = {"tiers.w4a16.cost_per_gpu_hour": [1.0, 3.5]}
    out = tmp / "sw"
    done = run_cli("sweep", str(write_yaml(tmp / "s.yaml", doc)), "--out", str(out), "-w", "1")
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize(("column", "value", "said"), [
    ("savings.vs_uniform_frac", "x", "holds 'x' (row 0), not a number"),
    ("accuracy_floor", "x", "holds 'x' (row 0), not a number"),
    ("accuracy_floor", 1.5, "holds 1.5 (row 0): must be a fraction between 0 and 1"),
])
def test_a_hand_edited_sweep_verdict_cell_is_one_line(floored_sweep, tmp_path, column, value,
                                                      said):
    """The Points table's verdicts (turn 52) read ``savings.vs_uniform_frac`` (its "saved vs
    uniform" cell) and ``accuracy_floor`` (the "meets accuracy floor 50.0 %" header) as
    numbers, but the report checked neither column: a text cell in either ended ``tiersim
    report`` in a TypeError / ValueError traceback (fuzz19 fixed the same for ``router.fpr``).
    Both are now checked as the report's other number columns are."""
    import shutil

    import pandas as pd

    out = shutil.copytree(floored_sweep, tmp_path / "sw")
    table = out / "sweep.parquet"
    frame = pd.read_parquet(table)
    assert frame["savings.vs_uniform_frac"].notna().all()
    assert (frame["accuracy_floor"] == 0.5).all()
    frame[column] = value
    frame.to_parquet(table)
    done = run_cli("report", str(out))
    assert (done.returncode, done.stderr) == (
        1, f"Error: {table}: column {column!r} {said}; rerun the sweep\n")
