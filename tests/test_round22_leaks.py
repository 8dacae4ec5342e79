"""Round 22 of hostile input, resources: what a long or big sweep holds (tasks in flight, cached
files, records) is bounded; each test counts, never times."""

from __future__ import annotations

import pytest

from tiersim.sweep import executors
from tiersim.sweep.axes import Point
from tiersim.sweep.points import Task
from tiersim.sweep.testing import synthetic_runner


class Ref:
    """A fake Ray object ref: hashable, holding its point's record."""

    def __init__(self, point_id: str, record: dict):
        self.id, self.record = point_id, record


class CountingRay:
    """Enough of ``ray`` for :func:`executors.run_ray`: a cluster of ``cpus`` CPUs that runs a
    submitted task when ``wait`` asks for it, counting the tasks submitted and not yet
    collected."""

    def __init__(self, cpus: float):
        self.cpus, self.flight, self.most = cpus, set(), 0

    def is_initialized(self):
        return True  # a Ray already running: nothing to start or shut down

    def cluster_resources(self):
        return {"CPU": self.cpus}

    def remote(self, fn):
        fake = self

        class Remote:
            @staticmethod
            def remote(task):
                ref = Ref(task.point.id, fn(task))
                fake.flight.add(ref.id)
                fake.most = max(fake.most, len(fake.flight))
                return ref

        return Remote

    def wait(self, pending, num_returns):
        return pending[:num_returns], pending[num_returns:]

    def get(self, ref):
        self.flight.discard(ref.id)
        return ref.record


def _tasks(count: int):
    for n in range(count):
        yield Task(Point(f"p{n}", n, {"seed": n}), {"seed": n}, "s.yaml", synthetic_runner)


@pytest.mark.parametrize(("cpus", "bound"), [(4, executors.RAY_MIN_IN_FLIGHT), (300, 600)])
def test_a_ray_sweep_holds_a_bounded_number_of_points_in_flight(monkeypatch, cpus, bound):
    """Every point was submitted as a Ray task before the first result was read: a grid of
    100,000 points held 100,000 tasks (their scenarios, refs and results) in the driver and
    Ray's object store at once. At most 2 per CPU of the cluster (at least
    :data:`executors.RAY_MIN_IN_FLIGHT`) are in flight now, and every point still finishes."""
    fake = CountingRay(cpus)
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    finished = []
    executors.run_ray(_tasks(2000), lambda record: finished.append(record["point_id"]))
    assert fake.most == bound
    assert sorted(finished) == sorted(f"p{n}" for n in range(2000))
    assert not fake.flight


def test_the_loaded_profile_cache_is_bounded(tmp_path, monkeypatch):
    """Each profile file version read was kept for the life of the process (about 1 MB each,
    more with its lookups' memos): a sweep worker running a ``profile`` axis of many files, or
    a process reading a profile that is rewritten, held every version it had read. At most
    :data:`tiersim.perf.PROFILE_CACHE_SIZE` are kept now, one per file, the latest read."""
    import shutil

    from tiersim import perf
    from tiersim.paths import find_bundled

    monkeypatch.setattr(perf, "_PROFILE_CACHE", type(perf._PROFILE_CACHE)())
    bundled = find_bundled("profiles", perf.DEFAULT_PROFILE)
    copies = []
    for n in range(perf.PROFILE_CACHE_SIZE + 3):
        copies.append(tmp_path / f"p{n}.json")
        shutil.copy(bundled, copies[-1])
        perf.resolve_profile(copies[-1])
    assert len(perf._PROFILE_CACHE) == perf.PROFILE_CACHE_SIZE
    last = perf.resolve_profile(copies[-1])
    assert perf.resolve_profile(copies[-1]) is last  # still read once per version
    for n in range(3):  # the same file rewritten: its old versions are not kept
        copies[-1].write_text(bundled.read_text() + " " * (n + 1))
        perf.resolve_profile(copies[-1])
    held = [key[0] for key in perf._PROFILE_CACHE]
    assert len(held) == perf.PROFILE_CACHE_SIZE and len(set(held)) == len(held)


class RayTermedInInit:
    """Enough of ``ray`` for :func:`executors.ray_session`: ``init`` installs Ray's own SIGTERM
    handler (which exits 15, as Ray's does) and the process is sent a SIGTERM while it starts
    Ray (a local Ray takes seconds to start)."""

    def __init__(self):
        self.calls = []

    def is_initialized(self):
        return False

    def init(self, **kwargs):
        import os
        import signal
        import sys

        self.calls.append("init")
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(15))
        os.kill(os.getpid(), signal.SIGTERM)

    def shutdown(self):
        self.calls.append("shutdown")


def test_a_sigterm_while_ray_starts_exits_143(monkeypatch):
    """A SIGTERM while a local Ray started (``tiersim sweep --executor ray`` killed in its
    first seconds, which Ray takes to start) met Ray's handler: the sweep exited 15, not 143
    as at any other moment (and as the interrupted line it printed says of a SIGTERM). Ray's
    exit is handed to tiersim's handler now."""
    import signal

    from tiersim.cli.app import _terminated

    fake = RayTermedInInit()
    monkeypatch.setattr(executors, "_ray", lambda: fake)
    before = signal.signal(signal.SIGTERM, _terminated)
    try:
        with pytest.raises(SystemExit) as stop, executors.ray_session(None, 2):
            raise AssertionError("the SIGTERM did not stop the sweep")
        assert stop.value.code == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is _terminated
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_resumed_sweep_does_not_hold_the_stored_records_while_points_run(tmp_path,
                                                                          monkeypatch):
    """A resumed sweep read every stored point record (about 20 KB each in memory) to find the
    finished ones, and kept them all while the other points ran, then read them all again
    beside them: resuming a 20,000-point sweep peaked at 1.2 GB. The records read before the
    points run are let go before the first one runs."""
    import gc
    import weakref

    import tiersim.sweep.run as sweep_run
    from tiersim.sweep.store import read_bookkeeping

    class Records(dict):
        """A record map a weak reference can follow."""

    held: list[weakref.ref] = []

    def tracked(out, skipped=None):  # round 54: the files a resume does not keep, noted
        records = Records(read_bookkeeping(out, skipped))
        held.append(weakref.ref(records))
        return records

    alive_while_running: list[int] = []

    def runner(doc, source):
        gc.collect()
        alive_while_running.append(sum(ref() is not None for ref in held))
        return synthetic_runner(doc, source)

    monkeypatch.setattr(sweep_run, "read_bookkeeping", tracked)
    doc = {"name": "s", "sweep": {"seed": [1, 2, 3]}}
    sweep_run.run_sweep(doc, tmp_path / "o", workers=1, runner=runner, validator=None,
                        progress=False, report=False, source="s.yaml")
    doc["sweep"]["seed"].append(4)  # resumed: three points stored, one to run
    alive_while_running.clear()
    sweep_run.run_sweep(doc, tmp_path / "o", workers=1, runner=runner, validator=None,
                        progress=False, report=False, source="s.yaml")
    assert alive_while_running == [0]


def test_the_sweep_figure_labels_its_points_without_copying_the_whole_table():
    """The frontier's hover labels were made with ``DataFrame.iterrows``, which copies the
    whole sweep table (every metric column, ~160 of them) into Python objects to read the axis
    columns: a 100,000-point sweep's report peaked 612 MB there (and took most of its time).
    Only the axis columns are read now; the labels are the same."""
    import tracemalloc

    import numpy as np
    import pandas as pd

    from tiersim.report.figures import _point_labels

    rows = 2000
    frame = pd.DataFrame({f"metric.{n}": np.arange(rows, dtype=float) for n in range(300)})
    frame["seed"] = np.arange(rows)
    frame["tiers.0.precision"] = ["bf16", "fp8"] * (rows // 2)
    axes = ["seed", "tiers.0.precision"]
    tracemalloc.start()
    try:
        labels = _point_labels(frame, axes)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert labels[:2] == ["seed = 0\ntiers.0.precision = bf16", "seed = 1\ntiers.0.precision = fp8"]
    assert len(labels) == rows
    assert peak < 2_000_000, f"{peak:,} bytes to label {rows} points"


def test_the_sweep_headline_lists_a_bounded_number_of_axis_values(tmp_path):
    """The headline listed every value of each axis in one table cell: a 100,000-value seed
    axis wrote an 830 KB cell (a 1,000,000-point sweep, the largest allowed, 7 MB), which the
    table of points beside it already cuts at 200 rows. The first values are listed, then how
    many more there are."""
    import numpy as np
    import pandas as pd

    from tiersim.report.load import ReportData
    from tiersim.report.page import AXIS_VALUES_SHOWN, sweep_headline

    rows = 5000
    data = ReportData(tmp_path, sweep=pd.DataFrame({
        "point_id": [f"p{n}" for n in range(rows)], "status": ["ok"] * rows,
        "seed": np.arange(rows), "router.fpr": [0.0, 0.5] * (rows // 2)}),
        sweep_axes=["seed", "router.fpr"])
    text = sweep_headline(data)
    shown = ", ".join(str(n) for n in range(AXIS_VALUES_SHOWN))
    more = rows - AXIS_VALUES_SHOWN
    assert f"<tr><td>axis seed</td><td>{shown}, ... ({more:,} more)</td></tr>" in text
    assert "<tr><td>axis router.fpr</td><td>0.0, 0.5</td></tr>" in text
    assert len(text) < 40_000
