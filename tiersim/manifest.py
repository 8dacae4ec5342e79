"""The manifest of a run folder: which files belong to one run, by their SHA-256.

``manifest.json`` holds ``run_id`` (the first 16 hex digits of a hash over the data files'
hashes, so the same scenario and seed give the same id), ``files``: name -> SHA-256, and
``trace``: the trace file the run read (its name, the format it was read as and its SHA-256;
summary.json's ``trace`` block, written by :func:`tiersim.outputs.write_run`) and ``tiersim``:
the release that wrote the folder (a later release's folder is refused, not half read). It is
the last file a run renames into place (:mod:`tiersim.outputs`); :func:`check_manifest` tells a
reader when the files around it come from different runs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import tiersim
from tiersim.errors import TiersimError, shown
from tiersim.jsonio import read_json
from tiersim.versions import later_than_this, release_text

MANIFEST = "manifest.json"
"""The manifest's file name."""


def manifest(files: dict[str, bytes]) -> dict:
    """Run id (first 16 hex digits of a hash over the files' hashes) and each file's SHA-256."""
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}
    run_id = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]
    return {"run_id": run_id, "files": digests}


def check_manifest(directory: Path) -> str | None:
    """The run id of ``directory``'s files, None when it has no manifest; a one-line
    TiersimError when a data file present differs from the one the manifest names (files from
    two runs, e.g. a rerun that was interrupted while renaming) or when a later tiersim release
    wrote the folder. An absent file is no error; a name that is a path (``/etc/x``,
    ``../x``) is, and nothing outside the folder is read."""
    path = Path(directory) / MANIFEST
    if not path.exists():
        return None
    try:
        info = read_json(path, "a manifest")
        run_id, digests = str(info["run_id"]), dict(info["files"])
    except (TiersimError, KeyError, TypeError, ValueError):
        raise TiersimError(f"{path}: malformed manifest; rerun `tiersim run --out "
                           f"{directory}`") from None
    written = info.get("tiersim")
    if later_than_this(written):  # its files may hold fields this release reads otherwise
        number = release_text(written)[:40]
        raise TiersimError(f"{path}: written by tiersim {number}, a later release "
                           f"than this tiersim {tiersim.__version__}; report it with that "
                           f"tiersim or a later one, or rerun `tiersim run --out {directory}`")
    stray = next((name for name in digests if not _own_name(name)), None)
    if stray is not None:  # a path would have a file anywhere hashed (/proc/kcore for ever)
        raise TiersimError(f"{path}: names {shown(stray, 80)}, which is no file of this run's "
                           "folder (a manifest lists the run's files by name); rerun `tiersim "
                           f"run --out {directory}`")
    for name, digest in digests.items():
        file = Path(directory) / name
        if not file.exists():
            continue  # a removed file leaves its part of the report out
        if not file.is_file():
            raise TiersimError(f"{file}: not a regular file; rerun `tiersim run --out "
                               f"{directory}`")
        try:
            actual = _sha256(file)
        except OSError:
            actual = None
        if actual != digest:
            raise TiersimError(f"{file}: does not belong to run {run_id} named in {MANIFEST} "
                               f"(an interrupted rerun?); rerun `tiersim run --out {directory}`")
    return run_id


def _own_name(name: object) -> bool:
    """Whether a manifest's file name names a file of its own folder: a plain name, no path."""
    return (isinstance(name, str) and name not in ("", ".", "..")
            and "/" not in name and "\\" not in name and "\0" not in name)


def missing_files(directory: Path) -> list[str]:
    """The files ``directory``'s manifest names that are no longer there (sorted; none without
    a manifest, or with one :func:`check_manifest` refuses)."""
    try:
        digests = dict(read_json(Path(directory) / MANIFEST, "a manifest")["files"])
    except (TiersimError, KeyError, TypeError, ValueError):
        return []
    return sorted(name for name in digests
                  if _own_name(name) and not (Path(directory) / name).is_file())


def missing_note(names: list[str]) -> str:
    """One line saying which of a run's files are gone and what that leaves out."""
    one = len(names) == 1
    return (f"note: {', '.join(names)} {'is' if one else 'are'} named in {MANIFEST} but "
            f"missing here, so the report leaves out what {'it holds' if one else 'they hold'}; "
            "rerun the command that wrote the folder to have the whole report")


def _sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read 1 MiB at a time (a results file can be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
