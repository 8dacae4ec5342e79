"""A SIGTERM during a Ray sweep ends it with status 143, as on local workers, not Ray's 1."""

from __future__ import annotations

import os
import signal
import time

import pytest

from tiersim.cli.app import _terminated
from tiersim.sweep import executors
from tiersim.sweep.axes import Point
from tiersim.sweep.points import Task
from tiersim.sweep.testing import synthetic_runner


class RayTurningExitsToOne:
    """Enough of ``ray`` for :func:`run_ray`: ``wait`` receives a SIGTERM and, as Ray's
    ``CoreWorker.wait`` does, replaces the SystemExit the handler raises with ``SystemExit(1)``."""

    def is_initialized(self):
        return True  # a Ray already running: nothing to start or shut down

    def cluster_resources(self):
        return {"CPU": 1.0}

    def remote(self, fn):
        return type("Remote", (), {"remote": staticmethod(lambda task: object())})

    def wait(self, pending, num_returns):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at once and raises
        except SystemExit:
            raise SystemExit(1) from None
        raise AssertionError("the SIGTERM handler did not run")


def test_sigterm_in_a_ray_wait_exits_143(monkeypatch):
    monkeypatch.setattr(executors, "_ray", RayTurningExitsToOne)
    before = signal.signal(signal.SIGTERM, _terminated)
    try:
        with pytest.raises(SystemExit) as stop:
            task = Task(Point("p", 0, {}), {}, "s.yaml", synthetic_runner)
            executors.run_ray([task], lambda record: None)
        assert stop.value.code == 128 + signal.SIGTERM
        assert signal.getsignal(signal.SIGTERM) is _terminated
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_failure_of_ray_without_sigterm_keeps_its_status(monkeypatch):
    class Failing(RayTurningExitsToOne):
        def wait(self, pending, num_returns):
            raise SystemExit(1)

    monkeypatch.setattr(executors, "_ray", Failing)
    before = signal.signal(signal.SIGTERM, _terminated)
    try:
        with pytest.raises(SystemExit) as stop:
            executors.run_ray([Task(Point("p", 0, {}), {}, "s.yaml", synthetic_runner)],
                              lambda record: None)
        assert stop.value.code == 1
    finally:
        signal.signal(signal.SIGTERM, before)
