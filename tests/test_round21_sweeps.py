"""Round 21 of hostile input, sweeps: each a failure found from outside and fixed (the exact line
a user sees, or what was lost or kept)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def test_sweep_refuses_a_quoted_number_in_its_base_as_run_does(tmp_path, capsys):
    """``cost_per_gpu_hour: "3.50"`` outside the sweep map: `tiersim run` refuses it at its
    line, `tiersim sweep` read it as 3.5 and ran every point (the points are validated from a
    dict, without the file's node tree that tells a quoted value)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("cost_per_gpu_hour: 3.50", 'cost_per_gpu_hour: "3.50"', 1)
                        + "\nsweep:\n  seed: [0, 1]\n")
    line = ("line 17: tiers[0].cost_per_gpu_hour: must be a number, not a string ('3.50'); "
            "write it without quotes")
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: {line}")
    out = tmp_path / "o"
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1",
                               "--no-baselines")) == f"Error: {scenario}: {line}"
    assert not out.exists()


def _sweep_file(tmp_path: Path, sweep: str) -> Path:
    """tiny.yaml with ``sweep`` (YAML text, indented) appended as its sweep map."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY + "\nsweep:\n" + sweep)
    return scenario


def _sweep_line(scenario: Path) -> int:
    return scenario.read_text().splitlines().index("sweep:") + 2


@pytest.mark.parametrize(("sweep", "axis", "problem"), [
    ('  trace.window: [["240", "300"], [240, 330]]\n', "trace.window",
     "value ['240', '300'] holds '240', which must be a number, not a string; write 240 "
     "without quotes"),
    ('  router.fractions: [[0.5, 0.5], ["0.2", 0.8]]\n', "router.fractions",
     "value ['0.2', 0.8] holds '0.2', which must be a number, not a string; write 0.2 without "
     "quotes"),
])
def test_a_quoted_number_inside_an_axis_value_is_refused(tmp_path, capsys, sweep, axis,
                                                         problem):
    """A quoted number inside a list or map value (``trace.window: [["240", "300"]]``) ran as
    the number, but was stored, labelled and identified as text; `tiersim run` refuses
    ``window: ["240", "300"]``. Only a quoted value at the top of the list was refused."""
    scenario = _sweep_file(tmp_path, sweep)
    out = tmp_path / "o"
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1",
                               "--no-baselines")) == (
        f"Error: {scenario}: line {_sweep_line(scenario)}: sweep: {axis!r}: {problem}")
    assert not out.exists()


def test_a_plain_number_yaml_reads_as_text_is_not_called_quoted(tmp_path, capsys):
    """``[1, 010]`` (no quotes: YAML 1.1 reads 010 as octal, PyYAML's text here) was refused
    with "write 10 without quotes", which the value had none of; it is refused with the
    number to write (tiersim.numbers; it said "is text to YAML 1.1" while 1e1 was text too).
    Round 48: the value is quoted as written, 010, not as Python's '010'."""
    scenario = _sweep_file(tmp_path, "  tiers.bf16.replicas: [1, 010]\n")
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o", "-w", "1",
                               "--no-baselines")) == (
        f"Error: {scenario}: line {_sweep_line(scenario)}: sweep: 'tiers.bf16.replicas': "
        "tiers[1].replicas: 010 has a leading zero, which YAML 1.1 reads as octal (8); write 10 "
        "(value 010)")


@pytest.mark.parametrize(("sweep", "value"), [
    ("  tiers.bf16.cost_per_gpu_hour: [1e1, 3.5]\n", 10.0),
    ("  trace.window: [[240, 3e2]]\n", [240, 300.0]),
    ("  tiers.bf16.cost_per_gpu_hour: [1e-5, 3.5]\n", 1e-05),
])
def test_a_plain_number_with_an_exponent_is_a_number_on_an_axis(tmp_path, sweep, value):
    """``1e1`` with no point (text to YAML 1.1, refused as such) is 10.0, as YAML 1.2, a
    scenario's own keys and every number flag read it (tiersim.numbers)."""
    from tiersim.sweep.run import prepare

    plan = prepare(_sweep_file(tmp_path, sweep))
    assert plan.points[0].values[sweep.split(":")[0].strip()] == value


def test_a_quoted_name_inside_an_axis_value_stays_text(tmp_path):
    """A whole tier whose name is "2" is a name, not a number: the check reads the field."""
    from tiersim.sweep.run import prepare

    tier = "{name: %s, precision: %s, replicas: 1, cost_per_gpu_hour: 3.5}"
    scenario = _sweep_file(tmp_path, f"  tiers: [[{tier % ('a', 'w4a16')}, "
                                     f"{tier % (repr('2'), 'bf16')}]]\n")
    plan = prepare(scenario)
    assert plan.points[0].values["tiers"][1]["name"] == "2"


@pytest.mark.parametrize(("text", "got"), [
    ("", "an empty file"), ("# only a comment\n", "an empty file"), ("null\n", "null"),
    ("~\n", "null"), ("- a\n- b\n", "list"), ("hello\n", "str"), ("3\n", "int"),
])
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_scenario_that_is_no_map_says_what_it_is_in_run_and_sweep(tmp_path, capsys, text,
                                                                    got, command):
    """A file holding ``null`` was "an empty file"; `tiersim sweep` said "must be a YAML map at
    the top level" without what it got, where `tiersim run` says it."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text)
    out = ["--out", tmp_path / "o"] if command == "sweep" else []
    assert error_line(*run_cli(capsys, command, scenario, *out)) == (
        f"Error: {scenario}: top level must be a mapping of keys (got {got})")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_number_tagged_as_text_is_refused_as_a_quoted_one(tmp_path, capsys, command):
    """``replicas: !!str 2`` is the text "2" to YAML, as ``"2"`` is; the quoted one is
    refused, the tagged one was read as the number 2."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("    replicas: 1", "    replicas: !!str 2", 1))
    out = ["--out", tmp_path / "o", "-w", "1"] if command == "sweep" else []
    assert error_line(*run_cli(capsys, command, scenario, "--no-baselines", *out)) == (
        f"Error: {scenario}: line 16: tiers[0].replicas: must be a number, not a string ('2'); "
        "write it without the !!str tag")


def test_a_number_tagged_as_text_on_an_axis_is_refused(tmp_path, capsys):
    """The same tag on an axis value names the tag, not quotes it has none of."""
    scenario = _sweep_file(tmp_path, "  tiers.bf16.replicas: [1, !!str 2]\n")
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o",
                               "--no-baselines")) == (
        f"Error: {scenario}: line {_sweep_line(scenario)}: sweep: 'tiers.bf16.replicas': value "
        "'2' must be a number, not a string; write 2 without the !!str tag")


def test_a_point_its_worker_could_not_store_is_stored_by_the_sweep(tmp_path, capsys,
                                                                   monkeypatch):
    """A worker whose write of its point failed (a disk full for a moment) lost the point it
    had computed: the sweep stored it failed, as "worker process died (No space left on
    device ...)". The sweep stores the worker's record itself, as it does Ray's."""
    import errno
    import json
    import os

    from tiersim import atomic
    from tiersim.sweep import executors

    monkeypatch.setattr(executors, "_context", lambda: __import__("multiprocessing")
                        .get_context("fork"))
    parent, real = os.getpid(), atomic.stage

    def stage(path, write, mode="wb"):
        if os.getpid() != parent:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, write, mode)

    monkeypatch.setattr(atomic, "stage", stage)
    scenario = _sweep_file(tmp_path, "  seed: [0, 1]\n")
    scenario.write_text(scenario.read_text().replace("[240, 360]", "[240, 270]"))
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "-w", "2", "--no-baselines",
                        "--no-report")
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (out / "points").glob("*.json")]
    assert [r["status"] for r in records] == ["ok", "ok"]


@pytest.mark.parametrize(("limits", "got"), [("5", "5"), ("[1]", "[1]"), ("x", "'x'")])
def test_limits_that_is_no_map_is_named_so_by_sweep_as_by_run(tmp_path, capsys, limits, got):
    """``limits: 5`` made `tiersim sweep` say "limits.max_sweep_points: must be a whole number
    >= 1 (got None)", a key the file does not have; `tiersim run` says limits is no map."""
    scenario = _sweep_file(tmp_path, "  seed: [0, 1]\n")
    scenario.write_text(scenario.read_text().replace("\nsweep:", f"\nlimits: {limits}\nsweep:"))
    line = scenario.read_text().splitlines().index(f"limits: {limits}") + 1
    expected = f"Error: {scenario}: line {line}: limits: must be a mapping of keys (got {got})"
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == expected
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o",
                               "--no-baselines")) == expected


def test_a_trace_moved_away_is_not_called_changed_nor_its_points_deleted(tmp_path, capsys):
    """A trace moved away after the points ran made the rerun say it "changed since it ran"
    and advise deleting the points folder: every finished point lost for a missing file. The
    finished points stay; a point still to run fails with the run's own line (file not
    found), and once the file is back the sweep resumes."""
    import shutil

    trace = tmp_path / "t.parquet"
    shutil.copy(ROOT / "tiersim" / "traces" / "azure2023_code.parquet", trace)
    text = TINY.replace("azure2023_code.parquet", "t.parquet").replace("[240, 360]",
                                                                         "[240, 270]")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(text + "\nsweep:\n  seed: [0, 1]\n")
    out = tmp_path / "o"
    args = ("sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report")
    assert run_cli(capsys, *args)[0] == 0
    trace.rename(tmp_path / "away.parquet")
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "(0 run, 2 already done, 0 failed)" in err
    scenario.write_text(text + "\nsweep:\n  seed: [0, 1, 2]\n")
    line = error_line(*run_cli(capsys, *args))
    assert "1 of 3 sweep point(s) failed" in line and "t.parquet: trace file not found" in line
    assert len(list((out / "points").glob("*.json"))) == 3
    (tmp_path / "away.parquet").rename(trace)
    code, err = run_cli(capsys, *args)
    assert code == 0 and "(1 run, 2 already done, 0 failed)" in err, err


@pytest.mark.parametrize(("value", "problem"), [
    ('"1e-5"', "value '1e-5' must be a number, not a string; write 1.0e-05 without quotes"),
])
def test_the_number_a_quoted_value_is_told_to_be_written_as_reads_as_one(tmp_path, capsys,
                                                                          value, problem):
    """``"1e-5"`` was told "write 1e-05 without quotes", which YAML 1.1 reads as text again."""
    from tiersim.scenario import read_yaml_value

    scenario = _sweep_file(tmp_path, f"  tiers.bf16.cost_per_gpu_hour: [{value}, 3.5]\n")
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o",
                               "--no-baselines")) == (
        f"Error: {scenario}: line {_sweep_line(scenario)}: sweep: "
        f"'tiers.bf16.cost_per_gpu_hour': {problem}")
    assert read_yaml_value(problem.split("write ")[1].split(" ")[0]) == 1e-05
