"""Scenario YAML: pydantic models, loading, and one-line errors that name the file, line and key.

A scenario names the trace, the model and GPU, the step-time profile, the precision tiers, the
router, the SLOs and the seed (DESIGN.md §7). :func:`load_scenario` reads a YAML file and turns
every problem (YAML syntax, unknown key, wrong type, a tier whose weights do not fit in memory)
into a single :class:`~tiersim.errors.ScenarioError` line such as::

    scenarios/x.yaml: line 7: tiers[0].replica: unknown key (did you mean 'replicas'?)

Line numbers come from ``yaml.compose``: the node tree keeps each key's position, and a
pydantic error location (``("tiers", 0, "replica")``) is walked down that tree.

A scenario file is read defensively (docs/security.md): at most :data:`MAX_FILE_BYTES`, UTF-8
text only, YAML nested at most :data:`MAX_DEPTH` deep and at most :data:`MAX_NODES` values once
aliases are expanded (an alias bomb or a recursive alias is refused before anything walks it),
and every number finite and within its physical range.
The engine never sees these models; :mod:`tiersim.runner` turns them into plain engine objects.
"""

from __future__ import annotations

import datetime
import difflib
import functools
import math
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ValidationError

from tiersim.errors import ScenarioError, TiersimError
from tiersim.numbers import NumberError, misspelt, read_number
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
    shown_name,
    unread_scheduler_keys,
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
    _is_model,
    _model_in,
    resolve_file_ref,
    resolve_model_ref,
)
from tiersim.scenario_where import (
    Loc,
    _child,
    _node_at,
    _short,
    _where,
    format_loc,
    key_path,
    line_of,
)
from tiersim.scenario_yaml import (
    _INT,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MODEL_KEYS,
    YAML_FIXES,
    TooManyValues,
    _BoundedLoader,
    _compose,
    _construct_int,
    _is_quoted,
    _read_text,
    _reading,
    _reject_non_finite,
    _yaml_reading,
    check_size,
    dump_yaml,
    read_yaml,
    read_yaml_value,
    without_quotes,
)

__all__ = [
    "DEFAULT_MAX_REPLICAS", "DEFAULT_MAX_SWEEP_POINTS", "MAX_DEPTH", "MAX_FILE_BYTES",
    "MAX_GPUS_PER_REPLICA", "MAX_GRID_POINTS", "MAX_NODES", "MAX_REPLICAS_CEILING",
    "MAX_SIZED_GPU_OPTIONS", "MODEL_KEYS", "NAMES_A_FILE", "READ_ONLY_WITH",
    "SIZED_GPUS_PER_REPLICA", "UNLIKELY_AT", "VLLM_BLOCK_SIZES", "YAML_FIXES", "DisaggConfig",
    "KVLevelConfig", "LimitsConfig", "Loc", "Name", "Scenario", "SchedulerConfig", "SloConfig",
    "SpeculativeConfig", "TierConfig", "TooManyValues", "TraceConfig", "boolean_problem",
    "check_layouts", "check_scenario", "check_size", "dump_yaml", "explain_errors", "file_keys",
    "file_places", "format_loc", "key_path", "keys_given_as", "line_in", "line_of",
    "load_scenario", "located", "misspelt_number", "model_places", "read_yaml", "read_yaml_value",
    "refuse_non_map", "refuse_text_numbers", "resolve_file_ref", "resolve_model_ref",
    "scenario_from_dict", "shown_name", "unread_scheduler_keys", "without_quotes",
]
"""The names callers import from here: this module's, and those of the modules the scenario
code is split into (:mod:`tiersim.scenario_where`, :mod:`tiersim.scenario_yaml` ...),
re-exported."""

# ---------------------------------------------------------------------------------------------
# Loading


def load_scenario(path: str | Path, fit: bool = True) -> Scenario:
    """Read, validate and memory-check a scenario YAML; any problem is one ScenarioError line.
    ``fit=False`` leaves out the check that each tier fits its GPUs per replica (the planner,
    which tries other GPU counts itself)."""
    data, root = read_yaml(path)
    return _validate(data, str(path), root, fit)


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
    annotations: list[Any] = []

    def test(annotation: Any, value: Any, _: Loc) -> Loc | None:
        if _wants_number(annotation) and _has_bool(value):
            annotations.append(annotation)
            return ()
        return None

    where = _walk_fields(data, Scenario, (), test)
    if where is None:
        return None
    if not any(kind is str for kind in _members(annotations[0])):
        return where, "a number is expected here, not a YAML boolean (true/false)"
    reading = _yaml_reading(root, where) if root is not None else (
        "; YAML reads unquoted yes, no, on and off as booleans: quote a name ('no')")
    return where, f"a name or a number is expected here, not a YAML boolean (true/false){reading}"


def _text_number(data: Any, model: type[BaseModel], root: yaml.Node | None) -> Loc | None:
    """Where the raw ``data`` of ``model`` holds quoted text for a number (pydantic would read
    ``replicas: "2"`` as 2), or None: a field, list item or mapping value whose type takes a
    number and no text, written in quotes (or as a block scalar) in the file whose node tree is
    ``root``. A plain scalar YAML 1.1 reads as text (``010``, ``1e-3``) is a number as written
    (see :data:`_PLAIN_NUMBER`); without a node tree nothing is refused."""
    if root is None:
        return None

    def quoted(annotation: Any, value: Any, at: Loc) -> Loc | None:
        return _number_as_text(annotation, value, lambda sub: _is_quoted(root, at + sub))

    return _walk_fields(data, model, (), quoted)


def _text_for_number(data: Any, loc: Loc, root: yaml.Node | None = None) -> str:
    """Why the text at ``loc`` in the raw ``data`` is refused, with the fix when it reads as a
    number (quotes, or a ``!!str`` tag, around one)."""
    text = _value_at(data, loc)
    try:
        fix = f"; write it {without_quotes(root, loc)}" if math.isfinite(read_number(text)) else ""
    except NumberError:
        why = misspelt(text.strip())
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

    def misspelling(annotation: Any, value: Any, _: Loc) -> Loc | None:
        return _number_as_text(annotation, value, lambda sub: misspelt(
            _value_at(value, sub).strip()) is not None)

    where = _walk_fields(data, Scenario, (), misspelling)
    return None if where is None else (where, misspelt(_value_at(data, where).strip()))


def _walk_fields(data: Any, model: type[BaseModel], loc: Loc, test) -> Loc | None:
    """The first place in the raw ``data`` of ``model`` where ``test(annotation, value,
    place)`` finds a problem (it returns the place under the field's, or None); walks nested
    models."""
    if not isinstance(data, dict):
        return None
    fields = {name: f for name, f in model.model_fields.items()}
    fields.update({f.alias: f for f in model.model_fields.values() if f.alias})
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            continue
        found = test(field.annotation, value, loc + (key,))
        if found is not None:
            return loc + (key, *found)
        models = _models_in(field.annotation)
        if len(models) != 1:
            continue
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            at = loc + (key,) if i is None else loc + (key, i)
            found = _walk_fields(item, models[0], at, test)
            if found is not None:
                return found
    return None


def _members(annotation: Any) -> list[Any]:
    """The types a union (or ``Annotated``) type is made of, itself otherwise."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _number_as_text(annotation: Any, value: Any, counts, sub: Loc = ()) -> Loc | None:
    """Where ``value`` holds text that ``annotation`` can only take as a number and that
    ``counts(place)`` (the place under ``value``) says to refuse: ``()`` for ``value`` itself,
    else the list index or mapping key under it; None if nowhere."""
    kinds = _members(annotation)
    if isinstance(value, str):
        text = any(k is str or k is Any or (typing.get_origin(k) is Literal and any(
            isinstance(a, str) for a in typing.get_args(k))) for k in kinds)
        wanted = not text and any(k in (int, float) for k in kinds)
        return sub if wanted and counts(sub) else None
    items = (enumerate(value) if isinstance(value, list)
             else value.items() if isinstance(value, dict) else ())
    for i, item in items:
        for kind in kinds:
            found = _number_as_text(_item_type(kind, value, i), item, counts, (*sub, i))
            if found is not None:
                return found
    return None


def _item_type(kind: Any, value: list | dict, i: Any) -> Any:
    """The type ``kind`` (a list, tuple or dict type) gives item ``i`` of ``value``; ``Any``
    where it holds no such items."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if isinstance(value, dict):
        return args[1] if origin is dict and len(args) == 2 else Any
    if origin in (list, set, frozenset) and args:
        return args[0]
    if origin is tuple and args:
        return args[0] if len(args) == 2 and args[1] is Ellipsis else (
            args[i] if i < len(args) else Any)
    return Any


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
    tree (:func:`read_yaml`). For a reader that validates the data later without it (a sweep
    validates each point from a dict)."""
    where = _text_number(data, Scenario, root)
    if where is not None:
        raise ScenarioError(source, _where(where, root), _text_for_number(data, where, root))
    problem = misspelt_number(data)
    if problem is not None:
        raise ScenarioError(source, _where(problem[0], root), problem[1])


def scenario_from_dict(data: dict, source_name: str) -> Scenario:
    """Validate a scenario given as a dict (e.g. one sweep point); errors name ``source_name``."""
    return _validate(data, source_name, None)


def _validate(data: Any, source: str, root: yaml.Node | None, fit: bool = True) -> Scenario:
    """Build the Scenario, then run the checks that need the hardware catalogue."""
    refuse_non_map(data, source, root)
    boolean = boolean_problem(data, root)
    if boolean is not None:
        raise ScenarioError(source, _where(boolean[0], root), boolean[1])
    refuse_text_numbers(data, source, root)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        first, loc = _most_telling(err.errors(), data)
        if tuple(first["loc"])[-1:] == ("[key]",) and isinstance(first["input"], int) and loc:
            raise ScenarioError(source, *_number_key(loc, root)) from None
        raise ScenarioError(source, _where(loc, root), _explain(first, loc)
                            + _reading(first["type"], root, loc),
                            refused_as=None if root is not None else first["type"]) from None
    scenario._source = source
    _reject_non_finite(scenario.model_dump(by_alias=True), source, root, ())
    _check_limits(scenario, source, root)
    _default_profile_for_gpu(scenario)
    if scenario.profile is not None:  # a profile file beside the scenario, as models are found
        scenario.profile = resolve_file_ref(scenario.profile, source)
    problem = check_scenario(scenario, fit)
    if problem is not None:
        loc, message = problem
        raise ScenarioError(source, _where(loc, root), message)
    _note_empty_levels(scenario, source, root)
    _note_linked_files(data, source)
    return scenario


def _number_key(loc: Loc, root: yaml.Node | None) -> tuple[str, str]:
    """Where and why a whole number key ``loc[-1]`` of a map keyed by names (``fractions:
    {0: 0.5}``) is refused: named at the map, the key as the file writes it (``0x1``, not 1)
    on its own line; pydantic's location read as a list index (``fractions[0]``), where a
    list is often accepted too."""
    key, written, line = loc[-1], str(loc[-1]), None
    holder = None if root is None else _node_at(root, loc[:-1])
    if isinstance(holder, yaml.MappingNode):
        loader = _BoundedLoader("")
        for node, _ in holder.value:
            if isinstance(node, yaml.ScalarNode) and node.tag == _INT and (
                    _construct_int(loader, node) == key):
                written, line = node.value, node.start_mark.line + 1
                break
    path = format_loc(loc[:-1])
    where = f"line {line}: {path}" if line is not None else _where(loc[:-1], root)
    return where, (f"key {_short(written, 40)} is a number, where the keys are names; write "
                   f"the name, or quote it ({_short(written, 40)!r}) if it is one")


def _check_limits(scenario: Scenario, source: str, root: yaml.Node | None) -> None:
    """Refuse a tier larger than ``limits.max_replicas`` (a typo like 100000000 would take
    all memory), or whose replicas' data-parallel ranks, each an engine replica of its own,
    number more than :data:`MAX_REPLICAS_CEILING` (1,024 replicas of 4,096 ranks ran out of
    memory building them)."""
    limit = scenario.limits.max_replicas
    for at, tier in scenario.tier_entries():
        if tier.replicas > limit:
            raise ScenarioError(source, _where((*at, "replicas"), root),
                                f"{tier.replicas} replicas is above limits.max_replicas "
                                f"({limit}); set limits: {{max_replicas: N}} to allow more")
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


def explain_errors(errors: list[dict], data: Any, prefix: Loc = ()) -> tuple[Loc, str]:
    """The one pydantic error of ``errors`` (validating ``data``, found at ``prefix`` inside a
    scenario) to show, as its location from the scenario's top and a short instruction, the
    way scenario files are told (an unknown key with the nearest known one ...)."""
    first, loc = _most_telling(errors, data)
    return prefix + loc, _explain(first, prefix + loc)


def _most_telling(errors: list[dict], data: Any) -> tuple[dict, Loc]:
    """The one error to show: an unknown key first (it often explains a missing one), else the
    deepest location (inside a union, the member that matches the input's shape)."""
    located = [(e, _clean_loc(tuple(e["loc"]) + _key_of(e), data, e["type"])) for e in errors]
    unknown = [pair for pair in located if pair[0]["type"] == "extra_forbidden"]
    if unknown:
        return unknown[0]
    return max(located, key=lambda pair: len(pair[1]))


def _key_of(error: dict) -> Loc:
    """The key a :class:`KeyedError` names (empty for any other error)."""
    return tuple(getattr((error.get("ctx") or {}).get("error"), "key", ()))


def _clean_loc(loc: Loc, data: Any, kind: str) -> Loc:
    """Drop location parts that are not in the data (pydantic's union-member tags).

    A missing key is the one part kept although absent: it is the key to add.
    """
    kept: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        if _has(node, part):
            node = node[part]
        elif not (kind == "missing" and i == len(loc) - 1):
            continue
        kept.append(part)
    return tuple(kept)


def _has(node: Any, part: str | int) -> bool:
    """Whether ``node[part]`` exists in plain YAML data (a dict key or a list index)."""
    if isinstance(node, dict):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def located(err: ScenarioError) -> ScenarioError:
    """``err`` with the line of its key path in its scenario file, where it names none (checks
    run after loading, such as a tier's accuracy prior, know the path but not the line, and so
    does a scenario read from a dict: a sweep's base or point), and, for a value read from a
    dict, how YAML read what the file writes there (:func:`_reading`), as a run of the file
    says it; the error itself where the file cannot be read again or does not hold the
    path's first key."""
    where = err.where
    loc = key_path(where)
    root = None if loc is None else _file_root(err.path, loc)
    if root is None:
        return err
    reading = "" if err.refused_as is None else _reading(err.refused_as, root, loc)
    return ScenarioError(err.path, f"line {line_of(root, loc)}: {where}", err.message + reading)


def line_in(source: str, loc: Loc) -> int | None:
    """The line of ``loc`` (its deepest existing part) in the scenario file ``source``; None
    where the file is no YAML file that can be read again or lacks ``loc``'s first key."""
    root = _file_root(source, loc)
    return None if root is None else line_of(root, loc)


def _file_root(source: str, loc: Loc) -> yaml.Node | None:
    """The node tree of the scenario file ``source``, read again; None where it is no YAML
    file that can be read again or lacks ``loc``'s first key."""
    if not loc or not source.endswith((".yaml", ".yml")):
        return None
    try:
        root = _compose(_read_text(Path(source), source), source)
    except (TiersimError, OSError):
        return None
    return None if _child(root, loc[0]) is None else root


# ---------------------------------------------------------------------------------------------
# Error wording


def _explain(error: dict, loc: Loc) -> str:
    """A pydantic error as a short instruction: what is wrong and what is accepted."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "extra_forbidden":
        return "unknown key" + _suggest(loc)
    if kind == "missing":
        if loc and isinstance(loc[-1], int):
            return "value missing: the list is too short"
        return "required key is missing"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of keys (got {_got(got)})"
    if kind in ("list_type", "tuple_type"):
        return f"must be a list (got {_got(got)})"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=",
              "less_than": "<"}
    if kind in bounds:
        limit = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {limit} (got {_got(got)})"
    if kind == "finite_number":
        return f"must be a finite number (got {_got(got)})"
    if kind == "int_parsing_size" and isinstance(got, float):
        return _beyond_int(got, loc)
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false (got {_got(got)})"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']} (got {_got(got)})"
    if kind == "too_short":
        return f"must have at least {ctx['min_length']} item(s)"
    if kind == "value_error":
        return _short(" ".join(str(ctx.get("error", error["msg"])).split()), 300)
    message = error["msg"]
    return f"{message[:1].lower()}{message[1:]} (got {_got(got)})"


def _beyond_int(got: float, loc: Loc) -> str:
    """Why a whole number written with an exponent beyond 2**63 (``max_replicas: 1e30``, which
    pydantic reads as no integer, "exceeded maximum size") is refused: as the same number in
    digits is, by the key's bound (``must be <= 100000``), or, where the key has none, with
    the number to write."""
    low, high = _int_bounds(loc)
    if high is not None and got > high:
        return f"must be <= {high} (got {_got(got)})"
    if low is not None and got < low:
        return f"must be >= {low} (got {_got(got)})"
    return (f"must be a whole number (got {_got(got)}: written with an exponent, one must be "
            "below 2**63); write it in digits")


def _int_bounds(loc: Loc) -> tuple[Any, Any]:
    """The ``ge`` and ``le`` bounds of the whole-number key at ``loc`` (a list's item: its
    items'), each None where the key sets none or is no scenario key."""
    model, info = Scenario, None
    for part in loc:
        if isinstance(part, int):
            continue
        fields = _keys_of(model) if _is_model(model) else {}
        if part not in fields:
            return None, None
        info = fields[part]
        model = _model_in(info.annotation)
    if info is None:
        return None, None
    marks = list(info.metadata)
    if isinstance(loc[-1], int):  # limits.gpus_per_replica[0]: tuple[Annotated[int, ...]]
        marks = [mark for kind in typing.get_args(info.annotation)
                 if typing.get_origin(kind) is Annotated
                 for extra in typing.get_args(kind)[1:]
                 for mark in getattr(extra, "metadata", [extra])]
    low = next((mark.ge for mark in marks if hasattr(mark, "ge")), None)
    high = next((mark.le for mark in marks if hasattr(mark, "le")), None)
    return low, high


def _got(value) -> str:
    """A value a key was given, as an error line quotes it: its ``repr`` cut short, but a date
    or time YAML read from an unquoted ``2024-01-01`` as written, saying so (a ``repr`` such as
    ``datetime.date(2024, 1, 1)`` names no YAML the user wrote)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return f"{value.isoformat()}, which YAML reads unquoted as a date or time"
    return _short(repr(value))


def _suggest(loc: Loc) -> str:
    """`` (did you mean 'x'?)`` for a misspelt key, from the fields of the model at ``loc``; a
    known key with white space at either end is told so."""
    fields = _fields_at(loc[:-1])
    bare = str(loc[-1]).strip()
    if bare != str(loc[-1]) and bare in fields:
        return f" ({bare!r} with white space at its start or end; remove the space)"
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.6)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known keys: {', '.join(sorted(fields))})" if fields else ""


def _fields_at(loc: Loc) -> list[str]:
    """Field names of the pydantic model reached by following ``loc`` from Scenario."""
    model: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            continue
        fields = _keys_of(model) if _is_model(model) else {}
        if part not in fields:
            return []
        model = _model_in(fields[part].annotation)
    return list(_keys_of(model)) if _is_model(model) else []


def _keys_of(model: type[BaseModel]) -> dict[str, Any]:
    """A model's YAML keys (aliases where set) mapped to their fields."""
    return {field.alias or name: field for name, field in model.model_fields.items()}


NAMES_A_FILE = frozenset({(TraceConfig, "path"), (Scenario, "model"), (Scenario, "profile"),
                          (TierConfig, "model"), (SpeculativeConfig, "draft_model")})
"""The scenario keys that may name an input file (the trace, a model's config.json, a draft
model's, the profile), by the model that holds each; :func:`file_keys` finds where they sit."""


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
    for step in dict.fromkeys(key[0] for key in keys):
        rest = tuple(key[1:] for key in keys if key[0] == step and len(key) > 1)
        if step == "*":
            items = enumerate(doc if isinstance(doc, list) else [])
            found += [((at, *place), holder) for at, item in items
                      for place, holder in file_places(item, rest)]
        elif isinstance(doc, dict) and step in doc:
            if (step,) in keys:
                found.append(((step,), doc))
            found += [((step, *place), holder) for place, holder in file_places(doc[step], rest)]
    return found


def model_places(doc: Any) -> list[tuple[tuple[str | int, ...], dict[str, Any]]]:
    """:func:`file_places` of the keys that name a model (:data:`MODEL_KEYS`: a catalogue name
    or a config path): the scenario's, each tier's and baseline-only tier's, their drafts'."""
    return [(place, holder) for place, holder in file_places(doc) if place[-1] in MODEL_KEYS]


def _holds_items(annotation: Any) -> bool:
    """Whether ``annotation`` is a list or map (of models), possibly optional."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, dict):
        return True
    return any(_holds_items(arg) for arg in typing.get_args(annotation)
               if typing.get_origin(arg) is not None)


