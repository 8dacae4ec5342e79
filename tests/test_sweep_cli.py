"""Tests of ``tiersim sweep``, ``tiersim plan`` and ``tiersim report`` through the real CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import axis_line

from tiersim.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny(tmp_path) -> Path:
    """scenarios/tiny.yaml copied next to the test (its trace resolves from traces/)."""
    path = tmp_path / "tiny.yaml"
    shutil.copy(ROOT / "scenarios" / "tiny.yaml", path)
    return path


def with_sweep(path: Path, sweep: dict) -> Path:
    """Add a sweep map to a scenario file."""
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = sweep
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("sweep,expected", [
    ({"tiers.fp8.replicas": [1]},
     "sweep: 'tiers.fp8.replicas': no item 'fp8' in 'tiers' (has items: w4a16, bf16)"),
    ({"tiers.bf16.replica": [1]},
     "sweep: 'tiers.bf16.replica': tiers[1].replica: unknown key (did you mean 'replicas'?)"),
    ({"seed.x": [1]}, "sweep: 'seed.x': 'seed' is a value (0), not a map"),
    ({"tiers.bf16.replicas": [1, True]},  # every value is checked, not only the first
     "sweep: 'tiers.bf16.replicas': tiers[1].replicas: a number is expected here, not a YAML "
     "boolean (true/false) (value true)"),
    ({"router.fractions": [[0.5, 0.5], [0.001] * 3000]},  # the value was quoted whole: 21 kB
     "sweep: 'router.fractions': router.fractions: fractions must be >= 0 and sum to 1 (got "
     "sum 3) (value [0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, "
     "0.001,...)"),
])
def test_invalid_sweep_path_is_one_line(tiny, tmp_path, capsys, sweep, expected):
    with_sweep(tiny, sweep)
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    line = axis_line(tiny, next(iter(sweep)))
    assert err == f"Error: {tiny}: line {line}: {expected}"


def test_real_sweep_and_report(tiny, tmp_path):
    with_sweep(tiny, {"tiers.bf16.replicas": [1, 2],
                      "zip": [{"router.fractions": [[0.5, 0.5], [0.8, 0.2]]}]})
    out = tmp_path / "sweep"
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1"]) == 0
    table = pd.read_parquet(out / "sweep.parquet")
    assert len(table) == 4 and (table["status"] == "ok").all()
    assert {"tiers.bf16.replicas", "router.fractions", "tiers.bf16.ttft_p99_s",
            "savings.routed_cost_usd"} <= set(table.columns)
    shares = table.groupby("router.fractions")["tiers.w4a16.share"].mean()
    assert shares["[0.8, 0.2]"] > shares["[0.5, 0.5]"]
    assert (out / "report.html").stat().st_size > 1_000_000
    # one ledger: each point's savings are simulated and costed in the scenario's cost model
    assert (table["savings.method"] == "simulated").all()
    assert (table["savings.cost_model"] == table["cost_model"]).all()
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.html").exists()


def test_sweep_without_baselines_labels_its_savings_as_estimates(tiny, tmp_path):
    with_sweep(tiny, {"seed": [0]})
    out = tmp_path / "sweep"
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1", "--no-baselines",
                 "--no-report"]) == 0
    table = pd.read_parquet(out / "sweep.parquet")
    assert table["savings.method"].tolist() == ["estimated"]


def test_sweep_whose_report_cannot_be_written_fails_in_one_line(tiny, tmp_path, capsys,
                                                                 monkeypatch):
    """A full disk at the report: one Error line and exit 1 (as run and plan), the points and
    sweep.parquet kept; it used to print `report: not written` and exit 0."""
    from test_round53_left53b import _disk_full_at_the_page

    _disk_full_at_the_page(monkeypatch)
    with_sweep(tiny, {"seed": [0]})
    out = tmp_path / "sweep"
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1",
                 "--no-baselines"]) == 1
    # tiny's own tier-order note (round 53: W4A16 listed first costs more per request at
    # tiny's load) comes first and is left out; then the points' verdicts (2026-12-07)
    assert [line for line in capsys.readouterr().err.splitlines()
            if not line.startswith("note: ")] == [
        "each point's verdicts (as the report's Points table gives them):",
        # round 55: its USD/hour and cost over the run, and what its estimate is of
        "  seed 0: cost 7.00 USD/hour (provisioned; 0.206 USD over the run); router FPR as "
        "counts: 2 of 5; meets SLOs: yes; saved vs uniform: 0.383 % (estimate, on per-token "
        "attributed cost: not a USD/hour gap) vs bf16",
        f"sweep: 1 point (1 run, 0 already done, 0 failed) -> {out / 'sweep.parquet'}",
        f"Error: {out / 'report.html'}: cannot write the report (No space left on device); "
        f"free some space; the sweep's points and sweep.parquet are kept, and tiersim report "
        f"{out} writes the page"]  # round 55 (fuzz22): says what is kept, not "another folder"
    assert len(pd.read_parquet(out / "sweep.parquet")) == 1
    assert len(list((out / "points").glob("*.json"))) == 1
    assert not (out / "report.html").exists() and not list(out.glob(".report-*"))


def test_plan_cli_writes_plan_and_report(tiny, tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["plan", str(tiny), "--slo-ttft-p99", "0.12", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "plan (" in text and "ttft_p99_s" in text and "one fewer" in text
    plan = json.loads((out / "plan.json").read_text())
    assert plan["constraints"] == {"ttft_p99_s": 0.12, "tpot_p99_s": 0.1, "accuracy_floor": None}
    assert plan["plan"]["margins"]["ttft_p99_s"]["met"]
    assert (out / "report.html").exists() and (out / "summary.json").exists()


def test_plan_choose_option_must_have_values(tiny, tmp_path, capsys):
    assert main(["plan", str(tiny), "--choose", "router.fractions", "--out",
                 str(tmp_path / "p")]) == 1
    assert "write PATH=VALUE1,VALUE2" in capsys.readouterr().err


@pytest.mark.parametrize("option,expected", [
    ("tiers.bf16.replicas=1,2", "--choose tiers.bf16.replicas: 'tiers' is a scenario key, not a "
     "router setting; --choose takes router settings only (router.<key>, e.g. "
     "router.lambda=0.05,0.1); the planner sizes each tier's replicas and GPUs itself"),
    ("seed=1,2", "--choose seed: 'seed' is a scenario key, not a router setting; --choose takes "
     "router settings only (router.<key>, e.g. router.lambda=0.05,0.1); set it in the scenario"),
])
def test_plan_choose_of_a_key_outside_the_router_says_so(tiny, tmp_path, capsys, option,
                                                         expected):
    """It read as `router.tiers: unknown key (did you mean 'tier'?)`."""
    assert main(["plan", str(tiny), "--choose", option, "--out", str(tmp_path / "p")]) == 1
    assert capsys.readouterr().err == f"Error: {expected}\n"


def test_report_of_missing_dir_is_one_line(tmp_path, capsys):
    """A missing folder read 'not a directory', as a file in its place does."""
    assert main(["report", str(tmp_path / "nothing")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {tmp_path / 'nothing'}: no such folder; give the --out folder of a run, "
        "sweep or plan")


def test_report_of_a_file_is_not_a_directory(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["report", str(tmp_path / "f")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {tmp_path / 'f'}: not a directory; give the --out folder of a run, "
        "sweep or plan")


def test_run_sweep_and_plan_never_share_an_out_folder(tiny, tmp_path, capsys):
    """Each would overwrite part of another's results (scenario.yaml, report.html): refused at
    once with one line; the same command reruns into its own folder."""
    run_dir, sweep_dir = tmp_path / "run", tmp_path / "sweep"
    assert main(["run", str(tiny), "--out", str(run_dir), "--no-baselines"]) == 0
    assert main(["run", str(tiny), "--out", str(run_dir), "--no-baselines"]) == 0
    with_sweep(tiny, {"seed": [0]})
    capsys.readouterr()
    assert main(["sweep", str(tiny), "--out", str(run_dir), "--no-report"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {run_dir}: holds a run's results (summary.json); `tiersim sweep` would "
        "overwrite some of them; use another --out folder")
    assert main(["sweep", str(tiny), "--out", str(sweep_dir), "--no-report", "-w", "1",
                 "--no-baselines"]) == 0
    for command in (["run", str(tiny), "--no-baselines"], ["plan", str(tiny)]):
        capsys.readouterr()
        assert main([*command, "--out", str(sweep_dir)]) == 1
        assert capsys.readouterr().err.strip() == (
            f"Error: {sweep_dir}: holds a sweep's results (sweep.json); `tiersim "
            f"{command[0]}` would overwrite some of them; use another --out folder")
    assert (sweep_dir / "sweep.json").exists() and not (sweep_dir / "summary.json").exists()
    capsys.readouterr()
    assert main(["plan", str(tiny), "--out", str(run_dir)]) == 1  # nor a plan over a run
    assert capsys.readouterr().err.strip() == (
        f"Error: {run_dir}: holds a run's results (summary.json); `tiersim plan` would "
        "overwrite some of them; use another --out folder")


def test_a_file_in_the_way_of_out_is_the_same_line_for_every_command(tiny, tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with_sweep(tiny, {"seed": [0]})
    for command in ("run", "sweep", "plan"):
        capsys.readouterr()
        assert main([command, str(tiny), "--out", str(afile)]) == 1
        assert capsys.readouterr().err.strip() == (
            f"Error: {afile}: --out must be a folder, and a file is in the way")


def _with_cache_key(path: Path, key: str) -> Path:
    """The scenario with a response cache keyed by a trace column (the bundled trace has no
    ``prompt`` column: a run finds that only once it reads the trace)."""
    doc = yaml.safe_load(path.read_text())
    doc["router"]["response_cache"] = {"mode": "lru", "size": 5, "key": key}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("sweep", [None, {"seed": [0, 1]}])
def test_a_sweep_every_point_of_which_fails_alike_is_refused_as_run_refuses_it(
        tiny, tmp_path, capsys, sweep):
    """Every point failed at the trace's missing key column: the sweep said `1 of 1 sweep
    point(s) failed` without the key's line and left a folder with a 4.8 MB report; now it
    says run's one line (with the line) and leaves no folder."""
    _with_cache_key(tiny, "prompt")
    if sweep is not None:
        with_sweep(tiny, sweep)
    assert main(["run", str(tiny)]) == 1
    ran = capsys.readouterr().err.strip().splitlines()[-1]  # after run's note of a sweep map
    out = tmp_path / "new" / "sweep"
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1",
                 "--no-baselines"]) == 1
    assert capsys.readouterr().err.strip() == ran == (
        f"Error: {tiny}: line 28: router.response_cache.key: the trace has no 'prompt' column; "
        "name one it has, or drop key: to use prompt_hash / prefix_hashes")
    assert not (tmp_path / "new").exists()


def test_every_point_failing_at_a_key_an_axis_made_blames_the_axis(tiny, tmp_path, capsys):
    """The base has no response cache (it runs); the axis adds one whose key column the trace
    lacks. The sweep said `line 22: router.response_cache.key: ...`, the router's line, as if
    the scenario itself were refused."""
    with_sweep(tiny, {"router.response_cache": [{"mode": "lru", "size": 5, "key": "prompt"}]})
    out = tmp_path / "sweep"
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1",
                 "--no-baselines"]) == 1
    line = axis_line(tiny, "router.response_cache")
    assert capsys.readouterr().err.strip() == (
        f"Error: {tiny}: line {line}: sweep: 'router.response_cache': "
        "router.response_cache.key: the trace has no 'prompt' column; name one it has, or drop "
        "key: to use prompt_hash / prefix_hashes")
    assert not out.exists()


def test_every_point_failing_at_the_key_an_axis_sets_blames_the_axis(tiny, tmp_path, capsys):
    """It said `line 9: trace.path: nope.parquet: trace file not found`, the base's trace
    line, whose own file is there."""
    with_sweep(tiny, {"trace.path": ["nope.parquet"]})
    out = tmp_path / "sweep"
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1",
                 "--no-baselines"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"Error: {tiny}: line {axis_line(tiny, 'trace.path')}: sweep: "
                          "'trace.path': trace.path: nope.parquet: trace file not found")
    assert not out.exists()


def test_a_refused_sweep_leaves_an_empty_out_folder_empty(tiny, tmp_path, capsys):
    _with_cache_key(tiny, "prompt")
    out = tmp_path / "sweep"
    out.mkdir()
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1",
                 "--no-baselines"]) == 1
    assert "line 28: router.response_cache.key" in capsys.readouterr().err
    assert list(out.iterdir()) == []


def test_a_file_in_the_way_of_the_points_folder_is_refused_before_writing(tiny, tmp_path,
                                                                          capsys):
    """It said `cannot write (File exists)` after writing scenario.yaml and sweep.json."""
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "points").write_text("")
    with_sweep(tiny, {"seed": [0]})
    assert main(["sweep", str(tiny), "--out", str(out), "--workers", "1"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {out / 'points'}: a file is in the way of the points folder that `tiersim "
        "sweep` writes; move or remove that file, or use another --out folder (nothing was "
        "written)")
    assert [p.name for p in out.iterdir()] == ["points"]


def test_a_sweep_interrupted_before_any_point_finished_says_it_stored_nothing(
        tmp_path, capsys, monkeypatch):
    """Points an earlier sweep stored are not this sweep's to report."""
    from test_hostile_inputs import run_cli

    import tiersim.sweep.run as sweep_run

    out = tmp_path / "o"
    (out / "points").mkdir(parents=True)
    (out / "points" / "a.json").write_text("{}")

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run, "prepare", stopped)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"seed": 1, "sweep": {"seed": [1, 2]}}))
    code, err = run_cli(capsys, "sweep", path, "--out", out)
    assert code != 0
    # round 55 (fuzz22): the point file already there is named as an earlier sweep's, not
    # counted as this one's (the line had read as if the folder held none)
    assert (f"interrupted: no point finished, so this sweep stored nothing in {out / 'points'} "
            "(it holds 1 point file an earlier sweep stored, as it was); run the same command "
            "again to resume") in err.splitlines()


def test_a_second_sweep_into_a_locked_folder_is_refused_before_its_grid_is_expanded(
        tmp_path, monkeypatch):
    """The lock is taken before the grid is expanded and checked (minutes for 10^6 points)."""
    import tiersim.sweep.run as sweep_run
    from tiersim.errors import TiersimError
    from tiersim.outputs import locked

    def expanded(*args, **kwargs):
        raise AssertionError("the grid was expanded before the lock was taken")

    monkeypatch.setattr(sweep_run, "prepare", expanded)
    path, out = tmp_path / "s.yaml", tmp_path / "o"
    path.write_text(yaml.safe_dump({"seed": 1, "sweep": {"seed": [1, 2]}}))
    with locked(out, "sweep"), pytest.raises(TiersimError) as caught:
        sweep_run.run_sweep(path, out, validator=None, report=False)
    assert str(caught.value) == (f"{out}: another tiersim command is writing to this folder "
                                 f"(pid {os.getpid()}); wait for it to finish or use another "
                                 "--out (this sweep did nothing)")


def test_a_dangling_out_link_is_named_as_a_link(tmp_path, capsys):
    from test_hostile_inputs import one_error_line, run_cli

    link = tmp_path / "link2"
    link.symlink_to(tmp_path / "gone")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"seed": 1, "sweep": {"seed": [1, 2]}}))
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", link))
    assert line == (f"Error: {link}: --out is a symbolic link to {tmp_path / 'gone'}, which "
                    "does not exist; create that folder, remove the link, or use another --out "
                    "folder")
    assert not (tmp_path / "gone").exists()


def test_an_out_link_loop_is_named_as_a_loop(tmp_path, capsys):
    """`--out loop1` (loop1 -> loop2 -> loop1) said "a symbolic link to loop2, which does not
    exist"; a chain too long to follow is named so too."""
    from test_hostile_inputs import one_error_line, run_cli

    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    for n in range(41):
        (tmp_path / f"c{n}").symlink_to(f"c{n + 1}")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"seed": 1, "sweep": {"seed": [1, 2]}}))
    loop = tmp_path / "loop1"
    assert one_error_line(*run_cli(capsys, "sweep", path, "--out", loop)) == (
        f"Error: {loop}: --out is a loop of symbolic links ({loop} -> {tmp_path / 'loop2'} -> "
        f"{loop}), which names no folder; remove a link of it, or use another --out folder")
    chain = tmp_path / "c0"
    assert one_error_line(*run_cli(capsys, "sweep", path, "--out", chain)) == (
        f"Error: {chain}: --out is a chain of more than 40 symbolic links ({chain} -> "
        f"{tmp_path / 'c1'} -> {tmp_path / 'c2'} -> ...), which names no folder; remove a link "
        "of it, or use another --out folder")
    assert sorted(p.name for p in tmp_path.iterdir() if not p.is_symlink()) == ["s.yaml"]


def test_only_axes_that_can_name_a_file_are_resolved_point_by_point():
    from tiersim.sweep.run import names_files

    assert [a for a in ("trace.path", "trace", "profile", "tiers.big.model", "tiers.0",
                        "tiers", "tiers.0.speculative.draft_model", "model")
            if not names_files(a)] == []
    assert [a for a in ("tiers.big.cost_per_gpu_hour", "tiers.0.replicas", "trace.window",
                        "seed", "router.confusion.fpr") if names_files(a)] == []


@pytest.mark.parametrize("axis,values,quoted,number", [
    ("tiers.bf16.replicas", [1, "2"], "'2'", 2),
    ("tiers.bf16.replicas", ["1", "2"], "'1'", 1),
    ("tiers.bf16.cost_per_gpu_hour", [0.5, "1.5"], "'1.5'", 1.5),
])
def test_a_quoted_number_on_the_grid_is_refused(tiny, tmp_path, capsys, axis, values, quoted,
                                                number):
    """`[1, "2"]` ran, stored the axis as text and gave "2" another point id than 2."""
    with_sweep(tiny, {axis: values})
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {tiny}: line {axis_line(tiny, axis)}: sweep: {axis!r}: value {quoted} must "
        f"be a number, not a string; write {number!r} without quotes")
    assert not (tmp_path / "o").exists()


def test_a_quoted_number_where_the_field_is_text_stays(tiny):
    """A tier named "2" is a name, not a number: the check reads the field, not the value."""
    from tiersim.sweep.run import prepare

    plan = prepare(with_sweep(tiny, {"tiers.bf16.name": ["b", "2"]}))
    assert [p.values["tiers.bf16.name"] for p in plan.points] == ["b", "2"]


@pytest.mark.parametrize("names,expected", [
    (["1", "0"], "'1' is both the name of item 0 of 'tiers' and the index of item 1 (named "
                 "'0'); write tiers.-2 for the one named '1'; write tiers.-1 for item 1 (named "
                 "'0')"),
    (["1", "b"], "'1' is both the name of item 0 of 'tiers' and the index of item 1 (named "
                 "'b'); write tiers.0 for the one named '1'; write tiers.b for item 1 (named "
                 "'b')"),
])
def test_a_tier_segment_that_is_one_tiers_name_and_anothers_index_is_refused(
        tiny, tmp_path, capsys, names, expected):
    """`tiers.1.replicas` with a tier named "1" at index 0 changed that tier, silently."""
    doc = yaml.safe_load(tiny.read_text())
    for tier, name in zip(doc["tiers"], names, strict=True):
        tier["name"] = name
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    with_sweep(tiny, {"tiers.1.replicas": [1, 3]})
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {tiny}: line {axis_line(tiny, 'tiers.1.replicas')}: sweep: "
        f"'tiers.1.replicas': {expected}")


def test_a_tier_named_by_its_own_index_is_not_ambiguous():
    """A tier named "0" at index 0 is one tier either way."""
    from tiersim.sweep.axes import apply

    doc = apply({"tiers": [{"name": "0", "replicas": 1}, {"name": "b", "replicas": 1}]},
                {"tiers.0.replicas": 3, "tiers.-1.replicas": 2})
    assert [tier["replicas"] for tier in doc["tiers"]] == [3, 2]


def test_an_empty_zip_list_is_refused_as_an_empty_axis_is(tiny, tmp_path, capsys):
    """`sweep: {zip: []}` ran its base point with a note saying there was no sweep: map."""
    with_sweep(tiny, {"zip": []})
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {tiny}: line {axis_line(tiny, 'zip')}: sweep: 'zip': lists no group; give a "
        "map (or list of maps) of path: [values], or remove zip")
    assert not (tmp_path / "o").exists()


def test_an_empty_sweep_map_is_called_empty(tiny, tmp_path, capsys):
    """`sweep: {}` is there, so the note does not say there is no sweep: map."""
    doc = yaml.safe_load(tiny.read_text())
    doc["trace"]["window"] = [240, 270]
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    with_sweep(tiny, {})
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o"), "-w", "1", "--no-report",
                 "--no-baselines"]) == 0
    assert (f"note: {tiny}: its sweep: map is empty, so the sweep is its one point (`tiersim "
            "run` runs it alone)") in capsys.readouterr().err


@pytest.mark.parametrize(("args", "sweep", "expected"), [
    ([], {"baselines.fp8.replicas": [1, 2]},
     "sweep: 'baselines.fp8.replicas': a baseline's replicas are never read (its uniform fleet "
     "is sized by simulation), so every point would run the same; sweep limits.max_replicas to "
     "cap that sizing, or move the tier under tiers: to set its replicas"),
    (["--no-baselines"], {"limits.gpus_per_replica": [[1], [1, 2]]},
     "sweep: 'limits.gpus_per_replica': is read only when the simulated baselines are sized, "
     "and --no-baselines estimates them instead, so every point would run the same; drop "
     "--no-baselines, or the axis"),
    (["--no-baselines"], {"baselines.fp8.precision": ["fp8", "w4a16"]},
     "sweep: 'baselines.fp8.precision': is read only when the simulated baselines are sized, "
     "and --no-baselines estimates them instead, so every point would run the same; drop "
     "--no-baselines, or the axis"),
])
def test_an_axis_no_point_reads_is_refused(tiny, tmp_path, capsys, args, sweep, expected):
    """Both once ran every point the same under different labels, without a word."""
    doc = yaml.safe_load(tiny.read_text())
    doc["baselines"] = [{"name": "fp8", "precision": "fp8", "cost_per_gpu_hour": 3.5}]
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    with_sweep(tiny, sweep)
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o"), *args]) == 1
    line = axis_line(tiny, next(iter(sweep)))
    assert capsys.readouterr().err.strip() == f"Error: {tiny}: line {line}: {expected}"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("scheduler", "sweep", "expected"), [
    ({}, {"tiers.bf16.scheduler.kv_offload_overlap": [True, False]},
     "sweep: 'tiers.bf16.scheduler.kv_offload_overlap': kv_offload_overlap is read only with "
     "kv_offload levels, which no point of the sweep gives this tier, so every point would run "
     "the same; set kv_offload on the tier (or sweep it), or drop the axis"),
    ({"enable_prefix_caching": True}, {"tiers.1.scheduler.kv_offload_recompute": [True, False]},
     "sweep: 'tiers.1.scheduler.kv_offload_recompute': kv_offload_recompute is read only with "
     "kv_offload levels, which no point of the sweep gives this tier, so every point would run "
     "the same; set kv_offload on the tier (or sweep it), or drop the axis"),
    ({}, {"tiers.1.scheduler.prefix_cache_fraction": [0.5, 1.0]},
     "sweep: 'tiers.1.scheduler.prefix_cache_fraction': prefix_cache_fraction is read only with "
     "enable_prefix_caching: true, which no point of the sweep gives this tier, so every point "
     "would run the same; set enable_prefix_caching on the tier (or sweep it), or drop the axis"),
])
def test_a_scheduler_key_its_tier_never_reads_is_refused_as_an_axis(
        tiny, tmp_path, capsys, scheduler, sweep, expected):
    """An offload setting without offload levels, or the prefix cache's size without prefix
    caching, ran every point the same under different labels, without a word."""
    doc = yaml.safe_load(tiny.read_text())
    doc["tiers"][1]["scheduler"] = scheduler
    tiny.write_text(yaml.safe_dump(doc, sort_keys=False))
    with_sweep(tiny, sweep)
    assert main(["sweep", str(tiny), "--out", str(tmp_path / "o"), "--no-baselines"]) == 1
    line = axis_line(tiny, next(iter(sweep)))
    assert capsys.readouterr().err.strip() == f"Error: {tiny}: line {line}: {expected}"
    assert not (tmp_path / "o").exists()


def test_a_scheduler_key_some_point_reads_stays_an_axis():
    """prefix_cache_fraction beside an axis turning prefix caching on is read at those points."""
    from tiersim.sweep.run import check_unread_axes, prepare

    doc = yaml.safe_load((Path(__file__).parent.parent / "scenarios" / "tiny.yaml").read_text())
    doc["sweep"] = {"tiers.bf16.scheduler.prefix_cache_fraction": [0.5, 1.0],
                    "tiers.bf16.scheduler.enable_prefix_caching": [False, True]}
    plan = prepare(doc, "s.yaml", validator=None)
    check_unread_axes(plan, lambda doc, source: {})
