"""Round 23 of hostile input, sweep resume and integrity: each a failure found from outside
(kill -9, a full disk, two sweeps at once, hand-edited points/) and fixed."""

from __future__ import annotations

import errno
import io
import json
from pathlib import Path

import pytest
from conftest import axis_line
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
# w4a16 (listed first) at 2.50 USD/GPU-hour, the cheaper per request as listed: round 53 prices
# tiny's tiers at the decode batch the load gives, where at one price w4a16 is the dearer and
# a tier-order note would join the one error line these tests read
TINY = ((ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
        .replace("[240, 360]", "[240, 270]")
        .replace("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 2.50", 1))


def _scenario(tmp_path: Path, sweep: str) -> Path:
    """tiny.yaml on a short window with ``sweep`` (YAML text, indented) as its sweep map."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY + "\nsweep:\n" + sweep)
    return scenario


def _nearly_full(monkeypatch, room: int) -> None:
    """Every process's atomic writes of more than ``room`` bytes fail as on a full disk."""
    from tiersim import atomic
    from tiersim.sweep import executors

    monkeypatch.setattr(executors, "_context", lambda: __import__("multiprocessing")
                        .get_context("fork"))
    real = atomic.stage

    def stage(path, write, mode="wb"):
        buffer = io.StringIO() if "b" not in mode else io.BytesIO()
        write(buffer)
        if len(buffer.getvalue()) > room:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, write, mode)

    monkeypatch.setattr(atomic, "stage", stage)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_full_disk_is_not_stored_as_a_dead_worker(tmp_path, capsys, monkeypatch, workers):
    """On a nearly full disk (a point's record does not fit, a short one does) the sweep's own
    store of a point failed and was taken for the worker's death: the point was stored failed
    as "OSError: worker process died ([Errno 28] No space left on device ...)", and the
    sweep ran on, computing and losing each point, until another write failed. The full disk
    ends the sweep with its one line, and no point is stored as lost to a dead worker."""
    _nearly_full(monkeypatch, 2000)
    scenario = _scenario(tmp_path, "  seed: [0, 1, 2, 3]\n")
    out = tmp_path / "o"
    line = error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", workers,
                               "--no-baselines", "--no-report"))
    assert "cannot write (No space left on device)" in line, line
    errors = [json.loads(p.read_text()).get("error") for p in (out / "points").glob("*.json")]
    assert not [e for e in errors if e and "worker process died" in e], errors


@pytest.mark.parametrize("other", ["1.0", "'1'"])
def test_a_zip_group_writing_one_setting_two_ways_is_told_to_write_it_alike(tmp_path, capsys,
                                                                            other):
    """``zip: {seed: [1, 1.0], tiers.bf16.replicas: [1, 2]}`` (two points, each one seed) was
    told to "list it once": a zip group cannot, its lists are of equal length. The line says
    to write the value the same way each time."""
    scenario = _scenario(tmp_path, f"  zip:\n    seed: [1, {other}]\n"
                         "    tiers.bf16.replicas: [1, 2]\n")
    out = tmp_path / "o"
    shown = {"1.0": "1.0", "'1'": "'1'"}[other]
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1",
                               "--no-baselines", "--no-report")) == (
        f"Error: {scenario}: line {axis_line(scenario, 'seed')}: sweep: 'seed': values 1 and "
        f"{shown} are the same setting once read; in a zip group write it one way each "
        "time (1)")
    assert not out.exists()


def test_a_grid_axis_listing_one_setting_two_ways_is_still_told_to_list_it_once(tmp_path,
                                                                               capsys):
    """Outside a zip group the same setting written twice is one value listed twice."""
    scenario = _scenario(tmp_path, "  seed: [1, 1.0]\n")
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "o", "-w", "1",
                               "--no-baselines", "--no-report")).endswith(
        "sweep: 'seed': values 1 and 1.0 are the same setting once read; list it once")


def test_a_folder_in_place_of_a_point_file_is_refused_before_points_run(tmp_path, capsys):
    """A folder where a point's file goes (``points/<id>.json/``, made by hand) was found only
    once that point had run and its record could not be stored: the sweep ended there, and
    every point then in flight was computed and lost. It is refused before any point runs,
    and nothing in the folder changes."""
    scenario = _scenario(tmp_path, "  seed: [0, 1]\n")
    out = tmp_path / "o"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 0
    first, second = sorted((out / "points").iterdir())
    second.unlink()
    second.mkdir()
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.name != ".lock"}
    assert error_line(*run_cli(capsys, *args)) == (
        f"Error: {second}: a folder is in the way of this sweep point's file; remove that "
        "folder, then rerun to resume (no point was run)")
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.name != ".lock"} == before


def test_a_point_file_removed_while_the_sweep_runs_is_not_a_complete_table(tmp_path, capsys,
                                                                           monkeypatch):
    """A point's file deleted by hand after it was stored, while the sweep ran on: the sweep
    said "2 points (2 run, 0 already done, 0 failed)", exit 0, and wrote a sweep.parquet of 1
    row as if complete. It says which point is gone, writes no table, and a rerun runs it."""
    from tiersim.sweep.points import SweepNotes

    real = SweepNotes.add
    out = tmp_path / "o"
    gone = []

    def add(self, record, index=None):
        if not gone:
            gone.append(record["point_id"])
            (out / "points" / f"{record['point_id']}.json").unlink()
        return real(self, record, index)

    monkeypatch.setattr(SweepNotes, "add", add)
    scenario = _scenario(tmp_path, "  seed: [0, 1]\n")
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert error_line(*run_cli(capsys, *args)) == (
        f"Error: {out / 'points'}: 1 of the 2 points is no longer stored ({gone[0]}: its file "
        "was removed or changed while the sweep ran); rerun to resume (it runs again)")
    assert not (out / "sweep.parquet").exists()
    monkeypatch.setattr(SweepNotes, "add", real)
    code, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "(1 run, 1 already done, 0 failed)" in err


def test_a_table_row_of_a_point_being_rerun_does_not_outlive_it(tmp_path, capsys,
                                                               monkeypatch):
    """A failed point rerun (its cause fixed) by a sweep killed, or out of disk, before its
    table was rewritten left sweep.parquet saying the point failed while its file said ok,
    and `tiersim report` drew that table. A table with a row of a point about to run again
    goes before the point runs."""
    from tiersim.sweep import points as sweep_points
    from tiersim.sweep import run as sweep_run

    real = sweep_points._run

    def fail_seed_1(doc, source, baselines):
        if doc.get("seed") == 1:
            raise RuntimeError("out of memory")
        return real(doc, source, baselines)

    monkeypatch.setattr(sweep_points, "_run", fail_seed_1)
    scenario = _scenario(tmp_path, "  seed: [0, 1]\n")
    out = tmp_path / "o"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 1
    assert (out / "sweep.parquet").exists()
    monkeypatch.setattr(sweep_points, "_run", real)

    def full(out_dir, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(out_dir / "sweep.parquet"))

    monkeypatch.setattr(sweep_run, "write_table", full)  # the table's writer
    assert error_line(*run_cli(capsys, *args)) == (
        f"Error: {out / 'sweep.parquet'}: cannot write (No space left on device); check that "
        f"{out} is writable and has free space, then rerun to resume")
    assert not (out / "sweep.parquet").exists()


def test_a_users_own_hidden_tmp_file_in_a_sweep_folder_stays(tmp_path, capsys):
    """A rerun deleted every hidden ``.*.tmp`` file at the top of the sweep folder (a user's
    ``.notes.tmp``), not only the temp files a killed sweep leaves: the lock's own clean-up
    keeps a user's other ``.tmp`` files. The sweep's leftovers still go."""
    scenario = _scenario(tmp_path, "  seed: [0, 1]\n")
    out = tmp_path / "o"
    args = ["sweep", scenario, "--out", out, "-w", "1", "--no-baselines", "--no-report"]
    assert run_cli(capsys, *args)[0] == 0
    notes = out / ".notes.tmp"
    notes.write_text("mine")
    left = [out / ".sweep.parquet.k1ll3d.tmp", out / "points" / ".0123456789ab.json.k1ll.tmp"]
    for path in left:
        path.write_text("half")
    assert run_cli(capsys, *args)[0] == 0
    assert notes.read_text() == "mine"
    assert not [path for path in left if path.exists()]


def test_a_worker_killed_while_storing_its_point_leaves_no_temp_file(tmp_path, capsys,
                                                                     monkeypatch):
    """A worker killed (the OOM killer's kill -9) halfway through writing its point's temp
    file left the half-written ``points/.ID.json.*.tmp`` behind the sweep, until some later
    rerun. The sweep, which holds the folder's lock once its workers are gone, removes it
    before it ends (here the temp file is left as such a worker leaves it, while the sweep
    runs; found with a worker that exits inside its write)."""
    from tiersim.sweep.points import SweepNotes

    real = SweepNotes.add
    out = tmp_path / "o"
    left = []

    def add(self, record, index=None):
        if not left:
            left.append(out / "points" / f".{record['point_id']}.json.k1ll3d.tmp")
            left[0].write_text('{"point_id": ')
        return real(self, record, index)

    monkeypatch.setattr(SweepNotes, "add", add)
    scenario = _scenario(tmp_path, "  seed: [0, 1]\n")
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1", "--no-baselines",
                        "--no-report")
    assert code == 0, err
    assert left and not list(out.rglob("*.tmp"))
