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


def test_analytic_says_the_scenario_table_is_illustrative_as_run_does(capsys):
    """cascade.yaml sets ``accuracy_values: illustrative``: ``tiersim run`` labels its tiers'
    accuracy 'scenario (illustrative)', and ``tiersim analytic`` said only '(the scenario's
    table)', in its line and its JSON."""
    import json

    from tiersim.cli import main

    scenario = ROOT / "scenarios" / "cascade.yaml"
    capsys.readouterr()
    assert main(["analytic", "--scenario", str(scenario)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("accuracy: "))
    assert line.startswith("accuracy: nvfp4 0.7384 (the scenario's table, illustrative), "
                           "bf16 0.8047 (the scenario's table, illustrative);"), line
    assert main(["analytic", "--scenario", str(scenario), "--json"]) == 0
    sources = json.loads(capsys.readouterr().out)["estimated_from"]["accuracy_source"]
    assert sources == {"nvfp4": "scenario (illustrative)", "bf16": "scenario (illustrative)"}


def test_analytic_prints_minus_zero_as_zero(capsys):
    """``--floor -0`` printed 'at floor -0.0000' (and ``--eps -0`` 'eps = -0'): -0 is 0."""
    from tiersim.cli import main

    flags = ["analytic", "--p", "0.8", "--eps", "-0", "--delta", "0.3", "--dc", "1.0",
             "--c0", "-0", "--floor", "-0"]
    capsys.readouterr()
    assert main(flags) == 0
    out = capsys.readouterr().out
    assert "-0" not in out, out
    assert "at floor 0.0000: " in out and "eps = 0 " in out
    assert main([*flags, "--json"]) == 0
    assert "-0" not in capsys.readouterr().out
