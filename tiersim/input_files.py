"""The files a scenario reads besides itself, digested: a sweep point is never kept over
inputs that changed, and an ``--out`` folder never overwrites one (:mod:`tiersim.outputs`).

A point is tied to its scenario text by ``base_digest`` (and, where that text changed, by how
its scenario reads, :mod:`tiersim.sweep.equivalent`, which leaves the files to this module);
the trace, model configs and profile that text names are files whose content can change under
the same name. For each point this
resolves exactly the fields a run reads, the way the run resolves them (the trace beside the
scenario, then bundled; a model that is not a catalogue name as a config path, beside the
scenario first, with the ``hf_quant_config.json`` next to it, of the tiers and the
baseline-only tiers alike; the profile as a path, then bundled, or the profile shipped for the
point's GPU when it names none), and digests their content. The map is keyed by the field
(``trace``, ``tiers[1].model``, ``baselines[0].model``, ``profile`` ...), so
moving the folder does not change it and editing one file does. A file that cannot be read is
left out: the run itself reports it (:func:`unreadable` says why, for a resume that must
compare it).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.paths import (
    expand_user,
    file_sha256,
    find_bundled,
    keep_latest,
    resolve_trace_path,
)

WHOLE_FILE_BYTES = 1 << 30
"""Files up to this size are hashed whole; a larger one by size, mtime and its first and last
MiB (a multi-GB trace is not re-read for every point: a ``touch`` counts as a change)."""
_EDGE = 1 << 20
DIGEST_CACHE_SIZE = 4096
"""File versions whose digest a process keeps (the latest of each of the last files digested):
a process sweeping fresh input files, or files rewritten between sweeps, would otherwise keep
one entry per version it ever read."""
_DIGESTS: OrderedDict[tuple[str, int, int, int, int, int], str] = OrderedDict()


def point_inputs(doc: dict[str, Any], source: str) -> dict[str, str]:
    """``{field: content digest}`` of the files a run of ``doc`` reads (see module doc)."""
    out: dict[str, str] = {}
    for field, path in _fields(doc, source):
        try:
            out[field] = file_digest(path)
        except OSError:
            continue  # unreadable: the run says so, one line
    return out


def input_files(doc: dict[str, Any], source: str) -> list[Path]:
    """The files a run of ``doc`` (a scenario read from ``source``) reads, resolved as the run
    resolves them: its trace, model configs and profile (see module doc)."""
    return [path for _, path in _fields(doc, source)]


def input_paths(doc: dict[str, Any], source: str) -> dict[str, Path]:
    """``{field: file}`` of the files a run of ``doc`` reads: the keys of
    :func:`point_inputs`, each with the file it digested."""
    return dict(_fields(doc, source))


def written_name(doc: dict[str, Any], field: str) -> str:
    """The file ``field`` (a key of :func:`point_inputs`) of ``doc`` names, as the user wrote
    it (``t.csv``, ``models/llama``; a profile the scenario names none of: the GPU's shipped
    one; NVIDIA's quant config: ``hf_quant_config.json beside models/llama``)."""
    from tiersim.perf import default_profile_name
    from tiersim.scenario import format_loc, model_places

    base, _, side = field.partition(":")
    if base == "trace":
        name = (doc.get("trace") or {}).get("path")
    elif base == "profile":
        name = doc.get("profile") or default_profile_name(str(doc.get("gpu") or "H200"))
    else:
        name = next((holder[place[-1]] for place, holder in model_places(doc)
                     if format_loc(place) == base), None)
    return f"{side} beside {name}" if side else str(name)


def unreadable(doc: dict[str, Any], source: str, field: str) -> str | None:
    """Why the file ``field`` of ``doc`` (read from ``source``) names cannot be read now,
    naming it (``/x/t.parquet: Permission denied``, ``t.parquet: is a folder; ...``): its bytes
    cannot be read, or the trace resolves to no regular file; None where it can be read, and
    for a model or profile that resolves to none (the scenario models say what is wrong)."""
    path = input_paths(doc, source).get(field)
    if path is None:
        return _trace_problem(doc, source) if field == "trace" else None
    try:
        file_digest(path)
    except OSError as error:
        return f"{path}: {error.strerror or error}"
    return None


def _trace_problem(doc: dict[str, Any], source: str) -> str | None:
    """Why the trace ``doc`` names resolves to no file (None where it does, or it names none)."""
    trace = doc.get("trace")
    if not isinstance(trace, dict) or not isinstance(trace.get("path"), str):
        return None
    try:
        resolve_trace_path(trace["path"], _folder(source))
    except (TiersimError, OSError, ValueError) as error:
        return str(error)
    return None


def _folder(source: str) -> Path | None:
    """The folder a scenario read from ``source`` names relative files beside (None: not a
    file)."""
    return Path(source).parent if Path(source).is_file() else None


def file_digest(path: Path) -> str:
    """The content digest of ``path`` (whole file, or size + mtime + edges when huge); one
    hash per file version while it is among the last :data:`DIGEST_CACHE_SIZE` files
    digested. A version is known by its inode and change time too: a file replaced or
    rewritten with its size and mtime kept (``cp -p``, ``rsync -a``, a coarse-mtime
    filesystem) is hashed again, not answered from the cache."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns,
           stat.st_ctime_ns)
    if key in _DIGESTS:
        _DIGESTS.move_to_end(key)
        return _DIGESTS[key]
    digest = _digest(path, stat.st_size, stat.st_mtime_ns)
    keep_latest(_DIGESTS, key, digest, DIGEST_CACHE_SIZE)
    return digest


def _digest(path: Path, size: int, mtime_ns: int) -> str:
    if size <= WHOLE_FILE_BYTES:
        return file_sha256(path)[:16]
    digest = hashlib.sha256(f"{size}:{mtime_ns}".encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(_EDGE))
        handle.seek(size - _EDGE)
        digest.update(handle.read(_EDGE))
    return digest.hexdigest()[:16]


def _fields(doc: dict[str, Any], source: str) -> list[tuple[str, Path]]:
    """``(field, file)`` for each file input of ``doc`` that resolves to a file: the trace,
    each model key the schema has (:func:`tiersim.scenario.model_places`; a baseline-only
    tier's model sizes its uniform fleet), the profile."""
    from tiersim.scenario import format_loc, model_places

    found: list[tuple[str, Path]] = []
    trace = doc.get("trace")
    if isinstance(trace, dict) and isinstance(trace.get("path"), str):
        with contextlib.suppress(TiersimError, OSError, ValueError):  # the run reports it
            found.append(("trace", resolve_trace_path(trace["path"], _folder(source))))
    for place, holder in model_places(doc):
        found += _model(format_loc(place), holder[place[-1]], source)
    profile = _profile(doc, source)
    if profile is not None:
        found.append(("profile", profile))
    return found


def _model(field: str, name: Any, source: str) -> list[tuple[str, Path]]:
    """A model field's config file (and NVIDIA's quant config beside it), resolved as the run
    resolves it; none for a catalogue name."""
    from tiersim.hardware.hf_config import hf_quant_path
    from tiersim.hardware.models import is_catalogue_name
    from tiersim.scenario import resolve_model_ref

    if not isinstance(name, str) or not name or is_catalogue_name(name):
        return []
    try:
        path = expand_user(resolve_model_ref(name, source))
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            return []
        side = hf_quant_path(path)
        return [(field, path)] + ([(f"{field}:{side.name}", side)] if side != path and
                                  side.is_file() else [])
    except (OSError, ValueError):
        return []


def _profile(doc: dict[str, Any], source: str) -> Path | None:
    """The profile file a run of ``doc`` (read from ``source``) reads (as the scenario loader
    and :func:`tiersim.perf.resolve_profile` find it: beside the scenario, then from the
    working folder, then a bundled name; the GPU's shipped one when the scenario names
    none)."""
    from tiersim.perf import default_profile_name
    from tiersim.scenario import resolve_file_ref

    try:
        if "profile" not in doc:
            name = default_profile_name(str(doc.get("gpu") or "H200"))
            return None if name is None else find_bundled("profiles", name)
        name = doc["profile"]
        if not isinstance(name, str) or not name:
            return None
        path = expand_user(resolve_file_ref(name, source))
        return path if path.is_file() else find_bundled("profiles", name)
    except (TiersimError, OSError, ValueError):
        return None
