"""How a refused scenario value is told: pydantic's errors as one short instruction at a line.

:func:`explain_errors` picks the one pydantic error to show (an unknown key first, else the
deepest) and words it as an instruction (:func:`_explain`: what is wrong and what is accepted,
with the nearest known key for a misspelt one, :func:`_suggest`). :func:`located` and
:func:`line_in` read a scenario file again to give a line to an error that knows only its key
path (a check run after loading, a scenario read from a dict).
"""

from __future__ import annotations

import datetime
import difflib
import re
import typing
import unicodedata
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel

from tiersim.errors import KeyedError, ScenarioError, TiersimError, percent_hint, yaml_written
from tiersim.scenario_models import Scenario, _is_model, _model_in
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
    _BoundedLoader,
    _compose,
    _construct_int,
    _read_text,
    _reading,
    written_text,
)


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
    path = format_loc(loc[:-1])  # at the top level, the line alone (no "(top level)")
    where = (_where(loc[:-1], root) if line is None else f"line {line}: {path}" if loc[:-1]
             else f"line {line}")
    return where, (f"key {_short(written, 40)} is a number, where the keys are names; write "
                   f"the name, or quote it ({_short(written, 40)!r}) if it is one")


def explain_errors(errors: list[dict], data: Any, prefix: Loc = ()) -> tuple[Loc, str]:
    """The one pydantic error of ``errors`` (validating ``data``, found at ``prefix`` inside a
    scenario) to show, as its location from the scenario's top and a short instruction, the
    way scenario files are told (an unknown key with the nearest known one ...)."""
    first, loc = _most_telling(errors, data)
    if is_number_key(first, loc):  # a --choose map's key 5: as a scenario file's is told
        return prefix + loc[:-1], _number_key(prefix + loc, None)[1]
    return prefix + loc, _explain(first, prefix + loc)


def is_number_key(error: dict, loc: Loc) -> bool:
    """Whether pydantic's ``error`` (at ``loc``, from :func:`_most_telling`) refuses a whole
    number key of a map keyed by names (``fractions: {5: 0.5}``), which :func:`_number_key`
    words: pydantic's own words were "fractions[5]: input should be a valid string"."""
    return bool((tuple(error["loc"])[-1:] == ("[key]",) or error["type"] == "invalid_key")
                and isinstance(error["input"], int) and loc)


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
    dict, how YAML read what the file writes there (:func:`~tiersim.scenario_yaml._reading`), as
    a run of the file says it; the error itself where the file cannot be read again or does not
    hold the path's first key."""
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


def _explain(error: dict, loc: Loc, root: yaml.Node | None = None) -> str:
    """A pydantic error as a short instruction: what is wrong and what is accepted. ``root``:
    the scenario file's node tree, where a number is quoted as the file writes it (``1e308``
    read "(got 1e+308)", as Python writes the float)."""
    kind, ctx, got = error["type"], error.get("ctx") or {}, error.get("input")
    shown = _number_as_written(root, loc) if _is_number(got) else None
    shown = _got(got) if shown is None else _short(shown)
    if kind == "extra_forbidden":
        return "unknown key" + _suggest(loc)
    if kind == "missing":
        if loc and isinstance(loc[-1], int):
            return "value missing: the list is too short"
        return "required key is missing"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be a mapping of keys (got {shown})"
    if kind in ("list_type", "tuple_type"):
        return f"must be a list (got {shown})"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=",
              "less_than": "<"}
    if kind in bounds:
        limit = next(iter(ctx.values()))
        hint = percent_hint(got) if kind == "less_than_equal" and limit == 1 else ""
        return f"must be {bounds[kind]} {limit} (got {shown}){hint}"
    if kind == "finite_number":
        return f"must be a finite number (got {shown})"
    if kind == "int_parsing_size" and isinstance(got, float):
        return _beyond_int(got, loc, shown)
    if kind == "float_type" and isinstance(got, int) and not isinstance(got, bool):
        return _beyond_float(got)
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false (got {shown})"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']} (got {shown})"
    if kind == "too_short":
        return f"must have at least {ctx['min_length']} item(s)"
    if kind == "too_long":  # pydantic: "tuple should have at most 2 items after validation"
        actual = ctx.get("actual_length")
        return (f"must have at most {ctx['max_length']} item(s) (it has {actual:,})"
                if isinstance(actual, int) else f"must have at most {ctx['max_length']} item(s)")
    if kind == "value_error":
        raised = ctx.get("error", error["msg"])
        if isinstance(raised, KeyedError):  # the values it quotes, as the file writes them
            key = tuple(raised.key)  # the part of it written (a default's key is left out)
            kept = next(j for j in range(len(key), -1, -1) if loc[len(loc) - j:] == key[:j])
            model = loc[:len(loc) - kept]
            text = raised.told(got, lambda at: _number_as_written(root, model + at))
            return " ".join(text.split())  # its values cut, never its fix (KeyedError.told)
        return _short(" ".join(str(raised).split()), 300)
    message = error["msg"]
    return f"{message[:1].lower()}{message[1:]} (got {shown})"


def _is_number(value: Any) -> bool:
    """Whether ``value`` is a number YAML read (a true/false value is none)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


PLAIN_NUMBER = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?")
"""A decimal number written plain (``1e308``, ``-1``, ``0.50``): its text is what an error line
quotes."""


def _number_as_written(root: yaml.Node | None, loc: Loc) -> str | None:
    """The text of the plain decimal number at ``loc`` of the scenario file's node tree, or of
    a flow list of them on one line (``[0.5, 1e308]``); None where there is no tree, or the
    value there is no such number or list (a tag, text, a block list)."""
    text = None if root is None else written_text(root, loc)
    if text is None:
        return None
    items = text[1:-1].split(",") if text.startswith("[") and text.endswith("]") else [text]
    return text if all(PLAIN_NUMBER.fullmatch(item.strip()) for item in items) else None


def _beyond_int(got: float, loc: Loc, shown: str) -> str:
    """Why a whole number written with an exponent beyond 2**63 (``max_replicas: 1e30``, which
    pydantic reads as no integer, "exceeded maximum size") is refused: as the same number in
    digits is, by the key's bound (``must be <= 100000``), or, where the key has none, with
    the number to write. ``shown``: the number as the file writes it (``1e30``; Python writes
    ``1e+30``)."""
    low, high = _int_bounds(loc)
    if high is not None and got > high:
        return f"must be <= {high} (got {shown})"
    if low is not None and got < low:
        return f"must be >= {low} (got {shown})"
    return (f"must be a whole number (got {shown}: written with an exponent, one must be "
            "below 2**63); write it in digits")


def _beyond_float(got: int) -> str:
    """Why a whole number written in digits beyond a float (``ttft_p99_s: 999...``, 400
    nines) is refused where a number is read: pydantic said 'input should be a valid number'
    of what is one; as ``1e400`` is, it is no finite number."""
    return (f"must be a finite number (got {_got(got)}: {len(str(abs(got))):,} digits, beyond "
            "the largest a number may be, about 1.8e308)")


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
    """A value a key was given, as an error line quotes it: as YAML writes it (``null``,
    ``true``, ``{a: null}``: :func:`tiersim.errors.yaml_written`) cut short, a date
    or time YAML read from an unquoted ``2024-01-01`` as written, saying so (a ``repr`` such as
    ``datetime.date(2024, 1, 1)`` names no YAML the user wrote)."""
    if isinstance(value, (datetime.date, datetime.time)):
        return f"{value.isoformat()}, which YAML reads unquoted as a date or time"
    return _short(yaml_written(value))


def _suggest(loc: Loc) -> str:
    """`` (did you mean 'x'?)`` for a misspelt key, from the fields of the model at ``loc``; a
    known key with white space at either end is told so."""
    fields = _fields_at(loc[:-1])
    bare = str(loc[-1]).strip()
    if bare != str(loc[-1]) and bare in fields:
        return f" ({bare!r} with white space at its start or end; remove the space)"
    home = _nested_home(loc, fields)
    if home is not None:  # before a look-alike: router.from_tier read "did you mean 'tier'?"
        if _lists_items(loc[:-1], home):  # kv_offload: a list of levels, the key an item's
            return (f" (a key of each item of {home!r}: write it as "
                    f"{format_loc((*loc[:-1], home, 0, loc[-1]))})")
        return f" (a key of {home!r}: write it as {format_loc((*loc[:-1], home, loc[-1]))})"
    close = difflib.get_close_matches(str(loc[-1]), fields, n=1, cutoff=0.6) or _look_alike(
        str(loc[-1]), fields)
    if close:
        return f" (did you mean {close[0]!r}?{_foreign_letter(str(loc[-1]))})"
    return f" (known keys: {', '.join(sorted(fields))})" if fields else ""


def _nested_home(loc: Loc, fields: list[str]) -> str | None:
    """The one key among ``fields`` (those of the model holding ``loc``'s last key) whose own
    model has that key, written a level too high (``router.from_tier``, a key of
    ``router.cascade``; ``tiers[0].enable_prefix_caching``, of ``scheduler``;
    ``workload.sessions.tasks``, of ``generate``); None where none or several have it."""
    homes = [name for name in fields if str(loc[-1]) in _fields_at((*loc[:-1], name))]
    return homes[0] if len(homes) == 1 else None


def _lists_items(loc: Loc, name: str) -> bool:
    """Whether key ``name`` of the model at ``loc`` holds a list of models
    (``tiers[0].scheduler.kv_offload``: its keys are an item's, written ``kv_offload[0].x``;
    before, the fix wrote ``kv_offload.x``, a mapping the file then refused as no list)."""
    model: Any = Scenario
    for part in (*loc, name):
        if isinstance(part, int):
            continue
        fields = _keys_of(model) if _is_model(model) else {}
        if part not in fields:
            return False
        annotation = fields[part].annotation
        model = _model_in(annotation)
    kinds, found = [annotation], False
    while kinds and not found:
        kind = kinds.pop()
        found = typing.get_origin(kind) is list and _model_in(kind) is not None
        kinds.extend(a for a in typing.get_args(kind) if typing.get_origin(kind) is not list)
    return found


def _look_alike(key: str, fields: list[str]) -> list[str]:
    """``[field]`` where ``key`` is one of ``fields`` but for its non-ASCII characters, each
    standing for any one character (``sееd``, two letters Cyrillic: too unlike 'seed' for
    difflib, and told only "unknown key (known keys: ...)"), or one of them once its letters
    are read as their plain forms and small (NFKC, casefolded: full-width ``ｓｅｅｄ``, which
    four-letter keys other than ``seed`` fit too, and ``SEED``, too unlike for difflib); else
    ``[]``."""
    folded = unicodedata.normalize("NFKC", key).casefold()
    same = [name for name in fields if name.casefold() == folded]
    if folded != key and len(same) == 1:
        return same
    if key.isascii():
        return []
    pattern = re.compile("".join(re.escape(c) if c.isascii() else "." for c in key))
    found = [name for name in fields if pattern.fullmatch(name)]
    return found if len(found) == 1 else []


def _foreign_letter(key: str) -> str:
    """Where an unknown key holds a character no key does (every key is ASCII), the first such,
    named: a look-alike letter (``seеd``, its ``е`` Cyrillic) reads as the key it suggests, and
    "unknown key (did you mean 'seed'?)" alone named no difference to be seen."""
    odd = next((c for c in key if not c.isascii()), None)
    if odd is None:
        return ""
    name = unicodedata.name(odd, "")
    return f" its {odd!r} is U+{ord(odd):04X}{' ' + name if name else ''}, not an ASCII character"


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
