"""Sweep axes: dotted paths into a scenario dict, expanded as a grid with ``zip`` groups.

A scenario's ``sweep:`` map reads::

    sweep:
      router.confusion.fpr: [0.0, 0.1, 0.2]      # a grid axis
      tiers.bf16.replicas: [1, 2]                # a tier is addressed by its ``name``
      zip:                                       # axes that move together (equal lengths)
        workload.difficulty.p_easy: [0.3, 0.7]
        trace.time_scale: [1.0, 2.0]

``zip`` may also be a list of such maps (several groups). Every grid axis and every zip group is
one dimension of the product. A path walks dicts by key and lists either by an element's ``name``
or by an integer index (negative from the end); a segment that is one element's name and another's
index is refused, naming a segment for each. Keys missing at the end of a path are created (the
scenario validator then decides whether they are allowed); a path through a plain value or a list
element that does not exist is a :class:`SweepError` naming the path and what exists there.

An axis lists each value once (``[0, 0, 1]`` is refused: it would name one point twice), a path
appears in one dimension only, and the grid may hold at most ``max_points`` points (the
scenario's ``limits.max_sweep_points``, default 10,000) and never more than
:data:`MAX_GRID_POINTS`: the size is computed before anything is expanded, so a typo cannot fill
memory. An axis is named by text (a dotted path); a key YAML reads as a number, ``null``, a
boolean or a date is refused.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from typing import Any

from tiersim.errors import TiersimError, shown_yaml, yaml_written
from tiersim.jsonio import sorted_json
from tiersim.scenario import MAX_GRID_POINTS


class SweepError(TiersimError):
    """A ``sweep:`` map is invalid: names the file, the path and what exists there. ``loc``:
    where in the file the error is (``("sweep", path)`` by default; the command line adds its
    line), for a key that is no path (``""``, ``1``) too."""

    def __init__(self, source: str, path: str, message: str, line: int | None = None,
                 loc: tuple[str | int, ...] | None = None):
        self.source, self.path, self.message = str(source), path, message
        self.loc = loc if loc is not None else (("sweep", path) if path else None)
        where = f"sweep: {path!r}" if path else "sweep"
        where = f"line {line}: {where}" if line is not None else where
        super().__init__(f"{source}: {where}: {message}")


@dataclass(frozen=True, slots=True)
class Point:
    """One sweep point: its stable id, its index in grid order and its axis values."""

    id: str
    index: int
    values: dict[str, Any]


def point_id(values: dict[str, Any]) -> str:
    """Stable 12-hex id of a point from its axis values (same values -> same id, any order)."""
    return _id_of_text(_id_text(values))


def _id_text(value: Any) -> str:
    """The JSON text a point id digests (of the values map, or of one value in it)."""
    return sorted_json(value, (",", ":"))


def _id_of_text(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]




def _text_key(key: Any, source: str, at: tuple[str | int, ...] = ("sweep",)) -> str:
    """An axis key (in the map at ``at`` in the file), which must be a dotted path: text (YAML
    reads ``1:``, ``null:``, ``true:`` or a date as something else) of non-empty segments."""
    if not isinstance(key, str):
        shown = (yaml_written(key) if isinstance(key, float)  # .nan, 1e999: JSON's NaN, Infinity
                 else json.dumps(key, default=str).strip('"'))
        raise SweepError(source, "", f"key {shown} is not a dotted path (YAML reads it as "
                         f"{_kind(key)}); {NAME_A_FIELD}", loc=(*at, shown))
    if not key:
        raise SweepError(source, "", f"'' is not a dotted path (the key is empty); "
                         f"{NAME_A_FIELD}", loc=(*at, key))
    if len(key) > MAX_AXIS_PATH:  # every message would quote it whole (a '? key' of 200 kB)
        raise SweepError(source, "", f"an axis path of {len(key):,} characters is no scenario "
                         f"field's (at most {MAX_AXIS_PATH}); {NAME_A_FIELD}", loc=(*at, key))
    if "" in key.split("."):
        raise SweepError(source, key, "is not a dotted path: it has an empty segment (a dot at "
                         f"its start or end, or two in a row); {NAME_A_FIELD}", loc=(*at, key))
    return key


NAME_A_FIELD = "name a field, such as tiers.bf16.replicas"
MAX_AXIS_PATH = 256
"""Longest axis path read: a tier's name is at most 64 characters, and no field's path comes
near this (longer keys are refused before any message quotes them)."""


def _kind(value: Any) -> str:
    """What YAML read a non-text key as, in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


def _groups(sweep: dict[str, Any], source: str) -> list[list[tuple[str, list[Any]]]]:
    """Split a sweep map into dimensions: each grid axis alone, each zip group together."""
    groups: list[list[tuple[str, list[Any]]]] = []
    for key, values in sweep.items():
        _text_key(key, source)
        if key == "zip":
            zips = values if isinstance(values, list) else [values] if values != {} else []
            if not zips:  # as an axis with no values: it would add nothing to the grid
                raise SweepError(source, "zip", "lists no group; give a map (or list of maps) "
                                 "of path: [values], or remove zip")
            for n, group in enumerate(zips):
                at = ("sweep", "zip", n) if isinstance(values, list) else ("sweep", "zip")
                if group == {}:  # a map, but of nothing: say so, not that it is no map
                    raise SweepError(source, "zip", f"group {n} names no path; give it "
                                     "path: [values], or remove it")
                groups.append(_zip_group(group, source, at))
        else:
            groups.append([(key, _value_list(key, values, source))])
    _each_path_once(groups, source)
    for group in groups:
        _each_value_once(group, source)
    return groups


def _each_path_once(groups: list[list[tuple[str, list[Any]]]], source: str) -> None:
    """A path set by two dimensions would give one point two values."""
    seen: set[str] = set()
    for group in groups:
        for path, _ in group:
            if path in seen:
                raise SweepError(source, path, "appears twice (as an axis and in a zip group, "
                                 "or in two zip groups); keep one")
            seen.add(path)


def _canonical(value: Any) -> str:
    """A value's text as one setting: the text a point id digests."""
    return _id_text(value)


def _each_value_once(group: list[tuple[str, list[Any]]], source: str) -> None:
    """Refuse a dimension that lists the same value (or zipped combination) twice."""
    row_values = [[values[i] for _, values in group] if len(group) > 1 else group[0][1][i]
                  for i in range(len(group[0][1]))]
    rows = [_canonical(value) for value in row_values]
    first: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row in first:
            path = group[0][0] if len(group) == 1 else "zip"
            raise SweepError(source, path, f"value {shown_yaml(row_values[i], 60)} is listed "
                             f"twice (items {first[row]} and {i}); list each value once")
        first[row] = i


def _zip_group(group: Any, source: str, at: tuple[str | int, ...] = ("sweep", "zip")
               ) -> list[tuple[str, list[Any]]]:
    """Validate one ``zip`` group (at ``at`` in the file): a map of paths to value lists of
    equal length."""
    if not isinstance(group, dict) or not group:
        raise SweepError(source, "zip", "must be a map (or list of maps) of path: [values]")
    if "zip" in group:  # it read as an axis named zip whose values were no list
        raise SweepError(source, "zip", "zip groups cannot nest (a group's keys are axis "
                         "paths, and zip is none); move the inner group's paths into the outer "
                         "group to move them together, or make zip a list of maps for groups "
                         "that vary apart", loc=(*at, "zip"))
    axes = [(_text_key(path, source, at), _value_list(path, values, source))
            for path, values in group.items()]
    lengths = {path: len(values) for path, values in axes}
    if len(set(lengths.values())) > 1:
        raise SweepError(source, "zip", f"zipped axes need equal lengths (got {lengths})")
    return axes


def _value_list(path: str, values: Any, source: str) -> list[Any]:
    """Check an axis' values are a non-empty list."""
    if not isinstance(values, list) or not values:
        raise SweepError(source, path,
                         f"values must be a non-empty list (got {shown_yaml(values, 80)})")
    if str(path).split(".")[0] == "sweep" or str(path).startswith(UNSWEPT):
        raise SweepError(source, path, "shapes the sweep itself, so it cannot be an axis")
    if UNSWEPT.startswith(f"{path}.") and any(_holds(value, UNSWEPT[len(path) + 1:])
                                             for value in values):
        raise SweepError(source, path, f"a value sets {UNSWEPT}, which shapes the sweep "
                         "itself (the base scenario's bounds the grid), so no point may change "
                         "it; set it in the base scenario's limits")
    return values


def _holds(value: Any, path: str) -> bool:
    """Whether the map ``value`` holds the dotted ``path``."""
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True


UNSWEPT = "limits.max_sweep_points"
"""A field that bounds the grid, so no point of the grid may change it."""


def grid_size(sweep: dict[str, Any] | None, source: str = "scenario") -> int:
    """How many points a sweep map expands to (nothing is expanded)."""
    if not sweep:
        return 1
    if not isinstance(sweep, dict):
        raise SweepError(source, "", "must be a map of dotted path -> list of values")
    return math.prod(len(group[0][1]) for group in _groups(sweep, source))


def expand(sweep: dict[str, Any] | None, source: str = "scenario",
           max_points: int | None = None) -> list[Point]:
    """Expand a sweep map into points in grid order (last dimension varies fastest); refuse a
    grid of more than ``max_points`` points, or of more than :data:`MAX_GRID_POINTS` whatever
    ``max_points`` says, before expanding it."""
    size = grid_size(sweep, source)
    if size > MAX_GRID_POINTS:  # first: no limit can allow it, so do not advise raising one
        raise SweepError(source, "", f"the grid has {size:,} points, above the most any sweep "
                         f"may hold ({MAX_GRID_POINTS:,}, whatever --max-points says); split "
                         "it into smaller sweeps")
    if max_points is not None and size > max_points:
        raise SweepError(source, "", f"the grid has {size:,} points, above the limit of "
                         f"{max_points:,}; set limits: {{max_sweep_points: N}} in the "
                         f"scenario or pass --max-points N to allow more (at most "
                         f"{MAX_GRID_POINTS:,})")
    if not sweep:
        return [Point(point_id({}), 0, {})]
    dims = _groups(sweep, source)
    paths = [(d, path, vals) for d, group in enumerate(dims) for path, vals in group]
    ids = _IdTexts(paths)
    points = []
    for index, combo in enumerate(itertools.product(*(range(len(g[0][1])) for g in dims))):
        values = {path: vals[combo[d]] for d, path, vals in paths}
        points.append(Point(ids.id(combo), index, values))
    return points


class _IdTexts:
    """Point ids of a grid from its values' JSON written once each.

    NOTE (speed): :func:`point_id` dumps a point's whole values map (keys sorted, compact
    separators); that text is ``{`` + the ``"path":value`` of each path in sorted order, joined
    by ``,``, + ``}``, each part the same for every point holding that value. Here every part is
    dumped once per axis value and a point's text is joined from them: the same text, so the
    same id (a 10^6-point grid spent most of its expansion in ``json.dumps``).
    """

    def __init__(self, paths: list[tuple[int, str, list[Any]]]):
        order = sorted(paths, key=lambda entry: entry[1])
        self._dims = [d for d, _, _ in order]
        self._parts = [[f"{_id_text(path)}:{_id_text(value)}" for value in vals]
                       for _, path, vals in order]

    def id(self, combo: tuple[int, ...]) -> str:
        """The id of the point at value indexes ``combo`` (one per dimension)."""
        text = ",".join([parts[combo[d]] for d, parts in zip(self._dims, self._parts)])
        return _id_of_text("{" + text + "}")


def axis_names(sweep: dict[str, Any] | None) -> list[str]:
    """The dotted paths of a sweep map, in order, zip groups flattened."""
    names: list[str] = []
    for key, values in (sweep or {}).items():
        if key == "zip":
            for group in values if isinstance(values, list) else [values]:
                names.extend(group)
        else:
            names.append(key)
    return names


def describe(node: Any) -> str:
    """What exists at a node, for error messages."""
    if isinstance(node, dict):
        return "has keys: " + (", ".join(map(str, node)) or "none")
    if isinstance(node, list):
        names = [str(item.get("name", i)) if isinstance(item, dict) else str(i)
                 for i, item in enumerate(node)]
        return "has items: " + (", ".join(names) or "none")
    return f"is a value ({shown_yaml(node, 80)}), not a map"


def list_child(node: list[Any], segment: str, source: str = "scenario", path: str = "",
               head: str = "the list") -> Any:
    """Element of a list by ``name`` or integer index, or None; a segment that is one
    element's name and another's index is a :class:`SweepError` (:func:`_ambiguous`; ``head``
    is the list's dotted path, ``path`` the whole axis)."""
    named = _named(node, segment)
    indexed = node[int(segment)] if _is_index(node, segment) else None
    if named is not None and indexed is not None and named is not indexed:
        raise SweepError(source, path, _ambiguous(node, segment, head))
    return named if named is not None else indexed


def _named(node: list[Any], segment: str) -> Any:
    """The element of ``node`` whose ``name`` is ``segment``, or None."""
    return next((item for item in node
                 if isinstance(item, dict) and str(item.get("name")) == segment), None)


def _is_index(node: list[Any], segment: str) -> bool:
    """Whether ``segment`` is an integer index of ``node`` (negative ones count from the end),
    written in decimal digits 0-9 as every number tiersim reads is: ``isdigit`` alone passed
    a superscript ``²``, which ``int`` refuses (a ValueError traceback)."""
    digits = segment.removeprefix("-")
    return (digits.isascii() and digits.isdigit()
            and -len(node) <= int(segment) < len(node))


def _ambiguous(node: list[Any], segment: str, head: str) -> str:
    """Why ``segment`` names two elements of list ``head``, with how to name each alone."""
    named = _named(node, segment)
    first = next(i for i, item in enumerate(node) if item is named)
    index = int(segment) % len(node)
    other = f"item {index}" + (f" (named {node[index]['name']!r})"
                               if isinstance(node[index], dict) and "name" in node[index] else "")
    ways = [f"write {head}.{alone} for {what}"
            for what, alone in ((f"the one named {segment!r}", _alone(node, first)),
                                (other, _alone(node, index))) if alone is not None]
    fix = "; ".join(ways) or ("neither can be named alone, so rename the items so that no name "
                              "is another item's index")
    return (f"{segment!r} is both the name of item {first} of {head!r} and the index of "
            f"{other}; {fix}")


def _alone(node: list[Any], index: int) -> str | None:
    """A segment naming ``node[index]`` and no other element: its name, else its index, else
    its index from the end (``-1`` is the last)."""
    item = node[index]
    name = item.get("name") if isinstance(item, dict) else None
    for segment in [*([str(name)] if name is not None else []), str(index),
                    str(index - len(node))]:
        named = _named(node, segment)
        indexed = node[int(segment)] if _is_index(node, segment) else None
        if {id(x) for x in (named, indexed) if x is not None} == {id(item)}:
            return segment
    return None


def canonical_path(doc: Any, path: str, source: str = "scenario") -> tuple[str, ...]:
    """``path``'s segments with each list element named by its index in ``doc`` (a tier's name
    and its position are the same element); segments below what ``doc`` holds stay as given."""
    out: list[str] = []
    node: Any = doc
    for segment in path.split("."):
        if isinstance(node, list):
            child = list_child(node, segment, source, path, ".".join(out))
            index = next((i for i, item in enumerate(node) if item is child), None)
            out.append(segment if index is None else str(index))
            node = child
        else:
            out.append(segment)
            node = node.get(segment) if isinstance(node, dict) else None
    return tuple(out)


def no_field_twice(doc: dict[str, Any], paths: list[str], source: str) -> None:
    """Refuse two axes that set the same field of ``doc`` (``tiers.a.replicas`` and
    ``tiers.0.replicas`` when tier ``a`` is the first) or one inside the other. Each path is
    looked up by its prefixes, so many axes cost no more than their segments."""
    seen: dict[tuple[str, ...], str] = {}  # an axis' canonical path -> the axis
    under: dict[tuple[str, ...], str] = {}  # every prefix of those -> one axis below it
    for path in paths:
        canon = canonical_path(doc, path, source)
        prefixes = [canon[:n] for n in range(1, len(canon) + 1)]
        shared = next((p for p in prefixes if p in seen), canon if canon in under else None)
        if shared is not None:
            other = seen.get(shared) or under[shared]
            raise SweepError(source, path, f"sets the same field as {other!r} (both name "
                             f"{'.'.join(shared)}); keep one")
        seen[canon] = path
        for prefix in prefixes:
            under.setdefault(prefix, path)


def set_path(doc: dict[str, Any], path: str, value: Any, source: str = "scenario") -> None:
    """Set ``value`` at dotted ``path`` in ``doc`` in place; raise SweepError if it cannot exist."""
    node, key = holder(doc, path, source)
    node[key] = value


def holder(doc: dict[str, Any], path: str, source: str = "scenario") -> tuple[Any, Any]:
    """The map or list of ``doc`` that holds dotted ``path``'s field, and its key there (maps
    missing on the way are created); raise SweepError if the path cannot exist."""
    segments = path.split(".")
    node: Any = doc
    for depth, segment in enumerate(segments):
        last = depth == len(segments) - 1
        where = ".".join(segments[:depth]) or "<top>"
        if isinstance(node, dict):
            if last:
                return node, segment
            node = node.setdefault(segment, {})
        elif isinstance(node, list):
            _no_dotted_name(node, segments, depth, source, path)
            child = list_child(node, segment, source, path, where)
            if child is None and not _is_index(node, segment):
                raise SweepError(source, path, f"no item {segment!r} in {where!r} "
                                 f"({describe(node)})")
            if last and isinstance(child, dict):
                raise SweepError(source, path, f"{where}.{segment} is a map; name a key in it "
                                 f"({describe(child)})")
            if last:  # a plain value of a list, named by its index (trace.window.1)
                return node, int(segment)
            node = child
        else:
            raise SweepError(source, path, f"{where!r} {describe(node)}")
    raise SweepError(source, path, "is not a dotted path")  # pragma: no cover - no segments


def _no_dotted_name(node: list[Any], segments: list[str], depth: int, source: str,
                    path: str) -> None:
    """Refuse a path whose segments from ``depth`` on spell the name of an element of ``node``
    that holds a dot (a tier named ``fp8.v2``): the dots split it, so the path named no tier,
    or another tier's key (``fp8``'s ``v2``). The error gives the path by index instead."""
    for index, item in enumerate(node):
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or "." not in name:
            continue
        width = name.count(".") + 1
        if ".".join(segments[depth:depth + width]) == name:
            fixed = ".".join([*segments[:depth], str(index), *segments[depth + width:]])
            head = ".".join(segments[:depth]) or "<top>"
            raise SweepError(source, path, f"item {index} of {head!r} is named {name!r}, and "
                             f"a dotted path cannot name what holds a dot; write {fixed!r} (by "
                             "its index)")


def apply(base: dict[str, Any], values: dict[str, Any], source: str = "scenario") -> dict:
    """A copy of ``base`` with every ``path: value`` of a point set, ``sweep`` removed (before
    copying: a big sweep map would be copied once per point). The copy shares no map or list
    (:func:`tree_copy`): a YAML alias or merge key (``<<: *defaults``) gives several tiers one
    ``scheduler`` map, and an axis on one tier's must not change the others'.

    Every path is found in the base scenario before any value is set, so a tier is the one
    the base names so whatever another axis renames: applied in the sweep map's order,
    ``tiers.0.name: [bf16]``, ``tiers.1.name: [w4a16]`` and ``tiers.w4a16.replicas: [3]`` gave
    the second tier 3 replicas, and with the replicas axis written first the first tier, under
    one point id (a resume after reordering the axes kept the other scenario's point)."""
    doc = tree_copy({key: value for key, value in base.items() if key != "sweep"})
    places = [(holder(doc, path, source), value) for path, value in values.items()]
    for (node, key), value in places:
        node[key] = tree_copy(value)
    return doc


def tree_copy(value: Any) -> Any:
    """A copy of ``value`` in which every map and list is a new object at each place it
    appears (``copy.deepcopy`` keeps an object seen twice as one object: an alias stays
    shared); other values as they are. A scenario holds at most
    :data:`tiersim.scenario_yaml.MAX_NODES` values with aliases expanded, so the copy is bounded."""
    if isinstance(value, dict):
        return {key: tree_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [tree_copy(item) for item in value]
    return copy.copy(value)
