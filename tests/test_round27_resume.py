"""Round 27, sweep resume: a sweep resumes after an edit of its scenario that changes no point
(a default written out, another spelling, a file named another way), is refused naming the
field after one that does, and reads a linked scenario's relative paths beside the link."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pandas as pd
from test_round19 import error_line, run_cli
from test_round23_sweepkill import ROOT, _scenario

ARGS = ("-w", "1", "--no-baselines", "--no-report")
BUNDLED = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"


def _sweep(capsys, scenario, out) -> tuple[int, str]:
    """``tiersim sweep SCENARIO --out OUT`` on one worker, no baselines, no report."""
    return run_cli(capsys, "sweep", scenario, "--out", out, *ARGS)


def _started(out) -> dict[str, str]:
    """Each stored point's start time (a point run again gets another)."""
    return {p.name: json.loads(p.read_text())["started"] for p in (out / "points").glob("*.json")}


def test_an_edit_that_changes_no_point_resumes(tmp_path, capsys):
    """A default written out (``gpus_per_replica: 1``), the GPU in lower case, ``3.5`` for
    ``3.50``, a comment, and a base value every point's axis sets (``seed``) were refused as
    "a sweep of a different scenario (something outside `sweep:` changed)", though no point
    reads otherwise. The sweep now resumes, every point kept."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    before = _started(out)
    text = scenario.read_text()
    edited = ("# edited, not changed\n" + text.replace("seed: 0", "seed: 7")
              .replace("gpu: H200", "gpu: h200")
              .replace("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 3.5")
              .replace("  - name: bf16\n", "  - name: bf16\n    gpus_per_replica: 1\n"))
    assert edited.count("gpus_per_replica: 1") == 1 and "h200" in edited
    scenario.write_text(edited)
    code, err = _sweep(capsys, scenario, out)
    assert code == 0, err
    assert "2 points (0 run, 2 already done, 0 failed)" in err
    assert _started(out) == before


def test_an_edit_that_changes_a_point_is_refused_naming_the_field(tmp_path, capsys):
    """A real change was refused with "something outside `sweep:` changed", naming nothing;
    the line names the field, both values and a point they change."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    first = json.loads((out / "sweep.json").read_text())["points"][0]["point_id"]
    scenario.write_text(scenario.read_text().replace("cost_per_gpu_hour: 3.50",
                                                     "cost_per_gpu_hour: 4", 1))
    assert error_line(*_sweep(capsys, scenario, out)) == (
        # the first price in the text is bf16's (tiers.1): round 23's sweep-kill scenario
        # prices w4a16 at 2.50 since round 53
        f"Error: {out}: holds a sweep of a different scenario (tiers.1.cost_per_gpu_hour is "
        f"4.0 here, 3.5 when its point {first} ran); use a new --out folder, or delete "
        f"{out / 'points'} to start over")


def test_the_trace_named_another_way_resumes_and_other_content_is_refused(tmp_path, capsys):
    """The bundled trace named by a copy's relative path (``./copy.parquet``): the points read
    the same bytes, and resume; a copy with other content is refused as another input."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    (tmp_path / "copy.parquet").write_bytes(BUNDLED.read_bytes())
    text = scenario.read_text()
    scenario.write_text(text.replace("path: azure2023_code.parquet", "path: ./copy.parquet"))
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err
    frame = pd.read_parquet(BUNDLED)
    frame.iloc[::2].to_parquet(tmp_path / "copy.parquet")
    assert "holds sweep points run over other input files (trace ./copy.parquet of point" in \
        error_line(*_sweep(capsys, scenario, out))



def test_the_folders_own_copy_resumes_and_an_edit_of_it_is_refused(tmp_path, capsys):
    """The folder's scenario.yaml (user files named absolute) resumes its points; edited in
    place, the points would be read under the edit as well as the scenario, and kept: a
    price changed there resumed all of them. The manifest keeps the digest of the copy as
    written, and an edited copy is refused, naming the scenario the points came from."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    copy = out / "scenario.yaml"
    code, err = _sweep(capsys, copy, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err
    copy.write_text(copy.read_text().replace("cost_per_gpu_hour: 3.5", "cost_per_gpu_hour: 9"))
    assert error_line(*_sweep(capsys, copy, out)) == (
        f"Error: {out}: its scenario.yaml was edited after the sweep wrote it, so its points "
        f"may not be those of the edit; resume with {scenario}, or give the edited copy a new "
        "--out folder")
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err


def test_an_edit_that_changes_no_point_resumes_beside_a_relative_file_axis(tmp_path, capsys):
    """An axis naming a trace beside the scenario (``trace.path: [tr.parquet, ...]``, kept
    relative in the points' values) was read beside the folder's copy, where no such file
    is: ``gpu: h200`` for ``H200`` was refused ("trace.path is '<a file ...>' here,
    'tr.parquet' when its point ran"). The points are read beside the scenario they ran from."""
    scenario = _scenario(tmp_path, "  trace.path: [tr.parquet, azure2023_code.parquet]\n")
    (tmp_path / "tr.parquet").write_bytes(BUNDLED.read_bytes())
    out = tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    scenario.write_text(scenario.read_text().replace("gpu: H200", "gpu: h200"))
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err

def _linked(tmp_path):
    """``real/s.yaml`` naming ``t.parquet`` (the bundled trace's bytes), linked from
    ``link/s.yaml``, with ``link/t.parquet`` another trace (every other request)."""
    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir(), link.mkdir()
    target = _scenario(real, "  seed: [0]\n")
    target.write_text(target.read_text().replace("path: azure2023_code.parquet",
                                                 "path: t.parquet"))
    (real / "t.parquet").write_bytes(BUNDLED.read_bytes())
    pd.read_parquet(BUNDLED).iloc[::2].to_parquet(link / "t.parquet")
    (link / "s.yaml").symlink_to("../real/s.yaml")
    return target, link / "s.yaml"


def test_a_linked_scenario_reads_its_relative_paths_beside_the_link(tmp_path, capsys):
    """README: relative paths are read beside the scenario file as named, a link's folder for
    a link (as git and C compilers read relative includes), not beside its target: one
    scenario linked into several folders reads each folder's trace. Where the target's folder
    holds another file of that name, a note says which was read (none did)."""
    target, link = _linked(tmp_path)
    said = {}
    for name, scenario in (("via_link", link), ("via_target", target)):
        code, said[name] = _sweep(capsys, scenario, tmp_path / name)
        assert code == 0, said[name]
    assert (f"note: {link}: trace.path t.parquet is read beside this link "
            f"({link.parent / 't.parquet'}), not as {target.parent / 't.parquet'} beside its "
            "target: relative paths are read beside the scenario as named; link that file too, "
            "or write its path absolute") in said["via_link"]
    assert "beside this link" not in said["via_target"]
    requests = {name: int(pd.read_parquet(tmp_path / name / "sweep.parquet")["requests"][0])
                for name in ("via_link", "via_target")}
    assert requests["via_link"] < requests["via_target"], requests
    stored = (tmp_path / "via_link" / "scenario.yaml").read_text()
    assert f"path: {link.parent / 't.parquet'}" in stored


def test_a_sweep_begun_through_a_link_resumes_from_its_target_by_trace_content(tmp_path,
                                                                               capsys):
    """Begun through the link, resumed through the target: the trace is read beside each, so
    the points resume where both hold the same bytes and are refused where they do not."""
    target, link = _linked(tmp_path)
    out = tmp_path / "o"
    assert _sweep(capsys, link, out)[0] == 0
    assert re.search(r"holds sweep points run over other input files \(trace \S*t\.parquet of "
                     "point", error_line(*_sweep(capsys, target, out)))
    (target.parent / "t.parquet").write_bytes((link.parent / "t.parquet").read_bytes())
    code, err = _sweep(capsys, target, out)
    assert code == 0 and "(0 run, 1 already done, 0 failed)" in err, err


def test_a_sweep_killed_mid_point_resumes_to_the_unkilled_table(tmp_path):
    """``kill -9`` of the whole sweep (parent and workers) once its first point is stored, the
    others mid-run (a temp file may be left mid-write), then the same command again: the table
    is the one a sweep never killed writes, value for value (wall time apart). Checked with
    real points of tiny.yaml; tests/test_sweep_run.py checks the synthetic runner's points are
    not recomputed."""
    scenario = _scenario(tmp_path, "  seed: [0, 1, 2]\n")
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    command = [sys.executable, "-m", "tiersim", "sweep", str(scenario), "-w", "2", *ARGS[2:]]
    proc = subprocess.Popen([*command, "--out", str(killed)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(killed.glob("points/[!.]*.json")) and time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep ended before it was killed"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 1 <= len(list(killed.glob("points/[!.]*.json"))) < 3, "kill must land mid-sweep"
    for out in (killed, clean):
        subprocess.run([*command, "--out", str(out)], cwd=ROOT, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tables = [pd.read_parquet(out / "sweep.parquet").drop(columns=["wall_s"])
              for out in (killed, clean)]
    pd.testing.assert_frame_equal(*tables)


def test_points_are_compared_not_the_two_bases(tmp_path):
    """A profile left out and the H200's shipped one named read alike at an H200 point, but
    an H100 point reads otherwise (its own GPU's profile, or none that fits): the bases alone
    would call the edit harmless. The line says why the point does not read."""
    import warnings

    from tiersim.perf import default_profile_name
    from tiersim.sweep.equivalent import point_change
    from tiersim.sweep.points import default_validator
    from tiersim.sweep.run import load_raw, without_notes

    scenario = _scenario(tmp_path, "  seed: [0]\n")
    source = str(scenario)
    left_out = {k: v for k, v in load_raw(scenario).items() if k not in ("profile", "sweep")}
    named = {**left_out, "profile": default_profile_name("H200")}
    points = [{"point_id": "h200", "values": {"gpu": "H200"}},
              {"point_id": "h100", "values": {"gpu": "H100"}}]
    read = without_notes(default_validator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert point_change(left_out, source, named, source, points[:1], read) is None
        change = point_change(left_out, source, named, source, points, read)
    assert change.startswith("its point h100 does not read under this scenario: profile: "
                             f"{default_profile_name('H200')}: gpu: measured on H200, not H100")
