"""Standard output and error around a command run by :class:`tiersim.cli.app.TiersimApp`:
refused when closed, a character the encoding cannot hold written as its escape, a reader gone
from the pipe told apart from other broken pipes; the one line memory running out ends a
command with (an operating-system error's is :func:`tiersim.errors.os_error_line`); and
tiersim's warnings as ``note:`` lines.
"""

from __future__ import annotations

from tiersim.cli.usage import echo
from tiersim.errors import TiersimError, escaped
from tiersim.errors import os_error_line as os_error_line  # moved there; app.py reads it here


def memory_line(err: MemoryError) -> str:
    """One line for memory running out past a trace's reading (which names its file): the
    simulation of 10^7 requests or a big sweep grid under ``ulimit -v`` ended in numpy's
    MemoryError traceback."""
    said = f" ({err})" if str(err) else ""  # Python's own MemoryError says nothing more
    return (f"out of memory{said}: this command needs more memory than the process may use; "
            "run it where it may use more (ulimit -v, a container's limit), or make the run "
            "smaller (a shorter trace.window, fewer replicas or sweep points)")


def _refuse_closed_stdout() -> None:
    """Refuse to run with standard output closed (``>&-``): Python then drops every line the
    command prints, so ``trace inspect`` or a run without ``--out`` gave nothing with status 0
    (a full disk as standard output is one line and status 1 too), and the first file opened
    takes descriptor 1, where anything a library or worker writes to standard output would
    land. Every command alike, ``--out`` runs too: ``>/dev/null`` runs one silently."""
    import sys

    if sys.stdout is None:
        raise TiersimError("standard output is closed (the command was started with >&-), so "
                           "what it prints would be lost; send it to a file or to /dev/null "
                           "instead")


def _escape_unencodable() -> None:
    """Make standard output and error write a character their encoding cannot hold as its
    escape (``\\u540d``): a scenario or tier name in Chinese on a C-locale or Latin-1
    terminal ended the command in a traceback once its files were written."""
    import contextlib
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):  # closed, or not a text stream
            stream.reconfigure(errors="backslashreplace")


def _reader_gone(ending: BaseException) -> bool:
    """Whether ``ending`` is, or was raised while handling (click and rich answer a broken pipe
    with a silent exit status 1), a write to standard output or error that failed because the
    pipe's reader went away; a broken pipe to a worker process is no such thing."""
    import errno
    import sys

    cause = ending
    while cause is not None and not isinstance(cause, OSError):
        cause = cause.__context__
    if not isinstance(cause, OSError) or cause.errno != errno.EPIPE:
        return False
    streams = (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)
    standard = [stream for each in streams if each is not None
                for stream in (each, getattr(each, "wrapped", each))]  # click's pacifier
    return _written_to(cause, standard)


def _written_to(err: OSError, streams: list) -> bool:
    """Whether ``err`` was raised inside a write to one of ``streams``: of the stream itself,
    of a console printing to it (rich), or of ``echo`` (click's, which typer's is) to it."""
    tb = err.__traceback__
    while tb is not None:
        found = tb.tb_frame.f_locals
        owner = found.get("self")
        if owner is not None and any(owner is stream or getattr(owner, "file", None) is stream
                                     for stream in streams):
            return True
        if any(found.get("file") is stream for stream in streams):  # click.echo
            return True
        tb = tb.tb_next
    return False


def _stdout_failed(err: OSError) -> bool:
    """Whether ``err`` came from writing standard output (:func:`_written_to`), or stdout still
    cannot be flushed."""
    import sys

    if sys.stdout is not None and _written_to(err, [sys.stdout]):
        return True
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        return True
    return False


def _silence_stdout() -> None:
    """Point standard output at the null device, so that the exit's final flush of a stdout the
    system refused (a full disk, a closed pipe) adds no second error."""
    import os
    import sys

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (captured in tests): nothing to flush
        pass


class _Notes:
    """``warnings.showwarning`` for one command: a warning raised by tiersim is shown as
    ``note: <message>`` (no source line), each distinct message once (a plan raises the same
    note in its search and again in the run it plans); others as Python shows them."""

    def __init__(self) -> None:
        self.shown: set[str] = set()

    def __call__(self, message, category, filename, lineno, file=None, line=None) -> None:
        """Show one warning."""
        import warnings

        if not category.__module__.startswith("tiersim."):
            warnings._showwarnmsg_impl(warnings.WarningMessage(message, category, filename,
                                                               lineno, file, line))
        elif str(message) not in self.shown:
            self.shown.add(str(message))
            echo(f"note: {escaped(message)}", err=True)
