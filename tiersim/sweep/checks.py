"""The checks a sweep's plan passes before any point runs (:func:`tiersim.sweep.run.prepare`):
every axis path is one the scenario has and every axis value one some point accepts
(:func:`check_axes`), no two values of an axis read as one setting or as one tier name, and no
text stands where the scenario reads a number. Each point is read once for all of them."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

from tiersim.errors import TiersimError, cut, shown_yaml
from tiersim.numbers import NumberError, WrittenNumber, read_number
from tiersim.sweep import axes as ax
from tiersim.sweep.plan import SweepPlan, names_files
from tiersim.sweep.points import Validator
from tiersim.sweep.settings import _setting

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
                                f"{message} (value {as_written(plan, path, value)})") from error


def as_written(plan: SweepPlan, path: str, value: Any, width: int = 80) -> str:
    """Axis ``path``'s ``value`` as the scenario file writes it (``true``, ``010``, ``"two"``:
    what the user wrote, quotes and all), where it is one line of the file; else as YAML writes
    it (:func:`tiersim.errors.shown_yaml`: a sweep given as a dict, a block list)."""
    from tiersim.scenario import written_text

    if plan.root is not None:
        for axis, at, values in _axis_lists(plan.base.get("sweep")):
            index = next((i for i, v in enumerate(values) if v is value), None) if (
                axis == path) else None
            text = None if index is None else written_text(plan.root, (*at, index))
            if text is not None:
                return cut(text, width)
    return shown_yaml(value, width)


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
                fix = (f"in a zip group write it one way each time ({shown_yaml(seen[key], 80)})"
                       if path in zipped else "list it once")
                raise ax.SweepError(plan.source, path,
                                    f"values {shown_yaml(seen[key], 80)} and "
                                    f"{shown_yaml(value, 80)} are the same setting once read; "
                                    f"{fix}")
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
    where = f"value {shown_yaml(value, 80)} holds " if sub else "value "
    if quoted:
        what = f"{shown_yaml(text, 80)}, which" if sub else shown_yaml(text, 80)
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


def _value_key(value: Any) -> tuple[str, str]:
    """A hashable key of an axis value (``True`` and ``1`` differ; a number kept with its
    text, :class:`~tiersim.numbers.WrittenNumber`, is the number: ``1e30`` and ``1.0e+30``
    are one value, as they are one point)."""
    if isinstance(value, WrittenNumber):
        return "float", float.__repr__(value)
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
