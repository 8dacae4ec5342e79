"""Hostile-input round 5 for sweeps: no table outlives its data or mixes input versions, fast
preparation of big maps, bounded grids, odd axis keys, a folder in a point's way, a Ray address
where nothing answers."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tiersim.cli import main
from tiersim.errors import TiersimError
from tiersim.sweep.run import run_sweep
from tiersim.sweep.store import read_points
from tiersim.sweep.testing import synthetic_runner

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
CSV = "arrival_s,input_tokens,output_tokens\n0,{},5\n"


def scenario(tmp_path: Path, sweep_map: dict, seed: int = 1) -> Path:
    """A synthetic-runner scenario YAML with the given sweep map."""
    doc = {"seed": seed, "tiers": [{"name": "w4a16", "replicas": 2},
                                   {"name": "bf16", "replicas": 2}],
           "sweep": sweep_map}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def sweep(path: Path, out: Path, **kw) -> pd.DataFrame:
    """A sweep with the synthetic runner, no validator, no report, one worker."""
    kw.setdefault("runner", synthetic_runner)
    kw.setdefault("report", False)
    return run_sweep(path, out, workers=1, validator=None, **kw)


def stop_at_second_value(doc: dict, source: str) -> dict:
    """A runner killed (Ctrl-C) at the point whose w4a16 replicas are 2."""
    if doc["tiers"][0]["replicas"] == 2:
        raise KeyboardInterrupt
    return synthetic_runner(doc, source)


def test_a_sweep_started_over_and_killed_leaves_no_table_of_the_old_scenario(tmp_path, capsys):
    """Finding 1: the old sweep.parquet came from points that were deleted; a new scenario's
    sweep killed after its first point must not leave it beside the new scenario."""
    out = tmp_path / "out"
    sweep(scenario(tmp_path, {"tiers.w4a16.replicas": [1, 2, 3]}), out)
    for stored in (out / "points").glob("*.json"):  # as the refusal of a new base advises
        stored.unlink()
    with pytest.raises(KeyboardInterrupt):
        sweep(scenario(tmp_path, {"tiers.w4a16.replicas": [1, 2, 3]}, seed=7), out,
              runner=stop_at_second_value)
    assert len(read_points(out)) == 1 and not (out / "sweep.parquet").exists()
    capsys.readouterr()
    assert main(["report", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {out}: a sweep that did not finish (1 point stored, no sweep.parquet yet); "
        "run its `tiersim sweep` command again to resume it, and the report is written at the "
        "end")


def replace_trace_at_seed_2(doc: dict, source: str) -> dict:
    """A runner that replaces the scenario's trace (same name, new content) at seed 2."""
    if doc["seed"] == 2:
        (Path(source).parent / doc["trace"]["path"]).write_text(CSV.format(99))
    return synthetic_runner(doc, source)


def test_a_trace_replaced_during_the_sweep_is_refused_naming_it_and_a_rerun_recomputes(tmp_path):
    """Finding 2: point 1 read the old trace, 3 and 4 the new one: no one table; point 2,
    during which it was replaced, may have read either and is failed itself."""
    (tmp_path / "t.csv").write_text(CSV.format(10))
    path, out = scenario(tmp_path, {"seed": [1, 2, 3, 4]}), tmp_path / "out"
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()),
                                    "trace": {"path": "t.csv"}}))
    with pytest.raises(TiersimError) as info:
        sweep(path, out, runner=replace_trace_at_seed_2)
    assert str(info.value) == (
        f"{out}: {tmp_path / 't.csv'} (trace) changed while the sweep ran: 1 of 3 finished "
        "points read an older version of it, and one table must not mix the two; rerun to "
        "recompute it over the file as it is now (it is marked failed), or use a new "
        "--out folder")
    assert not (out / "sweep.parquet").exists()
    status = {r["values"]["seed"]: r["status"] for r in read_points(out).values()}
    assert status == {1: "error", 2: "error", 3: "ok", 4: "ok"}
    table = sweep(path, out, runner=replace_trace_at_seed_2)  # writes the same trace again
    assert (table["status"] == "ok").all() and len(table) == 4
    assert len({r["inputs"]["trace"] for r in read_points(out).values()}) == 1


def test_a_value_added_in_front_renumbers_every_row_of_the_table(tmp_path):
    """Finding 3: ``index`` is each point's place in the current grid, not the old one."""
    out = tmp_path / "out"
    sweep(scenario(tmp_path, {"tiers.bf16.replicas": [1, 2, 3]}), out)
    table = sweep(scenario(tmp_path, {"tiers.bf16.replicas": [4, 1, 2, 3]}), out)
    stored = pd.read_parquet(out / "sweep.parquet")
    assert stored["index"].tolist() == [0, 1, 2, 3] == table["index"].tolist()
    assert stored["tiers.bf16.replicas"].tolist() == [4, 1, 2, 3]
    # a point's place is the table's and sweep.json's: its file keeps none to go stale
    assert not [r for r in read_points(out).values() if "index" in r]


def test_a_resume_without_a_report_removes_the_old_report(tmp_path):
    """Finding 4: fewer axis values, nothing to run, --no-report: the table shrinks, so the
    old report (of the bigger table) must go."""
    out = tmp_path / "out"
    sweep(scenario(tmp_path, {"tiers.bf16.replicas": [1, 2, 3]}), out)
    (out / "report.html").write_text("<p>3 points</p>")
    assert len(sweep(scenario(tmp_path, {"tiers.bf16.replicas": [1, 2]}), out)) == 2
    assert not (out / "report.html").exists()


class _Unpicklable:
    """A value ``copy.deepcopy`` refuses, standing in for a huge sweep map."""

    def __deepcopy__(self, memo):
        raise AssertionError("the sweep map was copied")


def test_a_point_copies_the_scenario_without_its_sweep_map():
    """Finding 5: a 10,000-value axis was deep-copied once per value, three times over."""
    from tiersim.sweep.axes import apply

    doc = apply({"seed": 1, "sweep": {"seed": _Unpicklable()}}, {"seed": 2})
    assert doc == {"seed": 2}


def test_preparing_reads_each_point_once(tmp_path):
    """Finding 5: the two up-front checks read the same points; each is read once."""
    from tiersim.sweep.run import prepare

    calls = []

    def validator(doc, source):
        calls.append(doc["seed"])
        return None

    plan = prepare({"seed": 0, "sweep": {"seed": list(range(3000))}}, "s.yaml", validator)
    assert len(plan.points) == 3000 and sorted(calls) == list(range(3000))


def test_twenty_thousand_axes_are_checked_for_overlap_in_linear_time():
    """Finding 6: every axis was compared with every other (20,000 axes: ~50 s)."""
    from tiersim.sweep.axes import no_field_twice

    paths = [f"junk{i}.x" for i in range(20_000)]
    started = time.perf_counter()
    no_field_twice({"seed": 0}, paths, "s.yaml")
    assert time.perf_counter() - started < 5


def test_a_field_named_after_a_field_inside_it_is_refused(tmp_path):
    """The shorter path second: ``tiers.1.replicas`` then ``tiers.bf16``."""
    from tiersim.sweep.axes import SweepError, no_field_twice

    doc = {"tiers": [{"name": "w4a16"}, {"name": "bf16"}]}
    with pytest.raises(SweepError) as info:
        no_field_twice(doc, ["tiers.1.replicas", "tiers.bf16"], "s.yaml")
    assert str(info.value) == ("s.yaml: sweep: 'tiers.bf16': sets the same field as "
                               "'tiers.1.replicas' (both name tiers.1); keep one")


def test_a_grid_above_the_hard_cap_is_refused_whatever_max_points_says(monkeypatch):
    """Finding 7: --max-points 2000000000 let a 10^9-point grid fill memory."""
    from tiersim.sweep import axes

    monkeypatch.setattr(axes, "MAX_GRID_POINTS", 100)
    with pytest.raises(axes.SweepError) as info:
        axes.expand({"a.b": list(range(11)), "a.c": list(range(10))}, "s.yaml",
                    max_points=2_000_000_000)
    assert str(info.value) == ("s.yaml: sweep: the grid has 110 points, above the most any "
                               "sweep may hold (100, whatever --max-points says); split it into "
                               "smaller sweeps")
    assert len(axes.expand({"a.b": list(range(10)), "a.c": list(range(10))}, "s.yaml")) == 100


@pytest.mark.parametrize("key,expected", [
    ("1", "key 1 is not a dotted path (YAML reads it as a number)"),
    ("null", "key null is not a dotted path (YAML reads it as null)"),
    ("true", "key true is not a dotted path (YAML reads it as a boolean)"),
    ("1.5", "key 1.5 is not a dotted path (YAML reads it as a number)"),
    ("2024-01-01", "key 2024-01-01 is not a dotted path (YAML reads it as a date)"),
    ("zip: {seed: [1, 2], 3", "key 3 is not a dotted path (YAML reads it as a number)"),
    ('""', "'' is not a dotted path (the key is empty)"),
    ('zip: {seed: [1, 2], ""', "'' is not a dotted path (the key is empty)"),
    ("tiers..replicas", "'tiers..replicas': is not a dotted path: it has an empty segment (a "
                        "dot at its start or end, or two in a row)"),
    ("seed.", "'seed.': is not a dotted path: it has an empty segment (a dot at its start or "
              "end, or two in a row)"),
])
def test_an_axis_key_that_is_not_a_path_is_one_line_with_its_line(tmp_path, capsys, key,
                                                                   expected):
    """Finding 8: such keys were AttributeError / TypeError tracebacks. An empty key said
    "sweep: (top level): unknown key" with no line; all now name the key's line."""
    path = tmp_path / "s.yaml"
    close = "]}" if key.startswith("zip") else "]"
    path.write_text(TINY + f"\nsweep:\n  {key}: [1, 2{close}\n")
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 1
    line = len(path.read_text().splitlines())
    assert capsys.readouterr().err.strip() == (f"Error: {path}: line {line}: sweep: {expected}; "
                                               "name a field, such as tiers.bf16.replicas")


def test_a_folder_in_the_way_of_a_point_file_is_named_with_the_fix(tmp_path):
    """Finding 9: the error named the temporary file (``points/.ID.json.XXXX.tmp``)."""
    path, out = scenario(tmp_path, {"tiers.bf16.replicas": [1, 2]}), tmp_path / "out"
    sweep(path, out)
    blocked = next((out / "points").glob("*.json"))
    blocked.unlink()
    blocked.mkdir()
    with pytest.raises(TiersimError) as info:
        sweep(path, out)
    assert str(info.value) == (f"{blocked}: a folder is in the way of this sweep point's "
                               "file; remove that folder, then rerun to resume (no point was "
                               "run)")
    assert not list(out.rglob("*.tmp"))


class _RecordingRay:
    """Enough of ``ray`` for :func:`run_ray` to show whether ``init`` was reached."""

    def __init__(self):
        self.calls = []

    def is_initialized(self):
        return False

    def init(self, **kw):
        self.calls.append(kw["address"])
        raise ValueError("malformed")

    def shutdown(self):
        self.calls.append("shutdown")


def _closed_port() -> int:
    """A local TCP port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_ray_address_where_nothing_answers_is_refused_at_once(monkeypatch):
    """Finding 10: Ray retried "Failed to connect to GCS" for 10 minutes, holding the lock."""
    from tiersim.sweep import executors

    fake = _RecordingRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(TiersimError) as info:
        executors.run_ray([], lambda record: None, f"127.0.0.1:{port}")
    assert str(info.value) == (f"--address '127.0.0.1:{port}': nothing answers there (Connection "
                               "refused); give host:port of a running Ray cluster, or leave "
                               "it out")
    assert fake.calls == [] and time.monotonic() - started < 10
    with pytest.raises(TiersimError, match="--address 'not-an-address': cannot join the Ray "
                       r"cluster \(malformed\)"):  # Ray still judges what is not host:port
        executors.run_ray([], lambda record: None, "not-an-address")
    assert fake.calls == ["not-an-address"]


def test_a_sweep_to_a_dead_ray_address_writes_nothing(tmp_path, monkeypatch):
    """The address is probed before the folder is claimed, locked or written."""
    from tiersim.sweep import executors

    monkeypatch.setattr(executors, "_ray", _RecordingRay)  # never the real Ray's retries
    out = tmp_path / "out"
    with pytest.raises(TiersimError, match="nothing answers there"):
        sweep(scenario(tmp_path, {"seed": [1, 2]}), out, executor="ray",
              address=f"127.0.0.1:{_closed_port()}")
    assert not out.exists()


def test_a_ray_address_that_answers_goes_on_to_ray(monkeypatch):
    """The probe lets a listening host:port through to ``ray.init``."""
    from tiersim.sweep import executors

    fake = _RecordingRay()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    with answering_server(EMPTY_SETTINGS) as address, pytest.raises(  # a gRPC server's start
            TiersimError, match="cannot join the Ray cluster"):
        executors.run_ray([], lambda record: None, address)
    assert fake.calls == [address]


EMPTY_SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""An HTTP/2 SETTINGS frame with no settings: a gRPC server's first bytes."""


@contextlib.contextmanager
def answering_server(reply: bytes | None):
    """A local server that sends ``reply`` to each connection (None: says nothing) and keeps
    it open; yields its ``host:port``."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.05)
    held, stop = [], threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if reply is not None:
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        server.close()
        for conn in held:
            conn.close()


class _NoClusterRay(_RecordingRay):
    """``ray`` where ``init(address="auto")`` finds no running cluster, as the real one says."""

    def init(self, **kw):
        self.calls.append(kw["address"])
        raise ConnectionError("Could not find any running Ray instance.")


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_a_ray_address_that_cannot_be_joined_changes_nothing_in_out(tmp_path, monkeypatch):
    """`--address auto` with no cluster failed after the manifest was rewritten for the new
    grid and report.html deleted; on a fresh folder it left scenario.yaml and sweep.json."""
    from tiersim.sweep import executors

    monkeypatch.setattr(executors, "_ray", _NoClusterRay)
    out = tmp_path / "out"
    sweep(scenario(tmp_path, {"tiers.w4a16.replicas": [1, 2]}), out)
    (out / "report.html").write_text("<html>the 2-point report</html>")
    before = _snapshot(out)
    grown = scenario(tmp_path, {"tiers.w4a16.replicas": [1, 2, 4]})
    for folder in (out, tmp_path / "fresh"):
        with pytest.raises(TiersimError) as info:
            sweep(grown, folder, executor="ray", address="auto")
        assert str(info.value) == (
            "--address 'auto': cannot join the Ray cluster (Could not find any running Ray "
            "instance.); give host:port of a running cluster, or leave it out")
    assert _snapshot(out) == before
    assert not (tmp_path / "fresh").exists()
