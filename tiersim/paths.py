"""Where bundled files live: ``traces/``, ``scenarios/`` and ``profiles/`` inside the package.

They ship as package data (``tiersim/<kind>/``), so an editable checkout and a wheel installed
anywhere find the same files; the repository root links to them for convenience.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections import OrderedDict
from pathlib import Path
from typing import Any

import tiersim
from tiersim.errors import TiersimError, TraceError, escaped, yaml_written

KINDS = {"traces": (".parquet", ".csv", ".jsonl"), "scenarios": (".yaml", ".yml"),
         "profiles": (".json",)}


class TraceFolderError(TraceError):
    """A trace path that names a folder, not a file (a scenario names its ``trace.path``)."""


def bundled_dirs(kind: str) -> list[Path]:
    """The folders searched for bundled files of ``kind``, in order."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    return [_package_folder() / kind]


_PACKAGE_FOLDER: dict[str, tuple[Path, tuple[int, int]]] = {}
"""The package's folder with every link resolved, by the path of ``tiersim/__init__.py``, and
the folder's identity (device, inode) when it was resolved: :func:`_package_folder`."""


def _package_folder() -> Path:
    """The folder of the package (``tiersim.__file__``'s) with every link resolved. Resolving
    walks each part of the path (a sweep looks for a bundled profile at every point's
    validation), so it is kept, and used again while the folder as imported and the one kept
    are the same folder (two ``stat`` calls): a link on the way moved to another copy of the
    package, or the kept folder gone or renamed, resolves it again."""
    file = tiersim.__file__
    kept = _PACKAGE_FOLDER.get(file)
    if kept is not None and _identity(Path(file).parent) == _identity(kept[0]) == kept[1]:
        return kept[0]
    folder = Path(file).resolve().parent
    identity = _identity(folder)
    if os.name == "posix" and Path(file).is_absolute() and identity is not None:
        _PACKAGE_FOLDER[file] = (folder, identity)  # (a relative one: against the working folder)
    return folder


def _identity(folder: Path) -> tuple[int, int] | None:
    """The (device, inode) of ``folder``, or None where it cannot be looked up."""
    try:
        found = os.stat(folder)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino


def available(kind: str) -> list[str]:
    """Names of the bundled files of ``kind`` (file names, sorted)."""
    names = {p.name for d in bundled_dirs(kind) if d.is_dir() for p in d.iterdir()
             if p.is_file() and p.suffix in KINDS[kind]}
    return sorted(names)


def find_bundled(kind: str, name: str | Path) -> Path | None:
    """The bundled file ``name`` of ``kind`` (the extension may be left out), or None; a name
    that leads out of the bundled folder (``../x``) is never found there."""
    for folder in bundled_dirs(kind):
        for candidate in [folder / name, *(folder / f"{name}{ext}" for ext in KINDS[kind])]:
            if candidate.is_file() and _resolved(candidate, folder.parent).parent == folder:
                return candidate
    return None


def resolved_path(path: Path) -> Path:
    """``path.resolve()``, found with fewer look-ups for a bundled file (:func:`_resolved`)."""
    return _resolved(path, _package_folder())


def _resolved(path: Path, package: Path) -> Path:
    """``path.resolve()``; without resolving each part of the path for a file directly in a
    bundled folder of the resolved package folder ``package`` (:func:`_package_folder`) that
    is no link, in a bundled folder that is none (one ``lstat`` each): such a file's path is its
    own resolved path."""
    folder = path.parent
    if os.name == "posix" and folder.name in KINDS and folder.parent == package:
        try:
            if stat.S_ISREG(os.lstat(path).st_mode) and stat.S_ISDIR(os.lstat(folder).st_mode):
                return path
        except (OSError, ValueError):
            pass  # resolved as any path is
    return path.resolve()


def bundled(kind: str, name: str | Path) -> Path:
    """Path of a bundled file; raises a TiersimError listing what is available if missing."""
    found = find_bundled(kind, name)
    if found is None:
        have = ", ".join(available(kind)) or "none"
        raise TiersimError(f"no bundled {kind[:-1]} named {str(name)!r} in "
                           f"{bundled_dirs(kind)[0]}; available: {have}")
    return found


def expand_user(path: str | Path) -> Path:
    """``path`` with a leading ``~`` expanded; as written when ``~user`` names no user (it then
    names no file, and the caller says so with the file's name)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:  # "Could not determine home directory."
        return Path(path)


def home_expanded(text: str | Path) -> Path:
    """A command-line path as typed, with a leading ``~`` expanded to the home folder (a shell
    leaves ``--out=~/runs`` as typed); only a leading ``~`` of the text itself, so ``./~x``
    stays a local folder. A ``~user`` of no user raises :class:`ValueError` with the line to
    show, which each command-line parser words as its own refusal."""
    if not str(text).startswith("~"):
        return Path(text)
    path = expand_user(text)
    if str(path).startswith("~"):
        raise ValueError(f"{text} starts with ~ and a user that does not exist (or no home "
                         "folder is known); write the path in full")
    _home_problem(str(text))
    return path


def _home_problem(text: str) -> None:
    """Refuse a path typed with a leading ``~`` (``~/runs``) where the home folder it names is
    none: ``HOME`` set empty made ``~/runs`` the root folder's ``/runs``, and a ``HOME`` of no
    folder (``HOME=/nonexistent``, as some service accounts have) had ``--out ~/runs`` create
    ``/nonexistent/runs``; both were written without a word. :class:`ValueError` with the line
    to show."""
    import os

    first = text.split("/", 1)[0]
    if first == "~" and os.environ.get("HOME") == "":
        raise ValueError(f"{text} starts with ~, and HOME is empty, so ~ would be the root "
                         "folder /; set HOME to your home folder, or write the path in full")
    home = expand_user(first)
    if not home.is_dir():
        named = " (HOME)" if first == "~" and os.environ.get("HOME") else ""
        raise ValueError(f"{text} starts with ~, the home folder {home}{named}, which is not an "
                         "existing folder; set HOME to your home folder, or write the path in "
                         "full")


def resolve_trace_path(path: str | Path, scenario_dir: str | Path | None) -> Path:
    """A scenario's trace path: absolute as given; relative against ``scenario_dir``, then
    against the bundled ``traces/`` (where the extension may be left out). A path with an
    extension that is there but no regular file (a folder, a pipe, a broken link) is refused,
    not passed over for a bundled trace of its name."""
    p = expand_user(path)
    if not str(path).strip():
        raise TraceError(str(path), "trace.path is empty; give the trace file")
    if str(p).startswith("~"):
        raise TraceError(str(path), "trace file not found (a path starts with ~ and a user that "
                         "does not exist); write the path in full")
    beside = p if p.is_absolute() or scenario_dir is None else Path(scenario_dir) / p
    if beside.is_file():
        return beside
    if p.suffix and (beside.exists() or beside.is_symlink()):
        _not_a_file(path, beside)  # named as a file is: what was meant, not a bundled trace
    found = None if p.is_absolute() else find_bundled("traces", p)
    if found is None and not p.is_absolute() and p.parts[:1] == ("traces",) and len(p.parts) == 2:
        found = find_bundled("traces", p.name)  # ``traces/NAME`` as README writes it, elsewhere
    if found is not None:
        return found
    _not_a_file(path, beside)
    _no_blank_around(str(path), scenario_dir)
    if p.is_absolute():
        raise TraceError(str(path), "trace file not found; check the path")
    looked = f"{scenario_dir} and the bundled traces/" if scenario_dir else "the bundled traces/"
    raise TraceError(str(path), f"trace file not found in {looked}; bundled traces: "
                     f"{', '.join(available('traces')) or 'none'}")


def command_line_trace(path: str | Path) -> Path:
    """A trace path given on the command line (``tiersim trace inspect PATH``, ``tiersim
    analytic --trace PATH``), found as :func:`resolve_trace_path` finds a scenario's, the
    working folder standing for the scenario's (a refusal names that folder), and named as
    given where it was found there: ``bad.csv: row 2 ...``, as ``tiersim run`` names a
    scenario's trace (its path joined to the scenario's folder as given) and as the command's
    own lines name it. An absolute path, a ``~`` path and a bundled trace are named in full.
    Before, a file found was named by its absolute path (``/home/me/bad.csv: row 2 ...``), a
    folder or a file not found as given."""
    cwd = Path.cwd()
    found = resolve_trace_path(path, cwd)
    given = expand_user(path)
    return given if not given.is_absolute() and found == cwd / given else found


def as_typed(typed: str, resolved: Path) -> str:
    """A command-line trace as the user typed it (``./b.csv``), where it is the file
    :func:`command_line_trace` found (named as given, but a ``Path`` drops the ``./``: it read
    ``b.csv``); else the file found, in full (a bundled trace, a ``~`` path)."""
    if not typed.startswith("~") and Path(typed) == resolved:
        return typed
    return str(resolved)


@contextlib.contextmanager
def named_as_typed(typed: str, resolved: Path):
    """Yield :func:`as_typed`'s name, and name the file so in a refusal raised inside that
    names it first (``./b.csv: not a trace``)."""
    named = as_typed(typed, resolved)
    try:
        yield named
    except TiersimError as error:
        said = str(error)
        if named != str(resolved) and said.startswith(f"{resolved}: "):
            error.args = (named + said.removeprefix(str(resolved)),)
        raise


def _no_blank_around(name: str, scenario_dir: str | Path | None) -> None:
    """Refuse a trace path not found that is a file's or a bundled trace's but for a space (or
    tab) at its start or end, saying so: the refusal listed the bundled trace it missed as
    there ("trace file not found ...; bundled traces: azure2023_code.parquet, ..."), the space
    that made the difference unseen."""
    stripped = name.strip()
    if not stripped or stripped == name:
        return
    try:
        found = resolve_trace_path(stripped, scenario_dir)
    except TraceError:
        return
    p = expand_user(stripped)
    beside = p if p.is_absolute() or scenario_dir is None else Path(scenario_dir) / p
    what = f"the file {escaped(stripped)}" if found == beside else f"the bundled trace {found.name}"
    raise TraceError(name, f"trace file not found: {yaml_written(name)} has a space (or another "
                     f"blank) at its start or end, which {what} has not; remove it")


def _not_a_file(path: str | Path, beside: Path) -> None:
    """Refuse a trace path ``beside`` that is there but no regular file (a folder, a pipe or
    device, a link to nothing); return where nothing is there."""
    if beside.is_dir():
        raise TraceFolderError(str(path), "is a folder; give the trace file in it")
    if beside.exists():
        raise TraceError(str(path), "not a regular file (a device or pipe); give a trace file")
    if beside.is_symlink():  # exists() is False for a link whose chain never ends in a file
        raise TraceError(str(path), "a link that leads to no file (its target is missing, or "
                         "the links loop); point it at the trace file, or give the file itself")


def leads_nowhere(path: Path) -> bool:
    """Whether ``path`` is a symbolic link whose chain ends in no file (its target is missing,
    or the links loop): ``exists()`` is False for it, as for a name that is not there."""
    return path.is_symlink() and not path.exists()


LINK_TO_NOTHING = "a link that leads to no file (or the links loop)"
"""What a model config or profile path that :func:`leads_nowhere` is, in its error line."""


def file_sha256(path: Path | str) -> str:
    """SHA-256 of a file's bytes (streamed; the file is never held whole)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def keep_latest(cache: OrderedDict, key: tuple, value: Any, limit: int) -> None:
    """Put ``value`` in ``cache`` under ``key``, a file version (its path first): the file's
    older versions leave, and the least recently used entries beyond ``limit`` go."""
    for old in [k for k in cache if k[0] == key[0]]:  # the file's older versions
        del cache[old]
    cache[key] = value
    while len(cache) > limit:
        cache.popitem(last=False)
