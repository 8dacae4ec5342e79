"""How well a shipped profile's serving predictions matched measured runs, for a run to print
beside its latencies (``docs/fidelity.md``).

``tiersim/data/fidelity_check.json`` is written by ``python benchmarks/fidelity_silicon.py
--write-check`` (and ``--system h100_sxm`` / ``b200_sxm``): per profile the package ships, the
median |error| of tiersim's TTFT and TPOT over NVIDIA's measured serving runs replayed on it,
per model and in all, with aiconfigurator's beside them. A run on such a profile carries its
entry, with each tier that reads the profile's model, format and that model's own rows
(:func:`check_for`). A run on the roofline carries the roofline model's entry for its GPU
(``--roofline --write-check``; :func:`roofline_check_for`) where that GPU has measured rows; a
run on a profile of one's own, or on the roofline of a GPU with none, carries none, and says
its step times were not checked against measured serving.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, conlist

from tiersim.jsonio import read_json

CHECK_FILE = Path(__file__).resolve().parent / "data" / "fidelity_check.json"
"""The shipped record (package data)."""


def _entries() -> dict[str, dict[str, Any]]:
    """Profile file stem -> its entry ({} when the package ships no record)."""
    if not CHECK_FILE.is_file():
        return {}
    return dict(read_json(CHECK_FILE, "the fidelity record").get("profiles") or {})


def _shipped_stem(profile: str | None) -> str | None:
    """The file stem of ``profile`` when it is a profile the package ships, else None (a file
    of one's own that shares the name, with or without ``.json``, is not the shipped one)."""
    if profile is None:
        return None
    from tiersim.paths import find_bundled

    given = Path(str(profile))
    bundled = find_bundled("profiles", given.stem)
    if bundled is None:
        return None
    if given.exists() and given.resolve() != bundled.resolve():
        return None
    return given.stem


#: ``ModelArch`` fields that are not the weights' shapes: left out of a model's identity.
NOT_SHAPE = ("name", "source", "max_context", "context_assumed", "context_limit",
             "checkpoint", "kv_cache", "static_fp8_activations")


def _digest(value: dict[str, Any]) -> str:
    """A short stable hash of a JSON-able dict."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def shape_id(arch) -> str:
    """A model's (a ``ModelArch``'s) shape identity: a hash of its architecture's shapes, so a
    config of a checked model under any name or folder is recognised. The checkpoint's formats
    are left out: the rows' own checkpoint is named beside them (``model_path``)."""
    fields = dataclasses.asdict(arch)
    return _digest({k: v for k, v in fields.items() if k not in NOT_SHAPE})


def _model(model: str):
    """The ``ModelArch`` of a tier's model reference, or None when it cannot be read."""
    from tiersim.errors import TiersimError
    from tiersim.hardware import get_model

    try:
        return get_model(str(model))
    except (TiersimError, OSError, ValueError):
        return None


def _tier_check(models: dict[str, dict[str, Any]], tier: str, model: str, precision: str,
                moe_backend: str = "auto") -> dict[str, Any]:
    """One tier's name, model (its name), format and MoE kernel, and the checked model with
    that model's shapes (``checked_model``: its rows' figures), or None when no checked model
    has them."""
    arch = _model(model)
    mine = shape_id(arch) if arch is not None else None
    own = next((n for n, rows in models.items() if mine and rows.get("shape_id") == mine), None)
    return {"tier": tier, "model": arch.name if arch is not None else str(model),
            "precision": precision, "moe_backend": moe_backend,
            "formats": _served(arch, precision),
            "checked_model": None if own is None else {"name": own, **models[own]}}


def _served(arch, precision: str) -> str | None:
    """The weight formats a tier of ``arch`` at ``precision`` serves, in words
    (:attr:`~tiersim.hardware.precisions.WeightFormats.served`), or None when unknown."""
    from tiersim.hardware.precisions import weight_formats

    if arch is None:
        return None
    try:
        return weight_formats(arch, precision).served
    except (ValueError, KeyError, LookupError):
        return None


def check_for(profile: str | None, tiers: dict[str, tuple[str, str]]) -> dict[str, Any] | None:
    """The record of ``profile`` (a name or path), with ``tiers``: for each tier that reads
    the profile (name -> its model reference and precision), its model's own rows when they
    are among those replayed (:func:`_tier_check`; a third item, the tier's ``moe_backend``,
    may follow the precision); None when ``profile`` is not a shipped, checked one."""
    stem = _shipped_stem(profile)
    entry = _entries().get(stem) if stem else None
    return None if entry is None else _with_tiers(stem, entry, tiers)


def roofline_key(gpu: str) -> str:
    """The record's key of the roofline model on ``gpu`` (a catalogue name, any case)."""
    return f"roofline_{gpu.lower()}"


def roofline_check_for(gpu: str, tiers: dict[str, tuple[str, str]]) -> dict[str, Any] | None:
    """The record of tiersim's roofline model on ``gpu`` (``python benchmarks/fidelity_silicon.py
    --roofline --write-check``: NVIDIA's measured vLLM rows of that GPU replayed with no
    tables), with ``tiers`` as :func:`check_for` takes them; None for a GPU with no such rows."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.gpus import get_gpu

    try:
        name = get_gpu(gpu).name  # "h200_sxm", "H200-SXM": the catalogue's H200
    except TiersimError:
        return None
    entry = _entries().get(roofline_key(name))
    return None if entry is None else _with_tiers(None, entry, tiers)


def _with_tiers(stem: str | None, entry: dict[str, Any],
                tiers: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """A record's ``entry`` as a run carries it: its profile (``stem``; None for the roofline),
    the models checked and their TPOT range, and each of ``tiers`` (:func:`_tier_check`)."""
    models = entry.get("models") or {}
    tpots = [v["tpot_abs_median_pct"] for v in models.values()]
    return {"profile": stem, **{k: v for k, v in entry.items() if k != "models"},
            "models_checked": sorted(models),
            "model_tpot_abs_median_pct_range": [min(tpots), max(tpots)] if tpots else None,
            "tiers": [_tier_check(models, name, *read) for name, read in tiers.items()]}


class ModelChecked(BaseModel):
    """One model's line of a fidelity record, as :func:`describe` reads it."""

    # protected_namespaces: pydantic before 2.10 warns of a field named model_* otherwise
    model_config = ConfigDict(extra="allow", strict=True, protected_namespaces=())
    name: str
    rows: int
    tpot_abs_median_pct: float
    ttft_abs_median_pct: float
    held_out_rows: int | None = None
    model_path: str | None = None
    moe_backend_rows: dict[str, int] | None = None
    """Its rows by the MoE kernel they were replayed with (``moe_backend``)."""
    formats_rows: dict[str, int] | None = None
    """Its rows by the weight formats they were replayed at (``WeightFormats.served``)."""


class TierChecked(BaseModel):
    """One tier's part of a fidelity record: its name, model and format, and the checked model
    with its shapes (None: not among those replayed)."""

    model_config = ConfigDict(extra="allow", strict=True)
    tier: str
    model: str
    precision: str
    moe_backend: str = "auto"
    formats: str | None = None  # what the tier serves, in the words of ``formats_rows``
    checked_model: ModelChecked | None = None


class Checked(BaseModel):
    """A profile's fidelity record as :func:`describe` reads it (a summary's
    ``profile.checked``); other keys pass."""

    model_config = ConfigDict(extra="allow", strict=True, protected_namespaces=())  # as above
    engine: str
    gpu: str
    rows: int
    command: str
    models_checked: list[str]
    tpot_abs_median_pct: float
    ttft_abs_median_pct: float
    tiers: list[TierChecked] | None = None  # in the fleet's order
    this_model: ModelChecked | None = None  # summaries written before the record was per tier
    model_tpot_abs_median_pct_range: conlist(float, min_length=2, max_length=2) | None = None
    aiconfigurator_tpot_abs_median_pct: float | None = None
    aiconfigurator_ttft_abs_median_pct: float | None = None
    step_times: Literal["roofline"] | None = None  # the roofline model's record (no profile)
    calibrated: bool | None = None  # that record's roofline was calibrated (before: absent)
    tpot_signed_median_pct: float | None = None
    ttft_signed_median_pct: float | None = None


def describe(check: dict[str, Any] | None) -> str:
    """One line for the terminal and the report: the profile's figures over all replayed rows,
    then each tier's model and format with that model's own rows when it is among them. A
    tier's model is the user's path or name: control and format characters in it are written
    as their escapes (:func:`~tiersim.errors.escaped`), as the tier table writes it."""
    from tiersim.errors import escaped

    return escaped(_describe(check))


def _describe(check: dict[str, Any] | None) -> str:
    """:func:`describe`'s line, as the record gives it."""
    if check is None:
        return ("fidelity: these step times have not been checked against measured serving "
                "(a profile of your own, the roofline on a GPU with no measured rows, no tier "
                "reading the profile's tables, or a run written before tiersim recorded the "
                "roofline's check)")
    if check.get("step_times") == "roofline":
        return _describe_roofline(check)
    low, high = check.get("model_tpot_abs_median_pct_range") or (None, None)
    spread = f"; {low:.1f}-{high:.1f}% TPOT by model" if low is not None else ""
    peer = _peer(check)
    return (f"fidelity: replaying NVIDIA's measured {check['engine']} serving runs on "
            f"{check['gpu']} ({_rows_part(check)}), "
            f"this profile's median error was {check['tpot_abs_median_pct']:.1f}% TPOT and "
            f"{check['ttft_abs_median_pct']:.1f}% TTFT{spread}{peer}; {_models_part(check)} "
            f"({check['command']} in tiersim's source repository)")


def _rows_part(check: dict[str, Any]) -> str:
    """``273 rows, 6 models``: how many rows a record replayed, of how many models."""
    models = len(check["models_checked"])
    return f"{check['rows']:,} rows, {models} model{'s' * (models != 1)}"


def _peer(check: dict[str, Any]) -> str:
    """``; aiconfigurator X% / Y%`` where the record has both of aiconfigurator's figures."""
    tpot = check.get("aiconfigurator_tpot_abs_median_pct")
    ttft = check.get("aiconfigurator_ttft_abs_median_pct")
    return "" if None in (tpot, ttft) else f"; aiconfigurator {tpot:.1f}% / {ttft:.1f}%"


def _describe_roofline(check: dict[str, Any]) -> str:
    """:func:`describe`'s line for the roofline model's record: its median errors, signed too
    (a roofline tends to err one way: fast)."""
    signed = ""
    if None not in (check.get("tpot_signed_median_pct"), check.get("ttft_signed_median_pct")):
        signed = (f" (signed {check['tpot_signed_median_pct']:+.0f}% / "
                  f"{check['ttft_signed_median_pct']:+.0f}%: negative is faster than measured)")
    peer = _peer(check)
    how, on = "; replaying", "on the roofline alone"
    if check.get("calibrated") is True:  # a record written before the calibration lacks it
        how = (" (its FP8 GEMM and FP8 / 4-bit MoE kernel efficiencies and vLLM's host time are "
               "set on NVIDIA's measured H200 data); replaying")
        on = "on it"
    return (f"fidelity: these step times come from tiersim's roofline model, not measured "
            f"tables{how} NVIDIA's measured {check['engine']} serving runs on {check['gpu']} "
            f"({_rows_part(check)}) {on}, its median error "
            f"was {check['tpot_abs_median_pct']:.1f}% TPOT "
            f"and {check['ttft_abs_median_pct']:.1f}% TTFT{signed}{peer}; "
            f"{_models_part(check)} ({check['command']} in tiersim's source repository)")


def _models_part(check: dict[str, Any]) -> str:
    """Each tier's model and format and its model's own rows; a summary written before the
    record was per tier has one model, the scenario's."""
    if check.get("tiers") is None:
        return f"the scenario's model: {_own(check.get('this_model'))}"
    return "; ".join(f"tier {tier['tier']} ({tier['model']}, {tier['precision']}): "
                     f"{_own(tier.get('checked_model'))}"
                     f"{_other_kernel(tier.get('checked_model'), tier.get('moe_backend'))}"
                     f"{_other_formats(tier.get('checked_model'), tier.get('formats'))}"
                     for tier in check["tiers"])


def _other_formats(model: dict[str, Any] | None, formats: str | None) -> str:
    """Where some of a checked model's rows were replayed at other weight formats than the
    tier serves (the record's ``formats_rows``), how many and at which: a BF16 tier of a model
    whose measured rows all ran its FP8 export shares its shapes, not its step times ("" when
    they match, or for a record or summary without the counts)."""
    counts = (model or {}).get("formats_rows") or {}
    other = {k: n for k, n in sorted(counts.items()) if k != formats and n}
    if not other or formats is None:
        return ""
    which = ", ".join(f"{n} at {k}" for k, n in other.items())
    return f" (replayed {which}; this tier serves {formats})"


def _other_kernel(model: dict[str, Any] | None, backend: str | None) -> str:
    """Where some of a checked model's rows were replayed with another MoE kernel than the
    tier's ``moe_backend`` (the record's ``moe_backend_rows``), how many and with which: those
    figures are not this tier's step times ("" otherwise, or for a record without the
    counts)."""
    counts = (model or {}).get("moe_backend_rows") or {}
    other = {k: n for k, n in sorted(counts.items()) if k != (backend or "auto") and n}
    if not other:
        return ""
    which = ", ".join(f"{n} with moe_backend {k}" for k, n in other.items())
    return f" (replayed {which}; this tier runs moe_backend {backend or 'auto'})"


def _own(model: dict[str, Any] | None) -> str:
    """A checked model's own figures, or that the model is not among those checked."""
    if model is None:
        return "not among the checked models"
    return (f"{_which(model)}: {model['tpot_abs_median_pct']:.1f}% TPOT, "
            f"{model['ttft_abs_median_pct']:.1f}% TTFT on its {model['rows']:,} rows"
            f"{_fitted(model)}")


def _which(model: dict[str, Any]) -> str:
    """The checked model with the tier's model's shapes, and whose checkpoint its rows served
    (its formats may not be the tier's)."""
    path = model.get("model_path")
    return f"{model['name']} (rows of {path})" if path else model["name"]


def _fitted(model: dict[str, Any]) -> str:
    """How many of a model's rows the fit was made on ("" when none: all held out)."""
    fitted = model["rows"] - model.get("held_out_rows", model["rows"])
    if fitted <= 0:
        return ""
    return ", which the fit was made on" if fitted == model["rows"] else (
        f", {fitted:,} of which the fit was made on")
