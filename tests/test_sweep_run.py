"""Tests of sweep execution: resumable store, failures recorded, kill and resume, Ray parity."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tiersim.sweep.run import run_sweep
from tiersim.sweep.store import read_axes, read_points
from tiersim.sweep.testing import synthetic_runner

ROOT = Path(__file__).resolve().parents[1]


def make_scenario(tmp_path: Path, sleep_s: float = 0.0, **sweep) -> Path:
    """A synthetic-runner scenario YAML with a 6 x 4 = 24-point sweep unless overridden."""
    doc = {"seed": 1, "tiers": [{"name": "w4a16", "replicas": 2}, {"name": "bf16", "replicas": 2}],
           "router": {"confusion": {"fpr": 0.0}}, "synthetic": {"sleep_s": sleep_s},
           "sweep": sweep or {"router.confusion.fpr": [0.0, 0.05, 0.1, 0.15, 0.2, 0.3],
                              "tiers.bf16.replicas": [1, 2, 3, 4]}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def sweep(path: Path, out: Path, **kw) -> pd.DataFrame:
    """Run a sweep with the synthetic runner and no report."""
    kw.setdefault("workers", 1)
    return run_sweep(path, out, runner=synthetic_runner, validator=None, report=False, **kw)


def test_sweep_parquet_has_axes_and_flattened_metrics(tmp_path):
    out = tmp_path / "out"
    frame = sweep(make_scenario(tmp_path), out)
    table = pd.read_parquet(out / "sweep.parquet")
    assert len(table) == 24 and table["point_id"].is_unique
    assert read_axes(out / "sweep.parquet") == ["router.confusion.fpr", "tiers.bf16.replicas"]
    for column in ["router.confusion.fpr", "tiers.bf16.replicas", "accuracy",
                   "tiers.bf16.ttft_p99_s", "router.silent_failure_rate"]:
        assert column in table.columns
    assert (table["status"] == "ok").all()
    assert table["index"].tolist() == list(range(24))
    pd.testing.assert_frame_equal(frame, table, check_dtype=False)
    # the axis values reached the runner: bf16 latency falls as its replicas grow
    one = table[table["router.confusion.fpr"] == 0.0].sort_values("tiers.bf16.replicas")
    assert one["tiers.bf16.ttft_p99_s"].is_monotonic_decreasing


def test_failing_point_is_recorded_and_sweep_goes_on(tmp_path):
    path = make_scenario(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["synthetic"]["fail_if"] = {"router.confusion.fpr": 0.1}
    path.write_text(yaml.safe_dump(doc))
    from tiersim.sweep.run import SweepFailed

    with pytest.raises(SweepFailed, match=r"4 of 24 sweep point\(s\) failed") as info:
        sweep(path, tmp_path / "out", workers=2)
    table = info.value.frame
    assert pd.read_parquet(tmp_path / "out" / "sweep.parquet")["point_id"].tolist() == \
        table["point_id"].tolist()
    bad = table[table["status"] == "error"]
    assert len(bad) == 4 and len(table) == 24
    assert all(point in str(info.value) for point in bad["point_id"].head(3))
    assert bad["error"].str.contains("synthetic failure at router.confusion.fpr=0.1").all()
    assert table.loc[table["status"] == "ok", "accuracy"].notna().all()


def test_rerun_skips_finished_points_and_retries_failed(tmp_path):
    path = make_scenario(tmp_path, **{"router.confusion.fpr": [0.0, 0.1]})
    out = tmp_path / "out"
    sweep(path, out)
    before = {i: r["started"] for i, r in read_points(out).items()}
    sweep(path, out)
    assert {i: r["started"] for i, r in read_points(out).items()} == before
    failed = next(iter(before))
    record = json.loads((out / "points" / f"{failed}.json").read_text())
    record.update(status="error", error="RuntimeError: boom", summary=None)
    (out / "points" / f"{failed}.json").write_text(json.dumps(record))
    table = sweep(path, out)
    assert (table["status"] == "ok").all()
    after = {i: r["started"] for i, r in read_points(out).items()}
    assert [i for i in after if after[i] != before[i]] == [failed]


def test_bad_executor_is_one_line_error(tmp_path):
    from tiersim.errors import TiersimError

    with pytest.raises(TiersimError, match="--executor: must be 'local' or 'ray'"):
        sweep(make_scenario(tmp_path), tmp_path / "o", executor="dask")


KILL_SCRIPT = textwrap.dedent("""
    import sys
    from tiersim.sweep.run import run_sweep
    from tiersim.sweep.testing import synthetic_runner
    run_sweep(sys.argv[1], sys.argv[2], workers=2, runner=synthetic_runner, validator=None,
              report=False, progress=False)
""")


def test_killed_sweep_resumes_without_loss_or_recompute(tmp_path):
    path, out = make_scenario(tmp_path, sleep_s=0.25), tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path), str(out)],
                            cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(list((out / "points").glob("*.json"))) < 12 and time.monotonic() < deadline:
        assert proc.poll() is None, "sweep ended before it was killed"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    survivors = {p.name: p.read_bytes() for p in (out / "points").glob("[!.]*.json")}
    assert 12 <= len(survivors) < 24, "kill must land mid-sweep"
    assert not (out / "sweep.parquet").exists()
    table = sweep(path, out, workers=2)
    assert len(table) == 24 and table["point_id"].is_unique and (table["status"] == "ok").all()
    files = sorted(p.name for p in (out / "points").iterdir())
    assert len(files) == 24 and all(f.endswith(".json") for f in files), "no temp files left"
    for name, content in survivors.items():
        assert (out / "points" / name).read_bytes() == content, f"{name} was recomputed"


def test_ray_executor_gives_same_values(tmp_path):
    ray = pytest.importorskip("ray")
    path = make_scenario(tmp_path)
    local = sweep(path, tmp_path / "local", workers=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = sweep(path, tmp_path / "ray", executor="ray")
    finally:
        ray.shutdown()
    drop = ["wall_s"]
    pd.testing.assert_frame_equal(local.drop(columns=drop), remote.drop(columns=drop))


def test_progress_bar_shows_points_done_and_eta(tmp_path, capsys):
    path = make_scenario(tmp_path, **{"seed": [1, 2, 3]})
    sweep(path, tmp_path / "out", progress=True)
    err = capsys.readouterr().err
    assert "3/3 points" in err and "ETA" in err
    assert "sweep: 3 points (3 run, 0 already done, 0 failed)" in err


def test_rerun_removes_temp_files_left_by_a_kill(tmp_path):
    path, out = make_scenario(tmp_path, **{"seed": [1, 2]}), tmp_path / "out"
    (out / "points").mkdir(parents=True)
    stale = out / "points" / ".0123abcd.json.x1y2.tmp"
    stale.write_text('{"half": ')
    sweep(path, out)
    assert not stale.exists() and len(list((out / "points").iterdir())) == 2


def test_rerun_with_changed_base_scenario_is_refused(tmp_path):
    from tiersim.errors import TiersimError

    path, out = make_scenario(tmp_path, **{"seed": [1, 2]}), tmp_path / "out"
    sweep(path, out)
    doc = yaml.safe_load(path.read_text())
    doc["tiers"][0]["replicas"] = 5
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TiersimError, match="holds a sweep of a different scenario"):
        sweep(path, out)
    doc["sweep"]["seed"] = [1, 2, 3]  # changing only the axes is a resume, not a new sweep
    doc["tiers"][0]["replicas"] = 2
    path.write_text(yaml.safe_dump(doc))
    assert len(sweep(path, out)) == 3


def _with_trace(path: Path, trace) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["trace"] = {"path": trace}
    path.write_text(yaml.safe_dump(doc))
    return doc


CSV = "arrival_s,input_tokens,output_tokens\n0,{},5\n"


def test_rerun_over_a_changed_input_file_is_refused_naming_it(tmp_path):
    """The scenario text is the same, but the trace it names changed: keeping the finished
    points would put results of two traces in one table."""
    from tiersim.errors import TiersimError

    (tmp_path / "t.csv").write_text(CSV.format(10))
    path, out = make_scenario(tmp_path, **{"seed": [1, 2]}), tmp_path / "out"
    doc = _with_trace(path, "t.csv")
    sweep(path, out)
    assert {tuple(r["inputs"]) for r in read_points(out).values()} == {("trace", "profile")}
    (tmp_path / "t.csv").write_text(CSV.format(100))
    doc["sweep"]["seed"] = [1, 2, 3]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TiersimError, match=r"holds sweep points run over other input files "
                       r"\(trace t\.csv of point \w+ changed since it ran\)"):
        sweep(path, out)
    assert len(read_points(out)) == 2  # nothing run, nothing lost


def test_adding_files_or_gpus_or_fixing_a_failed_points_file_is_a_resume(tmp_path):
    """Each point is held to the files it read: a new trace or GPU is new points, and a point
    that failed is rerun over its fixed file."""
    (tmp_path / "a.csv").write_text(CSV.format(10))
    (tmp_path / "b.csv").write_text(CSV.format(10))
    path, out = make_scenario(tmp_path, **{"trace.path": ["a.csv"], "gpu": ["H200"]}), \
        tmp_path / "out"
    doc = _with_trace(path, "a.csv")
    doc["sweep"] = {"trace.path": ["a.csv"], "gpu": ["H200"]}
    path.write_text(yaml.safe_dump(doc))
    sweep(path, out)
    doc["sweep"] = {"trace.path": ["a.csv", "b.csv"], "gpu": ["H200", "H100"]}
    path.write_text(yaml.safe_dump(doc))
    assert len(sweep(path, out)) == 4
    assert {r["inputs"]["profile"] for r in read_points(out).values()} == {
        inputs_of("h200_aiconfigurator_vllm"), inputs_of("h100_aiconfigurator_vllm")}
    # failed points are not held to their files: fixing the file and rerunning retries them
    for record in read_points(out).values():
        if record["values"]["trace.path"] == "b.csv":
            record.update(status="error", summary=None)
            (out / "points" / f"{record['point_id']}.json").write_text(json.dumps(record))
    (tmp_path / "b.csv").write_text(CSV.format(20))
    assert (sweep(path, out)["status"] == "ok").all()


def _trace_rewriting_runner(doc: dict, source: str) -> dict:
    """The synthetic runner, rewriting the point's trace as it runs when its seed is 2."""
    if doc["seed"] == 2:
        (Path(source).parent / "t.csv").write_text(CSV.format(100))
    return synthetic_runner(doc, source)


def test_a_point_whose_input_changed_while_it_ran_is_failed_not_kept(tmp_path):
    """A point records the digests of its files before it runs; one of them replaced while it
    ran may have been read in either version, so the point is failed, to be rerun."""
    from tiersim.sweep.run import SweepFailed

    (tmp_path / "t.csv").write_text(CSV.format(10))
    path, out = make_scenario(tmp_path, **{"seed": [1, 2]}), tmp_path / "out"
    _with_trace(path, "t.csv")
    with pytest.raises(SweepFailed, match=r"1 of 2 sweep point\(s\) failed \(\w+\); first at "
                       r"seed=2: InputChanged: trace changed while this point ran; rerun to "
                       r"recompute this point;"):
        run_sweep(path, out, runner=_trace_rewriting_runner, validator=None, report=False,
                  workers=1)
    assert sorted(r["status"] for r in read_points(out).values()) == ["error", "ok"]


def test_a_cut_grid_removes_the_old_table_before_its_manifest_is_written(tmp_path, monkeypatch):
    """A sweep of a cut grid (every point already stored) killed before its table is rewritten
    leaves no table of the old grid beside the new sweep.json."""
    import tiersim.sweep.run as sweep_run

    path, out = make_scenario(tmp_path, **{"seed": [1, 2, 3, 4]}), tmp_path / "out"
    sweep(path, out)
    doc = yaml.safe_load(path.read_text())
    doc["sweep"]["seed"] = [1, 2]
    path.write_text(yaml.safe_dump(doc))

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run, "write_table", killed)  # the table's writer
    with pytest.raises(KeyboardInterrupt):
        sweep(path, out)
    assert len(json.loads((out / "sweep.json").read_text())["points"]) == 2
    assert not (out / "sweep.parquet").exists()


def inputs_of(profile: str) -> str:
    from tiersim.input_files import file_digest
    from tiersim.paths import bundled

    return file_digest(bundled("profiles", profile))


def test_rerun_with_the_other_savings_method_is_refused(tmp_path):
    from tiersim.errors import TiersimError
    from tiersim.sweep.points import estimate_runner

    path, out = make_scenario(tmp_path, **{"seed": [1, 2]}), tmp_path / "out"
    sweep(path, out)
    assert {r["runner"] for r in read_points(out).values()} == {"synthetic_runner"}
    with pytest.raises(TiersimError, match=r"holds sweep points run synthetic_runner; this run "
                       r"is with --no-baselines \(estimated savings\), and one table must not "
                       "mix the two"):
        run_sweep(path, out, runner=estimate_runner, validator=None, report=False, workers=1)


def test_one_field_named_twice_or_a_value_the_scenario_refuses_stops_before_any_point(tmp_path):
    from tiersim.sweep.axes import SweepError

    out = tmp_path / "out"
    path = make_scenario(tmp_path, **{"tiers.bf16.replicas": [1, 2], "tiers.1.replicas": [3]})
    with pytest.raises(SweepError, match=r"'tiers.(bf16|1).replicas': sets the same field as "
                       r"'tiers.(1|bf16).replicas' \(both name tiers.1.replicas\); keep one"):
        sweep(path, out)
    path = make_scenario(tmp_path, **{"tiers.bf16": [{"name": "bf16"}], "tiers.1.replicas": [3]})
    with pytest.raises(SweepError, match=r"sets the same field as .*\(both name tiers.1\)"):
        sweep(path, out)
    assert not out.exists()


def test_pool_forks_only_without_threads():
    import threading

    from tiersim.sweep.executors import _context

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert _context().get_start_method() == "spawn"
    finally:
        stop.set()
        thread.join()
    if threading.active_count() == 1:
        assert _context().get_start_method() == "fork"


def test_spawned_pool_gives_same_results(tmp_path, monkeypatch):
    import multiprocessing

    from tiersim.sweep import executors

    path = make_scenario(tmp_path, **{"router.confusion.fpr": [0.0, 0.1, 0.2]})
    forked = sweep(path, tmp_path / "a", workers=2)
    monkeypatch.setattr(executors, "_context", lambda: multiprocessing.get_context("spawn"))
    spawned = sweep(path, tmp_path / "b", workers=2)
    pd.testing.assert_frame_equal(forked.drop(columns="wall_s"), spawned.drop(columns="wall_s"))


def test_an_interrupted_pool_ends_its_workers_at_once_and_they_ignore_ctrl_c():
    """Ctrl-C reaches the whole process group: workers ignore it (one interrupted inside the
    pool's queue could leave a lock held and the shutdown waiting for ever) and the sweep ends
    them itself, without waiting for their running points."""
    from tiersim.sweep import executors

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), executors.local_pool(2) as pool:
        assert pool.submit(signal.getsignal, signal.SIGINT).result() == signal.SIG_IGN
        workers = list(pool._processes.values())
        pool.submit(time.sleep, 60)
        raise KeyboardInterrupt
    assert time.monotonic() - started < 30  # not the 60 s point
    assert not [w.pid for w in workers if _running(w.pid)]


def _running(pid: int, wait_s: float = 5.0) -> bool:
    """Whether process ``pid`` still runs after up to ``wait_s`` (gone or a zombie: ended; the
    pool's own thread may reap a worker first, which leaves ``Process.is_alive`` unsure)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        status = Path(f"/proc/{pid}/status")
        try:
            state = next(line for line in status.read_text().splitlines()
                         if line.startswith("State:"))
        except (OSError, StopIteration):
            return False
        if "zombie" in state or "(Z" in state:
            return False
        time.sleep(0.05)
    return True


def test_an_axis_column_mixing_true_and_numbers_is_stored_as_text(tmp_path):
    """Arrow refuses a column of ints and bools; the table keeps both, as text."""
    from tiersim.sweep.store import collect

    records = {f"p{i}": {"point_id": f"p{i}", "index": i, "status": "ok", "values": {},
                         "summary": {"a": a, "b": b}}
               for i, (a, b) in enumerate([(1, 1), (True, 2.5), (None, None)])}
    frame = collect(tmp_path, [], None, records)
    assert frame["a"].tolist()[:2] == ["1", "True"] and frame["a"].isna().tolist()[2]
    assert frame["b"].tolist()[:2] == [1, 2.5]


class _FakeRay:
    """Enough of ``ray`` for :func:`run_ray`: ``init`` installs its own SIGTERM handler, as
    Ray's does; ``wait`` raises what the test asks (a SIGTERM's SystemExit, say)."""

    def __init__(self, fail: BaseException):
        self.fail, self.calls = fail, []

    def is_initialized(self):
        return False

    def init(self, **kw):
        self.calls.append("init")
        signal.signal(signal.SIGTERM, lambda *_: None)

    def cluster_resources(self):
        return {"CPU": 1.0}

    def remote(self, fn):
        return type("Remote", (), {"remote": staticmethod(lambda task: object())})

    def wait(self, pending, num_returns):
        raise self.fail

    def shutdown(self):
        self.calls.append("shutdown")


def test_ray_sweep_stopped_shuts_its_ray_down_and_keeps_tiersims_sigterm(monkeypatch):
    from tiersim.sweep import executors
    from tiersim.sweep.axes import Point
    from tiersim.sweep.points import Task

    def ours(*_):
        raise SystemExit(143)

    fake = _FakeRay(SystemExit(143))
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    before = signal.signal(signal.SIGTERM, ours)
    try:
        with pytest.raises(SystemExit):
            task = Task(Point("p", 0, {}), {}, "s.yaml", synthetic_runner)
            executors.run_ray([task], lambda record: None)
        assert signal.getsignal(signal.SIGTERM) is ours, "Ray's handler replaced tiersim's"
    finally:
        signal.signal(signal.SIGTERM, before)
    assert fake.calls == ["init", "shutdown"]


def test_rerun_with_changed_max_replicas_is_refused_and_keeps_the_table(tmp_path):
    """limits.max_replicas caps the simulated uniform baselines (256 where it is not set), so
    points run under another cap must not share a table."""
    from tiersim.errors import TiersimError

    path, out = make_scenario(tmp_path, **{"seed": [1, 2]}), tmp_path / "out"
    doc = yaml.safe_load(path.read_text())
    doc["limits"] = {"max_replicas": 8}
    path.write_text(yaml.safe_dump(doc))
    sweep(path, out)
    table, points = (out / "sweep.parquet").read_bytes(), read_points(out)
    doc["limits"] = {"max_replicas": 16}
    doc["sweep"]["seed"] = [1, 2, 3]
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(TiersimError) as caught:
        sweep(path, out)
    assert str(caught.value) == (
        f"{out}: holds sweep points run with limits.max_replicas 8, which caps their simulated "
        "baselines; this scenario has 16, and one table must not mix the two; set it back to "
        "8, or use a new --out folder")
    assert (out / "sweep.parquet").read_bytes() == table and read_points(out) == points
    doc["limits"] = {"max_replicas": 8, "max_sweep_points": 50}  # bounds the grid only
    path.write_text(yaml.safe_dump(doc))
    assert len(sweep(path, out)) == 3


def test_max_replicas_at_the_default_baseline_cap_keeps_a_sweep():
    """1024 (limits.max_replicas' default) is the cap without a limit; any other limit the
    scenario sets caps the baselines (tiersim.savings.baseline_replica_limit), so it is
    another base."""
    from tiersim.sweep.run import base_digest

    doc = {"seed": 1, "tiers": [{"name": "bf16", "replicas": 2}]}
    assert base_digest(doc) == base_digest({**doc, "limits": {"max_replicas": 1024}})
    assert base_digest(doc) != base_digest({**doc, "limits": {"max_replicas": 4096}})
    assert base_digest(doc) != base_digest({**doc, "limits": {"max_replicas": 256}})
    # written as a float, the same whole number validation accepts: the same cap
    assert base_digest({**doc, "limits": {"max_replicas": 8.0}}) == base_digest(
        {**doc, "limits": {"max_replicas": 8}})
    assert base_digest(doc) == base_digest({**doc, "limits": {"max_replicas": 1024.0}})


def test_the_failure_line_marks_where_a_long_error_is_cut(tmp_path):
    """The first error was cut at 200 characters mid-word and unmarked ("... a smaller
    precision ; the others are stored")."""
    import pandas as pd

    from tiersim.sweep.run import _failure_line

    error = ("s.yaml: tiers[0]: tier 'w4a16': Qwen3-Coder-30B-A3B at BF16 does not fit on 1x "
             "H200: weights 61.1 GB + reserve 2.0 GB > usable 45.2 GB (short by 17.9 GB); use "
             "gpus_per_replica 2, a smaller precision or a GPU with more memory")
    frame = pd.DataFrame({"point_id": ["a", "d956040cf542"], "status": ["ok", "error"],
                          "error": [None, error]})
    assert _failure_line(frame, tmp_path) == (
        f"{tmp_path}: 1 of 2 sweep point(s) failed (d956040cf542); first: s.yaml: tiers[0]: "
        "tier 'w4a16': Qwen3-Coder-30B-A3B at BF16 does not fit on 1x H200: weights 61.1 GB + "
        "reserve 2.0 GB > usable 45.2 GB (short by 17.9 GB); use gpus_per_replica 2, a "
        f"smaller...; the others are stored; details in {tmp_path / 'points'}; fix what the "
        "error names, then rerun to retry them")


def test_the_failure_line_gives_the_first_failed_points_values(tmp_path):
    """It named the scenario's key (`tiers[1]`) but not the axis values the point gave it."""
    import pandas as pd

    from tiersim.sweep.axes import Point
    from tiersim.sweep.run import _failure_line

    frame = pd.DataFrame({"point_id": ["a", "b"], "status": ["ok", "error"],
                          "error": [None, "s.yaml: tiers[1]: does not fit"]})
    points = [Point("a", 0, {"model": "m", "tiers.bf16.gpus_per_replica": 2}),
              Point("b", 1, {"model": "Llama-3.1-70B", "tiers.bf16.gpus_per_replica": 1})]
    assert _failure_line(frame, tmp_path, points=points) == (
        f"{tmp_path}: 1 of 2 sweep point(s) failed (b); first at model='Llama-3.1-70B', "
        "tiers.bf16.gpus_per_replica=1: s.yaml: tiers[1]: does not fit; the others are stored; "
        f"details in {tmp_path / 'points'}; fix what the error names, then rerun to retry "
        "them")


def test_an_interrupted_sweep_counts_the_points_its_workers_stored(tmp_path):
    # SIGINT said "6 finished points stored" with 7 on disk: a worker had stored one the
    # parent had not counted yet
    import json

    from tiersim.sweep.run import Tally, tiersim_version

    folder = tmp_path / "points"
    folder.mkdir()
    for name, status in (("a", "ok"), ("b", "failed"), ("c", "ok"), ("old", "ok")):
        (folder / f"{name}.json").write_text(json.dumps(
            {"point_id": name, "status": status, "tiersim": tiersim_version()}))
    (folder / "d.json").write_text('{"status": "o')  # not whole: not counted
    tally = Tally(stored=1, folder=folder, pending=("a", "b", "c", "d", "e"))
    assert tally.stored_on_disk() == 2  # a and c; "old" was stored by an earlier sweep
    assert Tally(stored=3).stored_on_disk() == 3


def test_an_interrupted_sweep_does_not_count_points_another_version_stored(tmp_path):
    # a point another tiersim version stored ok runs again (it is pending), but its file says
    # ok until this call rewrites it: an interrupt before then counted it as stored by this
    # sweep ("1 finished point stored ... they are kept, not rerun")
    import json

    from tiersim.sweep.run import Tally, tiersim_version

    folder = tmp_path / "points"
    folder.mkdir()
    for name, version in (("new", tiersim_version()), ("older", "0.0.1")):
        (folder / f"{name}.json").write_text(json.dumps(
            {"point_id": name, "status": "ok", "tiersim": version}))
    assert Tally(stored=0, folder=folder, pending=("older",)).stored_on_disk() == 0
    assert Tally(stored=0, folder=folder, pending=("new", "older")).stored_on_disk() == 1


def test_off_a_terminal_a_sweep_writes_timed_progress_lines(tmp_path, capsys, monkeypatch):
    # with stderr sent to a file (nohup, CI) the bar drew nothing: a long sweep looked hung
    import tiersim.sweep.progress as progress

    monkeypatch.setattr(progress, "LINE_EVERY_S", 0.0)
    path = make_scenario(tmp_path, **{"seed": [1, 2, 3]})
    sweep(path, tmp_path / "out", workers=1)  # capsys: stderr is no terminal
    lines = [line for line in capsys.readouterr().err.splitlines()
             if line.startswith("sweep: ") and "elapsed" in line]
    assert [line.split(",")[0] for line in lines] == ["sweep: 1/3 points (33%)",
                                                     "sweep: 2/3 points (67%)"]
    assert all("left" in line for line in lines)


def test_progress_lines_say_points_share_elapsed_and_time_left():
    from io import StringIO

    from rich.console import Console

    from tiersim.sweep.progress import ProgressLines

    now = [100.0]
    console = Console(file=StringIO(), width=200)
    lines = ProgressLines(console, every_s=30, clock=lambda: now[0])
    lines.add_task("sweep", total=10, completed=4)  # 4 stored before this call
    now[0] = 110.0
    lines.advance(0)  # 10 s since the start: too soon for a line
    now[0] = 160.0
    lines.advance(0)
    assert console.file.getvalue() == (
        "sweep: 6/10 points (60%), 0:01:00 elapsed, about 0:02:00 left\n")
    now[0] = 300.0
    lines.advance(0, 4)  # the last point: the sweep's own summary line follows
    assert console.file.getvalue().count("\n") == 1
