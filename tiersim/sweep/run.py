"""Run a whole sweep: load the scenario, expand the axes, skip finished points, run the rest.

``run_sweep(scenario, out_dir)`` is what ``tiersim sweep`` calls. It writes ``DIR/scenario.yaml``
(the base scenario), ``DIR/sweep.json`` (the manifest: source and points), one
``DIR/points/<id>.json`` per finished point, ``DIR/sweep.parquet`` and, unless told not to,
``DIR/report.html``.

Safety (docs/security.md): the folder is locked while a sweep writes to it (``fcntl.flock`` on
``DIR/.lock``, :func:`tiersim.outputs.locked`, which runs, plans and reports take too; a second
command into it is refused at once with one line, it does not wait); every point records the
digests of its base scenario and sweep map, and a rerun against a different base is refused,
naming the field, unless every finished point reads the same under it
(:mod:`tiersim.sweep.equivalent`: a default written out resumes); every file is written under a
unique temporary name and renamed; a folder that cannot be written (read-only, full) ends the
sweep with one line and no temp file left; failed points end it with one line naming them (exit
1), after the other points are stored, except when every point failed with one and the same
input error: that is the scenario's, raised as ``tiersim run`` raises it, and a folder the sweep
found empty is left so (:mod:`tiersim.sweep.refusal`). No table outlives its data: before
anything changes, a ``sweep.parquet`` whose rows are not all stored points as they were, or not
among the grid's points in its order, or that holds a point to run again, is removed (and
``report.html`` with it, or whenever points are to run; a sweep that writes no report removes
the old one; the new ``scenario.yaml`` and ``sweep.json`` are written in full first and renamed
into place after, so a full disk changes nothing), and points that read two versions of one
input file (replaced while the sweep ran) are refused as one table.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Console

from tiersim.atomic import commit, stage
from tiersim.errors import ScenarioError, TiersimError, escaped, shown
from tiersim.input_files import (
    file_digest,
    input_files,
    input_paths,
    point_inputs,
    written_name,
)
from tiersim.jsonio import read_json
from tiersim.numbers import NumberError, read_number
from tiersim.outputs import claim_out_dir, locked
from tiersim.sweep import axes as ax
from tiersim.sweep import executors
from tiersim.sweep.manifest import stage_manifest
from tiersim.sweep.points import (
    PointRunner,
    SweepNotes,
    Task,
    Validator,
    default_runner,
    default_validator,
    warm_up,
)
from tiersim.sweep.portable import portable_base
from tiersim.sweep.progress import progress_display
from tiersim.sweep.refusal import (
    axis_keys,
    blamed,
    common_refusal,
    is_fresh,
    remove_written,
)
from tiersim.sweep.store import (
    collect,
    points_dir,
    read_bookkeeping,
    remove_stale_temps,
    table_matches,
    table_rows,
    write_point,
)

MAX_WORKERS = 1024
"""Most local worker processes (each is a whole Python process)."""


class SweepFailed(TiersimError):
    """Some points failed; the others are stored. ``frame`` is the sweep table."""

    def __init__(self, message: str, frame: pd.DataFrame):
        super().__init__(message)
        self.frame = frame


def load_raw(path: str | Path) -> dict[str, Any]:
    """Read a scenario YAML as a plain dict (sweep map included) within the scenario reader's
    limits (size, UTF-8, depth, alias expansion, finite numbers), a quoted number refused as
    ``tiersim run`` refuses it (the points are validated from dicts, which cannot tell one);
    errors name the file."""
    return _read_base(path)[0]


def _read_base(path: str | Path) -> tuple[dict[str, Any], Any]:
    """:func:`load_raw`'s dict and the file's YAML node tree."""
    from tiersim.scenario import read_yaml, refuse_non_map, refuse_text_numbers

    doc, root = read_yaml(path)
    refuse_non_map(doc, str(path), root)
    refuse_text_numbers(doc, str(path), root)
    return doc, root


@dataclass
class SweepPlan:
    """A loaded sweep: the base scenario dict, where it came from, its axes and points."""

    base: dict[str, Any]
    source: str
    axes: list[str]
    points: list[ax.Point]
    root: Any = None
    """The scenario file's YAML node tree (None for a scenario given as a dict): tells a
    quoted value from a plain one (:func:`check_quoted_numbers`)."""
    validator: Validator | None = None
    """What reads each point (notes dropped; None: points are not read before they run):
    a resume after the base's text changed compares the points' readings
    (:mod:`tiersim.sweep.equivalent`)."""


TRIES_PER_VALUE = 16
"""Grid points tried before an axis value no point accepts is refused up front."""


def check_axes(plan: SweepPlan, validator: Validator | None,
               reads: dict[str, Any] | None = None) -> None:
    """Fail fast, before any point runs, on an axis path the scenario does not have, or an axis
    value no grid point accepts (tried in up to :data:`TRIES_PER_VALUE` points that hold it,
    all their values applied): a YAML boolean where a number goes can never run. A value some
    point accepts stays; a combination that does not fit (a big model on one GPU) is a point
    that fails when it runs, named with the others, as before. A base scenario refused with
    no axis value applied (or a sweep without axes) is refused at its own key, not blamed on
    an axis. ``reads`` keeps each point's reading for :func:`check_distinct_settings` (each
    point is read once)."""
    reads = {} if reads is None else reads
    if not plan.axes and validator is not None:  # the sweep is its base's one point
        _read(plan, validator, {}, reads)
    base = _BaseRefusal(plan, validator)
    for path in plan.axes:
        for n, (value, holding) in enumerate(_points_by_value(plan.points, path)):
            if n == 0:  # a path the scenario cannot hold fails at any point: say so first
                ax.apply(plan.base, holding[0].values, plan.source)
            if validator is None:
                break
            error = _first_refusal(plan, validator, holding[:TRIES_PER_VALUE], reads)
            if error is None or _reads_alone(plan, validator, path, value):
                continue  # refused for another axis' value (blamed on that axis), or a mix
            if base.same(error):  # the base is refused so without any axis value: its own key
                raise error
            message = str(error).removeprefix(f"{plan.source}: ")
            if n == 0 and "unknown key" in message:  # it lists the known keys itself
                raise ax.SweepError(plan.source, path, message) from error
            raise ax.SweepError(plan.source, path,
                                f"{message} (value {shown(value, 80)})") from error


class _BaseRefusal:
    """The base scenario's own refusal (no axis value applied), read once when first asked."""

    def __init__(self, plan: SweepPlan, validator: Validator | None):
        self.plan, self.validator, self.read, self.error = plan, validator, False, None

    def same(self, error: TiersimError) -> bool:
        """Whether the base alone is refused with ``error``'s very message."""
        if not self.read and self.validator is not None:
            self.read = True
            try:
                self.validator(ax.apply(self.plan.base, {}, self.plan.source), self.plan.source)
            except TiersimError as base_error:
                self.error = base_error
        return self.error is not None and str(self.error) == str(error)


def _reads_alone(plan: SweepPlan, validator: Validator, path: str, value: Any) -> bool:
    """Whether the base scenario with only this axis' ``value`` applied reads: when it does,
    the points holding the value were refused for another axis' value, not this one's."""
    try:
        validator(ax.apply(plan.base, {path: value}, plan.source), plan.source)
    except TiersimError:
        return False
    return True


def _first_refusal(plan: SweepPlan, validator: Validator, points: list[ax.Point],
                   reads: dict[str, Any]) -> TiersimError | None:
    """None once one of ``points`` reads; else the error of the first."""
    first = None
    for point in points:
        try:
            _read(plan, validator, point.values, reads)
        except TiersimError as error:
            first = first or error
            continue
        return None
    return first


def _read(plan: SweepPlan, validator: Validator, values: dict[str, Any],
          reads: dict[str, Any]) -> str | None:
    """The setting (:func:`_setting`) of the scenario at ``values`` as ``validator`` reads it,
    raising its TiersimError; kept in ``reads`` by point id, so both checks read a point once
    (the setting, not the read scenario, is kept: 10,000 of those would fill memory)."""
    key = ax.point_id(values)
    if key not in reads:
        try:
            reads[key] = _setting(validator(ax.apply(plan.base, values, plan.source),
                                            plan.source), plan.source)
        except TiersimError as error:
            reads[key] = error
    if isinstance(reads[key], TiersimError):
        raise reads[key]
    return reads[key]


def _points_by_value(points: list[ax.Point], path: str) -> list[tuple[Any, list[ax.Point]]]:
    """Each distinct value of axis ``path`` (first-seen order, ``True`` apart from ``1``) with
    the points that hold it, in one pass over the points."""
    groups: dict[tuple[str, str], tuple[Any, list[ax.Point]]] = {}
    keys: dict[int, tuple[Any, tuple[str, str]]] = {}  # NOTE (speed): see _distinct
    for point in points:
        value = point.values[path]
        hit = keys.get(id(value))
        if hit is None or hit[0] is not value:
            hit = keys[id(value)] = (value, _value_key(value))
        groups.setdefault(hit[1], (value, []))[1].append(point)
    return list(groups.values())


def check_distinct_settings(plan: SweepPlan, validator: Validator | None,
                            reads: dict[str, Any] | None = None) -> None:
    """Refuse two values of one axis that read as the same setting (``[1, '1', 1.0]`` on a
    whole-number field): the sweep would run one scenario under several labels and its table
    would show them as different points (in a zip group, whose lists hold a value once per
    point, the line says to write it one way). Each value is read at the first point's other
    values; a value that does not read there is left to :func:`check_axes`. ``reads``: the
    readings :func:`check_axes` made."""
    if validator is None or not plan.points:
        return
    reads = {} if reads is None else reads
    anchor = plan.points[0].values
    zipped = {path for path, at, _ in _axis_lists(plan.base.get("sweep")) if at[1] == "zip"}
    for path in plan.axes:
        seen: dict[str, Any] = {}
        files = names_files(path)
        for value in _distinct(p.values[path] for p in plan.points):
            try:
                key = _read(plan, validator, {**anchor, path: value}, reads)
                if files and key is not None:
                    key = _files_setting(plan, validator, {**anchor, path: value})
            except TiersimError:
                continue
            if key is None:
                return
            if key in seen:  # a zip group lists a value once per point: it cannot drop one
                fix = (f"in a zip group write it one way each time ({shown(seen[key], 80)})"
                       if path in zipped else "list it once")
                raise ax.SweepError(plan.source, path, f"values {shown(seen[key], 80)} and "
                                    f"{shown(value, 80)} are the same setting once read; {fix}")
            seen[key] = value


def check_tier_names_read_apart(plan: SweepPlan) -> None:
    """Refuse two values of an axis over a tier's ``name`` that read the same
    (:func:`tiersim.scenario_checks.shown_name`: ``x`` and ``x ``, ``é`` composed and decomposed,
    full-width letters): each point would run, and the results show two tiers under one
    label, as one scenario refuses two such names."""
    from tiersim.scenario import shown_name

    for path in plan.axes:
        canon = ax.canonical_path(plan.base, path, plan.source)
        if len(canon) != 3 or canon[0] not in ("tiers", "baselines") or canon[2] != "name":
            continue
        seen: dict[str, str] = {}
        for value in _distinct(p.values[path] for p in plan.points):
            if not isinstance(value, str):
                continue  # not a name: the scenario check names it
            first = seen.setdefault(shown_name(value), value)
            if first != value:
                raise ax.SweepError(plan.source, path, f"values {ascii(first)} and "
                                    f"{ascii(value)} read the same as tier names (they differ "
                                    "only in Unicode form, width or surrounding spaces), so the "
                                    "results would show two tiers under one label; list one "
                                    "of them")


def check_quoted_numbers(plan: SweepPlan, validator: Validator | None,
                         reads: dict[str, Any] | None = None) -> None:
    """Refuse an axis value that is, or holds, text spelling a number (``"2"``, or the
    ``"240"`` of ``[["240", "300"]]``) where the scenario reads it as that number: the point
    would run ``2`` but be stored, labelled and identified as the text ``'2'`` (another point
    id than ``2``'s, a text column in ``sweep.parquet``). Each such text is read at the first
    point's other values, with the number in its place; text the field keeps as text (a tier
    named ``"2"``) stays. The line says whether the text was quoted or is a plain scalar YAML
    1.1 reads as text (``1e1``, ``010``), as the file's node tree tells. ``reads``: the
    readings made so far."""
    if validator is None or not plan.points:
        return
    reads = {} if reads is None else reads
    anchor = plan.points[0].values
    for path, at, values in _axis_lists(plan.base.get("sweep")):
        for i, value in enumerate(values):
            for sub, number in _number_texts(value):
                try:
                    text = _read(plan, validator, {**anchor, path: value}, reads)
                    read = _read(plan, validator,
                                 {**anchor, path: _replaced(value, sub, number)}, reads)
                except TiersimError:
                    continue  # a value that does not read there is check_axes' to name
                if text is not None and text == read:
                    raise ax.SweepError(plan.source, path, _number_text_problem(
                        plan, (*at, i, *sub), value, sub, number))


MAX_NUMBER_TEXTS = 64
"""Texts spelling a number tried per axis value (a value listing thousands is read no more)."""


def _axis_lists(sweep: Any) -> Iterator[tuple[str, tuple[str | int, ...], list[Any]]]:
    """Each axis of a sweep map (already checked by :func:`tiersim.sweep.axes.expand`) with
    where its value list is in the file (``("sweep", path)``, ``("sweep", "zip", n, path)``)
    and the list."""
    if not isinstance(sweep, dict):
        return
    for key, values in sweep.items():
        if key != "zip":
            yield key, ("sweep", key), values
            continue
        groups = values if isinstance(values, list) else [values]
        for n, group in enumerate(groups):
            at = ("sweep", "zip", n) if isinstance(values, list) else ("sweep", "zip")
            for path, items in group.items():
                yield path, (*at, path), items


def _number_texts(value: Any, sub: tuple[str | int, ...] = ()
                  ) -> list[tuple[tuple[str | int, ...], int | float]]:
    """Where ``value`` (or a list item or map value in it, at any depth) is text spelling a
    number, with the number: at most :data:`MAX_NUMBER_TEXTS`."""
    found: list[tuple[tuple[str | int, ...], int | float]] = []
    stack = collections.deque([(sub, value)])  # breadth first: the shallowest text first
    while stack and len(found) < MAX_NUMBER_TEXTS:
        at, item = stack.popleft()
        number = _quoted_number(item)
        if number is not None:
            found.append((at, number))
        elif isinstance(item, list):
            stack.extend(((*at, i), v) for i, v in enumerate(item))
        elif isinstance(item, dict):
            stack.extend(((*at, k), v) for k, v in item.items())
    return found


def _quoted_number(value: Any) -> int | float | None:
    """The number a text value spells (``"2"`` -> 2, ``"0.5"`` -> 0.5), as
    :func:`tiersim.numbers.read_number` reads one, else None."""
    if not isinstance(value, str):
        return None
    try:
        return read_number(value)
    except NumberError:
        return None


def _replaced(value: Any, sub: tuple[str | int, ...], number: int | float) -> Any:
    """A copy of ``value`` with ``number`` at ``sub`` (``()``: the value itself)."""
    if not sub:
        return number
    copy = ax.tree_copy(value)
    node = copy
    for part in sub[:-1]:
        node = node[part]
    node[sub[-1]] = number
    return copy


def _number_text_problem(plan: SweepPlan, written: tuple[str | int, ...], value: Any,
                         sub: tuple[str | int, ...], number: int | float) -> str:
    """Why the text at ``sub`` of axis value ``value`` (at ``written`` in the file) is
    refused: quoted (or a value given as a dict), or a plain scalar YAML 1.1 reads as text."""
    from tiersim.scenario import _is_quoted, without_quotes

    text = value
    for part in sub:
        text = text[part]
    quoted = plan.root is None or _is_quoted(plan.root, written)
    where = f"value {shown(value, 80)} holds " if sub else "value "
    if quoted:
        what = f"{shown(text, 80)}, which" if sub else shown(text, 80)
        how = "without quotes" if plan.root is None else without_quotes(plan.root, written)
        return (f"{where}{what} must be a number, not a string; write {_yaml_number(number)} "
                f"{how}")
    what = f"{text}, which" if sub else text
    return f"{where}{what} is text to YAML 1.1, not a number; write {_yaml_number(number)}"


def _yaml_number(number: int | float) -> str:
    """``number`` written so that a scenario file reads it as that number: a float's
    exponent with a dot before it (``1.0e-05``; YAML 1.1 reads ``1e-05`` as text)."""
    text = repr(number)
    if isinstance(number, float) and "e" in text and "." not in text:
        text = text.replace("e", ".0e")
    return text


def _files_setting(plan: SweepPlan, validator: Validator, values: dict[str, Any]) -> str | None:
    """The setting (:func:`_setting`) of the scenario at ``values`` with each file it reads as
    that file (:func:`file_identity`): ``t0.csv``, ``./t0.csv``, ``../here/t0.csv`` and a link
    to it are one file. Only for an axis that names a file (:func:`names_files`): resolving
    the files of every value read took a 1,000 x 1,000 grid's preparation from 8.7 to 9.6 s
    CPU (once, on a shared 2-core machine)."""
    scenario = validator(ax.apply(plan.base, values, plan.source), plan.source)
    return _setting(scenario, plan.source, files=True)


def _setting(scenario: object, source: str, files: bool = False) -> str | None:
    """A digest of a read scenario's canonical JSON without its sweep map (``None``: not a
    model): names read case-insensitively (the GPU, precisions, catalogue models) in one
    case, and file paths as the run finds them (``t0.csv`` and ``./t0.csv`` are one file);
    with ``files``, each file it reads as that file (:func:`file_identity`)."""
    from tiersim.sweep.equivalent import put_files

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


def _value_key(value: Any) -> tuple[str, str]:
    """A hashable key of an axis value (``True`` and ``1`` differ)."""
    return type(value).__name__, repr(value)


def _distinct(values) -> list:
    """The values in first-seen order, each once (``True`` and ``1`` kept apart).

    NOTE (speed): the points of a grid share their value objects, so a value's key is
    computed once per object (remembered by ``id``, the object held so its id is not reused
    while remembered), not once per point: a 10^6-point grid made ``_value_key``'s ``repr``
    millions of times per check. :func:`_points_by_value` does the same.
    """
    seen, out = set(), []
    known: dict[int, Any] = {}  # id -> the object already seen
    for value in values:
        if known.get(id(value)) is value:
            continue
        known[id(value)] = value
        key = _value_key(value)
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def max_points_of(base: dict[str, Any], source: str) -> int:
    """The scenario's ``limits.max_sweep_points`` (default 10,000, also where ``limits`` is
    no map: the scenario check names that, as ``tiersim run`` does)."""
    from tiersim.scenario import DEFAULT_MAX_SWEEP_POINTS

    limits = base.get("limits")
    limits = limits if isinstance(limits, dict) else {}
    value = limits.get("max_sweep_points", DEFAULT_MAX_SWEEP_POINTS)
    if isinstance(value, float) and value.is_integer():  # 5.0 is the 5 validation accepts
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ScenarioError(source, "limits.max_sweep_points", f"must be a whole number >= 1 "
                            f"(got {shown(value, 80)})")
    if value > ax.MAX_GRID_POINTS:  # as the scenario check says it: no sweep holds more
        raise ScenarioError(source, "limits.max_sweep_points", f"must be <= "
                            f"{ax.MAX_GRID_POINTS} (got {shown(value, 80)})")
    return value


def prepare(scenario: str | Path | dict, source: str | None = None,
            validator: Validator | None = default_validator,
            max_points: int | None = None) -> SweepPlan:
    """Load a scenario (path or dict), expand its ``sweep:`` map and check every axis path.

    The grid may hold ``max_points`` points (default: the scenario's
    ``limits.max_sweep_points``); a bigger one is refused before it is expanded."""
    root = None
    if isinstance(scenario, dict):
        base, source = scenario, source or "scenario"
    else:
        (base, root), source = _read_base(scenario), source or str(scenario)
    sweep_map = base.get("sweep")
    if sweep_map is None:  # absent, or every axis commented out
        sweep_map = {}
    if not isinstance(sweep_map, dict):  # as `tiersim run` refuses it (false, [] too)
        from tiersim.scenario import located

        raise located(ScenarioError(source, "sweep", "must be a mapping of keys (got "
                                    f"{shown(sweep_map, 80)})"))
    limit = max_points if max_points is not None else max_points_of(base, source)
    points = ax.expand(sweep_map, source, limit)
    plan = SweepPlan(base, source, ax.axis_names(sweep_map), points, root)
    ax.no_field_twice(base, plan.axes, source)
    reads: dict[str, Any] = {}
    validator = plan.validator = without_notes(validator)
    check_axes(plan, validator, reads)
    check_distinct_settings(plan, validator, reads)
    check_tier_names_read_apart(plan)
    check_quoted_numbers(plan, validator, reads)
    if validator is not None:
        check_router_keys(plan)
        check_session_keys(plan)
    return plan


def without_notes(validator: Validator | None) -> Validator | None:
    """``validator`` with the notes it raises dropped: the checks read points before they run,
    and each point raises its notes again when it runs, shown once with the points that raised
    them (:class:`SweepNotes`); raised here they were printed as well, unlabelled, as if true
    of the base scenario."""
    if validator is None:
        return None

    def read(doc: dict[str, Any], source: str) -> object:
        import warnings

        from tiersim.errors import Note

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Note)
            return validator(doc, source)

    return read


def check_unread_axes(plan: SweepPlan, runner: PointRunner) -> None:
    """Refuse an axis no point reads, so that every point would run the same scenario under
    another label: a baseline-only tier's ``replicas`` (its uniform fleet is sized by
    simulation), and, where the points estimate their savings (``--no-baselines``) and size
    nothing, ``limits.gpus_per_replica`` (the sizes that sizing may use), ``limits.max_replicas``
    (the cap on it) or a whole ``limits`` map, unless some point's tier is above its own cap
    (the axis then decides which points run), and anything of a baseline-only tier (the
    estimate leaves them out). The scenario's ``name`` as an axis of
    its own only labels the points (zipped with another axis it labels that axis' values)."""
    estimates = runner_name(runner) == "estimate_runner"
    sweep_map = plan.base.get("sweep")
    alone = {key for key in sweep_map if key != "zip"} if isinstance(sweep_map, dict) else set()
    for path in plan.axes:
        canon = ax.canonical_path(plan.base, path, plan.source)
        if canon == ("name",) and path in alone:
            raise ax.SweepError(plan.source, path, "only labels the results (the summary's "
                                "scenario name), so every point would run the same; drop the "
                                "axis, or zip it with the axis it labels")
        if canon[0] == "baselines" and canon[2:] == ("replicas",):
            raise ax.SweepError(plan.source, path, "a baseline's replicas are never read (its "
                                "uniform fleet is sized by simulation), so every point would "
                                "run the same; sweep limits.max_replicas to cap that sizing, "
                                "or move the tier under tiers: to set its replicas")
        if estimates and (canon[0] == "baselines" or canon == ("limits", "gpus_per_replica")
                          or canon[0] == "limits" and not _a_cap_refuses_a_point(plan)):
            raise ax.SweepError(plan.source, path, "is read only when the simulated baselines "
                                "are sized, and --no-baselines estimates them instead, so every "
                                "point would run the same; drop --no-baselines, or the axis")
        unread = _unread_scheduler_key(plan, canon)
        if unread is not None:
            raise ax.SweepError(plan.source, path, unread)


def _a_cap_refuses_a_point(plan: SweepPlan) -> bool:
    """Whether some point has a tier (or baseline) of more replicas than its own
    ``limits.max_replicas`` allows, so that a ``limits`` axis decides which points fail; a
    limit or replica count that is no number counts too (the point's check names it)."""
    from tiersim.scenario import DEFAULT_MAX_REPLICAS

    for point in plan.points:
        doc = ax.apply(plan.base, point.values, plan.source)
        cap = _max_replicas(doc)
        cap = DEFAULT_MAX_REPLICAS if cap is None else cap
        entries = [*(doc.get("tiers") or []), *(doc.get("baselines") or [])]
        counts = [entry.get("replicas", 1) if isinstance(entry, dict) else None
                  for entry in entries]
        for count in [cap, *counts]:
            if not isinstance(count, int | float) or isinstance(count, bool):
                return True
        if any(count > cap for count in counts):
            return True
    return False


def _unread_scheduler_key(plan: SweepPlan, canon: tuple[str, ...]) -> str | None:
    """Why an axis over a tier's scheduler key of :data:`tiersim.scenario_checks.READ_ONLY_WITH` is
    never read (the key it needs is set at no point, so every point runs the same), else
    None."""
    from tiersim.scenario import READ_ONLY_WITH

    if len(canon) != 4 or canon[0] not in ("tiers", "baselines") or canon[2] != "scheduler":
        return None
    needed = READ_ONLY_WITH.get(canon[3])
    if needed is None:
        return None
    key, words = needed
    for point in plan.points:
        tiers = ax.apply(plan.base, point.values, plan.source).get(canon[0])
        tier = tiers[int(canon[1])] if isinstance(tiers, list) and canon[1].isdigit() and (
            int(canon[1]) < len(tiers)) else None
        scheduler = tier.get("scheduler") if isinstance(tier, dict) else None
        if not isinstance(scheduler, dict) or scheduler.get(key):
            return None  # read at this point (or not a map: the scenario check names it)
    return (f"{canon[3]} is read only with {words}, which no point of the sweep gives this "
            f"tier, so every point would run the same; set {key} on the tier (or sweep it), or "
            "drop the axis")


def check_router_keys(plan: SweepPlan) -> None:
    """Refuse a ``router:`` key the base scenario or an axis sets that no policy of the sweep
    reads (each point's ``policy``, and ``step_fallback`` of a step_type one): every point
    would ignore it. A key some point's policy reads stays (a sweep over ``router.policy``
    keeps each policy's options in the base)."""
    from tiersim.routing.config import policies_in_play, unread_key_problem, unread_router_key

    base = plan.base.get("router")
    base = base if isinstance(base, dict) else {}
    policies: set[str] = set()
    setters: dict[str, str | None] = {str(key): None for key in base}  # key -> axis, if any
    for point in _points_setting(plan, "router"):
        whole = point.values.get("router")
        if isinstance(whole, dict):  # a whole router map is one point's router: its own keys
            found = unread_router_key(whole)
            if found is not None:
                raise ax.SweepError(plan.source, "router", f"router.{found[0]}: {found[1]}")
        router = _map_at(base, point.values, setters, "router")
        policies |= policies_in_play(router)
    _refuse_unread(plan, setters, lambda key: unread_key_problem(key, policies), "router")


def _refuse_unread(plan: SweepPlan, setters: dict[str, str | None], problem_of,
                   target: str) -> None:
    """Refuse the first key of the ``target`` map that ``problem_of(key)`` finds unread: at
    the axis that sets it (``setters``), else at the base scenario's key."""
    for key, axis in setters.items():
        problem = problem_of(key)
        if problem is not None and axis is None:
            raise ScenarioError(plan.source, f"{target}.{key}", problem)
        if problem is not None:
            raise ax.SweepError(plan.source, axis, problem)


def _points_setting(plan: SweepPlan, target: str) -> list[ax.Point]:
    """The points a check of the ``target`` map (``router``, ``workload.sessions``) reads: one
    per combination of the value objects of the axes that can set it (an axis at ``target``,
    above it or below it); points holding the same objects there build the same map, so the
    others add nothing; all of one point when no axis sets it.

    NOTE (speed): a 10^6-point grid built a router map per point for a check that one
    point per router setting decides."""
    paths = [path for path in plan.axes if path == target or target.startswith(path + ".")
             or path.startswith(target + ".")]
    found: dict[tuple[int, ...], ax.Point] = {}
    for point in plan.points or [ax.Point("", 0, {})]:
        found.setdefault(tuple(id(point.values.get(path)) for path in paths), point)
        if not paths:
            break
    return list(found.values())


def _map_at(base: dict[str, Any], values: dict[str, Any], setters: dict[str, str | None],
            target: str) -> dict[str, Any]:
    """The ``target`` map (``router``, ``workload.sessions``) at a point, as far as its keys
    go: an axis at ``target`` or above it (``workload`` for ``workload.sessions``) replaces the
    map whole and sets its keys; a deeper one (``router.cascade.threshold``) sets its key. Each
    key an axis sets goes in ``setters`` with that axis."""
    depth = target.count(".") + 1
    out = dict(base)
    for path, value in values.items():
        if path == target or target.startswith(path + "."):
            for part in target[len(path):].split(".")[1:]:
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, dict):
                out = dict(value)
                setters.update({str(k): path for k in value if str(k) not in setters})
        elif path.startswith(target + "."):
            key = path.split(".")[depth]
            out[key] = value if path.count(".") == depth else out.get(key)
            setters.setdefault(key, path)
    return out


def check_session_keys(plan: SweepPlan) -> None:
    """Refuse a ``workload.sessions`` key the base scenario or an axis sets that no point's
    ``source`` reads: every point would ignore it. A key some point's source reads stays (a
    sweep over ``workload.sessions.source`` keeps the generator's settings in the base for its
    generating points), as :func:`check_router_keys` keeps a router key some policy reads."""
    from tiersim.workload.sessions import source_named, unread_session_key_problem

    workload = plan.base.get("workload")
    base = workload.get("sessions") if isinstance(workload, dict) else None
    base = base if isinstance(base, dict) else {}
    sources: set[str] = set()
    setters: dict[str, str | None] = {str(key): None for key in base}  # key -> axis, if any
    for point in _points_setting(plan, "workload.sessions"):
        sources.add(source_named(_map_at(base, point.values, setters,
                                         "workload.sessions").get("source")))
    _refuse_unread(plan, setters, lambda key: unread_session_key_problem(key, sources),
                   "workload.sessions")


def _note(text: str) -> None:
    """One of tiersim's notes (the command line prints it on stderr)."""
    import warnings

    from tiersim.errors import Note

    warnings.warn(text, Note, stacklevel=3)


def base_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario without its sweep map: points of different bases never mix.
    Of ``limits`` only what changes a result counts: ``max_replicas`` where it sets the cap
    on the simulated uniform baselines (:func:`baseline_cap`), and ``gpus_per_replica`` where
    the scenario sets it (the sizes those baselines may use); ``max_sweep_points`` bounds the
    grid, never a result (raising it to extend a sweep, as its refusal advises, keeps the
    finished points)."""
    doc = {k: v for k, v in base.items() if k not in ("sweep", "limits")}
    cap = baseline_cap(base)
    if cap is not None:  # left out at the default cap, so older sweep folders still resume
        doc["limits"] = {"max_replicas": cap}
    limits = base.get("limits")
    if isinstance(limits, dict) and "gpus_per_replica" in limits:
        doc.setdefault("limits", {})["gpus_per_replica"] = limits["gpus_per_replica"]
    return ax.point_id(doc)


def baseline_cap(base: dict[str, Any]) -> Any:
    """The scenario's ``limits.max_replicas`` where it changes results: a run's sized uniform
    baselines try at most that many replicas (:func:`tiersim.savings.baseline_replica_limit`),
    so ``None`` when it is not set or is the default (1024), else the value as written."""
    from tiersim.scenario import DEFAULT_MAX_REPLICAS

    value = _max_replicas(base)
    if isinstance(value, float) and value.is_integer():  # 8.0 is the 8 validation accepts
        value = int(value)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)
                         and value == DEFAULT_MAX_REPLICAS):
        return None
    return value


def _max_replicas(base: dict[str, Any]) -> Any:
    """``limits.max_replicas`` as the scenario writes it (None where it does not)."""
    limits = base.get("limits")
    if limits is None:
        return None
    return limits.get("max_replicas") if isinstance(limits, dict) else limits


def _cap_words(value: Any) -> str:
    """A scenario's baseline cap in words, for a refusal."""
    return "no limits.max_replicas" if value is None else f"limits.max_replicas {value!r}"


def sweep_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario's sweep map (its axes and their values)."""
    return ax.point_id({"sweep": base.get("sweep") or {}})


#: How each point runner computes savings, as a rerun's refusal names it.
RUNNER_WORDS = {"default_runner": "with simulated baselines",
                "estimate_runner": "with --no-baselines (estimated savings)"}


def runner_name(runner: PointRunner) -> str:
    """The name a point record keeps of the runner that made it."""
    return str(getattr(runner, "__qualname__", None) or type(runner).__name__)


def digests(plan: SweepPlan, runner: PointRunner = default_runner) -> dict[str, str]:
    """What every point record carries to tie it to its scenario: the scenario text without
    and with its sweep map, and how its savings are made (the worker adds the digests of the
    files the point read, :func:`tiersim.input_files.point_inputs`)."""
    return {"base_digest": base_digest(plan.base), "sweep_digest": sweep_digest(plan.base),
            "runner": runner_name(runner), "tiersim": tiersim_version()}


def tiersim_version() -> str:
    """The version of tiersim running the points, with a digest of its code and packaged data
    (``0.1.0+3f2a9c1b7e04``): a point run by another build is run again, so an edited
    checkout without a version bump does not mix its rows with the old ones."""
    import tiersim

    return f"{tiersim.__version__}+{_package_digest()}"


@functools.cache
def _package_digest() -> str:
    """12 hex digits over the package's Python sources and data files (names and bytes)."""
    import tiersim

    root = Path(tiersim.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".parquet", ".csv"):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _different_base(out: Path, plan: SweepPlan | None = None,
                    change: str | None = None) -> TiersimError:
    """The refusal of a folder whose points came from another base scenario, naming a changed
    ``limits.max_replicas`` (the one limit that changes results) where that is what changed,
    else the ``change`` found (:func:`tiersim.sweep.equivalent.point_change`), if any."""
    if plan is not None and _own_copy(out, plan):
        source = _read_manifest(out).get("source") or "the scenario they were run from"
        return TiersimError(f"{out}: its scenario.yaml names the user files by absolute path, "
                            f"so its points do not match it; resume with {source}, or give "
                            "the copy a new --out folder")
    then = _stored_base(out)
    if plan is not None and then is not None and baseline_cap(then) != baseline_cap(plan.base):
        old, new = _max_replicas(then), _max_replicas(plan.base)
        back = "remove it" if old is None else f"set it back to {old!r}"
        return TiersimError(f"{out}: holds sweep points run with {_cap_words(old)}, which caps "
                            f"their simulated baselines; this scenario has "
                            f"{'none' if new is None else repr(new)}, and one table must not "
                            f"mix the two; {back}, or use a new --out folder")
    what = change or "something outside `sweep:` changed"
    return TiersimError(f"{out}: holds a sweep of a different scenario ({what}); use a new "
                        f"--out folder, or delete {out / 'points'} to start over")


def _stored_base(out: Path) -> dict[str, Any] | None:
    """The base scenario the folder's points were run from (its ``scenario.yaml``; None when
    absent or unreadable, within the scenario reader's limits: a FIFO, deep nesting or an
    alias bomb there is unreadable too)."""
    from tiersim.scenario import read_yaml

    try:
        doc, _ = read_yaml(out / "scenario.yaml")
    except TiersimError:
        return None
    return doc if isinstance(doc, dict) else None


def _stored_source(out: Path, manifest: dict[str, Any]) -> str:
    """Where the finished points are read under the folder's ``scenario.yaml`` from: the
    scenario file they were run from (``sweep.json``'s source), which a relative file path on
    an axis (``trace.path: [t.parquet]``, kept as written in the point's values) is beside;
    the copy itself where that file is gone (the copy's own paths are absolute)."""
    source = manifest.get("source")
    try:
        return source if isinstance(source, str) and Path(source).is_file() else \
            str(out / "scenario.yaml")
    except (OSError, ValueError):
        return str(out / "scenario.yaml")


def _own_copy(out: Path, plan: SweepPlan) -> bool:
    """Whether the plan was read from the folder's own ``scenario.yaml``."""
    try:
        return Path(plan.source).resolve() == (out / "scenario.yaml").resolve()
    except (OSError, RuntimeError):
        return False


def _check_same_base(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]],
                     runner: PointRunner = default_runner) -> None:
    """Refuse to resume into a folder whose points came from a different base scenario, other
    input files (the trace, a model config, the profile, changed under the same name), or
    another way of computing savings: every stored point names them (a point stored before a
    field existed is not held to it), and the manifest names the base of older point files."""
    want = digests(plan, runner)
    _check_same_readings(out, plan, records, want["base_digest"])
    if _own_copy(out, plan) and set(records) - {p.id for p in plan.points}:
        raise _different_base(out, plan)  # a swept path written absolute: other point ids
    _check_same_inputs(out, plan, records)
    ran = {r["runner"] for r in records.values() if r.get("runner")} - {want["runner"]}
    if ran:
        old = RUNNER_WORDS.get(min(ran), min(ran))
        raise TiersimError(f"{out}: holds sweep points run {old}; this run is "
                           f"{RUNNER_WORDS.get(want['runner'], want['runner'])}, and one table "
                           "must not mix the two; rerun it as before, or use a new --out folder")


def _check_same_readings(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]],
                         digest: str) -> None:
    """Refuse a folder whose points came from a base scenario whose text (as parsed) differs
    from this one's, unless every finished point of it reads the same under both (a default
    written out, a path spelt otherwise: :mod:`tiersim.sweep.equivalent`); the refusal names
    the first field that changed, or a file the edit names in place of one a point read that
    cannot be read (its content cannot be compared). Without a validator, or without the
    folder's stored base as the sweep wrote it (``copy_digest``) to read them under, any
    difference is refused, as before points were read: a copy edited in place would read the
    points as the edit."""
    from tiersim.sweep.equivalent import point_change, unread_swap

    manifest = _read_manifest(out) if records else {}
    then = manifest.get("base_digest", digest)  # the base of points that name none
    if all(r.get("base_digest", then) == digest for r in records.values()):
        return
    stored = _stored_base(out)
    if stored is not None and ax.point_id(stored) != manifest.get("copy_digest"):
        if _own_copy(out, plan):
            raise TiersimError(f"{out}: its scenario.yaml was edited after the sweep wrote it, "
                               "so its points may not be those of the edit; resume with "
                               f"{manifest.get('source') or 'the scenario they were run from'}"
                               ", or give the edited copy a new --out folder")
        stored = None
    if plan.validator is None or stored is None:
        raise _different_base(out, plan)
    other = [r for r in records.values()
             if r.get("status") == "ok" and r.get("base_digest", then) != digest]
    swap = unread_swap(stored, _stored_source(out, manifest), plan.base, plan.source, other)
    if swap is not None:  # the folder's own copy: its own refusal says how to resume
        raise _different_base(out, plan) if _own_copy(out, plan) else \
            TiersimError(f"{out}: {swap}")
    change = point_change(stored, _stored_source(out, manifest), plan.base, plan.source,
                          other, plan.validator)
    if change is not None:
        raise _different_base(out, plan, change)


def _check_same_inputs(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]]) -> None:
    """Refuse to keep a finished point whose input files (its trace, model configs, profile)
    changed under the same names since it ran; a failed point is simply rerun, and so is a
    point another tiersim version ran (:func:`ran_here`: it may not have recorded an
    input this version reads, a baseline's model say); a point stored before points recorded
    their inputs is not held to it. A file that cannot be found or read now, under the name the
    point read it by, is no change (one an edit names in place of it is refused before, by
    :func:`_check_same_readings`): the points it ran stay, and a point still to run says what
    is wrong with it, as ``tiersim run`` does (a moved trace was called changed, and the
    advice to delete the points lost them all); a config's ``hf_quant_config.json`` gone is a
    change (the config reads otherwise without it)."""
    wanted = {p.id: p for p in plan.points}
    for point_id, record in records.items():
        if (record.get("status") != "ok" or "inputs" not in record or point_id not in wanted
                or not ran_here(record)):
            continue
        doc = ax.apply(plan.base, wanted[point_id].values, plan.source)
        now, then = point_inputs(doc, plan.source), record["inputs"] or {}
        changed = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k)
                         and (k in now or ":" in k))
        if changed:
            files = ", ".join(f"{k} {written_name(doc, k)}" for k in changed[:3])
            raise TiersimError(f"{out}: holds sweep points run over other input files "
                               f"({files} of point {point_id} changed since "
                               f"it ran); use a new --out folder, or delete {out / 'points'} "
                               "to start over")


def _check_one_version(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]]) -> None:
    """Refuse to make one table of points that read two versions of one input file (it was
    replaced while the sweep ran). The points that read another version of any such file than
    it holds now are marked failed, so a rerun recomputes them over the files as they are; the
    line names the first file, with its own count."""
    changed = [(path, field, by_digest) for path, (field, by_digest)
               in _input_versions(plan, records).items() if len(by_digest) > 1]
    if not changed:
        return
    stale = [_stale_ids(path, by_digest) for path, _, by_digest in changed]
    marked: set[str] = set()
    for (path, field, _), ids in zip(changed, stale, strict=True):
        for point_id in sorted(ids - marked):
            _mark_stale(out, records[point_id], field, path)
        marked |= ids
    for name in ("sweep.parquet", "report.html"):  # they may show a point just marked
        (out / name).unlink(missing_ok=True)
    path, field, by_digest = changed[0]
    finished = len(set().union(*by_digest.values()))
    too = "" if len(changed) == 1 else f" ({_changed_too(changed[1:])})"
    those, are = ("it", "it is") if len(marked) == 1 else (f"those {len(marked)}", "they are")
    files = "the file as it is" if len(changed) == 1 else "the files as they are"
    raise TiersimError(f"{out}: {path} ({field}) changed while the sweep ran{too}: "
                       f"{len(stale[0])} of {finished} finished points read an older version "
                       "of it, and one table must not mix the two; rerun to recompute "
                       f"{those} over {files} now ({are} marked failed), or use a new --out "
                       "folder")


def _stale_ids(path: Path, by_digest: dict[str, set[str]]) -> set[str]:
    """The points that read another version of ``path`` than it holds now."""
    now = _digest_now(path)
    return {i for digest, ids in by_digest.items() if digest != now for i in ids}


def _changed_too(changed: list[tuple[Path, str, Any]]) -> str:
    """The other input files that changed while the sweep ran, in words."""
    names = ", ".join(f"{path} ({field})" for path, field, _ in changed[:2])
    more = f" and {len(changed) - 2} more" if len(changed) > 2 else ""
    return f"so did {names}{more}"


def _input_versions(plan: SweepPlan, records: dict[str, dict[str, Any]]
                    ) -> dict[Path, tuple[str, dict[str, set[str]]]]:
    """For each input file the plan's finished points read: its (first) field and, per
    content digest the points recorded, the ids of the points that read that version, each
    once (two tiers of one model config read one file under two fields)."""
    wanted = {p.id: p for p in plan.points}
    found: dict[Path, tuple[str, dict[str, set[str]]]] = {}
    for point_id, record in records.items():
        if record.get("status") != "ok" or point_id not in wanted:
            continue
        paths = input_paths(ax.apply(plan.base, wanted[point_id].values, plan.source),
                            plan.source)
        for field, digest in (record.get("inputs") or {}).items():
            if field in paths:
                versions = found.setdefault(paths[field], (field, {}))[1]
                versions.setdefault(str(digest), set()).add(point_id)
    return found


def _digest_now(path: Path) -> str | None:
    """The file's digest now (None if it can no longer be read)."""
    try:
        return file_digest(path)
    except OSError:
        return None


def _mark_stale(out: Path, record: dict[str, Any], field: str, path: Path) -> None:
    """Store a point that read an older version of ``path`` as failed (a rerun retries it)."""
    record.update(status="error", summary=None,
                  error=f"InputChanged: {path} ({field}) changed while the sweep ran; rerun "
                        "to recompute this point")
    write_point(out, record)


def _read_manifest(out: Path) -> dict[str, Any]:
    """The folder's ``sweep.json`` (``{}`` when absent or unreadable: not a regular file, too
    big, not JSON, nested too deep)."""
    try:
        doc = read_json(out / "sweep.json", "a sweep manifest")
    except TiersimError:
        return {}
    return doc if isinstance(doc, dict) else {}


@contextlib.contextmanager
def _new_manifest(out: Path, plan: SweepPlan, runner: PointRunner = default_runner):
    """Write the base scenario (its user files named absolute, so the copy reruns from any
    folder; the digests stay those of the scenario as read) and the list of points next to
    the results, in two steps: both are written in full beside their places first, the block
    runs (removing what the new manifest outdates), then both are renamed into place. A
    full disk or unwritable file stops the sweep before the block, so the folder keeps its
    old table, report and manifest; a failure in the block leaves the old manifest too. The
    manifest keeps the copy's digest (``copy_digest``): a resume reads the finished points
    under the copy only while it is as written (:func:`_check_same_readings`)."""
    from tiersim.scenario import dump_yaml

    copy = portable_base(plan)
    text = dump_yaml(copy)
    staged: list[tuple[Path, Path]] = []
    try:
        staged.append((stage(out / "scenario.yaml", lambda h: h.write(text), "w"),
                       out / "scenario.yaml"))
        staged.append((stage_manifest(out / "sweep.json", {
            "source": _source_of(out, plan), "axes": plan.axes,
            **digests(plan, runner), "copy_digest": ax.point_id(copy)}, plan.points),
            out / "sweep.json"))
        yield
        commit(staged)
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)


def _source_of(out: Path, plan: SweepPlan) -> str:
    """The scenario file ``sweep.json`` names as the points' source: the plan's
    (:func:`_source_named`), but the one named before where the plan is the folder's own
    copy, so that a refusal to resume from an edited copy names the original."""
    if _own_copy(out, plan):
        return _read_manifest(out).get("source") or _source_named(plan.source)
    return _source_named(plan.source)


def _source_named(source: str) -> str:
    """The scenario file ``source`` as ``sweep.json`` records it: absolute, so a refusal that
    names it (:func:`_different_base`) names that file from any working folder (``s.yaml``
    named another folder's file, or none); a source that is no file (a scenario given as a
    map) as it is."""
    try:
        return str(Path(source).absolute()) if Path(source).is_file() else source
    except OSError:
        return source


def _cannot_write(error: OSError, out: Path) -> TiersimError:
    """An OSError while writing results, as one line naming the file (and the folder that is
    in the way of one, if that is why)."""
    where = error.filename or out
    if Path(where).is_dir() and Path(where) != out:
        return TiersimError(f"{where}: cannot write ({error.strerror or error}): a folder is "
                            "in the way of this sweep file; remove that folder, then rerun to "
                            "resume")
    return TiersimError(f"{where}: cannot write ({error.strerror or error}); check that "
                        f"{out} is writable and has free space, then rerun to resume")


@dataclass
class Tally:
    """What one :func:`run_sweep` call did, for the line an interrupted sweep prints."""

    stored: int = 0
    """Finished (``ok``) points this call stored (points stored earlier are not counted)."""
    folder: Path | None = None
    """The sweep's points folder, once the finished points are known."""
    pending: tuple[str, ...] = ()
    """The ids of the points this call runs."""

    def stored_on_disk(self) -> int:
        """The points of this call stored ``ok``, counted in the folder: an interrupted sweep
        may have had one stored by a worker that the parent had not counted yet."""
        if self.folder is None or not self.pending:
            return self.stored
        try:
            names = {e.name for e in os.scandir(self.folder)}
        except OSError:
            return self.stored
        ids = [i for i in self.pending if f"{i}.json" in names]
        return max(self.stored, sum(_stored_ok(self.folder / f"{i}.json") for i in ids))


def _stored_ok(path: Path) -> bool:
    """Whether the point file at ``path`` is whole, says ``ok`` and was run by this tiersim
    version: a point another version stored ``ok`` is pending too (it runs again,
    :func:`_other_version`), and until this call rewrites it its file still says ``ok``."""
    try:
        record = read_json(path, "a sweep point record")
        return record.get("status") == "ok" and ran_here(record)
    except (TiersimError, AttributeError):
        return False


def run_sweep(scenario: str | Path | dict, out_dir: str | Path, workers: int | None = None,
              executor: str = "local", address: str | None = None,
              runner: PointRunner = default_runner, validator: Validator | None = default_validator,
              source: str | None = None, progress: bool | None = None,
              report: bool = True, max_points: int | None = None,
              strict: bool = True, tally: Tally | None = None) -> pd.DataFrame:
    """Run every point not already finished in ``out_dir``; return the sweep table.

    The folder is locked before the grid is expanded and checked (a big grid takes a while),
    so a second sweep into it is refused at once; Ray (``executor="ray"``) is joined once the
    grid is checked and before the folder changes, so an address it refuses changes nothing,
    and only when a point is left to run (a finished sweep rewrites its table without Ray).
    With ``strict`` (the default, and what
    ``tiersim sweep`` uses), failed points raise :class:`SweepFailed` (one line naming them)
    once everything else is stored. ``tally`` counts the points this call stores.
    ``progress``: True a bar, False nothing, None (the CLI's) a bar on a terminal and a timed
    line off one (:mod:`tiersim.sweep.progress`)."""
    if executor not in ("local", "ray"):
        raise TiersimError(f"--executor: must be 'local' or 'ray' (got {executor!r})")
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise TiersimError(f"--workers: must be from 1 to {MAX_WORKERS} (got {workers})")
    if executor == "ray":  # a dead address refused at once: Ray would retry for minutes
        _refuse_workers_beside_env_address(address, workers)
        executors.probe_address(address)
    out = Path(out_dir)
    claim_out_dir(out, "sweep", [] if isinstance(scenario, dict) else [Path(scenario)])
    _check_points_folder(out)
    fresh = strict and is_fresh(out)
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked(out, "sweep"))
        except OSError as error:
            raise _cannot_write(error, out) from None
        plan = prepare(scenario, source, validator, max_points)
        check_unread_axes(plan, runner)
        claim_out_dir(out, "sweep", [Path(plan.source), *sweep_inputs(plan)])
        _refuse_foreign_files(out, plan)
        def join() -> None:  # before the folder changes: a bad address changes nothing
            stack.enter_context(executors.ray_session(address, workers))

        try:
            frame, failed, refusal = _run_locked(plan, out, workers, executor, address,
                                                 runner, progress, report, fresh,
                                                 tally or Tally(), join)
        except OSError as error:
            raise _cannot_write(error, out) from None
    if strict and failed:
        raise SweepFailed(_failure_line(frame, out, refusal, plan.points), frame)
    return frame


def _refuse_workers_beside_env_address(address: str | None, workers: int | None) -> None:
    """Refuse ``--workers`` where Ray joins the cluster ``RAY_ADDRESS`` names (as it would
    beside ``--address``): that cluster runs as many points at once as it has CPUs, and Ray
    refused the CPU count with an error naming ``--address None``."""
    joined, named, _ = executors.ray_address(address)
    if workers is not None and joined is not None and joined != address:
        raise TiersimError(f"--workers {workers}: a Ray cluster joined at {named} runs as many "
                           "points at once as it has CPUs, so it is not read; drop it, or unset "
                           f"{executors.RAY_ADDRESS_ENV} to start a local Ray of that many CPUs")


SWEEP_FILES = ("scenario.yaml", "sweep.parquet", "report.html")
"""The files a sweep writes beside ``sweep.json``, which it writes before any of them."""


def _refuse_foreign_files(out: Path, plan: SweepPlan) -> None:
    """Refuse a folder without a sweep's ``sweep.json`` that holds a file a sweep writes (a
    user's own ``scenario.yaml`` or ``report.html`` was replaced), before anything is written.
    The sweep's own copy of this scenario is no user's file (a kill between the renames of
    ``scenario.yaml`` and ``sweep.json`` leaves it alone), so that folder resumes, as does
    one with a sweep's ``points/`` or a ``sweep.json`` of any kind (the resume reads them)."""
    manifest = out / "sweep.json"
    if manifest.exists() or manifest.is_symlink() or (out / "points").is_dir():
        return
    for name in SWEEP_FILES:
        path = out / name
        if not path.is_file() or (name == "scenario.yaml" and _own_base_copy(path, plan)):
            continue
        raise TiersimError(f"{path}: `tiersim sweep` would overwrite this file, and {out} "
                           "holds no sweep's results (no sweep.json); move the file, or use "
                           "another --out folder (nothing was written)")


def _own_base_copy(path: Path, plan: SweepPlan) -> bool:
    """Whether ``path`` holds the base scenario exactly as this sweep writes it."""
    from tiersim.scenario import dump_yaml

    text = dump_yaml(portable_base(plan))
    try:
        with path.open("rb") as handle:
            return handle.read(len(text.encode()) + 1) == text.encode()
    except OSError:
        return False


def _check_points_folder(out: Path) -> None:
    """Refuse, before anything is written, a link or a file where the sweep keeps its
    ``points/`` folder."""
    points = out / "points"
    if points.is_symlink():
        raise TiersimError(f"{points}: is a link; a sweep keeps its points inside "
                           "--out (remove the link or use another --out)")
    if points.exists() and not points.is_dir():
        raise TiersimError(f"{points}: a file is in the way of the points folder that "
                           "`tiersim sweep` writes; move or remove that file, or use another "
                           "--out folder (nothing was written)")


def names_files(axis: str) -> bool:
    """Whether values of ``axis`` may name an input file: it sets a key the scenario schema
    names a file with (:func:`tiersim.scenario.file_keys`: ``trace.path``, ``profile``, a
    tier's or a baseline-only tier's ``model``), or a map or list holding one (``trace``,
    ``tiers``, ``baselines``, ``tiers.0``, ``baselines.big.speculative``), not a number beside
    them (``tiers.big.cost_per_gpu_hour``, ``trace.window``)."""
    from tiersim.scenario import file_keys

    parts = axis.split(".")
    return any(len(parts) <= len(key) and all(k in ("*", p) for k, p in zip(key, parts,
                                                                          strict=False))
               for key in file_keys())


def sweep_inputs(plan: SweepPlan) -> list[Path]:
    """Every file the sweep's points read (each distinct combination of the file-naming axes'
    values, resolved as a run resolves it), once, with its links resolved (``m/config.json``
    and ``link/config.json`` are one file): a file named only on an axis is an input too."""
    file_axes = [a for a in plan.axes if names_files(a)]
    seen: set[tuple] = set()
    found = list(input_files(plan.base, plan.source))
    for point in plan.points:
        key = tuple(repr(point.values.get(a)) for a in file_axes)
        if not file_axes or key in seen:
            continue
        seen.add(key)
        with contextlib.suppress(Exception):  # a value no run accepts fails as its own point
            found += input_files(ax.apply(plan.base, point.values, plan.source), plan.source)
    return list(dict.fromkeys(Path(os.path.realpath(path)) for path in found))


def clipped(text: str, limit: int = 200) -> str:
    """``text`` on one line, cut to at most ``limit`` characters at a word's end and marked
    with "..." where it is cut (it was cut mid-word, unmarked: "a smaller precision ;")."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 3]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "..."


def axis_refusal(plan: SweepPlan, refusal: TiersimError) -> TiersimError:
    """The error every point failed with, blamed on the axis that set or made the key it names
    (:func:`tiersim.sweep.refusal.blamed`); otherwise the error as it is (the scenario's own)."""
    return blamed(refusal, axis_keys(plan.base, plan.axes, plan.source), plan.source)


def _failure_line(frame: pd.DataFrame, out: Path, refusal: TiersimError | None = None,
                  points: list[ax.Point] | None = None) -> str:
    """One line naming the failed points (the first three) and the first error (``refusal``,
    with its line in the scenario, when every point failed with it; else the first failed
    point's error, at its axis values among ``points``: the error names the scenario's keys,
    not the values the point gave them)."""
    from tiersim.scenario import located

    bad = frame[frame["status"] != "ok"]
    ids = ", ".join(bad["point_id"].head(3)) + (", ..." if len(bad) > 3 else "")
    if isinstance(refusal, ScenarioError):
        refusal = located(refusal)
    first = clipped(str(refusal or bad.iloc[0]["error"]))
    values = next((p.values for p in points or () if p.id == bad.iloc[0]["point_id"]), None)
    at = "" if refusal is not None or not values else " at " + ", ".join(
        f"{path}={shown(value)}" for path, value in values.items())
    return (f"{out}: {len(bad)} of {len(frame)} sweep point(s) failed ({ids}); first{at}: "
            f"{first}; the others are stored; details in {out / 'points'}; fix what the error "
            "names, then rerun to retry them")


def _run_locked(plan: SweepPlan, out: Path, workers: int | None, executor: str,
                address: str | None, runner: PointRunner, progress: bool | None,
                report: bool, fresh: bool = False, tally: Tally | None = None,
                join: Callable[[], None] | None = None
                ) -> tuple[pd.DataFrame, int, TiersimError | None]:
    """The sweep proper, run while holding the folder's lock; returns the table, the failed
    count and the input error every point failed with, if one did (:mod:`tiersim.sweep.
    refusal`). In a ``fresh`` folder that error is raised as ``tiersim run`` raises it, and
    the folder is left as it was found. ``join`` (Ray's) is called before the folder changes,
    only where a point is left to run: with none, the sweep is the in-process one."""
    started = tiersim_version()
    records = read_bookkeeping(out)
    _check_same_base(out, plan, records, runner)
    done = {i for i, r in records.items() if r.get("status") == "ok"}
    _refuse_later_release(out, records, done)
    done -= _other_version(records, done)
    pending = [p for p in plan.points if p.id not in done]
    _refuse_folders_in_the_way(out, pending)
    if not pending:
        executor = "local"  # nothing to run: Ray is neither needed nor joined
    elif executor == "ray" and join is not None:
        join()
    remove_stale_temps(out)  # a killed sweep may leave one per worker; no writer is active now
    if tally is not None:
        tally.folder, tally.pending = points_dir(out), tuple(p.id for p in pending)
    with _new_manifest(out, plan, runner):
        _remove_stale_outputs(out, records, pending, [p.id for p in plan.points])
        described = table_rows(out)  # the table an old report.html describes, if any
    del records  # every stored point: not held while the others run, nor beside the re-read
    console = Console(stderr=True, soft_wrap=True, markup=False)  # paths are text
    workers = workers or os.cpu_count() or 1
    try:
        failed = _execute(plan, pending, out, workers, executor, address, runner,
                          progress_display(console, progress, sys.stderr.isatty()),
                          len(plan.points) - len(pending), tally or Tally())
    finally:  # every worker has ended: one killed mid-write (the OOM killer) left its temp file
        remove_stale_temps(out)
    records = read_bookkeeping(out)
    _refuse_lost_points(out, plan, records)
    _check_same_package(out, started, [p.id for p in pending], records)
    refusal = common_refusal(records, [p.id for p in plan.points])
    if refusal is not None and fresh:  # the scenario's error, not its points'
        remove_written(out)
        raise axis_refusal(plan, refusal)
    if not plan.axes:  # said once the point ran: a refusal stays one line
        what = "its sweep: map is empty" if "sweep" in plan.base else "has no sweep: map"
        _note(f"{plan.source}: {what}, so the sweep is its one point (`tiersim run` runs it "
              "alone)")
    _check_one_version(out, plan, records)
    frame = collect(out, plan.axes, [p.id for p in plan.points], records)
    failed_total = int((frame["status"] != "ok").sum()) if "status" in frame else 0
    if failed_total:  # the caller's one error line says it all; the report is still written
        console = Console(stderr=True, quiet=True, markup=False)
    points = f"{len(plan.points):,} point{'s' if len(plan.points) != 1 else ''}"
    console.print(f"sweep: {points} ({len(pending):,} run, "
                  f"{len(plan.points) - len(pending):,} already done, {failed:,} failed) -> "
                  f"{escaped(out / 'sweep.parquet')}")
    if report:
        _report(out, console)
    elif table_rows(out) != described:  # the old report shows another table (fewer values)
        (out / "report.html").unlink(missing_ok=True)
    return frame, failed_total, refusal


def _check_same_package(out: Path, started: str, ran: list[str],
                        records: dict[str, dict[str, Any]]) -> None:
    """Refuse to make one table of points run while tiersim's own files changed (an upgrade,
    a ``git pull`` or packaged data such as ``precision_priors.json`` edited mid-sweep): a
    point reads some of them as it runs, so the points ``ran`` may have read either version,
    all recorded as ``started``. The package is digested again (:func:`tiersim_version`); on
    a change the points run are marked failed, the table and report removed, and a rerun
    recomputes them with the tiersim then installed."""
    ran = [i for i in ran if i in records]
    if not ran:
        return  # the stored points are all of the version they record
    _package_digest.cache_clear()
    now = tiersim_version()
    if now == started:
        return
    for point_id in ran:
        record = records[point_id]
        if record.get("status") == "ok":
            record.update(status="error", summary=None,
                          error="InputChanged: tiersim's own files changed while the sweep "
                                "ran; rerun to recompute this point")
            write_point(out, record)
    for name in ("sweep.parquet", "report.html"):
        (out / name).unlink(missing_ok=True)
    count = f"{len(ran):,} point{'s' if len(ran) != 1 else ''}"
    raise TiersimError(f"{out}: tiersim's own files changed while the sweep ran (tiersim "
                       f"{started}, now {now}), so its {count} run may have read either "
                       "version, and one table must not mix the two; rerun to recompute "
                       f"{'them' if len(ran) != 1 else 'it'} with the tiersim now installed "
                       f"({'they are' if len(ran) != 1 else 'it is'} marked failed)")


def _refuse_lost_points(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]]) -> None:
    """Refuse a grid one of whose points is no longer stored once the points ran (its file
    removed, or edited into no record, while the sweep ran): the table would be short of it
    and read as complete. No table is written, and one there (which now outlives its data)
    goes with its report; a rerun runs the point again."""
    lost = [p.id for p in plan.points if p.id not in records]
    if not lost:
        return
    for name in ("sweep.parquet", "report.html"):
        (out / name).unlink(missing_ok=True)
    ids = ", ".join(lost[:3]) + (", ..." if len(lost) > 3 else "")
    one = len(lost) == 1
    raise TiersimError(f"{points_dir(out)}: {len(lost):,} of the {len(plan.points):,} points "
                       f"{'is' if one else 'are'} no longer stored ({ids}: "
                       f"{'its file was' if one else 'their files were'} removed or changed "
                       f"while the sweep ran); rerun to resume ({'it runs' if one else 'they run'}"
                       " again)")


def _refuse_folders_in_the_way(out: Path, pending: list[ax.Point]) -> None:
    """Refuse, before the folder changes or a point runs, a folder where a pending point's
    file goes (``points/<id>.json/``): found only when the point was stored, it ended the
    sweep there, and every point then in flight was computed and lost."""
    try:
        with os.scandir(points_dir(out)) as entries:
            folders = {e.name for e in entries if e.is_dir(follow_symlinks=False)}
    except OSError:  # no points folder yet (or none to read: the writes say so)
        return
    for point in pending:
        if f"{point.id}.json" in folders:
            raise TiersimError(f"{points_dir(out) / f'{point.id}.json'}: a folder is in the way "
                               "of this sweep point's file; remove that folder, then rerun to "
                               "resume (no point was run)")


def _refuse_later_release(out: Path, records: dict[str, dict[str, Any]],
                          done: set[str]) -> None:
    """Refuse, before anything changes, to resume points a later tiersim release ran: running
    them again (:func:`_other_version`) would replace their files with this earlier release's
    results. An earlier release's points, or another build of this release's, run again."""
    import tiersim
    from tiersim.versions import later_than_this, release, release_text

    later = sorted((i for i in done if later_than_this(records[i].get("tiersim"))),
                   key=lambda i: release(records[i]["tiersim"]))
    if later:
        newest = str(records[later[-1]]["tiersim"])
        count = f"{len(later)} sweep point{'s' if len(later) != 1 else ''}"
        raise TiersimError(f"{out}: holds {count} run by tiersim {newest}, a later release than "
                           f"this tiersim {tiersim.__version__}; resuming would replace them "
                           "with an earlier version's results: resume with tiersim "
                           f"{release_text(newest)} or later, or use a "
                           "new --out folder (nothing was changed)")


def ran_here(record: dict[str, Any]) -> bool:
    """Whether this tiersim build ran the point ``record`` holds: its ``tiersim`` version is
    this one's. Every build since points recorded it writes one, so a record without one was
    written by an earlier build, another version too."""
    return record.get("tiersim") == tiersim_version()


def _other_version(records: dict[str, dict[str, Any]], done: set[str]) -> set[str]:
    """The finished points another tiersim version ran (one that recorded no version
    included: :func:`ran_here`), noted: they run again, so one table holds one version."""
    now = tiersim_version()
    stale = {i for i in done if not ran_here(records[i])}
    if stale:
        then = sorted({clipped(str(records[i]["tiersim"]), 40) for i in stale
                       if "tiersim" in records[i]})  # an edited file's may be any length
        who = [f"tiersim {', '.join(then)}"] if then else []
        if any("tiersim" not in records[i] for i in stale):
            who.append("a tiersim that recorded no version")
        _note(f"{len(stale)} stored point(s) were run by {' and '.join(who)}; they run "
              f"again with {now}, so the table holds one version")
    return stale


def _remove_stale_outputs(out: Path, records: dict[str, dict[str, Any]],
                          pending: list[ax.Point], ids: list[str]) -> None:
    """Before the manifest or any point changes, remove what no longer describes the stored
    points, so a sweep killed from here on leaves no table or report that outlives its data
    (this sweep writes them again at its end): ``sweep.parquet`` when one of its rows is not
    stored as it was (points deleted to start over, say) or one is not among the plan's
    points ``ids`` in their order (an axis cut or reordered: the new manifest would not list
    it; a table short of an extended grid's points stays, and a report refuses it until this
    sweep rewrites it) or one of its rows is a point to run again (a failed one, or one another
    version ran: its file changes before the table is rewritten), ``report.html`` then and
    whenever points are to run."""
    rows = table_rows(out) or []
    table_ids = [point for point, _ in rows]
    shown = set(table_ids)
    stale = not table_matches(out, records) or [i for i in ids if i in shown] != table_ids
    stale = stale or any(point.id in shown for point in pending)  # its row is to change
    if stale:
        (out / "sweep.parquet").unlink(missing_ok=True)
    if stale or pending:
        (out / "report.html").unlink(missing_ok=True)


def _tasks(plan: SweepPlan, pending: list[ax.Point], out: Path,
           runner: PointRunner) -> Iterator[Task]:
    """The pending points' tasks, each made as it is sent (a scenario copy per point would
    otherwise be held for every point before the first runs)."""
    keys = axis_keys(plan.base, plan.axes, plan.source)
    tags = {k: v for k, v in digests(plan, runner).items() if k != "tiersim"}  # the worker's
    for point in pending:
        try:
            doc = ax.apply(plan.base, point.values, plan.source)
        except TiersimError as error:  # a combination the scenario cannot hold: its own point
            yield Task(point, {}, plan.source, runner, str(out), tags, refused=str(error))
            continue
        yield Task(point, doc, plan.source, runner, str(out), tags, axes=keys)


def _execute(plan: SweepPlan, pending: list[ax.Point], out: Path, workers: int, executor: str,
             address: str | None, runner: PointRunner, bar, already: int,
             tally: Tally) -> int:
    """Run the pending points with the chosen executor; return how many failed (``tally``
    counts those stored ok as they come back)."""
    tasks = _tasks(plan, pending, out, runner)
    failures = 0
    notes = SweepNotes(out)
    version = tiersim_version()

    def on_done(record: dict[str, Any]) -> None:
        nonlocal failures
        _refuse_other_build(out, record, version)
        index = record.pop("grid_index", None)
        if not record.pop("stored", False):
            write_point(out, record)
        notes.add(record, index)
        failures += record.get("status") != "ok"
        tally.stored += record.get("status") == "ok"
        bar.advance(bar_id)

    if executor == "ray":
        with bar:
            bar_id = bar.add_task("sweep", total=len(plan.points), completed=already)
            executors.run_ray(tasks, on_done, address, workers)
        notes.show()
        return failures
    warm_up(runner)  # imported once here; forked workers inherit it
    workers = max(1, min(workers, len(pending)))  # a worker without a point would only idle
    with executors.local_pool(workers) as pool, bar:
        bar_id = bar.add_task("sweep", total=len(plan.points), completed=already)
        executors.run_local(tasks, pool, on_done, workers)
    notes.show()
    return failures


def _refuse_other_build(out: Path, record: dict[str, Any], version: str) -> None:
    """End the sweep on a point that another tiersim build ran (a Ray cluster's workers with
    another tiersim installed, or local workers that read tiersim's code after it was edited):
    stored, it would read as this build's (as would every point those workers run), and a
    resume would keep it. It is not stored."""
    theirs = record.get("tiersim")
    if theirs == version or "base_digest" not in record:  # this build's, or the sweep's own
        return  # record of a worker that died
    if record.get("stored"):  # a local worker stored it itself
        (points_dir(out) / f"{record['point_id']}.json").unlink(missing_ok=True)
    theirs = theirs or "of a build older than this one (which does not say its version)"
    raise TiersimError(f"{out}: point {record.get('point_id')} was run by tiersim {theirs}, "
                       f"this command is tiersim {version} (a Ray cluster's workers need this "
                       "tiersim installed); run the same build on both, then rerun to resume "
                       "(points of the other build are not stored)")


def _report(out: Path, console: Console) -> None:
    """Write the HTML report. A report that cannot be written (a full disk) or read back is
    the user's to fix: one line, exit 1, as ``tiersim run`` and ``plan`` say it; the points
    and ``sweep.parquet`` stay. Any other failure is printed, and the results stay."""
    from tiersim.report.page import write_report  # the sweep holds the folder

    try:
        console.print(f"report: {escaped(write_report(out))}")
    except (OSError, TiersimError):
        raise
    except Exception as error:  # noqa: BLE001 - results are already saved
        (out / "report.html").unlink(missing_ok=True)  # an old one shows another table
        console.print(f"report: not written ({type(error).__name__}: {error})")

