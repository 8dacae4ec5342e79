"""A read scenario as one setting: the digest of its canonical JSON (:func:`_setting`), which
tells two axis values apart only where their points would run differently
(:mod:`tiersim.sweep.checks`), and the document it digests (:func:`setting_doc`, by which
:mod:`tiersim.sweep.equivalent` compares finished points)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.input_files import input_paths


def _setting(scenario: object, source: str, files: bool = False) -> str | None:
    """A digest of a read scenario's canonical JSON without its sweep map (``None``: not a
    model): names read case-insensitively (the GPU, precisions, catalogue models) in one
    case, and file paths as the run finds them (``t0.csv`` and ``./t0.csv`` are one file);
    with ``files``, each file it reads as that file (:func:`file_identity`)."""
    doc = setting_doc(scenario, source)
    if doc is None:
        return None
    if files:
        put_files(doc, source, file_identity)
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def file_identity(path: Path) -> str:
    """The file ``path`` names, however the path is written (through ``..``, a symbolic or a
    hard link): its device and inode; the path as found where it cannot be looked at."""
    try:
        stat = os.stat(path)
    except OSError:
        return str(path)
    return f"<file {stat.st_dev}:{stat.st_ino}>"


def setting_doc(scenario: object, source: str) -> dict[str, Any] | None:
    """A read scenario as :func:`_setting` digests it: its model dumped as JSON without its
    sweep map, written canonically (:func:`_canonical`, ``-0.0`` as ``0.0``); ``None`` where
    ``scenario`` is not a model."""
    dump = getattr(scenario, "model_dump", None)
    if dump is None:
        return None
    return _zero_unsigned(_canonical(dump(mode="json", exclude={"sweep"}), source))


def put_files(setting: dict[str, Any], source: str, value_of) -> None:
    """Put ``value_of(file)`` in ``setting`` (a reading of a scenario from ``source``) in place
    of each file it reads (:func:`tiersim.input_files.input_paths`: its trace, model configs,
    profile), where the field is one of its keys."""
    for field, path in input_paths(setting, source).items():
        if ":" not in field:  # ``tiers[0].model:hf_quant_config.json`` names no key
            _put(setting, _keys(field), value_of(path))


def _keys(field: str) -> list[str | int]:
    """The keys of an input field (``tiers[1].speculative.draft_model``) in a reading; the
    trace's is ``trace.path``."""
    keys: list[str | int] = [int(k) if k.isdigit() else k
                             for k in field.replace("[", ".").replace("]", "").split(".")]
    return ["trace", "path"] if keys == ["trace"] else keys


def _put(doc: Any, keys: list[str | int], value: Any) -> None:
    """Set ``value`` at ``keys`` of ``doc`` where that place is there."""
    for key in keys[:-1]:
        try:
            doc = doc[key]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(doc, dict) and keys[-1] in doc or isinstance(doc, list):
        doc[keys[-1]] = value


def _zero_unsigned(value: Any) -> Any:
    """``value`` with every ``-0.0`` written ``0.0``: the two are one number to every check and
    sum (a price of -0.0 USD is 0), so ``[0.0, -0.0]`` is one setting listed twice, not two
    points of one scenario under two labels."""
    if isinstance(value, dict):
        return {key: _zero_unsigned(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_zero_unsigned(item) for item in value]
    return 0.0 if isinstance(value, float) and value == 0 else value


def _canonical(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """``doc`` with what reads the same written the same (:func:`_setting`)."""
    from tiersim.hardware import get_gpu, get_precision
    from tiersim.runner import portable_paths
    from tiersim.scenario import model_places

    doc = portable_paths(doc, source)
    doc["gpu"] = _catalogue_name(get_gpu, doc.get("gpu"))
    for place, holder in model_places(doc):  # a baseline-only tier's, a draft's too
        _catalogue_model(holder, place[-1])
    tiers = [t for key in ("tiers", "baselines") for t in doc.get(key) or []
             if isinstance(t, dict)]  # precisions and draft rates: no file keys
    for holder in [doc, *tiers]:
        if "precision" in holder:
            holder["precision"] = _catalogue_name(get_precision, holder["precision"])
    for tier in tiers:
        if isinstance(tier.get("speculative"), dict):
            _rates_per_position(tier["speculative"])
    _per_tier_router_options(doc)
    return doc


def _catalogue_model(holder: dict[str, Any], key: str) -> None:
    """``holder[key]``, a catalogue model's name, in the catalogue's one case (``Llama-3.1-8B``
    and ``llama-3.1-8b`` are one model); a config path or anything else as given."""
    from tiersim.hardware.models import catalogue_key, is_catalogue_name

    model = holder.get(key)
    if isinstance(model, str) and is_catalogue_name(model):
        holder[key] = catalogue_key(model)


def _rates_per_position(spec: dict[str, Any]) -> None:
    """A speculative block's ``acceptance`` as one rate per draft position: ``0.5``, ``[0.5]``
    and ``[0.5, 0.5, 0.5]`` (k = 3) are one setting (:class:`tiersim.engine.spec_decode`
    repeats a single rate k times)."""
    rates = spec.get("acceptance")
    rates = rates if isinstance(rates, list) else [rates]
    spec["acceptance"] = rates * spec["k"] if len(rates) == 1 else rates


def _per_tier_router_options(doc: dict[str, Any]) -> None:
    """The router's ``thresholds`` (one per tier but the top) and ``fractions`` (one per tier)
    as lists in tier order, as the policies read them (``per_tier``): one float for all, a
    list, or a map naming each tier are one setting. A map naming other tiers stays as
    written (the router refuses it)."""
    router, tiers = doc.get("router"), doc.get("tiers") or []
    if not isinstance(router, dict):
        return
    names = [t.get("name") for t in tiers if isinstance(t, dict)]
    for key, count in (("thresholds", len(names) - 1), ("fractions", len(names))):
        value = router.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            router[key] = [float(value)] * count
        elif isinstance(value, dict) and set(value) == set(names[:count]):
            router[key] = [float(value[name]) for name in names[:count]]


def _catalogue_name(lookup, value: Any) -> Any:
    """The catalogue's own name for ``value`` (``h200`` -> ``H200``), else ``value``."""
    try:
        return lookup(value).name
    except (TiersimError, TypeError, ValueError):
        return value
