"""The files of ``tiersim run --out DIR``, written so a reader never sees half a run.

Every file (``requests.parquet``, ``timeseries.parquet``, ``summary.json``, ``scenario.yaml``,
``manifest.json`` and, when asked, ``report.html``) is first written into a private temporary
folder inside DIR (``.tiersim-run-*.tmp``), then renamed into place one by one, the manifest
last (SIGINT, SIGTERM and SIGHUP wait for the last rename). Before the first, the folder is renamed
``.tiersim-run-*.ready``: a ``kill -9`` among the renames leaves the rest of the set there, and
the next command into DIR (run, plan or report) renames it into place before anything else, so
the folder ends as the one run or the other. The manifest names the run (``run_id``, a hash of
the data files' bytes, so the same scenario and seed give the same id) and the SHA-256 of each
data file (requests, time series, summary); the report embeds the run id. A failed or
interrupted rerun leaves the previous run's files, and a reader that checks the manifest
(:func:`tiersim.manifest.check_manifest`, which ``tiersim report`` calls) notices files from two
different runs. A rerun without a report removes the earlier run's ``report.html``. A full disk
or read-only folder ends with one line naming DIR and no temporary folder left behind; a folder
standing where a file goes (a folder named ``summary.json``) is refused before anything is
written (:func:`refuse_blocked`). A command that fails leaves no ``.lock`` and no empty folder
it made (:func:`locked`).

Memory: the Parquet tables are written straight into the temporary folder, a row group at a
time (:data:`ROW_GROUP_ROWS` rows: a run of any size holds one group's Arrow copy, never the
whole file's bytes); the request table (:class:`tiersim.summary.RequestTable`) builds each
group's rows from the run's arrays as it is written, so no whole-table DataFrame exists; and
the manifest hashes the written files in 1 MiB blocks. The command
line picks pyarrow's jemalloc pool on Linux (``ARROW_DEFAULT_MEMORY_POOL``, unless set): the
default mimalloc pool kept the freed groups (writing 400k request rows: RSS +57 MB, jemalloc
+16 MB). A table of at most one row group gives the bytes ``DataFrame.to_parquet`` would
(it is written by it).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

import tiersim
from tiersim.arrowfile import arrow_file
from tiersim.atomic import points_dir
from tiersim.errors import ReportError, TiersimError, escaped, os_errno, os_said
from tiersim.manifest import MANIFEST
from tiersim.paths import file_sha256
from tiersim.results import RunResult

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks, see docs/security.md
    fcntl = None

DATA_FILES = ("requests.parquet", "timeseries.parquet", "summary.json", "scenario.yaml")
"""The files of a run, in the order they are renamed into place."""

MANIFEST_FILES = ("requests.parquet", "timeseries.parquet", "summary.json")
"""The files the manifest vouches for (the scenario copy is a record that may be edited)."""

TEMP_PREFIX = ".tiersim-run-"
ROW_GROUP_ROWS = 1 << 17
"""Rows per Parquet row group, the unit streamed to disk (an eighth of pyarrow's default)."""


def make_out_dir(out: Path) -> None:
    """Create the output folder (before simulating, so a bad --out fails at once)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        check_out_link(out)
        raise _file_in_the_way(out) from None
    except OSError as err:
        raise TiersimError(f"{out}: cannot create the folder ({err.strerror}); choose another "
                           "--out folder") from None


def _file_in_the_way(out: Path) -> TiersimError:
    """The one line for an ``--out`` that is a file, or lies under one (``notes.txt/o``):
    the file in the way is named, or the link to nothing it lies under (``gone/o``)."""
    from tiersim.paths import leads_nowhere

    dead = next((p for p in reversed(out.parents) if leads_nowhere(p)), None)
    if dead is not None:
        return TiersimError(f"{out}: --out lies under {dead}, a symbolic link to "
                            f"{os.readlink(dead)}, which does not exist; create that folder, "
                            "remove the link, or use another --out folder")
    above = _existing_above(out)
    if out.exists() or above is None or above.is_dir():
        return TiersimError(f"{out}: --out must be a folder, and a file is in the way")
    return TiersimError(f"{out}: --out must be a folder, and the file {above} is in the way; "
                        "use another --out folder")


def _existing_above(out: Path) -> Path | None:
    """The nearest folder above ``out`` that exists (or the file there), None when none."""
    return next((p for p in out.parents if p.exists()), None)


def check_out_link(out: Path) -> None:
    """Refuse, before anything is written, an ``--out`` that is a link to nothing, or one of
    a loop of links (each names the next, and none a folder): one line saying so, where
    creating the folder would only say that a file is in the way."""
    if not out.is_symlink():
        return
    try:
        os.stat(out)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise TiersimError(f"{out}: --out is {_link_chain(out)}, which names no folder; "
                               "remove a link of it, or use another --out folder") from None
        raise TiersimError(f"{out}: --out is a symbolic link to {os.readlink(out)}, which does "
                           "not exist; create that folder, remove the link, or use another "
                           "--out folder") from None


def _link_chain(link: Path) -> str:
    """A chain of symbolic links the system gave up on, in words: the loop it runs into
    (``a loop of symbolic links (a -> b -> a)``), else a chain too long to follow."""
    chain, seen = [str(link)], {os.path.abspath(link)}
    current = str(link)
    for _ in range(MAX_LINKS):
        if not os.path.islink(current):
            break
        current = os.path.join(os.path.dirname(current), os.readlink(current))
        chain.append(os.path.normpath(current))
        if os.path.abspath(current) in seen:
            return f"a loop of symbolic links ({' -> '.join(chain)})"
        seen.add(os.path.abspath(current))
    return f"a chain of more than {MAX_LINKS} symbolic links ({' -> '.join(chain[:3])} -> ...)"


MAX_LINKS = 40
"""Links followed before a chain is called too long (Linux gives up after 40)."""


#: What marks a folder as the output of each command (a plan folder also holds its run).
FOLDER_MARKERS = {"sweep": "sweep.json", "plan": "plan.json", "run": "summary.json"}


def claim_out_dir(out: Path, kind: str, inputs: Iterable[Path] = ()) -> None:
    """Refuse an ``--out`` folder that holds another command's results (a sweep's, a plan's, a
    run's), which this one would partly overwrite; a folder of the same kind is rerun into
    (a sweep resumes, a run or plan replaces its files). Also refuse a folder where the command
    would overwrite one of its own ``inputs``, or that cannot be written, before any work."""
    out = Path(out)
    check_out_link(out)
    refuse_system_folder(out, kind)  # first: a file there is no reason to refuse (nor to move)
    refuse_inside_sweep_points(out, kind)
    refuse_step_back_through_missing(out)
    if out.exists() and not out.is_dir():
        raise _file_in_the_way(out)
    if not out.is_dir():
        return
    held = [k for k, marker in FOLDER_MARKERS.items() if (out / marker).is_file()]
    if "plan" in held:  # a plan's folder holds its planned run's files too
        held = [k for k in held if k != "run"]
    other = next((k for k in held if k != kind), None)
    if other is not None:
        raise TiersimError(f"{out}: holds a {other}'s results ({FOLDER_MARKERS[other]}); "
                           f"`tiersim {kind}` would overwrite some of them; use another --out "
                           "folder")
    _refuse_overwriting_inputs(out, kind, inputs)
    refuse_blocked(out, kind)
    refuse_foreign_files(out, kind)
    refuse_scattering(out, kind)
    _check_writable(out)


def out_folder(out: str | Path | None, kind: str, scenario, path: str | Path):
    """Claim ``out`` for a ``kind`` command (run, plan) reading ``scenario`` (from ``path``)
    and hold its lock while the command runs (:func:`claim_out_dir`, :func:`locked`): the one
    check of ``tiersim run --out`` and ``tiersim plan --out``, which the Python API
    (:func:`tiersim.runner.run_scenario`, ``plan_capacity``) makes too; nothing to do without
    ``out``."""
    if out is None:
        return contextlib.nullcontext()
    return _claimed(Path(out), kind, [Path(path), *_input_files(scenario, path)])


def _input_files(scenario, path: str | Path) -> list[Path]:
    """The files a command reading ``scenario`` (from ``path``) reads besides ``path``."""
    from tiersim.input_files import input_files

    doc = scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return input_files(doc, str(path))


@contextlib.contextmanager
def _claimed(out: Path, kind: str, inputs: list[Path]):
    """``out`` claimed before its lock is taken (a bad folder fails at once) and again once
    it is held: a command that wrote the folder in between (a sweep that ended just then) is
    seen, and its results are not overwritten."""
    claim_out_dir(out, kind, inputs)
    with locked(out, kind):
        claim_out_dir(out, kind, inputs)
        yield


def refuse_step_back_through_missing(out: Path) -> None:
    """Refuse an ``--out`` that steps back (``..``) out of a folder that does not exist
    (``x/../..``): the checks of the folder it names saw none (``x`` is not there yet), and
    creating ``x`` made the path name an existing folder, so a command wrote its files there
    among a project's own, every check passed by. One line naming the folder to give."""
    current = Path(out.anchor) if out.is_absolute() else Path()
    for part in out.parts[1:] if out.is_absolute() else out.parts:
        if part == ".." and not (current.exists() or current.is_symlink()):
            landing = os.path.realpath(out)
            shown = os.path.relpath(landing) if not out.is_absolute() else landing
            raise TiersimError(f"{out}: --out steps back out of {current}, a folder that does "
                               f"not exist, so it names {shown}; give that folder as --out "
                               "if it is meant, else the new folder's own path (nothing was "
                               "written)")
        current = current / part


def refuse_inside_sweep_points(out: Path, kind: str) -> None:
    """Refuse an ``--out`` at or below a sweep's ``points/`` folder (the one beside its
    ``sweep.json``), as typed or with links resolved: the command's files would land beside
    the sweep's point files, under a ``.lock`` the sweep never takes. As typed, a ``..`` steps
    back out (``sw/points/../run1`` is ``sw/run1``, beside the points, not among them)."""
    for path in (Path(os.path.normpath(out.absolute())), Path(_real(out))):
        for folder in (path, *path.parents):
            if folder.name == "points" and (folder.parent / "sweep.json").is_file():
                raise TiersimError(f"{out}: lies inside {folder}, where the sweep in "
                                   f"{folder.parent} keeps one file per point; `tiersim "
                                   f"{kind}` would write beside them; use an --out folder "
                                   "outside it (nothing was written)")


#: The files each command writes at the top of its ``--out`` folder.
WRITES = {
    "run": (*DATA_FILES, MANIFEST, "report.html"),
    "sweep": ("scenario.yaml", "sweep.json", "sweep.parquet", "report.html"),
    "plan": (*DATA_FILES, MANIFEST, "plan.json", "report.html"),
}


def _refuse_overwriting_inputs(out: Path, kind: str, inputs: Iterable[Path]) -> None:
    """Refuse when a file the command reads (its scenario, trace, model config, profile) is one
    it would replace in ``out``."""
    written = {_real(out / name): name for name in WRITES[kind]}
    for path in inputs:
        name = written.get(_real(Path(path)))
        if name == "scenario.yaml" and kind == "sweep" and (out / "sweep.json").is_file():
            continue  # resuming from the sweep's own copy: it writes the same base back
        if name is not None:
            raise TiersimError(f"{out / name}: `tiersim {kind}` reads this file and would "
                               "overwrite it with its results; use another --out folder")


#: The files that show a ``kind`` command wrote a folder, so its other files are its own.
OWN_MARKERS = {"run": (MANIFEST,), "plan": (MANIFEST, "plan.json")}


def refuse_foreign_files(out: Path, kind: str) -> None:
    """Refuse, before anything is written, a folder no ``kind`` command wrote (none of its
    :data:`OWN_MARKERS`: a run's manifest.json, a plan's plan.json) that holds a file the
    command would replace or remove (:data:`WRITES`: a user's own report.html or
    scenario.yaml). A folder holding a killed run's ``.ready`` set is a run's: the files it
    left in place are that run's, and the next command finishes its renames."""
    if kind not in OWN_MARKERS:
        return
    markers = OWN_MARKERS[kind]
    if any(_own_marker(out / name) for name in markers):
        return
    if killed_sets(out):
        return
    for name in WRITES[kind]:
        path = out / name
        if path.exists() or path.is_symlink():
            raise TiersimError(f"{path}: `tiersim {kind}` would overwrite this file, and {out} "
                               f"holds no {kind}'s results (no tiersim {' or '.join(markers)}); "
                               "move "
                               "the file, or use another --out folder (nothing was written)")


def refuse_scattering(out: Path, kind: str) -> None:
    """Refuse, before anything is written, a folder where a ``kind`` command (run, sweep, plan,
    report) would scatter its files among others: the file system's root folder or the home
    folder (a typo such as ``--out /`` or ``--out ~``), and, for a command with ``--out``, an
    existing folder that holds something no tiersim command wrote and nothing a tiersim command
    did (:func:`_tiersim_wrote`: a project's folder named by mistake). An empty folder, one a
    command wrote (a user's note beside its results included) and one of tiersim's own names
    and :data:`PLACEHOLDERS` only (a ``.lock`` a finished command left, a ``.gitkeep``) pass."""
    refuse_system_folder(out, kind)
    if kind == "report" or not out.is_dir() or _tiersim_wrote(out):
        return
    try:
        other = sorted(name for name in os.listdir(out) if name not in OWN_NAMES | PLACEHOLDERS)
    except OSError:  # a folder that cannot be listed: the writing check names what is wrong
        return
    if other:
        raise TiersimError(f"{out}: --out holds what no tiersim command wrote "
                           f"({some_names(other)}) and no tiersim results; `tiersim {kind}` would "
                           "write its files among them; use a new or empty --out folder "
                           "(nothing was written)")


def refuse_system_folder(out: Path, kind: str) -> None:
    """Refuse the file system's root folder or the home folder (links followed) as a ``kind``
    command's folder (:func:`refuse_scattering`), whatever it holds: checked before any other
    refusal, which would name a file there to move (a user's report.html in ``~``) when the
    folder itself is what cannot be used."""
    place = _system_folder(out)
    if place is not None and kind == "report":
        raise TiersimError(f"{out}: is {place}, where no tiersim command writes its results "
                           "(each --out is a folder of its own); give the folder of a run, "
                           "sweep or plan (nothing was written)")
    if place is not None:
        raise TiersimError(f"{out}: --out is {place}, where `tiersim {kind}` would write its "
                           f"files among others; use a folder of their own, such as "
                           f"{_home() / 'tiersim-out'} (nothing was written)")


def _home() -> Path:
    """The home folder, where the folder suggested in place of the root or home folder goes:
    one a user can create (``/tiersim-out``, suggested for ``--out /``, most cannot)."""
    return Path(os.path.expanduser("~"))


WRITTEN = frozenset(name for names in WRITES.values() for name in names)
"""The files any command writes at the top of its ``--out`` folder."""

OWN_NAMES = WRITTEN | {".lock", "points"}
"""What a command leaves at the top of its ``--out`` folder: its files, lock and points."""

PLACEHOLDERS = frozenset({".gitkeep", ".keep", ".gitignore", ".DS_Store"})
"""Files that leave a folder empty to its user: what keeps a results folder in git (or out of
it) and a file browser's folder settings; a folder of these only is written as an empty one."""


def _system_folder(out: Path) -> str | None:
    """``out`` (links followed) as the file system's root folder or the home folder, in words;
    None for any other folder."""
    where = Path(_real(out))
    if where.parent == where:
        return "the file system's root folder"
    if where == Path(_real(_home())):
        return "your home folder"
    return None


def _tiersim_wrote(out: Path) -> bool:
    """Whether a tiersim command wrote ``out``: it holds a sweep's, plan's or run's marker
    (:data:`FOLDER_MARKERS`), tiersim's manifest.json, a killed run's ``.ready`` set, a
    temporary file a killed command left (:func:`_stale_temps`), a stopped sweep's points
    (:func:`_sweep_points`) or a ``.lock`` naming a pid
    (as every command leaves it; this command's own, once it holds the folder and has removed
    those temporary files)."""
    return (any((out / marker).is_file() for marker in FOLDER_MARKERS.values())
            or _own_marker(out / MANIFEST) or bool(killed_sets(out) or _stale_temps(out))
            or _pid_lock(out / ".lock") or _sweep_points(out))


def _sweep_points(out: Path) -> bool:
    """Whether ``out`` holds a sweep's finished points (a real ``points`` folder with a point
    record, :func:`tiersim.atomic.write_point`), as a sweep stopped before its ``sweep.json``
    leaves them, to resume from."""
    points = points_dir(out)
    return points.is_dir() and not points.is_symlink() and any(points.glob("*.json"))


def _pid_lock(path: Path) -> bool:
    """Whether ``path`` is a regular file holding a pid, as tiersim writes its ``.lock``."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            return handle.read(64).strip().isdigit()
    except OSError:
        return False


def some_names(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names`` for a message, escaped, and how many more there are."""
    first = ", ".join(escaped(name) for name in names[:shown])
    rest = len(names) - shown
    if rest <= 0:
        return first
    return f"{first} and {rest} more"


def _own_marker(path: Path) -> bool:
    """Whether ``path`` (a manifest.json, a plan.json) is one tiersim wrote: anything there but
    a JSON object without the ``run_id`` or ``constraints`` tiersim writes in it (another
    tool's manifest.json). One that no longer parses is still taken for tiersim's, which
    `tiersim report` asks to be rewritten by a rerun, as is one that is no regular file (a
    named pipe there hung the read) or JSON nested too deep to parse (a RecursionError)."""
    if not (path.exists() or path.is_symlink()):
        return False
    if not path.is_file():
        return True
    try:
        with path.open("rb") as handle:
            doc = json.loads(handle.read(MAX_MARKER_BYTES))
    except (OSError, ValueError, RecursionError):
        return True
    return not isinstance(doc, dict) or bool({"run_id", "constraints"} & doc.keys())


MAX_MARKER_BYTES = 1 << 20
"""Bytes of a manifest.json or plan.json read to tell tiersim's from another tool's."""


def refuse_blocked(out: Path, kind: str) -> None:
    """Refuse, before anything is written, when a folder stands where a ``kind`` command puts
    one of its files (:data:`WRITES`): the rename onto it would fail halfway through the set,
    after the files before it had replaced the earlier run's."""
    for name in WRITES[kind]:
        path = out / name
        if path.is_dir() and not path.is_symlink():
            raise TiersimError(f"{path}: a folder is in the way of the {name} that `tiersim "
                               f"{kind}` writes; move or remove that folder, or use another "
                               "--out folder (nothing was written)")


def _real(path: Path) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return str(path)


def _check_writable(out: Path) -> None:
    """Fail at once, before any simulation, when ``out`` exists but cannot be written."""
    if not out.is_dir():
        return
    try:
        handle, probe = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=out)
        os.close(handle)
        os.unlink(probe)
    except OSError as err:
        raise _unwritable(out, err) from None


def _write_fix(err: OSError) -> str:
    """What to do about results that could not be written: free space on a full disk, else
    check the folder's permissions (a file in it the user may not replace was told to "free
    space")."""
    number = os_errno(err)  # pyarrow's error names it only in its words
    if number == errno.EFBIG:  # over ulimit -f: free space does not help
        return "raise the largest file size this shell lets a command write (ulimit -f)"
    full = number in (errno.ENOSPC, errno.EDQUOT)
    return "free space" if full else "check the folder's permissions"


def _unwritable(out: Path, err: OSError, kind: str = "run") -> TiersimError:
    """The one line for an ``--out`` folder that cannot be written; for ``tiersim report``,
    which takes no ``--out`` (it writes beside the results), the report's own fix."""
    fix = ("check the folder's permissions, or copy the run elsewhere and report there"
           if kind == "report" else "choose another --out folder")
    return TiersimError(f"{out}: cannot write to this folder ({err.strerror or err}); {fix}")


@contextlib.contextmanager
def locked(out: Path, kind: str):
    """Hold ``out/.lock`` (an advisory ``flock``) while a ``kind`` command (run, sweep, plan,
    report) writes ``out``; refuse at once when another tiersim command holds it.

    A sweep's forked workers share the lock, so it is free only once every process of a sweep
    is gone. When the command that took it has died, its workers are exiting (they die with
    their parent): then this waits up to LOCK_WAIT_S for them instead of refusing.
    """
    created = new_folders(out)
    make_out_dir(out)
    try:
        with _lock_file(out, kind):
            yield
    except BaseException:  # a failed command leaves no folder it made (an empty one)
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def new_folders(out: Path) -> list[Path]:
    """The folders that creating ``out`` would make, deepest first (none when it exists)."""
    made = []
    for folder in (out, *out.parents):
        if folder.exists() or folder.is_symlink():
            break
        made.append(folder)
    return made


def _or_elsewhere(kind: str) -> str:
    """``, or use another --out folder``, the way round a folder's problem, for a command that
    takes ``--out``; nothing for ``tiersim report``, which writes beside the results it reads."""
    return "" if kind == "report" else ", or use another --out folder"


@contextlib.contextmanager
def _lock_file(out: Path, kind: str):
    """Hold ``out/.lock`` (see :func:`locked`); a lock file this command created is removed
    again when the command fails, so a failed command leaves only what was there."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    path = out / ".lock"
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise TiersimError(f"{path}: not a regular file (a link, folder or pipe); remove it "
                           f"(tiersim writes its pid there){_or_elsewhere(kind)}")
    existed = path.exists()
    handle, took = None, None  # took: _take's answer, once it has given one
    try:
        try:  # O_NOFOLLOW: a link put there between the check and the open is refused too
            handle = os.fdopen(os.open(path, os.O_RDWR | os.O_CREAT
                                       | getattr(os, "O_NOFOLLOW", 0), 0o644), "r+")
        except OSError as err:
            raise _unwritable(out, err, kind) from None
        _refuse_foreign_lock(handle, path, kind)
        took = _take(handle, out, kind)
        if took:
            _write_pid(handle, out, kind)
            remove_stale_temps(out)  # nothing else writes here now: a kill's leftovers go
        yield
    except BaseException:
        # a lock file this command created goes again while this command holds it (no other
        # command took it meanwhile); one stopped before it took the lock (a signal just after
        # the open) takes it now, unless another command holds it
        if handle is None and not existed:  # a signal after the file was made, before its
            handle = _reopened(path)          # handle was: it is this command's to remove too
        if handle is not None and not existed and (took is not None or _try_take(handle)):
            path.unlink(missing_ok=True)
        raise
    finally:
        if handle is not None:
            handle.close()


def _reopened(path: Path):
    """``path`` (a ``.lock``) opened again for :func:`_lock_file`'s clean-up, where a signal
    came between ``os.open`` making it and its handle being kept; None where it cannot be
    (gone, or a link)."""
    try:
        return os.fdopen(os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0)), "r+")
    except OSError:
        return None


def _write_pid(handle, out: Path, kind: str) -> None:
    """Write this process's pid into the held ``.lock`` (``handle``), past the text layer's
    buffer: a write the disk refuses (full) is one line naming ``out``. Buffered, it failed
    again as the handle closed, and that error, naming no file, replaced the first: 'Error: No
    space left on device' was all ``tiersim run --out DIR`` said on a full disk."""
    try:
        os.ftruncate(handle.fileno(), 0)
        os.pwrite(handle.fileno(), str(os.getpid()).encode(), 0)
    except OSError as err:
        raise _unwritable(out, err, kind) from None


def _try_take(handle) -> bool:
    """Whether the lock on ``handle`` could be taken now, without waiting (it is then held)."""
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _refuse_foreign_lock(handle, path: Path, kind: str = "run") -> None:
    """Refuse a ``.lock`` holding anything but a pid (tiersim's, or nothing after a kill): a
    user's own file of that name, which taking the lock would overwrite."""
    try:
        text = handle.read(64)
    except UnicodeDecodeError:  # bytes no pid is written as
        text = "?"
    handle.seek(0)
    if text.strip() and not is_pid(text.strip()):
        raise TiersimError(f"{path}: holds no tiersim lock (tiersim writes its pid there) and "
                           f"would be overwritten; move the file{_or_elsewhere(kind)} (nothing "
                           "was written)")


LOCK_WAIT_S = 10.0


def _take(handle, out: Path, kind: str) -> bool:
    """Take the lock on ``handle`` (True) or raise the one-line refusal; False on a file
    system without locks (some NFS mounts), where the command runs unlocked, as on Windows."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as err:
            if not isinstance(err, BlockingIOError):
                if err.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                    return False
                raise _unwritable(out, err, kind) if kind == "report" else TiersimError(
                    f"{out}: cannot lock this folder ({err.strerror or err}); choose another "
                    "--out folder") from None
            handle.seek(0)
            holder = handle.read(20).strip()
            if (is_pid(holder) and pid_alive(int(holder))) or time.monotonic() > deadline:
                pid = f" (pid {holder})" if is_pid(holder) else ""
                then = (", then report again" if kind == "report"
                        else " or use another --out")
                raise TiersimError(f"{out}: another tiersim command is writing to this folder"
                                   f"{pid}; wait for it to finish{then} (this {kind} did "
                                   "nothing)") from None
            time.sleep(0.05)


def is_pid(text: str) -> bool:
    """Whether ``text`` is a pid as tiersim writes one: the digits 0-9 alone (``str.isdigit``
    passes a superscript ``²``, which ``int`` refuses: a traceback)."""
    return text.isascii() and text.isdigit()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (and is not this one)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # gone, or no pid at all (a garbled file)
        return False
    except PermissionError:
        return True
    return True


def write_parquet(path: Path, table, rows: int = ROW_GROUP_ROWS) -> None:
    """Write ``table`` to ``path`` as Parquet, ``rows`` rows per row group, streamed: one
    group's rows in memory at a time (``DataFrame.to_parquet`` itself when it fits in one
    group, so small tables get its exact bytes).

    ``table``: a DataFrame, or a table built on demand (:class:`tiersim.summary.RequestTable`:
    ``len(table)`` rows, ``table.rows(lo, hi)`` a DataFrame of some), never built whole.
    """
    if len(table) <= rows:
        with arrow_file(path, "wb") as sink:
            _rows(table, 0, len(table)).to_parquet(sink, index=False)
        return
    schema = _plain_schema(table)
    if schema is not None:  # NOTE (memory): each group straight from its arrays, no DataFrame
        first = _plain_rows(table, 0, rows, schema)
    else:
        first_rows = _rows(table, 0, rows)
        first = pa.Table.from_pandas(first_rows, preserve_index=False)
        del first_rows
    attrs = getattr(table, "attrs", None)
    if attrs:  # as pandas stores them
        meta = dict(first.schema.metadata or {})
        meta[b"PANDAS_ATTRS"] = json.dumps(attrs).encode()
        first = first.replace_schema_metadata(meta)
    with arrow_file(path, "wb") as sink, \
            pq.ParquetWriter(sink, first.schema, compression="snappy") as writer:
        writer.write_table(first, row_group_size=rows)
        del first
        for start in range(rows, len(table), rows):
            if schema is not None:
                chunk = _plain_rows(table, start, start + rows, writer.schema)
            else:
                chunk = pa.Table.from_pandas(_rows(table, start, start + rows),
                                             schema=writer.schema, preserve_index=False)
            writer.write_table(chunk, row_group_size=rows)


#: Arrow types whose column pyarrow makes from a numpy array as it makes it from the pandas
#: column of that array (:func:`_plain_schema`).
_PLAIN_TYPES = (pa.int64(), pa.float64(), pa.bool_(), pa.large_string())


def _plain_schema(table) -> pa.Schema | None:
    """The file's schema, pandas metadata included, where ``table`` is built on demand
    (``table.arrays(lo, hi)``: :class:`tiersim.summary.RequestTable`) and every column is of
    :data:`_PLAIN_TYPES`: the schema of its first row as a DataFrame (these columns' pandas
    metadata names their dtypes, not their values). None otherwise.

    NOTE (memory): a row group of 131,072 requests was a DataFrame (18 MiB, its tier names
    converted to pandas strings) and then its Arrow copy; written from the arrays, the group
    is the Arrow copy alone, the same table (``tests/test_memory_outputs.py`` compares the
    files byte for byte)."""
    if isinstance(table, pd.DataFrame) or not hasattr(table, "arrays") or not len(table):
        return None
    schema = pa.Table.from_pandas(_rows(table, 0, 1), preserve_index=False).schema
    if any(field.type not in _PLAIN_TYPES for field in schema):
        return None
    return schema


def _plain_rows(table, lo: int, hi: int, schema: pa.Schema) -> pa.Table:
    """Rows ``lo`` to ``hi`` of a table built on demand as an Arrow table of ``schema``
    (:func:`_plain_schema`), straight from its arrays, with pandas' nulls (``from_pandas``: a
    NaN is null, as ``Table.from_pandas`` makes it, in a float column as in a text one)."""
    arrays = table.arrays(lo, hi)
    return pa.Table.from_arrays([pa.array(arrays.pop(field.name), type=field.type,
                                          from_pandas=True) for field in schema], schema=schema)


def _rows(table, lo: int, hi: int) -> pd.DataFrame:
    """Rows ``lo`` to ``hi`` of a DataFrame or of a table built on demand."""
    if isinstance(table, pd.DataFrame):
        return table if (lo, hi) == (0, len(table)) else table.iloc[lo:hi]
    return table.rows(lo, hi)


def manifest_of(folder: Path, names: tuple[str, ...] = MANIFEST_FILES) -> dict:
    """The manifest of the files ``names`` in ``folder``: the same document as
    :func:`tiersim.manifest.manifest` gives for their bytes (tests compare the two)."""
    digests = {name: file_sha256(folder / name) for name in sorted(names)}
    run_id = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]
    return {"run_id": run_id, "files": digests}


def write_data_files(folder: Path, run: RunResult, requests,
                     timeseries: pd.DataFrame, scenario_text: str) -> None:
    """The data files (:data:`DATA_FILES`) written into ``folder``."""
    write_parquet(folder / "requests.parquet", requests)
    write_parquet(folder / "timeseries.parquet", timeseries)
    (folder / "summary.json").write_bytes(run.dumps().encode())
    (folder / "scenario.yaml").write_bytes(scenario_text.encode())


def remove_stale_temps(out: Path) -> None:
    """Delete temporary folders a killed run left in ``out``, half-written reports a killed
    run or report left (``.report-*.html.tmp``) and the temporary files of any file a command
    writes there (``.plan.json.*.tmp``, :data:`WRITES`, as :mod:`tiersim.atomic` names
    them); a user's other ``.tmp`` files stay. A set a kill left half renamed into place is
    finished first (:func:`_finish_killed`). Call only holding ``out``'s lock."""
    _finish_killed(out)
    for path in _stale_temps(out):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:  # a writability probe a kill left
            path.unlink(missing_ok=True)


def _stale_temps(out: Path) -> list[Path]:
    """The temporary files and folders of tiersim's in ``out`` (:func:`remove_stale_temps`):
    a run's ``.tiersim-run-*.tmp``, a report's ``.report-*.html.tmp`` and the temporary file of
    any file a command writes there, as :mod:`tiersim.atomic` names them."""
    atomic = [path for name in sorted(WRITTEN) for path in out.glob(f".{name}.*.tmp")]
    return [*out.glob(f"{TEMP_PREFIX}*.tmp"), *out.glob(".report-*.html.tmp"), *atomic]


@contextlib.contextmanager
def signals_deferred():
    """SIGINT, SIGTERM and SIGHUP held inside the block and delivered after it (main thread
    only; elsewhere nothing changes; an ignored SIGHUP stays ignored), so a few renames that
    must land together are not cut in half: a run folder is the old set or the new one, never
    a mix."""
    held: list[int] = []
    saved = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_IGN:
                continue
            saved[sig] = signal.signal(sig, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)
        for sig in dict.fromkeys(held):
            signal.raise_signal(sig)


READY_SUFFIX = ".ready"
"""The suffix of a temporary folder whose set is complete and being renamed into place."""


def _ready(temp: Path) -> Path:
    """Mark ``temp``'s files a complete set, in one atomic rename of the folder (``.ready``),
    so a command killed while renaming them out is finished by the next (:func:`_land`)."""
    ready = temp.with_suffix(READY_SUFFIX)
    os.replace(temp, ready)
    return ready


def _land(ready: Path, out: Path) -> None:
    """Rename the files still in ``ready`` (a complete set) into ``out``, the manifest last."""
    names = sorted(path.name for path in ready.iterdir() if path.name != MANIFEST)
    for name in [*names, MANIFEST]:
        if (ready / name).exists():
            os.replace(ready / name, out / name)


def killed_sets(out: Path) -> list[Path]:
    """The ``.tiersim-run-*.ready`` folders a run killed among its renames left in ``out``: real
    folders only (a link of that name is no run's, and is neither finished nor taken to make
    ``out`` a run's folder)."""
    return [p for p in out.glob(f"{TEMP_PREFIX}*{READY_SUFFIX}")
            if p.is_dir() and not p.is_symlink()]


def _finish_killed(out: Path) -> None:
    """Finish the renames of a command killed while renaming a complete set into ``out``
    (``kill -9`` cannot be deferred): its folder holds the rest of that set, so the folder ends
    as that run, never half of it beside the earlier run's files."""
    for ready in sorted(killed_sets(out), key=lambda p: p.stat().st_mtime):
        with contextlib.suppress(OSError):  # left for the next command to try again
            _land(ready, out)
            shutil.rmtree(ready)


def write_run(out: Path, run: RunResult, requests, timeseries: pd.DataFrame,
              scenario_text: str, report: Callable[..., object] | None = None,
              extra: dict[str, str] | None = None) -> dict:
    """Write a run's files into ``out`` atomically (see the module docstring); return the
    manifest. ``extra``: more files (name -> text) swapped in with the set, before the
    manifest, replacing a data file of the same name (a plan's plan.json and planned
    scenario.yaml), so a command's whole result lands together or not at all. ``report``: the
    page writer (:func:`tiersim.report.page.write_report`, passed in by the caller, as the
    report package reads this module) to write report.html with the set."""
    make_out_dir(out)
    refuse_blocked(out, "run")
    remove_stale_temps(out)
    temp = landing = kept = None
    whole: set[str] = set()
    try:
        temp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=out))
        write_data_files(temp, run, requests, timeseries, scenario_text)
        info = {**manifest_of(temp), "tiersim": tiersim.__version__}  # who wrote the set
        if run.trace is not None:  # the input behind the files: which trace content was read
            info["trace"] = run.trace.to_json()
        (temp / MANIFEST).write_bytes((json.dumps(info, indent=2, sort_keys=True) + "\n").encode())
        for name, text in (extra or {}).items():
            (temp / name).write_bytes(text.encode())
        if report is not None:  # the page, in its own temporary folder
            try:
                report(temp, shown_as=out)
            except ReportError as err:  # the set goes with the temporary folder: say so
                raise err.nothing_written() from None
        with signals_deferred():  # the set is swapped whole: a Ctrl-C waits for the last rename
            stale = out / "report.html"
            if not report and stale.exists():
                stale.unlink()  # it describes an earlier run, not this one
            temp = landing = _ready(temp)  # the set is whole: a kill from here is finished later
            whole = {path.name for path in landing.iterdir()}
            _land(temp, out)
    except OSError as err:
        kept = _partly_landed(landing, whole)
        rest = (f"; the rest of this run's files wait in {kept.name} and are moved in by the "
                f"next tiersim command on this folder" if kept else "")
        raise TiersimError(f"{out}: cannot write results ({os_said(err)}){rest}; "
                           f"{_write_fix(err)} or choose another --out folder") from None
    finally:
        if temp is not None and kept is None:
            shutil.rmtree(temp, ignore_errors=True)
    return info


def _partly_landed(ready: Path | None, whole: set[str]) -> Path | None:
    """``ready`` where some of its files (``whole``, the set's names) are already in the run's
    folder: a renaming refused midway (a file there the user may not replace) leaves the rest
    for the next command to finish, as a kill among the renames does (:func:`_finish_killed`);
    before, it was deleted, leaving the folder half this run and half the earlier one, the rest
    of this one lost."""
    if ready is None or not ready.is_dir():
        return None
    left = {path.name for path in ready.iterdir()}
    return ready if whole - left else None
