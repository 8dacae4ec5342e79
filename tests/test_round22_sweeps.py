"""Round 22 of hostile input, scenario YAML and sweeps: each a failure found from outside and
fixed (the exact line a user sees, or what was lost or kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def _scenario(tmp_path: Path, text: str) -> Path:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    return scenario


@pytest.mark.parametrize("value", ["5", "[seed, 1]", "false", "[]", "''"])
def test_a_sweep_that_is_no_map_is_refused_by_sweep_as_by_run(tmp_path, capsys, value):
    """``sweep: false``, ``sweep: []`` and ``sweep: ''`` ran as an empty sweep (one point,
    "its sweep: map is empty") where `tiersim run` refuses them; ``sweep: 5`` was refused with
    no line and without saying what it got."""
    scenario = _scenario(tmp_path, TINY + f"\nsweep: {value}\n")
    line = len(TINY.splitlines()) + 2
    got = {"5": "5", "[seed, 1]": "['seed', 1]", "false": "false", "[]": "[]", "''": "''"}[value]
    expected = f"Error: {scenario}: line {line}: sweep: must be a mapping of keys (got {got})"
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == expected
    out = tmp_path / "o"
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1",
                               "--no-baselines")) == expected
    assert not out.exists()


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_null_sweep_is_an_empty_one_in_run_and_sweep(tmp_path, capsys, command):
    """``sweep:`` with every axis commented out (YAML null) ran in `tiersim sweep` as its one
    point, noting "`tiersim run` runs it alone", while `tiersim run` refused it as no map."""
    scenario = _scenario(tmp_path, TINY + "\nsweep:\n  # seed: [0, 1]\n")
    out = tmp_path / "o"
    extra = ["-w", "1", "--no-report"] if command == "sweep" else []
    code, err = run_cli(capsys, command, scenario, "--out", out, "--no-baselines", *extra)
    assert code == 0, err
    assert "Error" not in err


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_bare_equals_sign_value_is_text_not_a_tag_error(tmp_path, capsys, command):
    """``name: =`` (YAML 1.1's "value" key type, which PyYAML's safe loader cannot build) was
    refused as "could not determine a constructor for the tag 'tag:yaml.org,2002:value';
    remove the '!' tag", though the file has no tag; a bare ``=`` key was already text."""
    scenario = _scenario(tmp_path, TINY.replace("  - name: bf16", "  - name: =", 1)
                         .replace("  - name: w4a16", "  - name: =", 1))
    out = ["--out", tmp_path / "o", "-w", "1"] if command == "sweep" else []
    assert error_line(*run_cli(capsys, command, scenario, "--no-baselines", *out)) == (
        f"Error: {scenario}: line 18: tiers[1].name: duplicate tier name '=' (also tiers[0]; "
        "names must differ across tiers and baselines)")


def test_a_bare_equals_sign_reads_as_text(tmp_path):
    """The value ``=`` reads as the text ``=``, as it does as a key."""
    from tiersim.scenario import read_yaml

    data, _ = read_yaml(_scenario(tmp_path, "a: =\nb: [=, x]\n=: 1\n"))
    assert data == {"a": "=", "b": ["=", "x"], "=": 1}


@pytest.mark.parametrize(("old", "new", "where"), [
    ("  - name: bf16", "  - name: ' '", "line 18: tiers[1].name"),
    ("  - name: bf16", "  - name: \"\\u3000\\u00a0\"", "line 18: tiers[1].name"),
    ("name: tiny", "name: ''", "line 3: name"),
])
def test_a_blank_name_is_refused(tmp_path, capsys, old, new, where):
    """A tier named ``' '`` ran: its rows, columns (``correct_ ``) and report labels read as
    nothing; a scenario named ``''`` titled its report with nothing. Names must be seen."""
    scenario = _scenario(tmp_path, TINY.replace(old, new, 1))
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: {where}: is blank; give a name a reader can see")


LONG = "a" * 300_000
CUT = "'" + "a" * 36 + "..."


@pytest.mark.parametrize(("old", "new", "where", "problem"), [
    ("gpu: H200", f"gpu: {LONG}", "line 6: gpu", f"unknown GPU {CUT}; known GPUs: H200, H100, "
     "B200, B300"),
    ("    precision: w4a16", f"    precision: {LONG}", "line 15: tiers[0].precision",
     f"unknown precision {CUT}; known precisions: bf16, fp8, w4a16, nvfp4, fp8_block, mxfp4, "
     "checkpoint"),
    ("    precision: w4a16", f"    precision: w4a16\n    kv_dtype: {LONG}",
     "line 16: tiers[0].kv_dtype", f"unknown KV-cache dtype {CUT}; use 'bf16', 'fp8' or 'auto' "
     "(the checkpoint's own)"),
])
def test_a_long_unknown_name_is_cut_in_its_error_line(tmp_path, capsys, old, new, where,
                                                      problem):
    """``gpu:``, ``precision:`` or ``kv_dtype:`` of 300,000 characters was quoted whole: a
    300 kB error "line". Other fields' lines cut such a value; these now do too."""
    scenario = _scenario(tmp_path, TINY.replace(old, new, 1))
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: {where}: {problem}")


@pytest.mark.parametrize(("sweep", "line", "problem"), [
    ("  zip:\n    - {seed: [0, 1]}\n    - {seed: [2, 3]}\n", 3, "sweep: 'seed': appears twice "
     "(as an axis and in a zip group, or in two zip groups); keep one"),
    ("  zip: {seed: [0, 1], seedz: [1, 2]}\n", 1, "sweep: 'seedz': seedz: unknown key (did you "
     "mean 'seed'?)"),
    ("  zip:\n    seed: ~\n", 2, "sweep: 'seed': values must be a non-empty list (got null)"),
])
def test_an_axis_inside_a_zip_group_is_named_at_its_own_line(tmp_path, capsys, sweep, line,
                                                             problem):
    """An error about an axis listed in a zip group named the line of ``sweep:`` itself (the
    axis is no key of the sweep map), not the line of the group that lists it."""
    scenario = _scenario(tmp_path, TINY + "\nsweep:\n" + sweep)
    at = len(TINY.splitlines()) + 2 + line
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o", "-w", "1",
                               "--no-baselines")) == f"Error: {scenario}: line {at}: {problem}"


@pytest.mark.parametrize("name", ["scenario.yaml", "report.html", "sweep.parquet"])
def test_a_users_own_file_in_a_new_sweep_folder_is_not_overwritten(tmp_path, capsys, name):
    """``--out`` naming a folder of the user's own (no sweep.json in it) that holds a file
    named as a sweep's (their own scenario.yaml, a report.html) replaced that file silently."""
    scenario = _scenario(tmp_path, TINY + "\nsweep:\n  seed: [0, 1]\n")
    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_text("my own file\n")
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1",
                               "--no-baselines")) == (
        f"Error: {out / name}: `tiersim sweep` would overwrite this file, and {out} holds no "
        "sweep's results (no sweep.json); move the file, or use another --out folder "
        "(nothing was written)")
    assert (out / name).read_text() == "my own file\n"
    assert sorted(p.name for p in out.iterdir()) == [name]


def test_a_sweep_killed_between_its_manifest_renames_resumes(tmp_path, capsys):
    """The sweep's own scenario.yaml without sweep.json (a kill between the two renames) is
    not a user's file: the sweep resumes into the folder."""
    scenario = _scenario(tmp_path, TINY + "\nsweep:\n  seed: [0, 1]\n")
    out = tmp_path / "o"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 0
    copy = (out / "scenario.yaml").read_text()
    for path in [*(out / "points").iterdir(), out / "points", out / "sweep.json",
                 out / "sweep.parquet"]:
        path.rmdir() if path.is_dir() else path.unlink()
    assert run_cli(capsys, *args)[0] == 0
    assert (out / "scenario.yaml").read_text() == copy
    assert len(list((out / "points").iterdir())) == 2


@pytest.mark.parametrize("command", ["run", "sweep"])
@pytest.mark.parametrize("limit", ["5000000", "1" + "0" * 30])
def test_a_sweep_point_limit_above_what_any_sweep_holds_is_refused(tmp_path, capsys, command,
                                                                   limit):
    """``limits: {max_sweep_points: 5000000}`` was taken, though no sweep may hold more than
    1,000,000 points whatever it says (``--max-points`` refuses more): a 2,000,000-point grid
    it allowed was refused as above the most any sweep holds."""
    scenario = _scenario(tmp_path, TINY + f"\nlimits: {{max_sweep_points: {limit}}}\n"
                         "sweep:\n  seed: [0, 1]\n")
    out = ["--out", tmp_path / "o", "-w", "1"] if command == "sweep" else []
    line = len(TINY.splitlines()) + 2
    assert error_line(*run_cli(capsys, command, scenario, "--no-baselines", *out)) == (
        f"Error: {scenario}: line {line}: limits.max_sweep_points: must be <= 1000000 "
        f"(got {limit})")


@pytest.mark.parametrize(("old", "new", "line", "fix"), [
    ("    replicas: 1", "    replicas: 1\t# one", 16, "write spaces, not a tab, inside a line "
     "(this YAML reader takes no tab there)"),
    ("    replicas: 1", "    replicas:\t1", 16, "write spaces, not a tab, inside a line (this "
     "YAML reader takes no tab there)"),
    ("  window: [240, 360]", "  window: [240,\t360]", 11, "write spaces, not a tab, inside a "
     "line (this YAML reader takes no tab there)"),
    ("    replicas: 1", "  \t  replicas: 1", 16, "indent with spaces, not tabs"),
])
def test_a_tab_inside_a_line_is_not_called_indentation(tmp_path, capsys, old, new, line, fix):
    """``replicas:\\t1`` or a tab before a comment was refused with "indent with spaces, not
    tabs", though the line's indentation is all spaces: the tab is between its parts."""
    scenario = _scenario(tmp_path, TINY.replace(old, new, 1))
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: line {line}: invalid YAML: found character '\\t' that cannot "
        f"start any token; {fix}")
