"""The files one sweep point reads, digested: a point is never kept over inputs that changed.

A point is tied to its scenario text by ``base_digest``; the trace, model configs and profile
that text names are files whose content can change under the same name. For each point this
resolves exactly the fields a run reads, the way the run resolves them (the trace beside the
scenario, then bundled; a model that is not a catalogue name as a config path, beside the
scenario first, with the ``hf_quant_config.json`` next to it; the profile as a path, then
bundled, or the profile shipped for the point's GPU when it names none), and digests their
content. The map is keyed by the field (``trace``, ``tiers[1].model``, ``profile`` ...), so
moving the folder does not change it and editing one file does. A file that cannot be read is
left out: the run itself reports it.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.outputs import file_sha256
from tiersim.paths import find_bundled, resolve_trace_path

WHOLE_FILE_BYTES = 1 << 30
"""Files up to this size are hashed whole; a larger one by size, mtime and its first and last
MiB (a multi-GB trace is not re-read for every point: a ``touch`` counts as a change)."""
_EDGE = 1 << 20
_DIGESTS: dict[tuple[str, int, int], str] = {}


def point_inputs(doc: dict[str, Any], source: str) -> dict[str, str]:
    """``{field: content digest}`` of the files a run of ``doc`` reads (see module doc)."""
    folder = Path(source).parent if Path(source).is_file() else None
    out: dict[str, str] = {}
    for field, path in _fields(doc, folder):
        try:
            out[field] = file_digest(path)
        except OSError:
            continue  # unreadable: the run says so, one line
    return out


def file_digest(path: Path) -> str:
    """The content digest of ``path`` (whole file, or size + mtime + edges when huge); one
    hash per file version per process."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = _digest(path, stat.st_size, stat.st_mtime_ns)
    return _DIGESTS[key]


def _digest(path: Path, size: int, mtime_ns: int) -> str:
    if size <= WHOLE_FILE_BYTES:
        return file_sha256(path)[:16]
    digest = hashlib.sha256(f"{size}:{mtime_ns}".encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(_EDGE))
        handle.seek(size - _EDGE)
        digest.update(handle.read(_EDGE))
    return digest.hexdigest()[:16]


def _fields(doc: dict[str, Any], folder: Path | None) -> list[tuple[str, Path]]:
    """``(field, file)`` for each file input of ``doc`` that resolves to a file."""
    found: list[tuple[str, Path]] = []
    trace = doc.get("trace")
    if isinstance(trace, dict) and isinstance(trace.get("path"), str):
        with contextlib.suppress(TiersimError, OSError, ValueError):  # the run reports it
            found.append(("trace", resolve_trace_path(trace["path"], folder)))
    found += _model("model", doc.get("model"), folder)
    tiers = doc.get("tiers") if isinstance(doc.get("tiers"), list) else []
    for i, tier in enumerate(t for t in tiers if isinstance(t, dict)):
        found += _model(f"tiers[{i}].model", tier.get("model"), folder)
        spec = tier.get("speculative")
        if isinstance(spec, dict):
            found += _model(f"tiers[{i}].speculative.draft_model", spec.get("draft_model"),
                            folder)
    profile = _profile(doc)
    if profile is not None:
        found.append(("profile", profile))
    return found


def _model(field: str, name: Any, folder: Path | None) -> list[tuple[str, Path]]:
    """A model field's config file (and NVIDIA's quant config beside it); none for a catalogue
    name, as :func:`tiersim.hardware.get_model` reads it."""
    from tiersim.hardware.models import MODELS, _catalogue_key

    if not isinstance(name, str) or not name or _catalogue_key(name) in MODELS:
        return []
    try:
        path = Path(name).expanduser()
        looks_like_path = path.suffix == ".json" or len(path.parts) > 1
        if looks_like_path and not path.is_absolute() and folder is not None and \
                (folder / path).exists():
            path = folder / path  # as Scenario._resolve: beside the scenario first
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            return []
    except (OSError, ValueError):
        return []
    side = path.with_name(path.name.removesuffix("config.json") + "hf_quant_config.json")
    pairs = [(field, path)]
    if path.name.endswith("config.json") and side != path and side.is_file():
        pairs.append((f"{field}:hf_quant_config.json", side))
    return pairs


def _profile(doc: dict[str, Any]) -> Path | None:
    """The profile file a run of ``doc`` reads (as :func:`tiersim.perf.resolve_profile`: a
    path, then a bundled name; the GPU's shipped one when the scenario names none)."""
    from tiersim.perf import default_profile_name

    try:
        if "profile" not in doc:
            name = default_profile_name(str(doc.get("gpu") or "H200"))
            return None if name is None else find_bundled("profiles", name)
        name = doc["profile"]
        if not isinstance(name, str) or not name:
            return None
        path = Path(name).expanduser()
        return path if path.is_file() else find_bundled("profiles", name)
    except (TiersimError, OSError, ValueError):
        return None
