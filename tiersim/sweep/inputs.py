"""The files a scenario reads, digested: a sweep never resumes over inputs that changed.

A sweep's points are tied to their scenario text by ``base_digest``; the trace, model configs
and profile that text names are files whose content can change under the same name. This module
finds them (every string of the scenario, sweep map included, that names an existing file
beside the scenario, under the working folder, or bundled; a model folder's ``config.json`` and
the ``hf_quant_config.json`` beside it; the profile shipped for each GPU the scenario runs on
when it names none) and digests their content, keyed by the text that names them, so moving
the whole folder does not change the digest and editing one file does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tiersim.outputs import file_sha256
from tiersim.paths import find_bundled

MAX_NAME = 4096
"""Longest string considered as a file name."""
WHOLE_FILE_BYTES = 1 << 30
"""Files up to this size are hashed whole; a larger one by size, mtime and its first and last
MiB (a multi-GB trace is not re-read at every resume)."""
_EDGE = 1 << 20


def input_digests(doc: dict[str, Any], source: str) -> dict[str, str]:
    """``{name as written: content digest}`` of every file ``doc`` reads (see module doc)."""
    folder = Path(source).parent if Path(source).is_file() else Path.cwd()
    out: dict[str, str] = {}
    for name in sorted(set(_strings(doc))):
        for path in _files_named(name, folder):
            out[name if path.name == Path(name).name else f"{name}:{path.name}"] = \
                file_digest(path)
    for gpu, profile in _default_profiles(doc).items():
        out[f"<default profile on {gpu}>"] = file_digest(profile)
    return out


def inputs_digest(digests: dict[str, str]) -> str:
    """One digest of :func:`input_digests`' map."""
    text = "\n".join(f"{k}={v}" for k, v in sorted(digests.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_digest(path: Path) -> str:
    """The content digest of ``path`` (whole file, or size + mtime + edges when huge)."""
    size = path.stat().st_size
    if size <= WHOLE_FILE_BYTES:
        return file_sha256(path)[:16]
    digest = hashlib.sha256(f"{size}:{path.stat().st_mtime_ns}".encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(_EDGE))
        handle.seek(size - _EDGE)
        digest.update(handle.read(_EDGE))
    return digest.hexdigest()[:16]


def _strings(node: Any) -> Iterator[str]:
    """Every string value in a nested dict/list (keys excluded)."""
    if isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)
    elif isinstance(node, str) and 0 < len(node) <= MAX_NAME and "\n" not in node:
        yield node


def _files_named(name: str, folder: Path) -> list[Path]:
    """The existing files ``name`` names (a config folder gives its config JSONs)."""
    try:
        path = Path(name).expanduser()
        candidates = [path] if path.is_absolute() else [folder / path, Path.cwd() / path]
        candidates += [p for kind in ("traces", "profiles")
                       if (p := find_bundled(kind, name)) is not None]
        for candidate in candidates:
            if candidate.is_dir() and (candidate / "config.json").is_file():
                candidate = candidate / "config.json"
            if candidate.is_file():
                return [candidate, *_quant_sidecar(candidate)]
    except (OSError, ValueError):  # a name no file system accepts is no file
        return []
    return []


def _quant_sidecar(config: Path) -> list[Path]:
    """NVIDIA's ``hf_quant_config.json`` beside a model config, which the config reader reads."""
    if not config.name.endswith("config.json") or config.name.endswith("hf_quant_config.json"):
        return []
    side = config.with_name(config.name.removesuffix("config.json") + "hf_quant_config.json")
    return [side] if side.is_file() else []


def _default_profiles(doc: dict[str, Any]) -> dict[str, Path]:
    """The shipped profile of each GPU the scenario (or its sweep) runs on, when it names no
    profile (a tiersim upgrade that changes it changes the results)."""
    if "profile" in doc:
        return {}
    from tiersim.errors import TiersimError
    from tiersim.perf import default_profile_name

    gpus = [doc.get("gpu") or "H200"]
    sweep = doc.get("sweep") if isinstance(doc.get("sweep"), dict) else {}
    if isinstance(sweep.get("gpu"), list):
        gpus += sweep["gpu"]
    out = {}
    for gpu in gpus:
        try:
            name = default_profile_name(str(gpu))
        except TiersimError:
            continue  # the scenario check names the unknown GPU
        path = find_bundled("profiles", name) if name else None
        if path is not None:
            out[str(gpu)] = path
    return out
