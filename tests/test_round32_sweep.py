"""Round 32, sweeps and runs that die or are interrupted: each says what happened and loses
nothing (a worker killed from outside, a point's error as ``tiersim run`` words it, an input
file changed mid-sweep, a signal after a run's files are written, an interrupted report)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli

from tiersim.errors import TiersimError
from tiersim.sweep.run import SweepFailed, run_sweep
from tiersim.sweep.store import read_points
from tiersim.sweep.testing import synthetic_runner


def _synthetic(tmp_path: Path, synthetic: dict, seeds: int = 8) -> Path:
    """A synthetic-runner scenario over ``seeds`` seeds with ``synthetic`` settings."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "s", "synthetic": synthetic,
                                    "sweep": {"seed": list(range(seeds))}}))
    return path


def _sweep(path: Path, out: Path, workers: int = 2):
    """Sweep ``path`` into ``out`` with the synthetic runner on ``workers`` processes."""
    return run_sweep(path, out, workers=workers, runner=synthetic_runner, validator=None,
                     report=False, progress=False)


def test_a_point_that_kills_its_worker_fails_alone_and_the_others_are_run(tmp_path):
    """A worker killed (SIGKILL, as by the out-of-memory killer) broke the pool, and every
    point in flight or still to send was stored failed, 'BrokenProcessPool: worker process
    died' (22 of 24 after one kill): the points in flight are run again, each alone, the rest
    in a fresh pool, and only the point whose worker died again alone is failed, saying so."""
    out = tmp_path / "o"
    path = _synthetic(tmp_path, {"sleep_s": 0.05, "kill_if": {"seed": 3}})
    with pytest.raises(SweepFailed) as info:
        _sweep(path, out)
    records = read_points(out)
    died = ("WorkerDied: its worker process died twice running this point (killed from "
            "outside, most often by the out-of-memory killer); try fewer --workers, or more "
            "free memory")
    failed = {r["values"]["seed"]: r["error"] for r in records.values() if r["status"] != "ok"}
    assert failed == {3: died} and len(records) == 8
    point = next(i for i, r in records.items() if r["status"] != "ok")
    assert str(info.value) == (
        f"{out}: 1 of 8 sweep point(s) failed ({point}); first at seed=3: {died}; the others "
        f"are stored; details in {out / 'points'}; fix what the error names, then rerun to "
        "retry them")


def test_a_worker_killed_once_costs_no_point(tmp_path):
    """A point whose worker was killed once (memory short while others ran) runs alone and is
    stored, as is every other point: the sweep ends well."""
    out = tmp_path / "o"
    path = _synthetic(tmp_path, {"sleep_s": 0.05, "kill_if": {"seed": 3},
                                 "kill_once": str(tmp_path / "killed")})
    frame = _sweep(path, out)
    assert (tmp_path / "killed").exists()
    assert (frame["status"] == "ok").all() and len(frame) == 8


def _rewrite_config_at_seed_2(doc: dict, source: str) -> dict:
    """A runner that rewrites the model config both tiers name (same name) at seed 2."""
    if doc["seed"] == 2:
        (Path(source).parent / "cfg.json").write_text('{"a": 2}')
    return synthetic_runner(doc, source)


def test_a_file_two_tiers_read_changed_mid_sweep_counts_each_point_once(tmp_path):
    """Two tiers of one model config read one file under two fields, so each point was
    counted twice: '2 of 6 finished points read an older version of it ... recompute those 2'
    of 3 finished points, one of them stale (and marked failed twice). Each point counts once."""
    (tmp_path / "cfg.json").write_text('{"a": 1}')
    path, out = tmp_path / "s.yaml", tmp_path / "o"
    path.write_text(yaml.safe_dump({
        "seed": 1, "tiers": [{"name": "w4a16", "replicas": 2, "model": "cfg.json"},
                             {"name": "bf16", "replicas": 2, "model": "cfg.json"}],
        "sweep": {"seed": [1, 2, 3, 4]}}))
    with pytest.raises(TiersimError) as info:
        run_sweep(path, out, workers=1, validator=None, runner=_rewrite_config_at_seed_2,
                  report=False)
    assert str(info.value) == (
        f"{out}: {tmp_path / 'cfg.json'} (tiers[0].model) changed while the sweep ran: 1 of 3 "
        "finished points read an older version of it, and one table must not mix the two; "
        "rerun to recompute it over the file as it is now (it is marked failed), or use a new "
        "--out folder")
    status = {r["values"]["seed"]: r["status"] for r in read_points(out).values()}
    assert status == {1: "error", 2: "error", 3: "ok", 4: "ok"}


def _stopped(*args, **kwargs):
    """A step of a command interrupted there (Ctrl-C)."""
    raise KeyboardInterrupt


@pytest.mark.parametrize("where", ["render", "replace"])
def test_an_interrupted_report_says_nothing_was_written(tmp_path, capsys, monkeypatch, where):
    """``tiersim report`` stopped by Ctrl-C (while it rendered the page, or once the page was
    written beside its place) ended with status 130 and not a word; it says the folder holds
    nothing of it (no page, no half page), as an interrupted run says."""
    import tiersim.report.page

    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "o"
    assert run_cli(capsys, "run", scenario, "--out", out, "--no-baselines", "--no-report")[0] == 0
    before = sorted(p.name for p in out.iterdir())
    if where == "render":
        monkeypatch.setattr(tiersim.report.page, "render", _stopped)
    else:
        monkeypatch.setattr(tiersim.report.page.os, "replace", _stopped)
    assert run_cli(capsys, "report", out) == (
        130, f"interrupted: nothing was written to {out}; run the same command again\n")
    assert sorted(p.name for p in out.iterdir()) == before


ENDED = "interrupted as tiersim exited, after the command had ended: what it wrote is complete\n"

WAITED_AT_EXIT = ("import sys, threading, time\n"
                  "threading.Thread(target=time.sleep, args=(60,)).start()\n"
                  "from tiersim.cli import app\n"
                  "sys.argv[0] = 'tiersim'\n"
                  "app(prog_name='tiersim')\n")
"""``tiersim`` whose exit waits a minute for a thread (as Python's exit waits for any thread a
library left running): the process's last moments, after every file is written."""


def _signalled_after_run(tmp_path: Path, command: list[str], signum: int, delay: float):
    """Run ``tiersim run tiny`` by ``command``; send ``signum`` ``delay`` seconds after its
    last line ('wrote ...', every file written): (exit status, stderr)."""
    out = tmp_path / "o"
    child = subprocess.Popen([sys.executable, *command, "run", "tiny", "-o", str(out),
                              "--no-baselines"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        for line in child.stdout:
            if line.startswith("wrote "):
                break
        assert (out / "report.html").is_file()
        time.sleep(delay)
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    # less the notes on the bundled tiny: it is the bundled one, and (round 53) its tiers'
    # order (W4A16 listed first costs more per request at tiny's load)
    return child.returncode, "".join(line for line in err.splitlines(keepends=True)
                                     if not line.startswith("note: "))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_tiersim_exits_says_the_files_are_complete(tmp_path, signum):
    """A signal that came once ``tiersim run`` had written its files and printed its last
    line, while the process exited (waiting for a thread), killed it without a word (status
    -15, -2: the command's handlers were put back to the defaults); it says its files are
    complete and ends with the signal's status."""
    code, err = _signalled_after_run(tmp_path, ["-c", WAITED_AT_EXIT], signum, 0.2)
    assert (code, err) == (128 + signum, ENDED)


@pytest.mark.parametrize("delay", [0.05, 0.2])
def test_a_signal_while_python_frees_its_modules_is_no_death(tmp_path, delay):
    """A SIGTERM while ``tiersim run`` exited, its files written, killed it (status -15):
    Python stops handling signals while it frees its modules (about 0.9 s here). It ends
    with status 0 (the signal is ignored then), or with 143 and the line saying its files are
    complete where it came before."""
    code, err = _signalled_after_run(tmp_path, ["-m", "tiersim"], signal.SIGTERM, delay)
    assert (code, err) in ((0, ""), (143, ENDED))


TINY = (Path(__file__).resolve().parents[1] / "tiersim" / "scenarios" / "tiny.yaml").read_text()


@pytest.mark.parametrize(("old", "new", "reading"), [
    ("gpu: H200", "gpu: on", "; YAML reads on unquoted as true: write 'on' in quotes if it is "
     "text"),
    ("  fractions: [0.5, 0.5]\n", "  fractions: [0.5, 0.5]\n  thresholds: ~\n",
     "; ~ is YAML's null (no value): write the value"),
])
def test_a_sweeps_bad_value_says_how_yaml_read_it_as_run_does(tmp_path, capsys, old, new,
                                                              reading):
    """A value YAML read otherwise than written (``on`` as true, ``~`` as null) was refused by
    ``tiersim run`` with how YAML read it, and by ``tiersim sweep`` of the same scenario
    without it ('gpu: input should be a valid string (got True)'): a sweep reads its points
    from dicts, which cannot tell. The sweep's line is now the run's, its file aside."""
    text = TINY.replace(old, new)
    (tmp_path / "r.yaml").write_text(text)
    (tmp_path / "s.yaml").write_text(text + "sweep:\n  seed: [0, 1]\n")
    code, err = run_cli(capsys, "run", tmp_path / "r.yaml", "--no-baselines")
    assert code == 1 and err.endswith(reading + "\n"), err
    code, swept = run_cli(capsys, "sweep", tmp_path / "s.yaml", "--out", tmp_path / "o",
                          "--no-baselines", "-w", "1")
    assert (code, swept) == (1, err.replace(str(tmp_path / "r.yaml"), str(tmp_path / "s.yaml")))


def test_a_failed_points_record_says_how_yaml_read_its_value(tmp_path):
    """Each failed point's record (its points/<id>.json, the table's row) names the value as
    a run of the file does, how YAML read it included."""
    path, out = tmp_path / "s.yaml", tmp_path / "o"
    path.write_text(TINY.replace("gpu: H200", "gpu: on") + "sweep:\n  seed: [0, 1]\n")
    frame = run_sweep(path, out, workers=1, validator=None, report=False, progress=False,
                      strict=False)
    assert set(frame["error"]) == {
        f"{path}: line 6: gpu: input should be a valid string (got true); YAML reads on "
        "unquoted as true: write 'on' in quotes if it is text"}
    assert {r["error"] for r in read_points(out).values()} == set(frame["error"])


EDITS = {"edit": True}
"""Whether :func:`_rewrite_trace_then_config` rewrites its files (off for the rerun)."""


def _rewrite_trace_then_config(doc: dict, source: str) -> dict:
    """A runner that rewrites the trace at seed 2 and the model config at seed 4."""
    folder = Path(source).parent
    if EDITS["edit"] and doc["seed"] == 2:
        (folder / "t.csv").write_text("arrival_s,input_tokens,output_tokens\n0,99,5\n")
    if EDITS["edit"] and doc["seed"] == 4:
        (folder / "cfg.json").write_text('{"a": 2}')
    return synthetic_runner(doc, source)


def test_two_files_changed_mid_sweep_are_both_recomputed_on_the_rerun(tmp_path, monkeypatch):
    """The trace changed at one point and the model config at a later one: the refusal named
    the trace and marked only its stale point failed, so the point that read the new trace and
    the old config stayed 'ok', and the rerun it advised was refused ('holds sweep points run
    over other input files (tiers[0].model cfg.json of point ... changed since it ran); use a
    new --out folder, or delete .../points to start over'). Every stale point is marked, the
    line names both files, and the rerun recomputes them."""
    (tmp_path / "cfg.json").write_text('{"a": 1}')
    (tmp_path / "t.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n")
    path, out = tmp_path / "s.yaml", tmp_path / "o"
    path.write_text(yaml.safe_dump({
        "seed": 1, "trace": {"path": "t.csv"},
        "tiers": [{"name": "w4a16", "replicas": 2, "model": "cfg.json"},
                  {"name": "bf16", "replicas": 2}],
        "sweep": {"seed": [1, 2, 3, 4, 5]}}))
    monkeypatch.setitem(EDITS, "edit", True)
    kw = {"workers": 1, "validator": None, "runner": _rewrite_trace_then_config,
          "report": False}
    with pytest.raises(TiersimError) as info:
        run_sweep(path, out, **kw)
    assert str(info.value) == (
        f"{out}: {tmp_path / 't.csv'} (trace) changed while the sweep ran (so did "
        f"{tmp_path / 'cfg.json'} (tiers[0].model)): 1 of 3 finished points read an older "
        "version of it, and one table must not mix the two; rerun to recompute those 2 over "
        "the files as they are now (they are marked failed), or use a new --out folder")
    status = {r["values"]["seed"]: r["status"] for r in read_points(out).values()}
    assert status == {1: "error", 2: "error", 3: "error", 4: "error", 5: "ok"}
    monkeypatch.setitem(EDITS, "edit", False)
    table = run_sweep(path, out, **kw)
    assert (table["status"] == "ok").all() and len(table) == 5
