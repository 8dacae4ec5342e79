"""Round 24 of hostile input, files tiersim reads back from another tiersim version or another
place (a sweep's points, a run folder, a profile): each a failure found from outside and
fixed, with the exact line a user sees or the number that was wrong."""

from __future__ import annotations

import json

from test_round19 import error_line, run_cli
from test_round23_sweepkill import ROOT, TINY, _scenario


def test_a_point_of_no_recorded_version_is_run_again(tmp_path, capsys):
    """A point record without the ``tiersim`` version (written by a build from before points
    recorded it: every build since writes it) was kept as this version's, its numbers in one
    table with this version's ("2 points (0 run, 2 already done)"); it runs again, noted."""
    from tiersim.sweep.run import tiersim_version

    scenario = _scenario(tmp_path, "  seed: [1, 2]\n")
    out = tmp_path / "w"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 0
    old = sorted((out / "points").iterdir())[0]
    record = json.loads(old.read_text())
    del record["tiersim"]
    record["summary"]["cost_usd"] = 999.0  # another build's number
    old.write_text(json.dumps(record))
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    assert ("note: 1 stored point(s) were run by a tiersim that recorded no version; they "
            f"run again with {tiersim_version()}, so the table holds one version") in err
    assert "2 points (1 run, 1 already done, 0 failed)" in err
    assert json.loads(old.read_text())["tiersim"] == tiersim_version()
    import pandas as pd

    assert 999.0 not in set(pd.read_parquet(out / "sweep.parquet")["cost_usd"])


def test_a_copy_resumed_from_another_folder_names_its_scenario_in_full(tmp_path, capsys,
                                                                       monkeypatch):
    """A sweep started as ``tiersim sweep s.yaml`` recorded ``s.yaml`` as its source: resumed
    from the folder's own scenario.yaml in another working folder, the refusal said "resume
    with s.yaml", a file that is not there. The source is recorded as an absolute path.
    (Since round 27 a copy whose base alone names the files absolute resumes: its points read
    the same. A swept file written absolute gives its points other ids, still refused.)"""
    scenario = _scenario(tmp_path, "  trace.path: [tr.parquet, azure2023_code.parquet]\n")
    (tmp_path / "tr.parquet").write_bytes((ROOT / "tiersim" / "traces" /
                                           "azure2023_code.parquet").read_bytes())
    scenario.write_text(scenario.read_text().replace("path: azure2023_code.parquet",
                                                     "path: tr.parquet"))
    monkeypatch.chdir(tmp_path)
    args = ["-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, "sweep", "s.yaml", "--out", "w", *args)[0] == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "w"
    assert error_line(*run_cli(capsys, "sweep", out / "scenario.yaml", "--out", out, *args)) == (
        f"Error: {out}: its scenario.yaml names the user files by absolute path, so its points "
        f"do not match it; resume with {scenario}, or give the copy a new --out folder")


def test_tiersim_files_changed_while_the_sweep_ran_make_no_table(tmp_path, capsys, monkeypatch):
    """tiersim's packaged data edited while a sweep ran (precision_priors.json, read at each
    point): the points before and after read two versions, all recorded under the version the
    sweep started with, and one table held both (accuracy 0.9448 and 0.7526 on a price axis
    that changes no accuracy), exit 0. The sweep now checks its own files again at the end."""
    import functools

    from tiersim.sweep import build
    from tiersim.sweep import points as sweep_points
    from tiersim.sweep import run as sweep_run

    state = {"digest": "aaaaaaaaaaaa"}

    @functools.cache
    def digest() -> str:
        return state["digest"]

    real = sweep_points._run

    def run_then_edit(doc, source, baselines):
        summary = real(doc, source, baselines)
        state["digest"] = "bbbbbbbbbbbb"  # the package changes once the first point ran
        return summary

    monkeypatch.setattr(build, "_package_digest", digest)  # tiersim_version's home
    monkeypatch.setattr(sweep_points, "_run", run_then_edit)
    scenario = _scenario(tmp_path, "  tiers.bf16.cost_per_gpu_hour: [3.5, 3.6]\n")
    out = tmp_path / "w"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    version = sweep_run.tiersim_version().split("+")[0]
    assert error_line(*run_cli(capsys, *args)) == (
        f"Error: {out}: tiersim's own files changed while the sweep ran (tiersim {version}"
        f"+aaaaaaaaaaaa, now {version}+bbbbbbbbbbbb), so its 2 points run may have read "
        "either version, and one table must not mix the two; rerun to recompute them with "
        "the tiersim now installed (they are marked failed)")
    assert not (out / "sweep.parquet").exists()
    records = [json.loads(p.read_text()) for p in (out / "points").iterdir()]
    assert [r["status"] for r in records] == ["error", "error"]
    monkeypatch.setattr(sweep_points, "_run", real)
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "2 points (2 run, 0 already done, 0 failed)" in err


def test_an_out_holding_another_versions_profile_is_not_called_no_profile(tmp_path, capsys):
    """``--out`` naming a profile a later tiersim wrote (schema 'tiersim.profile/2') was
    refused as "a JSON document of schema 'tiersim.profile/2', not a tiersim profile": it is
    one, of another format, which this tiersim would replace with its own."""
    from tiersim.cli import main

    out = tmp_path / "p.json"
    text = '{"schema": "tiersim.profile/2", "name": "x", "gpu": "H200", "tables": []}\n'
    out.write_text(text)
    assert main(["calibrate", "--from", "aiconfigurator", "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: --out {out}: holds a profile of format 'tiersim.profile/2' (another tiersim "
        "version's; this one writes 'tiersim.profile/1'), which the profile would replace; "
        "give a new file name, or use the tiersim that wrote it")
    assert out.read_text() == text


def test_an_out_whose_schema_is_long_text_is_quoted_cut(tmp_path, capsys):
    """A JSON file with a 200,000-character ``schema`` given as ``--out`` made a 200 kB error
    line; the schema is quoted cut, as the profile reader quotes it."""
    from tiersim.cli import main
    from tiersim.errors import shown

    out = tmp_path / "p.json"
    out.write_text(json.dumps({"schema": "y" * 200_000}))
    assert main(["calibrate", "--from", "aiconfigurator", "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: --out {out}: holds a JSON document of schema {shown('y' * 200_000)}, not a "
        "tiersim profile; the profile would replace it; give a new file name, or the path of "
        "a profile to replace")


def test_points_a_newer_tiersim_ran_are_not_replaced_by_an_older_ones(tmp_path, capsys):
    """A folder whose points a later release ran (tiersim 0.2.0), resumed with this older one:
    every finished point was run again and its file replaced ("2 stored point(s) were run by
    tiersim 0.2.0+...; they run again with 0.1.0+..."), the newer results lost. It is refused,
    nothing changed; a point an older release ran still runs again."""
    import tiersim

    scenario = _scenario(tmp_path, "  seed: [1, 2]\n")
    out = tmp_path / "w"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 0
    major, minor, *_ = (int(part) for part in tiersim.__version__.split("."))
    newer = f"{major}.{minor + 1}.0+0123456789ab"
    files = sorted((out / "points").iterdir())
    for path in files:
        record = json.loads(path.read_text())
        record["tiersim"] = newer
        path.write_text(json.dumps(record))
    before = {path: path.read_bytes() for path in files}
    assert error_line(*run_cli(capsys, *args)) == (
        f"Error: {out}: holds 2 sweep points run by tiersim {newer}, a later release than this "
        f"tiersim {tiersim.__version__}; resuming would replace them with an earlier version's "
        f"results: resume with tiersim {newer.split('+')[0]} or later, or use a new --out "
        "folder (nothing was changed)")
    assert {path: path.read_bytes() for path in files} == before
    assert (out / "sweep.parquet").exists()


def test_a_later_harness_profile_field_says_which_tiersim_reads_it(tmp_path, capsys):
    """A profile a later tiersim's harness wrote (``provenance.tool`` 'tiersim.calibrate
    0.2.0'), with a table field this tiersim does not know, was refused as a typo ("unknown
    field 'clock_mhz'; allowed: ..."), whose fix (remove it) reads the later format as this
    one; the line says which tiersim wrote it."""
    import tiersim

    major, minor, *_ = (int(part) for part in tiersim.__version__.split("."))
    later = f"{major}.{minor + 1}.0"
    doc = json.loads((ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json")
                     .read_text())
    doc["provenance"]["tool"] = f"tiersim.calibrate {later}"
    doc["tables"][0]["clock_mhz"] = 1980
    (tmp_path / "newer.json").write_text(json.dumps(doc))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("profile: null", "profile: newer.json"))
    line = error_line(*run_cli(capsys, "run", scenario))
    assert line.endswith(
        f"profile: {tmp_path / 'newer.json'}: tables[0]: unknown field 'clock_mhz'; "
        "allowed: op, precision, kv_dtype, source, key, axes, latency_s, parts, kernel, "
        "origin, engine_version, notes, "
        f"timing; the profile was written by tiersim.calibrate {later}, a later release than "
        f"this tiersim {tiersim.__version__}: read it with that tiersim or a later one")
