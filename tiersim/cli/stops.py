"""The signals that stop a command run by :class:`tiersim.cli.app.TiersimApp`: Ctrl-C (SIGINT),
SIGTERM and SIGHUP end it as one stop each, its cleanup run and its status the signal's
(:func:`_terminated`), however deep in a library or an import the signal lands, and a signal
that comes once the command has ended says that what it wrote is complete.
"""

from __future__ import annotations

from tiersim.cli.usage import echo
from tiersim.errors import TiersimError


class _Stop:
    """The one signal that ends a command run by :class:`TiersimApp` (``armed`` while its
    handlers are installed; ``signum`` once one has come)."""

    armed = False
    signum: int | None = None
    deferred_at: float | None = None
    """When a signal that came inside an import was first delivered again (:func:`_defer_stop`)."""
    raised: BaseException | None = None
    """The stop :func:`_terminated` raised last."""
    seen = False
    """Whether that stop was seen on its way (:func:`_stop_under_way`) or ended the command."""
    generation = 0
    """Which command's handlers are in place (counted up as each is put in and taken out): a
    signal sent again on a command's behalf (:func:`_send_if_current`) is not sent into the next
    one, nor after its handlers are gone."""
    ended = False
    """Whether the command itself has returned (its files written, its lines printed)."""
    held = False
    """Whether the console script holds the terminations once its exit functions have run
    (:func:`_hold_signals_at_exit`)."""


def _terminated(signum, frame) -> None:
    """SIGTERM ends the command as Ctrl-C does: cleanup runs (temporary folders, worker pools),
    status 128 + 15; SIGHUP (the terminal or ssh session closed) likewise, status 128 + 1; SIGINT
    raises KeyboardInterrupt (status 130). Inside a command only the first does: one that comes
    while the command winds down (Ctrl-C pressed again) is ignored, so that cleanup is not cut
    short (a sweep's pool shutdown printed 'Exception ignored ... KeyboardInterrupt'
    tracebacks), unless the first one's stop was dropped on its way (:func:`_watch_stop`
    sends it again until it is seen): then that stop is raised again. One that comes inside
    the import machinery waits for it (:func:`_defer_stop`)."""
    import signal

    if _Stop.armed:
        if _Stop.signum is not None:
            if _Stop.seen or _stop_under_way():
                _Stop.seen = True
                return
            signum = _Stop.signum  # its stop was dropped on the way (:func:`_watch_stop`)
        elif _in_import_machinery(frame) and _defer_stop(signum):
            return
        else:
            _Stop.signum = signum
            _watch_stop(signum)
    stop = KeyboardInterrupt() if signum == signal.SIGINT else SystemExit(128 + signum)
    _Stop.raised = stop
    raise stop


def _stop_under_way() -> bool:
    """Whether the stop :func:`_terminated` raised is being handled here (the exception being
    handled is it, or was raised while it was: cleanup after it), as opposed to dropped."""
    import sys

    return _stop_in(sys.exc_info()[1])


def _stop_in(error: BaseException | None) -> bool:
    """Whether ``error`` is the stop :func:`_terminated` raised, or one a library made of it
    (:func:`_same_stop`), or was raised while either was handled (its cause or context, at any
    depth)."""
    pending, looked = [error], set()
    while pending:
        err = pending.pop()
        if err is None or id(err) in looked:
            continue
        if err is _Stop.raised or _same_stop(err):
            return True
        looked.add(id(err))
        pending += [err.__cause__, err.__context__]
    return False


def _same_stop(error: BaseException) -> bool:
    """Whether ``error`` is a stop of the signal that came, made anew by a library that caught
    the handler's: Ray's ``ray.wait`` raises a KeyboardInterrupt of its own for Ctrl-C (and a
    SystemExit(1) for SIGTERM, which :func:`tiersim.sweep.executors.sigterm_status_kept`
    turns into SystemExit(143)), linked to the handler's by no cause or context. Taken for a
    dropped stop, it was raised again 0.1 s later inside the cleanup (``ray.shutdown()``)."""
    import signal

    if _Stop.signum is None:
        return False
    if _Stop.signum == signal.SIGINT:
        return isinstance(error, KeyboardInterrupt)
    return isinstance(error, SystemExit) and error.code == 128 + _Stop.signum


WATCH_S = 0.1
"""How often a stop not yet seen on its way is sent again (:func:`_watch_stop`)."""


WATCH_TRIES = 50
"""How many times it is sent again at most."""


def _watch_stop(signum: int) -> None:
    """Send ``signum`` to the main thread again every :data:`WATCH_S` until its stop is seen on
    its way (:func:`_stop_under_way`, or it ended the command): an exception a handler raises
    while a library's compiled code runs Python can be dropped there (numpy.random's module
    init: a sweep signalled 0.67 s in ran all its points, status 0); sent again, the handler
    finds no stop under way and raises it again."""
    import threading

    main = threading.main_thread().ident
    threading.Thread(target=_send_until_seen, args=(signum, main, _Stop.generation),
                     daemon=True, name="tiersim-stop-watch").start()


def _send_until_seen(signum: int, main: int | None, generation: int) -> None:
    """:func:`_watch_stop`'s thread: sends ``signum`` again while the stop is not seen and the
    command that took it still runs (:func:`_send_if_current`)."""
    import time

    for _ in range(WATCH_TRIES):
        time.sleep(WATCH_S)
        if _Stop.seen or not _send_if_current(signum, main, generation):
            return


IMPORT_DEFER_S = 2.0
"""Longest a stopping signal waits for an import to hand back to the module it runs
(:func:`_defer_stop`), after which it stops the command wherever it is."""


def _in_import_machinery(frame) -> bool:
    """Whether ``frame`` is one of Python's import machinery (``<frozen importlib...>``),
    where it compiles a module's source: an exception a signal handler raises inside that
    compile() is dropped (CPython 3.11 to 3.13), and the command ran on to its end, status
    0."""
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


def _defer_stop(signum: int) -> bool:
    """Have a stopping signal that came inside the import machinery sent again to the main
    thread a moment later (:data:`REDELIVER_S`, from a timer thread: sent from the handler
    itself it came back at once, inside the same compile), so that its handler runs next in
    the module being imported or the code importing it, where its exception stops the
    command; True while it may wait (at most :data:`IMPORT_DEFER_S` from the first
    deferral, so that an import that never returns is stopped as before)."""
    import threading
    import time

    now = time.monotonic()
    if _Stop.deferred_at is None:
        _Stop.deferred_at = now
    elif now - _Stop.deferred_at > IMPORT_DEFER_S:
        return False
    again = threading.Timer(REDELIVER_S, _send_if_current,
                            (signum, threading.main_thread().ident, _Stop.generation))
    again.daemon = True
    again.start()
    return True


REDELIVER_S = 0.005
"""How long after a signal deferred out of an import it is sent again (:func:`_defer_stop`)."""


def _send_if_current(signum: int, main: int | None, generation: int) -> bool:
    """Send ``signum`` to the main thread ``main`` only while the command of ``generation``
    still runs with a Python handler for it (tiersim's, or one the command put in that calls
    it: a Ray sweep's :func:`tiersim.sweep.executors.sigterm_status_kept`, under which a
    SIGTERM deferred out of an import was never sent again and the sweep ran on, status 0);
    whether it was sent. NOTE: a signal sent again after that command had ended went to
    whatever ran next in the process: in the tests' process, the next in-process command
    (stopped, its test failed) or, its handlers gone, pytest itself (killed by SIGTERM)."""
    import signal

    if (_Stop.generation != generation or not _Stop.armed
            or not callable(signal.getsignal(signum))):
        return False
    _send_to_main(signum, main)
    return True


def _send_to_main(signum: int, thread: int | None) -> None:
    """Send ``signum`` to the main thread ``thread`` (nothing if it has gone meanwhile)."""
    import contextlib
    import signal

    with contextlib.suppress(OSError, ValueError, TypeError):
        signal.pthread_kill(thread, signum)


def _as_signalled(call, *args, **kwargs):
    """``call(*args, **kwargs)``, where an error other than tiersim's own one-line errors and
    the system's (an OSError, which names its file) that ends it after a stopping signal came
    is that signal's stop (KeyboardInterrupt, or SystemExit with the signal's status): a
    handler's exception raised inside a library's C code came out as the library's own error,
    or a half-imported library failed as the stop went on, so a Ctrl-C in the first second of
    ``tiersim run`` ended in a traceback with status 1, pandas' 'AttributeError: partially
    initialized module 'pandas' has no attribute '_pandas_datetime_CAPI'' (a Cython module's
    init), 'OptionError: Option 'compute.use_bottleneck' has already been registered' or
    pydantic's 'SchemaError: Error building "literal" validator: KeyboardInterrupt'."""
    import signal

    try:
        code = call(*args, **kwargs)
    except BaseException as err:
        _Stop.seen = _Stop.signum is not None  # it ended the command: nothing to send again
        if (_Stop.signum is None or isinstance(err, (TiersimError, OSError))
                or not isinstance(err, Exception)):
            raise  # tiersim's own line, or the system's naming a file: as before
        if _Stop.signum == signal.SIGINT:
            raise KeyboardInterrupt from None
        raise SystemExit(128 + _Stop.signum) from None
    _Stop.seen = _Stop.signum is not None  # typer returned 130 for the stop: it was seen
    return code


def _catch_terminations() -> dict:
    """Install :func:`_terminated` for SIGINT, SIGTERM and SIGHUP (main thread only); returns
    the handlers it replaced. A SIGINT or SIGHUP already ignored (a background job, ``nohup
    tiersim ...``) stays ignored; the default action of SIGTERM or SIGHUP killed the command
    on the spot, leaving its ``.lock`` and temporary files in ``--out``."""
    import signal

    saved = {}
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if sig != signal.SIGTERM and signal.getsignal(sig) is signal.SIG_IGN:
            continue
        saved[sig] = signal.signal(sig, _terminated)
    _Stop.armed, _Stop.signum, _Stop.ended, _Stop.deferred_at = True, None, False, None
    _Stop.raised, _Stop.seen = None, False
    _Stop.generation += 1
    return saved


def _release_terminations(saved: dict, exiting: bool) -> bool:
    """Put back the handlers :func:`_catch_terminations` replaced; where a signal ended the
    command and the process exits next (``exiting``: the console script), ignore those
    signals instead, so that one more is not raised inside Python's exit (its join of a
    sweep's worker-pool thread). Returns whether a signal ended the command."""
    import signal

    stopped = _Stop.signum is not None
    for sig, old in saved.items():
        if exiting:
            signal.signal(sig, signal.SIG_IGN if stopped else _stopped_while_exiting)
        else:
            signal.signal(sig, old)
    if saved:
        _Stop.armed, _Stop.signum, _Stop.ended = False, None, False
        _Stop.generation += 1
    return stopped


ENDED_LINE = ("interrupted as tiersim exited, after the command had ended: what it wrote is "
              "complete")
"""What a signal that comes once the command has returned says (its work is done)."""


def _say_ended() -> None:
    """Say :data:`ENDED_LINE` on stderr, where it still can (a hung-up terminal refuses it)."""
    import contextlib

    with contextlib.suppress(OSError, ValueError):
        echo(ENDED_LINE, err=True)


TERMINATIONS = ("SIGINT", "SIGTERM", "SIGHUP")
"""The signals that end a command (:func:`_terminated`)."""


def _hold_signals_at_exit() -> None:
    """Have the console script, once its exit functions have run, ignore the signals that end
    a command: Python then stops handling signals while it frees its modules (about 0.9 s
    after ``tiersim run tiny``), and one that came meanwhile killed the process without a
    word (status -15, -2), every file written; ignored, the process ends with its own status.
    Registered once, when the command starts, so that it runs after the exit functions
    registered later (multiprocessing's, Ray's), which a signal may still stop."""
    import atexit

    if not _Stop.held:
        _Stop.held = True
        atexit.register(_ignore_terminations)


def _ignore_terminations() -> None:
    """Ignore SIGINT, SIGTERM and SIGHUP from now on (the process is ending)."""
    import signal

    for name in TERMINATIONS:
        signal.signal(getattr(signal, name), signal.SIG_IGN)


def _stopped_while_exiting(signum, frame) -> None:
    """SIGINT, SIGTERM or SIGHUP while the console script exits, its command ended: the
    default action killed the process without a word (status -15, -2), its files all
    written; it says so (:data:`ENDED_LINE`) and ends at once with the signal's status."""
    import contextlib
    import os
    import sys

    _say_ended()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # closed or gone
            stream.flush()
    os._exit(128 + signum)


def _end_process(ending: BaseException | None) -> None:
    """End the process at once with the status of ``ending``, the ``SystemExit`` of a command
    a signal or memory running out (the address-space guard) stopped, once its cleanup has
    run (temporary files, lock, worker processes) and what it printed is flushed. Python's
    own exit would first free every object the stopped simulation still holds, with a garbage
    collection over them all: a run of a 10^7-request burst, its lock already removed, stayed
    busy for minutes after SIGTERM. The exit
    functions (``atexit``: multiprocessing's, Ray's) still run. Any other exception (a bug
    met during cleanup) is left to Python, which prints its traceback."""
    import atexit
    import contextlib
    import os
    import sys

    if not isinstance(ending, SystemExit) or not isinstance(ending.code, int):
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # closed or gone
            stream.flush()
    atexit._run_exitfuncs()
    os._exit(ending.code)
