"""Round 30, five small things users see: each the exact line (or exit status) that was wrong,
fixed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli
from test_sweep_cli import with_sweep

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny(tiny_short) -> Path:
    """scenarios/tiny.yaml copied next to the test, on a short window (conftest)."""
    return tiny_short


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


def test_a_number_with_digit_separators_reads_alike_in_flags_and_scenarios(tmp_path, capsys):
    """Decision: ``1_000`` is 1000 on every number flag, as in a scenario's YAML (YAML 1.1 digit
    separators, which :mod:`tiersim.scenario`'s loader keeps), not refused on one side only;
    a spelling refused (``1__0``; since round 48 also ``1_0``, which groups no thousands) is
    one line naming the flag and the number to write (tiersim.numbers, the rule scenarios
    share)."""
    from tiersim.cli import main
    from tiersim.scenario import load_scenario, read_yaml_value

    assert read_yaml_value("1_000") == 1000 and read_yaml_value("2_400.5") == 2400.5
    assert read_yaml_value("1_0") == "1_0"  # text: a number field refuses it (below)
    path = tmp_path / "s.yaml"
    path.write_text((ROOT / "scenarios" / "tiny.yaml").read_text()
                    .replace("seed: 0", "seed: 1_000")
                    .replace("path: azure2023_code.parquet",
                             f"path: {ROOT / 'traces' / 'azure2023_code.parquet'}"))
    assert load_scenario(path, fit=False).seed == 1000
    model = ["analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3"]
    outputs = []
    for argv in ([*model, "--dc", "1_000", "--floor", "0.950_0"], [*model, "--dc", "1000",
                                                                     "--floor", "0.95"],
                 ["trace", "inspect", "azure2023_code.parquet", "--window", "240.000_0", "270"],
                 ["trace", "inspect", "azure2023_code.parquet", "--window", "240", "270"]):
        capsys.readouterr()
        assert main(argv) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[2] == outputs[3]
    assert error_line(*run_cli(capsys, *model, "--dc", "1__0")) == (
        "Error: --dc: 1__0 has a _ that is not between two digits; write 10; "
        "see tiersim analytic --help")


def test_plan_prints_a_floor_of_minus_zero_as_zero(tiny, tmp_path, capsys):
    """``tiersim plan --accuracy-floor -0`` printed 'vs floor -0.00%', as analytic did."""
    from tiersim.cli import main

    capsys.readouterr()
    assert main(["plan", str(tiny), "-o", str(tmp_path / "p"), "--accuracy-floor", "-0",
                 "--no-report"]) == 0
    out = capsys.readouterr().out
    # the paths written are left out: pytest's tmp_path may hold "-0" (.../pytest-0/...)
    assert " vs floor 0.00%" in out and "-0" not in out.replace(str(tmp_path), ""), out


def test_a_scenario_floor_of_minus_zero_reads_as_zero(tmp_path):
    """A scenario's ``accuracy_floor: -0.0`` stayed -0.0, and the plan printed 'vs floor
    -0.00%' as the flag did."""
    import math

    from tiersim.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text((ROOT / "scenarios" / "tiny.yaml").read_text()
                    .replace("path: azure2023_code.parquet",
                             f"path: {ROOT / 'traces' / 'azure2023_code.parquet'}")
                    + "accuracy_floor: -0.0\n")
    assert math.copysign(1.0, load_scenario(path, fit=False).accuracy_floor) == 1.0
