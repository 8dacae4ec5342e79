"""How well a shipped profile's serving predictions matched measured runs, for a run to print
beside its latencies (``docs/fidelity.md``).

``tiersim/data/fidelity_check.json`` is written by ``python benchmarks/fidelity_silicon.py
--write-check`` (and ``--system h100_sxm`` / ``b200_sxm``): per profile the package ships, the
median |error| of tiersim's TTFT and TPOT over NVIDIA's measured serving runs replayed on it,
per model and in all, with aiconfigurator's beside them. A run on such a profile carries its
entry (:func:`check_for`); a run on the roofline or on a profile of one's own carries none, and
says its step times were not checked against measured serving.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

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
NOT_SHAPE = ("name", "source", "max_context", "checkpoint", "kv_cache")


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


def _own_rows(models: dict[str, dict[str, Any]], model: str) -> str | None:
    """The checked model with the scenario's ``model``'s shapes, or None (no checked model has
    them, or the model cannot be read)."""
    from tiersim.errors import TiersimError
    from tiersim.hardware import get_model

    try:
        mine = shape_id(get_model(str(model)))
    except (TiersimError, OSError, ValueError):
        return None
    return next((n for n, rows in models.items() if rows.get("shape_id") == mine), None)


def check_for(profile: str | None, model: str) -> dict[str, Any] | None:
    """The record of ``profile`` (a name or path) with ``this_model`` set to the scenario's
    model's own rows when they are among those replayed (:func:`_own_rows`), else None; the
    whole result is None when ``profile`` is not a shipped, checked one."""
    stem = _shipped_stem(profile)
    entry = _entries().get(stem) if stem else None
    if entry is None:
        return None
    models = entry.get("models") or {}
    own = _own_rows(models, model)
    tpots = [v["tpot_abs_median_pct"] for v in models.values()]
    this = None if own is None else {"name": own, **models[own]}
    return {"profile": stem, **{k: v for k, v in entry.items() if k != "models"},
            "models_checked": sorted(models),
            "model_tpot_abs_median_pct_range": [min(tpots), max(tpots)] if tpots else None,
            "this_model": this}


class ModelChecked(BaseModel):
    """One model's line of a fidelity record, as :func:`describe` reads it."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str
    rows: int
    tpot_abs_median_pct: float
    ttft_abs_median_pct: float
    held_out_rows: int | None = None
    model_path: str | None = None


class Checked(BaseModel):
    """A profile's fidelity record as :func:`describe` reads it (a summary's
    ``profile.checked``); other keys pass."""

    model_config = ConfigDict(extra="allow", strict=True)
    engine: str
    gpu: str
    rows: int
    command: str
    models_checked: list[str]
    tpot_abs_median_pct: float
    ttft_abs_median_pct: float
    this_model: ModelChecked | None = None
    model_tpot_abs_median_pct_range: conlist(float, min_length=2, max_length=2) | None = None
    aiconfigurator_tpot_abs_median_pct: float | None = None
    aiconfigurator_ttft_abs_median_pct: float | None = None


def describe(check: dict[str, Any] | None) -> str:
    """One line for the terminal and the report."""
    if check is None:
        return ("fidelity: these step times have not been checked against measured serving "
                "(the roofline, or a profile of your own)")
    own = check.get("this_model")
    models = len(check["models_checked"])
    which = (f"{_which(own)}: {own['tpot_abs_median_pct']:.1f}% TPOT, "
             f"{own['ttft_abs_median_pct']:.1f}% TTFT on its {own['rows']} rows{_fitted(own)}"
             if own else "this model not among them")
    low, high = check.get("model_tpot_abs_median_pct_range") or (None, None)
    spread = f"; {low:.1f}-{high:.1f}% TPOT by model" if low is not None else ""
    aic = check.get("aiconfigurator_tpot_abs_median_pct")
    peer = (f"; aiconfigurator {aic:.1f}% / {check['aiconfigurator_ttft_abs_median_pct']:.1f}%"
            if aic is not None else "")
    return (f"fidelity: replaying NVIDIA's measured {check['engine']} serving runs on "
            f"{check['gpu']} ({check['rows']} rows, {models} models, {which}), this profile's "
            f"median error was {check['tpot_abs_median_pct']:.1f}% TPOT and "
            f"{check['ttft_abs_median_pct']:.1f}% TTFT{spread}{peer} ({check['command']} in "
            f"tiersim's source repository)")


def _which(model: dict[str, Any]) -> str:
    """The checked model with the scenario's model's shapes, and whose checkpoint its rows
    served (its formats may not be the scenario's)."""
    path = model.get("model_path")
    return f"{model['name']} among them (rows of {path})" if path else f"{model['name']} among them"


def _fitted(model: dict[str, Any]) -> str:
    """How many of a model's rows the fit was made on ("" when none: all held out)."""
    fitted = model["rows"] - model.get("held_out_rows", model["rows"])
    if fitted <= 0:
        return ""
    return ", which the fit was made on" if fitted == model["rows"] else (
        f", {fitted} of which the fit was made on")
