"""Scenario YAML: loading, and one-line errors that name the file, line and key.

A scenario names the trace, the model and GPU, the step-time profile, the precision tiers, the
router, the SLOs and the seed (DESIGN.md §7). :func:`load_scenario` reads a YAML file and turns
every problem (YAML syntax, unknown key, wrong type, a tier whose weights do not fit in memory)
into a single :class:`~tiersim.errors.ScenarioError` line such as::

    scenarios/x.yaml: line 7: tiers[0].replica: unknown key (did you mean 'replicas'?)

Line numbers come from ``yaml.compose``: the node tree keeps each key's position, and a
pydantic error location (``("tiers", 0, "replica")``) is walked down that tree.

This module holds the loading itself, the checks of raw values before pydantic reads them (a
YAML boolean, or quoted text, where a number goes) and the keys that name input files; the rest
is in modules of their own, each imported only by the ones after it, and re-exported here
(callers import scenario names from this module): :mod:`tiersim.scenario_where` (key paths and
their lines), :mod:`tiersim.scenario_yaml` (reading YAML text defensively, docs/security.md),
:mod:`tiersim.scenario_models` (the pydantic models), :mod:`tiersim.scenario_explain`
(pydantic's errors told as instructions) and :mod:`tiersim.scenario_checks` (the checks that
need the hardware catalogue, and the notes).
"""

from __future__ import annotations

import functools
import math
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ValidationError

from tiersim.errors import ScenarioError, TiersimError
from tiersim.numbers import (
    MAX_INT_BITS,
    NumberError,
    misspelt,
    not_whole_words,
    read_number,
    shown,
)
from tiersim.scenario_checks import (
    READ_ONLY_WITH,
    UNLIKELY_AT,
    _cache_text,  # noqa: F401 - re-exported for tests
    _note_empty_levels,
    _note_linked_files,
    _short_kv_note,  # noqa: F401 - re-exported for tests
    check_layouts,
    check_scenario,
    keys_given_as,
    planned_counts,
    shown_name,
    unread_scheduler_keys,
)
from tiersim.scenario_explain import (
    _explain,
    _most_telling,
    _number_key,
    explain_errors,
    is_number_key,
    line_in,
    located,
)
from tiersim.scenario_models import (
    DEFAULT_MAX_REPLICAS,
    DEFAULT_MAX_SWEEP_POINTS,
    MAX_GPUS_PER_REPLICA,
    MAX_GRID_POINTS,
    MAX_REPLICAS_CEILING,
    MAX_SIZED_GPU_OPTIONS,
    SIZED_GPUS_PER_REPLICA,
    VLLM_BLOCK_SIZES,
    DisaggConfig,
    KVLevelConfig,
    LimitsConfig,
    Name,
    Scenario,
    SchedulerConfig,
    SloConfig,
    SpeculativeConfig,
    TierConfig,
    TraceConfig,
    _model_in,
    resolve_file_ref,
    resolve_model_ref,
)
from tiersim.scenario_where import (
    Loc,
    _where,
    format_loc,
    key_path,
    line_of,
)
from tiersim.scenario_yaml import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MODEL_KEYS,
    YAML_FIXES,
    NearWhole,
    TooManyValues,
    _is_quoted,
    _reading,
    _reject_non_finite,
    _Underflow,
    _yaml_reading,
    check_size,
    dump_yaml,
    numbers_as_written,
    read_yaml,
    read_yaml_value,
    without_quotes,
    written_text,
)

__all__ = [
    "DEFAULT_MAX_REPLICAS", "DEFAULT_MAX_SWEEP_POINTS", "MAX_DEPTH", "MAX_FILE_BYTES",
    "MAX_GPUS_PER_REPLICA", "MAX_GRID_POINTS", "MAX_NODES", "MAX_REPLICAS_CEILING",
    "MAX_SIZED_GPU_OPTIONS", "MODEL_KEYS", "NAMES_A_FILE", "READ_ONLY_WITH",
    "SIZED_GPUS_PER_REPLICA", "UNLIKELY_AT", "VLLM_BLOCK_SIZES", "YAML_FIXES", "DisaggConfig",
    "KVLevelConfig", "LimitsConfig", "Loc", "Name", "Scenario", "SchedulerConfig", "SloConfig",
    "SpeculativeConfig", "TierConfig", "TooManyValues", "TraceConfig", "boolean_problem",
    "check_layouts", "check_scenario", "check_size", "dump_yaml", "explain_errors", "file_keys",
    "file_places", "format_loc", "key_path", "keys_given_as", "line_in", "line_of", "load_scenario",
    "located", "misspelt_number", "model_places", "near_whole_number", "number_problem",
    "numbers_as_written", "planned_counts",
    "read_yaml", "read_yaml_value", "refuse_non_map", "refuse_text_numbers", "resolve_file_ref",
    "resolve_model_ref", "scenario_from_dict", "shown_name", "unread_scheduler_keys",
    "without_quotes", "written_text",
]
"""The names callers import from here: this module's, and those of the modules the scenario
code is split into (:mod:`tiersim.scenario_where`, :mod:`tiersim.scenario_yaml` ...),
re-exported."""


# ---------------------------------------------------------------------------------------------
# Loading


EMPTY_PLAN = ("gives neither of its keys: give current (today's fleet, e.g. [{tier: bf16, "
              "replicas: 4}]) or hours_per_month (hours a month is paid for), or leave the "
              "block out")
"""The line a ``plan:`` block giving no key is refused with: it names both keys the block
takes (it read "plan.current: required key is missing", though hours_per_month alone is a
whole block since round 56; review56d)."""


def load_scenario(path: str | Path, fit: bool = True, current_given: bool = False) -> Scenario:
    """Read, validate and memory-check a scenario YAML; any problem is one ScenarioError line.
    ``fit=False`` leaves out the check that each tier fits its GPUs per replica (the planner,
    which tries other GPU counts itself). ``current_given``: today's fleet is named on the
    command line (``tiersim plan --current``), so a ``plan`` block need not hold
    ``plan.current``."""
    data, root = read_yaml(path)
    return _validate(data, str(path), root, fit, current_given)


def _wants_number(annotation: Any) -> bool:
    """Whether a field's type takes numbers (int or float, also inside lists, tuples and dict
    values) and never a boolean or a nested model (which checks its own fields)."""
    seen: list[Any] = []
    stack = [annotation]
    while stack:
        kind = stack.pop()
        if kind is bool or kind is Any or (isinstance(kind, type) and issubclass(kind, BaseModel)):
            return False
        if getattr(kind, "__origin__", None) is Literal:
            if any(isinstance(arg, bool) for arg in kind.__args__):
                return False
            continue
        seen.append(kind)
        stack.extend(getattr(kind, "__args__", ()))
    return any(kind in (int, float) for kind in seen)


def _has_bool(value: Any) -> bool:
    """Whether ``value`` is a boolean or holds one in its lists, tuples or mapping values."""
    if isinstance(value, bool):
        return True
    if isinstance(value, list | tuple):
        return any(_has_bool(v) for v in value)
    if isinstance(value, dict):
        return any(_has_bool(v) for v in value.values())
    return False


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic model classes named in a field's type (``X | None``, ``list[X]``)."""
    found, stack = [], [annotation]
    while stack:
        kind = stack.pop()
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found.append(kind)
        else:
            stack.extend(getattr(kind, "__args__", ()))
    return found


def boolean_problem(data: Any, root: yaml.Node | None = None) -> tuple[Loc, str] | None:
    """Where the raw scenario ``data`` holds a YAML boolean for a number (pydantic would read
    ``replicas: true`` as 1, ``router.tier: no`` as tier 0; walked by the fields' types), and
    why that is refused; a field that takes a name too (``router.tier``: a tier's name or
    index) says so, and names an unquoted word YAML read as a boolean (``yes``) with the
    quotes it needs (any such word, where no node tree ``root`` tells which was written)."""
    return _first_problem(data, root, (_BOOLEAN,))


def number_problem(data: Any, root: yaml.Node | None = None,
                   boolean: bool = True) -> tuple[Loc, str] | None:
    """The first problem of the raw scenario ``data`` with a number, and why, found in one walk
    over it: a YAML boolean for a number (:func:`boolean_problem`; with ``boolean``), then
    quoted text for one (``replicas: "2"``; only with the file's node tree ``root``), then a
    number misspelt (:func:`misspelt_number`), then one whole only as a float
    (:func:`near_whole_number`): the kind first in that order is told, at the first place it
    is found; None if none is."""
    checks = (_BOOLEAN,) if boolean else ()
    return _first_problem(data, root, (*checks, _TEXT, _MISSPELT, _NEAR_WHOLE))


_BOOLEAN, _TEXT, _MISSPELT, _NEAR_WHOLE = "boolean", "text", "misspelt", "near whole"
"""The kinds of :func:`number_problem`, in the order one is told before the next."""

_TOLD_BEFORE = {kind: frozenset(after) for kind, after in (
    (_BOOLEAN, (_BOOLEAN, _TEXT, _MISSPELT, _NEAR_WHOLE)), (_TEXT, (_TEXT, _MISSPELT, _NEAR_WHOLE)),
    (_MISSPELT, (_MISSPELT, _NEAR_WHOLE)), (_NEAR_WHOLE, (_NEAR_WHOLE,)))}
"""Each kind, and those it is told before: once it is found, none of them is looked for."""

_KEY = "key"
"""``found[_KEY, kind]``: the name of the field where ``kind`` was found (its place may go on
into the field's value: ``router.fractions.bf16`` is in ``fractions``)."""

_IN_VALUES = frozenset({_TEXT, _MISSPELT, _NEAR_WHOLE})
"""The kinds found in a field's value (a list item, a mapping value), not by its type alone."""


def _first_problem(data: Any, root: yaml.Node | None,
                   kinds: tuple[str, ...]) -> tuple[Loc, str] | None:
    """The problem of the first of ``kinds`` (:func:`number_problem`'s) that the raw scenario
    ``data`` has, at the first place it is found, and why; None if none."""
    pending = set(kinds) - ({_TEXT} if root is None else set())  # no tree tells quoted text
    found: dict[str, Any] = {}
    _walk_fields(data, Scenario, (), root, pending, found)
    kind = next((kind for kind in kinds if kind in found), None)
    if kind is None:
        return None
    where = found[kind]
    if kind == _BOOLEAN:
        return _boolean_words(*where, root)
    if kind == _TEXT:
        return where, _text_for_number(data, where, root, found[_KEY, kind])
    if kind == _MISSPELT:
        return where, misspelt(_value_at(data, where).strip(), found[_KEY, kind])
    return where, not_whole_words(_value_at(data, where).text)


def _first_bool(annotation: Any, value: Any, sub: Loc = ()) -> tuple[Any, Loc]:
    """The type ``annotation`` gives the first YAML boolean in ``value`` (itself, or an item
    of its lists or mapping values), and where in ``value`` it is (``sub``): a boolean among a
    map's tier references (``step_tiers: {planning: true}``) is where a tier's name goes as
    well as a number; ``(Any, ())`` where there is none."""
    if isinstance(value, bool):
        return annotation, sub
    items = (enumerate(value) if isinstance(value, list | tuple)
             else value.items() if isinstance(value, dict) else ())
    for i, item in items:
        if not _has_bool(item):
            continue
        kinds = [k for k in _members(annotation)
                 if (typing.get_origin(k) is dict) == isinstance(value, dict)] or [Any]
        return _first_bool(_item_type(kinds[0], value, i), item, (*sub, i))
    return Any, ()


def _boolean_words(where: Loc, annotation: Any, sub: Loc,
                   root: yaml.Node | None) -> tuple[Loc, str]:
    """Why the YAML boolean at ``where`` (a field; the boolean at ``sub`` inside its value,
    which the field's type gives ``annotation``) is refused (:func:`boolean_problem`), and
    where: the field, or the item where a name goes too (``router.step_tiers.planning``)."""
    if not any(kind is str for kind in _members(annotation)):
        return where, "a number is expected here, not a YAML boolean (true/false)"
    reading = _yaml_reading(root, where + sub) if root is not None else (
        "; YAML reads unquoted yes, no, on and off as booleans: quote a name ('no')")
    return (where + sub, "a name or a number is expected here, not a YAML boolean (true/false)"
            + reading)


def _text_for_number(data: Any, loc: Loc, root: yaml.Node | None = None,
                     key: str | None = None) -> str:
    """Why the text at ``loc`` in the raw ``data`` is refused, with the fix when it reads as a
    number (quotes, or a ``!!str`` tag, around one); ``key``: the name of the field it is in
    (:func:`tiersim.numbers.misspelt`)."""
    text = _value_at(data, loc)
    try:
        fix = f"; write it {without_quotes(root, loc)}" if math.isfinite(read_number(text)) else ""
    except NumberError:
        why = misspelt(text.strip(), key)
        fix = f"; {why}" if why is not None else ""
    return f"must be a number, not a string ({text[:40]!r}){fix}"


def _value_at(data: Any, loc: Loc) -> Any:
    """The value at ``loc`` in the raw ``data``."""
    for key in loc:
        data = data[key]
    return data


def misspelt_number(data: Any) -> tuple[Loc, str] | None:
    """Where the raw scenario ``data`` holds, for a field that takes only a number, text that
    reads as a number some other way (``1__0``, ``010``, ``1:30``, ``0x10``), and why, with
    the number to write (:func:`tiersim.numbers.misspelt`); None if nowhere."""
    return _first_problem(data, None, (_MISSPELT,))


@functools.cache
def _fields_of(model: type[BaseModel]) -> dict[str, tuple[Any, bool, type[BaseModel] | None]]:
    """``model``'s fields by name and by alias (an alias wins over another field's name):
    ``(type, whether it takes a number and no boolean, the one model it holds or None)``."""
    fields = {name: f for name, f in model.model_fields.items()}
    fields.update({f.alias: f for f in model.model_fields.values() if f.alias})
    facts = {}
    for key, field in fields.items():
        models = _models_in(field.annotation)
        facts[key] = (field.annotation, _wants_number(field.annotation),
                      models[0] if len(models) == 1 else None)
    return facts


def _walk_fields(data: Any, model: type[BaseModel], loc: Loc, root: yaml.Node | None,
                 pending: set[str], found: dict[str, Any]) -> None:
    """Walk the raw ``data`` of ``model`` (and of the models it holds) once, for the kinds of
    :func:`number_problem` still ``pending``: each one's first place (for a boolean, with the
    field's type) goes into ``found``, and it and the kinds it is told before out of
    ``pending`` (:data:`_TOLD_BEFORE`). A field's own value is looked at before the models it
    holds, each field's in the order the data gives them."""
    if not isinstance(data, dict):
        return
    fields = _fields_of(model)
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            continue
        annotation, wants_number, held = field
        at = loc + (key,)
        if wants_number and _BOOLEAN in pending and _has_bool(value):
            kind, sub = _first_bool(annotation, value)
            if any(k in (int, float) for k in _members(kind)):  # else no number goes there:
                found[_BOOLEAN] = (at, kind, sub)  # the field's own check says what does
                pending -= _TOLD_BEFORE[_BOOLEAN]
        if not pending.isdisjoint(_IN_VALUES):
            _numbers_in(annotation, value, at, (), root, pending, found)
        if not pending:
            return
        if held is None:
            continue
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            _walk_fields(item, held, at if i is None else at + (i,), root, pending, found)
            if not pending:
                return


def _numbers_in(annotation: Any, value: Any, at: Loc, sub: Loc, root: yaml.Node | None,
                pending: set[str], found: dict[str, Any]) -> None:
    """Look at ``value`` (at ``at + sub``, of type ``annotation``) and the list items and
    mapping values under it for the kinds in ``pending`` that a value shows: text where the
    type takes only a number (in quotes in the file whose node tree is ``root``, or misspelt:
    ``010``), and a :class:`~tiersim.scenario_yaml.NearWhole` where it takes only a whole one.
    A plain scalar YAML 1.1 reads as text (``010``, ``1e-3``) is a number as written (see
    :data:`~tiersim.scenario_yaml._PLAIN_NUMBER`). Nested models are left to
    :func:`_walk_fields`."""
    facts = _type_facts(annotation)
    if isinstance(value, str):
        if facts.number_only:
            if _TEXT in pending and _is_quoted(root, at + sub):
                found[_TEXT], found[_KEY, _TEXT] = at + sub, at[-1]
                pending -= _TOLD_BEFORE[_TEXT]
            if _MISSPELT in pending and misspelt(value.strip()) is not None:
                found[_MISSPELT], found[_KEY, _MISSPELT] = at + sub, at[-1]
                pending -= _TOLD_BEFORE[_MISSPELT]
        return
    if isinstance(value, NearWhole):
        if facts.whole_only and _NEAR_WHOLE in pending:
            found[_NEAR_WHOLE] = at + sub
            pending -= _TOLD_BEFORE[_NEAR_WHOLE]
        return
    if not facts.numbers:  # no number anywhere under this type
        return
    items = (enumerate(value) if isinstance(value, list)
             else value.items() if isinstance(value, dict) else ())
    for i, item in items:
        for kind in facts.kinds:
            _numbers_in(_item_type(kind, value, i), item, at, (*sub, i), root, pending, found)
            if pending.isdisjoint(_IN_VALUES):
                return


class _TypeFacts(typing.NamedTuple):
    """What :func:`_numbers_in` asks of a type, worked out once per type."""

    kinds: tuple[Any, ...]
    """The types it is made of (:func:`_members`)."""
    number_only: bool
    """Text there is refused: it takes a number and no text (no ``str``, ``Any`` or text
    ``Literal``)."""
    whole_only: bool
    """It takes whole numbers (``int``) and no float."""
    numbers: bool
    """Some type in it, at any depth, is ``int`` or ``float``: else nothing under a value of it
    is refused."""


def _type_facts(annotation: Any) -> _TypeFacts:
    """:class:`_TypeFacts` of ``annotation``, kept (the scenario's types are few and live as
    long as the program); worked out each time for a type that cannot be kept (unhashable)."""
    try:
        return _kept_type_facts(annotation)
    except TypeError:
        return _type_facts_of(annotation)


def _type_facts_of(annotation: Any) -> _TypeFacts:
    """:class:`_TypeFacts` of ``annotation``, worked out."""
    kinds = tuple(_members(annotation))
    text = any(k is str or k is Any or (typing.get_origin(k) is Literal and any(
        isinstance(a, str) for a in typing.get_args(k))) for k in kinds)
    numbers, stack = False, [annotation]
    while stack and not numbers:
        kind = stack.pop()
        numbers = kind in (int, float)
        stack.extend(typing.get_args(kind))
    return _TypeFacts(kinds, not text and any(k in (int, float) for k in kinds),
                      int in kinds and float not in kinds, numbers)


_kept_type_facts = functools.cache(_type_facts_of)


def _members(annotation: Any) -> list[Any]:
    """The types a union (or ``Annotated``) type is made of, itself otherwise."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _item_type(kind: Any, value: list | dict, i: Any) -> Any:
    """The type ``kind`` (a list, tuple or dict type) gives item ``i`` of ``value``; ``Any``
    where it holds no such items."""
    try:
        in_map, in_list, fixed = _kept_item_types(kind)
    except TypeError:  # a type that cannot be kept (unhashable): worked out each time
        in_map, in_list, fixed = _item_types_of(kind)
    if isinstance(value, dict):
        return in_map
    if fixed is not None:
        return fixed[i] if i < len(fixed) else Any
    return in_list


def _item_types_of(kind: Any) -> tuple[Any, Any, tuple[Any, ...] | None]:
    """What :func:`_item_type` asks of ``kind``, worked out: the type of a mapping value in
    it, of a list item, and a fixed tuple's types by position (None for any other type)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    in_map = args[1] if origin is dict and len(args) == 2 else Any
    if origin in (list, set, frozenset) and args:
        return in_map, args[0], None
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return in_map, args[0], None
        return in_map, Any, args
    return in_map, Any, None


_kept_item_types = functools.cache(_item_types_of)


def refuse_non_map(data: Any, source: str, root: yaml.Node | None) -> None:
    """Refuse a scenario file that is not a map of keys, saying what it is: an empty file (or
    only comments), ``null``, a list... (``root``: the file's node tree, none when empty)."""
    if isinstance(data, dict):
        return
    got = type(data).__name__
    if data is None:
        got = "null" if isinstance(root, yaml.Node) else "an empty file"
    raise ScenarioError(source, "", f"top level must be a mapping of keys (got {got})")


def refuse_text_numbers(data: Any, source: str, root: yaml.Node | None) -> None:
    """Refuse, at its line, quoted text where the scenario takes a number (``replicas: "2"``,
    which pydantic would read as 2), as :func:`load_scenario` does; ``root``: the file's node
    tree (:func:`~tiersim.scenario_yaml.read_yaml`). For a reader that validates the data later
    without it (a sweep validates each point from a dict). A number misspelt, or whole only as
    a float where a whole one goes, is refused too (:func:`number_problem`)."""
    problem = number_problem(data, root, boolean=False)
    if problem is not None:
        raise ScenarioError(source, _where(problem[0], root), problem[1])


def near_whole_number(data: Any) -> tuple[Loc, str] | None:
    """Where the raw scenario ``data`` holds, for a field that takes only whole numbers, a
    number whole only as a float (``replicas: 1.99999999999999999999``, which pydantic took as
    2), and why; None if nowhere."""
    return _first_problem(data, None, (_NEAR_WHOLE,))


def scenario_from_dict(data: dict, source_name: str) -> Scenario:
    """Validate a scenario given as a dict (e.g. one sweep point); errors name ``source_name``."""
    return _validate(data, source_name, None)


def _validate(data: Any, source: str, root: yaml.Node | None, fit: bool = True,
              current_given: bool = False) -> Scenario:
    """Build the Scenario, then run the checks that need the hardware catalogue.
    ``current_given``: as :func:`load_scenario`'s."""
    refuse_non_map(data, source, root)
    problem = number_problem(data, root)  # a boolean, quoted or misspelt number: one walk
    if problem is not None:
        raise ScenarioError(source, _where(problem[0], root), problem[1])
    _refuse_unnameable_files(data, source, root)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        first, loc = _most_telling(err.errors(), data)
        if is_number_key(first, loc):
            raise ScenarioError(source, *_number_key(loc, root)) from None
        raise ScenarioError(source, _where(loc, root), _explain(first, loc, root)
                            + _reading(first["type"], root, loc),
                            refused_as=None if root is not None else first["type"]) from None
    if scenario.plan is not None and not scenario.plan.model_fields_set and not current_given:
        # a block giving neither key; tiersim plan --current gives today's fleet in its
        # place, and hours_per_month stands alone since round 56 (run and sweep leave the
        # block aside, as they leave plan.current)
        raise ScenarioError(source, _where(("plan",), root), EMPTY_PLAN)
    scenario._source = source
    dump = scenario.model_dump(by_alias=True)
    if _may_refuse_numbers(dump):  # the walk that words it, only where it has one to word
        _reject_non_finite(dump, source, root, ())
    _check_limits(scenario, source, root)
    _default_profile_for_gpu(scenario)
    if scenario.profile is not None:  # a profile file beside the scenario, as models are found
        scenario.profile = resolve_file_ref(scenario.profile, source)
    else:  # the roofline's shipped calibration, read here: a broken install's one line is its
        # own, never taken by a check below for a tier that does not fit
        from tiersim.perf.roofline_calibration import shipped

        shipped()
    problem = check_scenario(scenario, fit)
    if problem is not None:
        loc, message = problem
        raise ScenarioError(source, _where(loc, root), message)
    _note_empty_levels(scenario, source, root)
    _note_linked_files(data, source)
    return scenario


_EXACT_PASS = frozenset({str, bool, type(None)})
"""Value types :func:`~tiersim.scenario_yaml._reject_non_finite` never refuses (by exact type:
a subclass is looked at as that walk looks at it)."""

_DEEPEST_QUICK = 64
"""The depth past which :func:`_may_refuse_numbers` leaves a value to the walk itself (which
runs as deep as Python's recursion allows)."""


def _may_refuse_numbers(data: Any) -> bool:
    """Whether :func:`~tiersim.scenario_yaml._reject_non_finite` may refuse ``data`` (a
    validated scenario's dump): it holds a float that is no finite number (or stands for one
    nearer 0 than any float), a whole number (value or key) of more than
    :data:`~tiersim.numbers.MAX_INT_BITS` bits, or maps and lists nested deeper than
    :data:`_DEEPEST_QUICK`. False means the walk would refuse nothing, so it need not run: found
    level by level, without the key path the walk builds for its message (it took about as long
    as pydantic's validation on a sweep point)."""
    level, depth = [data], 0
    while level:
        depth += 1
        if depth > _DEEPEST_QUICK:
            return True
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind in _EXACT_PASS:
                continue
            if kind is float:
                if not math.isfinite(value):
                    return True
            elif kind is int:
                if value.bit_length() > MAX_INT_BITS:
                    return True
            elif kind is dict:
                if any(type(key) is not str and _huge_int(key) for key in value):
                    return True
                below += value.values()
            elif kind is list:
                below += value
            elif isinstance(value, float):  # a subclass, looked at as the walk does
                if isinstance(value, _Underflow) or not math.isfinite(value):
                    return True
            elif isinstance(value, int):
                if value.bit_length() > MAX_INT_BITS:
                    return True
            elif isinstance(value, dict):
                if any(_huge_int(key) for key, _ in value.items()):
                    return True
                below += [item for _, item in value.items()]
            elif isinstance(value, list):
                below += [item for _, item in enumerate(value)]
        level = below
    return False


def _huge_int(value: Any) -> bool:
    """Whether ``value`` is a whole number of more than :data:`~tiersim.numbers.MAX_INT_BITS`
    bits."""
    return isinstance(value, int) and value.bit_length() > MAX_INT_BITS


def _check_limits(scenario: Scenario, source: str, root: yaml.Node | None) -> None:
    """Refuse a tier larger than ``limits.max_replicas`` (a typo like 100000000 would take
    all memory), or whose replicas' data-parallel ranks, each an engine replica of its own,
    number more than :data:`~tiersim.scenario_models.MAX_REPLICAS_CEILING` (1,024 replicas of
    4,096 ranks ran out of memory building them)."""
    limit = scenario.limits.max_replicas
    for k, today in enumerate((scenario.plan.current or ()) if scenario.plan else ()):
        if today.replicas > limit:  # today's fleet: simulated as a tier is
            raise ScenarioError(source, _where(("plan", "current", k, "replicas"), root),
                                f"{shown(str(today.replicas))} replicas is above "
                                f"limits.max_replicas ({limit}); set limits: "
                                "{max_replicas: N} to allow more")
    for at, tier in scenario.tier_entries():
        if tier.replicas > limit:
            raise ScenarioError(source, _where((*at, "replicas"), root),
                                f"{shown(str(tier.replicas))} replicas is above "
                                f"limits.max_replicas ({limit}); set limits: "
                                "{max_replicas: N} to allow more")
        engines = tier.replicas * tier.data_parallel
        if engines > MAX_REPLICAS_CEILING:  # each data-parallel rank is a scheduler of its own
            raise ScenarioError(source, _where((*at, "data_parallel"), root),
                                f"{tier.replicas:,} replicas x data_parallel "
                                f"{tier.data_parallel:,} make {engines:,} engine replicas, "
                                f"above the {MAX_REPLICAS_CEILING:,} tiersim simulates in one "
                                "tier (each data-parallel rank schedules on its own); lower "
                                "replicas or data_parallel")


def _default_profile_for_gpu(scenario: Scenario) -> None:
    """A scenario that names no profile gets the one shipped for its GPU (H200, H100, B200:
    NVIDIA's measured tables); a GPU with none runs on the roofline (and says so), rather than
    failing on a profile the user never asked for."""
    if "profile" in scenario.model_fields_set or scenario.profile is None:
        return
    from tiersim.perf import default_profile_name

    try:
        scenario.profile = default_profile_name(scenario.gpu)
    except TiersimError:
        return  # check_scenario reports the unknown GPU


# ---------------------------------------------------------------------------------------------
# Keys that name a file


NAMES_A_FILE = frozenset({(TraceConfig, "path"), (Scenario, "model"), (Scenario, "profile"),
                          (TierConfig, "model"), (SpeculativeConfig, "draft_model")})
"""The scenario keys that may name an input file (the trace, a model's config.json, a draft
model's, the profile), by the model that holds each; :func:`file_keys` finds where they sit."""


NAME_MAX_BYTES = 255
"""The most bytes a folder or file name may have (Linux, macOS and Windows file systems)."""

PATH_MAX_BYTES = 4095
"""The most bytes a path given to the system may have (Linux's PATH_MAX less its NUL)."""


def _refuse_unnameable_files(data: Any, source: str, root: yaml.Node | None) -> None:
    """Refuse, at its line, a key of :func:`file_keys` whose text no file can be named by (a
    folder or file name over :data:`NAME_MAX_BYTES`, a path over :data:`PATH_MAX_BYTES`):
    the system refuses to look such a name up, and that error named the value, not the key."""
    for place, holder in file_places(data):
        value = holder[place[-1]]
        model = place[-1] in MODEL_KEYS  # nor is a catalogue name that long
        problem = unnameable(value, model) if isinstance(value, str) else None
        if problem is not None:
            raise ScenarioError(source, _where(place, root), problem)


def unnameable(name: str, model: bool = False) -> str | None:
    """Why no file can have the name ``name`` (too long for a file system), or None; ``model``:
    the name is also no catalogue model's, which the reason says."""
    raw = name.encode("utf-8", "surrogatepass")
    longest = max(len(part) for part in raw.replace(b"\\", b"/").split(b"/"))
    if longest <= NAME_MAX_BYTES and len(raw) <= PATH_MAX_BYTES:
        return None
    shown = name if len(name) <= 40 else f"{name[:37]}..."
    nor_model = "is no catalogue model and " if model else ""
    return (f"{shown!r} ({len(name):,} characters) {nor_model}can name no file: a folder or "
            f"file name holds at most {NAME_MAX_BYTES} bytes and a path {PATH_MAX_BYTES:,}; "
            "give a shorter name")


@functools.cache
def file_keys(model: Any = Scenario,
              inside: frozenset = frozenset()) -> tuple[tuple[str, ...], ...]:
    """The key paths from ``model`` to each key of :data:`NAMES_A_FILE`, ``"*"`` for an item of
    a list (``("trace", "path")``, ``("tiers", "*", "model")``, ``("baselines", "*",
    "speculative", "draft_model")`` ...), found by walking the schema, so every list of tiers
    is found without a second list to keep. ``inside``: the models on the way (a model that
    holds itself is walked once)."""
    found = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        if (model, name) in NAMES_A_FILE:
            found.append((key,))
        held = _model_in(field.annotation)
        if held is not None and held not in inside:
            step = (key, "*") if _holds_items(field.annotation) else (key,)
            found += [(*step, *rest) for rest in file_keys(held, inside | {model})]
    return tuple(found)


def file_places(doc: Any, keys: tuple[tuple[str, ...], ...] | None = None
                ) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """``(place, holder)`` for each key of :func:`file_keys` (or of ``keys``) that a scenario
    document ``doc`` sets: its place with each ``"*"`` a list item's position (``("tiers", 1,
    "speculative", "draft_model")``), and the map that holds it (``holder[place[-1]]`` is its
    value). In the keys' order, an item's keys together (a tier's model, then its draft
    model, then the next tier's); a value of another type than the schema's is passed over."""
    keys = file_keys() if keys is None else keys
    found: list[tuple[tuple[str | int, ...], dict[str, Any]]] = []
    try:
        steps = _first_steps(keys)
    except TypeError:  # keys that cannot be kept (a list of them): worked out here
        steps = _first_steps.__wrapped__(keys)
    for step, rest, is_key in steps:
        if step == "*":
            items = enumerate(doc if isinstance(doc, list) else [])
            found += [((at, *place), holder) for at, item in items
                      for place, holder in file_places(item, rest)]
        elif isinstance(doc, dict) and step in doc:
            if is_key:
                found.append(((step,), doc))
            found += [((step, *place), holder) for place, holder in file_places(doc[step], rest)]
    return found


@functools.lru_cache(maxsize=256)
def _first_steps(keys: tuple[tuple[str, ...], ...]
                 ) -> tuple[tuple[str, tuple[tuple[str, ...], ...], bool], ...]:
    """:func:`file_places`' walk of ``keys``, worked out once per tuple of keys (the schema's,
    and the rests of them): each first step, in order, with the keys' rests after it and
    whether it is a key itself."""
    return tuple((step, tuple(key[1:] for key in keys if key[0] == step and len(key) > 1),
                  (step,) in keys) for step in dict.fromkeys(key[0] for key in keys))


def model_places(doc: Any) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """:func:`file_places` of the keys that name a model (:data:`~tiersim.scenario_yaml.MODEL_KEYS`:
    a catalogue name or a config path): the scenario's, each tier's and baseline-only tier's,
    their drafts'."""
    return [(place, holder) for place, holder in file_places(doc) if place[-1] in MODEL_KEYS]


def _holds_items(annotation: Any) -> bool:
    """Whether ``annotation`` is a list or map (of models), possibly optional."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, dict):
        return True
    return any(_holds_items(arg) for arg in typing.get_args(annotation)
               if typing.get_origin(arg) is not None)


