"""Round 33, review of the signal handling's watcher (2167a8c): a stop a library replaces with
one of its own is seen on its way, so the cleanup after it is not cut short."""

from __future__ import annotations

import signal
import sys
import time
from contextlib import nullcontext

import pytest
from test_round33_hyg import run_probe

from tiersim.sweep.executors import sigterm_status_kept

PROBE = {"sig": "INT", "cleaned": False}
"""Which signal :func:`replacing_command` raises on itself, and whether its cleanup ran whole."""


def _stop_replaced() -> None:
    """Raise the signal on this process inside a library that catches the handler's exception
    and raises a fresh one of its own once out of its ``except``, as Ray's ``ray.wait`` does
    (its ``check_signals`` catches it, ``check_status`` raises a new KeyboardInterrupt for
    SIGINT, SystemExit(1) for SIGTERM): no cause or context leads to the handler's."""
    stopped = False
    try:
        signal.raise_signal(signal.SIGINT if PROBE["sig"] == "INT" else signal.SIGTERM)
        time.sleep(5)  # the handler runs at the call above
    except BaseException:  # noqa: BLE001 - what such a library does
        stopped = True
    if stopped and PROBE["sig"] == "INT":
        raise KeyboardInterrupt
    if stopped:
        raise SystemExit(1)


def replacing_command() -> None:
    """A command whose library replaces the stop (:func:`_stop_replaced`, inside
    :func:`sigterm_status_kept` as a Ray sweep's wait is), then cleans up for 0.5 s after it,
    as a Ray sweep's ``ray.shutdown()`` does (1.1-1.4 s for a local Ray)."""
    PROBE["cleaned"] = False
    kept = sigterm_status_kept() if PROBE["sig"] == "TERM" else nullcontext()
    try:
        with kept:
            _stop_replaced()
    finally:
        ends = time.monotonic() + 0.5
        while time.monotonic() < ends:
            time.sleep(0.01)
        PROBE["cleaned"] = True


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is the POSIX termination")
@pytest.mark.parametrize(("sig", "status"), [("INT", 130), ("TERM", 143)])
def test_a_stop_a_library_replaces_lets_the_cleanup_finish(capsys, monkeypatch, sig, status):
    """With a real local Ray, Ctrl-C inside ``ray.wait`` came out as a KeyboardInterrupt with no
    link to the handler's: the watcher took it for a dropped stop and, 0.1 s later, raised the
    signal's stop again inside the cleanup (a probe's 1 s cleanup after such a ray.wait read
    'cleanup interrupted by KeyboardInterrupt() 0.1'). A stop of the same signal being handled
    is now that stop, seen on its way: the cleanup runs whole, status 130 (143)."""
    monkeypatch.setitem(PROBE, "sig", sig)
    code, err, _ = run_probe(monkeypatch, capsys, "test_round33_rev", "replacing_command")
    assert code == status
    assert PROBE["cleaned"]
    assert "Traceback" not in err


def deferred_in_a_ray_wait() -> None:
    """A command whose SIGTERM comes inside the import machinery (a module compiled on the
    way, as Ray's lazy imports are) while a Ray sweep's wait keeps its status
    (:func:`sigterm_status_kept`, whose handler calls tiersim's), then runs on for 3 s."""
    with sigterm_status_kept():
        code = "import signal\nsignal.raise_signal(signal.SIGTERM)\n"
        exec(compile(code, "<frozen importlib._bootstrap>", "exec"), {})  # noqa: S102
        ends = time.monotonic() + 3
        while time.monotonic() < ends:
            time.sleep(0.01)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is the POSIX termination")
def test_a_sigterm_deferred_out_of_an_import_under_another_handler_still_stops(capsys,
                                                                              monkeypatch):
    """A SIGTERM that came inside the import machinery is sent again 5 ms later
    (be7b5da's deferral), but only while tiersim's own handler was in place: under a Ray
    sweep's handler, which calls tiersim's, the deferred signal was never sent again, and the
    command ran on to its end with status 0. Now it is sent to any Python handler of the
    command's: status 143, promptly."""
    code, err, took = run_probe(monkeypatch, capsys, "test_round33_rev", "deferred_in_a_ray_wait")
    assert code == 143 and took < 2
    assert "Traceback" not in err
