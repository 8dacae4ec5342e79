"""Round 30, five small things users see: each the exact line (or exit status) that was wrong,
fixed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from test_round19 import error_line, run_cli
from test_sweep_cli import with_sweep

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny(tmp_path) -> Path:
    """scenarios/tiny.yaml copied next to the test, on a short window."""
    path = tmp_path / "tiny.yaml"
    shutil.copy(ROOT / "scenarios" / "tiny.yaml", path)
    doc = yaml.safe_load(path.read_text())
    doc["trace"]["window"] = [240, 270]
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_changed_input_file_is_named_as_written(tiny, tmp_path, capsys):
    """A resumed sweep over a ``trace.path`` axis whose second file changed said '(trace of
    point X changed since it ran)': the field, not which of the two files."""
    for name in ("a.parquet", "b.parquet"):
        shutil.copy(ROOT / "traces" / "azure2023_code.parquet", tmp_path / name)
    with_sweep(tiny, {"trace.path": ["a.parquet", "b.parquet"]})
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                        "--no-baselines")
    assert code == 0, err
    shutil.copy(ROOT / "traces" / "azure2023_conv.parquet", tmp_path / "b.parquet")
    line = error_line(*run_cli(capsys, "sweep", tiny, "-o", out, "-w", "1", "--no-report",
                               "--no-baselines"))
    assert "(trace b.parquet of point " in line, line
    assert line.startswith(f"Error: {out}: holds sweep points run over other input files ")
