"""What a rebuild of a profile keeps of the profile it replaces: its fitted costs.

Part of the aiconfigurator importer (:mod:`tiersim.perf.aiconfigurator`): a fitted
``overhead_s`` or ``eager_s`` (``source`` starting ``fitted``) of the profile at the import's
``out`` survives the rebuild of its tables (:func:`_kept_overhead`, :func:`_kept_eager`), one
error line where it is malformed (:func:`_refused_fit`), unless it was fitted for another
engine or GPU (:func:`_fitted_elsewhere`).
"""

from __future__ import annotations

from pathlib import Path

from tiersim.errors import ProfileError, TiersimError
from tiersim.hardware import get_gpu


def _kept_object(out, key: str):
    """The ``key`` object of the profile at ``out`` (``None`` where there is no readable one),
    read from that object alone: a rebuild after the table format changed must not lose a fit
    because an old table no longer parses."""
    from tiersim.jsonio import read_json

    path = Path(out) if out is not None else None
    if path is None or not path.is_file():
        return None
    try:
        raw = read_json(path, "a profile")
    except TiersimError:
        return None
    return raw.get(key) if isinstance(raw, dict) else None


def _kept_eager(out):
    """A fitted ``eager_s`` of the profile at ``out`` (kept when the profile is rebuilt); one
    :class:`ProfileError` line where it is fitted but malformed (:func:`_refused_fit`)."""
    from tiersim.perf.profile import _parse_eager

    raw = _kept_object(out, "eager_s")
    if not _fitted(raw):
        return None
    try:
        return _parse_eager(raw, str(out))
    except ProfileError as err:
        raise _refused_fit(err, "eager_s") from None


def _kept_overhead(out) -> tuple[float, float, str] | None:
    """A fitted ``overhead_s`` of the profile at ``out`` (kept when the profile is rebuilt);
    one :class:`ProfileError` line where it is fitted but malformed (a value of text, a list,
    NaN or out of range ended the import in a traceback, or named the new file's value)."""
    from tiersim.perf.profile import _parse_overhead

    raw = _kept_object(out, "overhead_s")
    if not _fitted(raw):
        return None
    try:
        return _parse_overhead(raw, str(out))
    except ProfileError as err:
        raise _refused_fit(err, "overhead_s") from None


def _fitted_elsewhere(out, gpu: str, engine: str) -> str | None:
    """Whose the fitted ``overhead_s`` or ``eager_s`` of the profile at ``out`` are (``"vllm's
    on H200"``) where that profile records another engine or GPU than the import's, else None
    (nothing fitted, or fitted for this engine and GPU: a rebuild keeps it). A fit belongs to
    the engine and GPU whose serving rows it was fitted on: an SGLang import over the vLLM
    profile kept vLLM's host costs."""
    if not any(_fitted(_kept_object(out, key)) for key in ("overhead_s", "eager_s")):
        return None
    raw = _kept_object(out, "provenance")
    their_engine = str(raw.get("engine", "")) if isinstance(raw, dict) else ""
    their_gpu = _kept_object(out, "gpu")
    their_gpu = their_gpu if isinstance(their_gpu, str) else ""
    try:
        same_gpu = not their_gpu or get_gpu(their_gpu).name == get_gpu(gpu).name
    except TiersimError:
        same_gpu = their_gpu.lower() == gpu.lower()
    if same_gpu and their_engine.lower() in ("", engine.lower()):
        return None
    return f"{their_engine or 'another engine'}'s on {their_gpu or 'another GPU'}"


def _fitted(raw) -> bool:
    """Whether ``raw`` (an ``overhead_s`` or ``eager_s`` object read from a profile) says it
    was fitted: ``source`` text starting with ``fitted``."""
    return isinstance(raw, dict) and isinstance(raw.get("source"), str) and raw[
        "source"].startswith("fitted")


def _refused_fit(err: ProfileError, key: str) -> ProfileError:
    """``err`` (a fitted ``key`` object of the profile being rebuilt that does not parse) with
    the fix: the rebuild would keep that value."""
    return ProfileError(f"{err}; a rebuild keeps the fitted {key} of the profile it replaces: "
                        f"correct it there, or remove its {key} to take the roofline's")
