"""Reading, checking and writing profile JSON files (schema ``tiersim.profile/1``, pinned in
``docs/CONTRACTS.md``; the format: :mod:`tiersim.perf.profile_data`): :func:`load_profile`,
:func:`profile_from_json` and :func:`save_profile`. A problem is one
:class:`~tiersim.errors.ProfileError` line naming the field and what it must be.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from tiersim.errors import ProfileError, json_written, shown_json
from tiersim.jsonio import read_json
from tiersim.perf.profile_data import (
    _OPTIONAL_TABLE_FIELDS,
    MEASURED_MODULE_KEYS,
    MODULE_KEYS,
    OMITTED_KEYS,
    OP_AXES,
    OP_DTYPE,
    OP_KEYS,
    SCHEMA,
    SOURCES,
    TABLE_KV_DTYPES,
    EagerCost,
    Profile,
    Table,
    module_dtype,
)


def load_profile(path: str | Path) -> Profile:
    """Read and validate a profile JSON file; problems raise :class:`ProfileError` (one line)."""
    p = Path(path)
    raw = read_json(p, "a profile", ProfileError,
                    missing="file not found; give a profile JSON path or a bundled name")
    return profile_from_json(raw, str(p))


#: The fields of a profile document and of one of its tables (anything else is a typo).
PROFILE_FIELDS = ("schema", "name", "gpu", "provenance", "overhead_s", "eager_s", "tables")
TABLE_FIELDS = ("op", "precision", "kv_dtype", "source", "key", "axes", "latency_s", "parts",
                *_OPTIONAL_TABLE_FIELDS)
MAX_SECONDS = 3600.0
"""Largest latency or overhead a profile may hold (one operator of one step: an hour is
already absurd; beyond it a value is a unit or typing error)."""
MAX_KEY = 1 << 31
"""Largest value of a table's key field (a dimension, expert count or parallel size)."""
MAX_GRAPH_TOKENS = 1 << 31
"""Largest ``eager_s.graph_max_tokens`` (more tokens than any iteration holds)."""
EAGER_FIELDS = ("graph_max_tokens", "graph_max_tokens_by_tp", "per_layer_s", "per_moe_layer_s",
                "per_cpp_moe_layer_s", "cpp_moe_source", "source")
"""The fields an ``eager_s`` object may hold."""
MIN_SECONDS = 1e-9
"""Smallest operator latency a profile may hold (a nanosecond: no kernel is faster; 1e-320
would make an operator free)."""


class UnknownFieldError(ProfileError):
    """A field the profile format this tiersim reads does not have (:func:`_unknown_field`)."""


def _unknown_field(raw: dict, allowed: tuple[str, ...], where: str) -> None:
    """One line for the first field of ``raw`` not in ``allowed``."""
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise UnknownFieldError(f"{where}: unknown field {unknown[0]!r}; allowed: "
                                f"{', '.join(allowed)}")


def _later_harness(raw: dict) -> str | None:
    """The tool a profile names as its writer (``provenance.tool``) where that is a later
    tiersim release's harness (``tiersim.calibrate 0.2.0``), else None."""
    from tiersim.versions import later_than_this

    prov = raw.get("provenance")
    tool = prov.get("tool") if isinstance(prov, dict) else None
    if not isinstance(tool, str) or not tool.startswith("tiersim.calibrate "):
        return None
    return tool if len(tool) <= 60 and later_than_this(tool.split(" ", 1)[1]) else None


_MISSING = object()


def _check_schema(schema: Any, path: str) -> None:
    """One line with its fix for a ``schema`` other than :data:`SCHEMA`: another version of
    the profile format (a later tiersim's), none at all, or another file's."""
    if schema == SCHEMA:
        return
    if schema is _MISSING:
        raise ProfileError(f'{path}: schema: missing; a profile starts {{"schema": "{SCHEMA}", '
                           '...}: is this file a profile?')
    family = SCHEMA.rsplit("/", 1)[0] + "/"
    if isinstance(schema, str) and schema.startswith(family) and len(schema) <= 40:
        raise ProfileError(f"{path}: schema: {schema!r} is a profile format this tiersim does "
                           f"not read (it reads {SCHEMA!r}); use the tiersim that wrote it, or "
                           f"write the profile as {SCHEMA!r}")
    raise ProfileError(f"{path}: schema: expected {SCHEMA!r}, got {shown_json(schema)}; "
                       "is this file "
                       "a profile?")


def profile_from_json(raw: Any, path: str = "<memory>") -> Profile:
    """Validate a parsed profile document and build a :class:`Profile`. A field this
    tiersim does not know in a profile a later release's harness wrote is refused naming that
    release (a field it added, not a typo to remove)."""
    try:
        return _profile_from(raw, path)
    except UnknownFieldError as err:
        import tiersim

        later = _later_harness(raw)
        if later is None:
            raise
        raise ProfileError(f"{err}; the profile was written by {later}, a later release than "
                           f"this tiersim {tiersim.__version__}: read it with that tiersim or "
                           "a later one") from None


def _profile_from(raw: Any, path: str) -> Profile:
    """:func:`profile_from_json`'s checks and build."""
    if not isinstance(raw, dict):
        raise ProfileError(f"{path}: top level must be a JSON object")
    _check_schema(raw.get("schema", _MISSING), path)
    _unknown_field(raw, PROFILE_FIELDS, path)
    for name in ("name", "gpu"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise ProfileError(f"{path}: {name}: must be a non-empty string")
    prov = raw.get("provenance", {})
    if not isinstance(prov, dict):
        raise ProfileError(f"{path}: provenance: must be an object")
    overhead, per_layer, overhead_source = _parse_overhead(raw.get("overhead_s"), path)
    eager = _parse_eager(raw.get("eager_s"), path)
    tables_raw = raw.get("tables")
    if not isinstance(tables_raw, list):
        raise ProfileError(f"{path}: tables: must be a list of table objects")
    tables = [_parse_table(t, f"tables[{i}]", path) for i, t in enumerate(tables_raw)]
    _check_unique(tables, path)
    if not tables and raw.get("overhead_s") is None and raw.get("eager_s") is None:
        raise ProfileError(f"{path}: tables: empty, and no overhead_s or eager_s: nothing in "
                           "the profile would be read (every step the bare roofline's); give "
                           "its tables, or no profile (profile: null) for the roofline with "
                           "its shipped calibration")
    _check_provenance_source(prov.get("source"), path)  # last: the file's shape is checked first
    return Profile(
        name=raw["name"],
        gpu=raw["gpu"],
        provenance=_provenance(prov),
        overhead_s=overhead,
        overhead_source=overhead_source,
        tables=tables,
        path=path,
        overhead_per_layer_s=per_layer,
        eager=eager,
    )


def save_profile(profile: Profile, path: str | Path) -> Path:
    """Write ``profile`` as JSON (validated by re-reading); returns the path.

    The file is written whole under a temporary name beside ``path``, then renamed over it: a
    write that fails or is interrupted (a full disk, Ctrl-C) leaves the earlier profile as it
    was and no temporary file (it was written in place: a full disk left half a profile). The
    temporary name keeps the first 50 characters of ``path``'s, so that it stays within the
    system's 255 bytes a name where ``path``'s own does."""
    import os

    from tiersim.atomic import create_temp

    p = Path(path)
    doc = profile.to_json()
    profile_from_json(json.loads(json.dumps(doc)), str(p))
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = create_temp(p.parent, f".{p.name[:50]}.", ".tmp")  # an ordinary file's mode
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(doc, separators=(",", ":")) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, p)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise OSError(err.errno, err.strerror, str(p)) from None  # names the profile, not tmp
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return p


#: The fields of a profile's ``overhead_s`` object: the numbers read and their source, and the
#: descriptive fields the harness writes beside them (what ran, how, its sub-timings).
OVERHEAD_FIELDS = ("value", "per_layer_s", "source", "kernel", "notes", "parts")


def _parse_overhead(raw: Any, path: str) -> tuple[float, float, str]:
    """``(value, per_layer_s, source)``; ``per_layer_s`` is optional (default 0). A field not
    in :data:`OVERHEAD_FIELDS` is refused: a misspelt ``per_layer_s`` was read as none.
    ``overhead_s`` absent is the roofline's assumption, labelled ``roofline``, as a table the
    profile lacks is: the harness writes none when it did not measure it (``--ops`` without
    ``overhead``, a section that failed), and such a profile was refused."""
    where = f"{path}: overhead_s"
    if raw is None:
        from tiersim.perf.roofline import RooflineConstants

        constants = RooflineConstants()
        return constants.base_overhead_s, constants.per_layer_overhead_s, "roofline"
    if not isinstance(raw, dict):
        example = '{"value": 0.004, "source": "public"}'
        raise ProfileError(f"{where}: must be an object like {example}")
    _unknown_field(raw, OVERHEAD_FIELDS, where)
    numbers = []
    for name, default in (("value", None), ("per_layer_s", 0.0)):
        numbers.append(_seconds(raw.get(name, default), f"{where}.{name}"))
    return numbers[0], numbers[1], _parse_source(raw.get("source"), f"{where}.source", True)


def _parse_eager(raw: Any, path: str) -> EagerCost:
    """The optional ``eager_s`` object (absent: no CUDA-graph / eager distinction). A cost per
    layer with ``graph_max_tokens`` 0, which turns the cost off, is refused: it was ignored."""
    if raw is None:
        return EagerCost()
    where = f"{path}: eager_s"
    if not isinstance(raw, dict):
        example = '{"graph_max_tokens": 512, "per_layer_s": 0.0002, "source": "roofline"}'
        raise ProfileError(f"{where}: must be an object like {example}")
    unknown = sorted(set(raw) - set(EAGER_FIELDS))
    if unknown:
        raise ProfileError(f"{where}: unknown field {unknown[0]!r}; allowed: "
                           f"{', '.join(EAGER_FIELDS)}")
    graph_max = raw.get("graph_max_tokens")
    if (isinstance(graph_max, bool) or not isinstance(graph_max, int)
            or not 0 <= graph_max <= MAX_GRAPH_TOKENS):
        raise ProfileError(f"{where}.graph_max_tokens: must be a whole number of tokens from 0 "
                           f"to {MAX_GRAPH_TOKENS} (got {shown_json(graph_max)})")
    numbers = []
    for name in ("per_layer_s", "per_moe_layer_s"):
        numbers.append(_seconds(raw.get(name, 0.0), f"{where}.{name}"))
        if not graph_max and numbers[-1]:  # 0 graph tokens reads no eager step at all
            raise ProfileError(f"{where}.graph_max_tokens: 0 turns the eager-step cost off, so "
                               f"{name} {numbers[-1]:g} would be ignored; give the largest step "
                               "the engine replays from a CUDA graph (vLLM: 512 tokens by "
                               "default), or remove eager_s")
    value = raw.get("source")
    if not (isinstance(value, str) and value.startswith("fitted")) and value not in SOURCES:
        raise ProfileError(f"{where}.source: must be one of {', '.join(SOURCES)} or start with "
                           f"'fitted' (got {shown_json(value)})")
    by_tp = _parse_graph_by_tp(raw.get("graph_max_tokens_by_tp", {}), graph_max, where)
    cpp, cpp_source = _parse_cpp_moe(raw, graph_max, where)
    return EagerCost(graph_max, numbers[0], numbers[1], value, by_tp, cpp, cpp_source)


def _parse_cpp_moe(raw: dict, graph_max: int, where: str) -> tuple[float | None, str]:
    """The optional ``per_cpp_moe_layer_s`` and its ``cpp_moe_source`` (given together, the
    source fitted), or one error line."""
    if "per_cpp_moe_layer_s" not in raw and "cpp_moe_source" not in raw:
        return None, ""
    seconds = _seconds(raw.get("per_cpp_moe_layer_s", 0.0), f"{where}.per_cpp_moe_layer_s")
    source = raw.get("cpp_moe_source")
    if "per_cpp_moe_layer_s" not in raw or not (isinstance(source, str)
                                                and source.startswith("fitted")):
        got = ", ".join(f"{key} {shown_json(raw[key])}" if key in raw else f"no {key}"
                        for key in ("per_cpp_moe_layer_s", "cpp_moe_source"))  # not "null"
        raise ProfileError(f"{where}: per_cpp_moe_layer_s and cpp_moe_source go together, the "
                           f"source starting with 'fitted' (got {got}); give both or neither")
    if not graph_max and seconds:
        raise ProfileError(f"{where}.graph_max_tokens: 0 turns the eager-step cost off, so "
                           f"per_cpp_moe_layer_s {seconds:g} would be ignored; give the largest "
                           "step the engine replays from a CUDA graph (vLLM: 512 tokens by "
                           "default), or remove eager_s")
    return seconds, source


def _parse_graph_by_tp(raw: Any, graph_max: int, where: str) -> tuple[tuple[int, int], ...]:
    """The optional ``eager_s.graph_max_tokens_by_tp`` object: tensor-parallel sizes (whole
    numbers written as text, JSON's only keys) to the largest CUDA-graph iteration there (a
    whole number of tokens from 1), or one error line. Refused beside ``graph_max_tokens`` 0,
    which turns the eager cost off at every size."""
    where = f"{where}.graph_max_tokens_by_tp"
    example = '{"1": 256, "2": 256, "3": 256}'
    if not isinstance(raw, dict):
        raise ProfileError(f"{where}: must be an object of tensor-parallel sizes to tokens, like "
                           f"{example} (got {shown_json(raw)})")
    if raw and not graph_max:
        raise ProfileError(f"{where}: graph_max_tokens 0 turns the eager-step cost off at every "
                           "size, so these sizes would be ignored; give graph_max_tokens, or "
                           "remove graph_max_tokens_by_tp")
    pairs = []
    for key, tokens in raw.items():
        if not (key.isascii() and key.isdigit() and int(key) >= 1 and str(int(key)) == key
                and int(key) <= MAX_KEY):
            raise ProfileError(f"{where}: {key!r} is no tensor-parallel size; the keys are whole "
                               f"numbers from 1 written as text, like {example}")
        if (isinstance(tokens, bool) or not isinstance(tokens, int)
                or not 1 <= tokens <= MAX_GRAPH_TOKENS):
            raise ProfileError(f"{where}.{key}: must be a whole number of tokens from 1 to "
                               f"{MAX_GRAPH_TOKENS} (got {shown_json(tokens)})")
        pairs.append((int(key), tokens))
    return tuple(sorted(pairs))


def _seconds(value: Any, where: str) -> float:
    """A number of seconds from 0 to :data:`MAX_SECONDS`, or one error line at ``where``."""
    if not _is_number(value) or not 0 <= value <= MAX_SECONDS:
        raise ProfileError(f"{where}: must be a number of seconds from 0 to {MAX_SECONDS:g} "
                           f"(got {shown_json(value)})")
    return float(value)


PROVENANCE_SOURCE_FIX = ('add "source": "harness" (timed by tiersim calibrate), "public" '
                        '(published measured data) or "roofline" to its "provenance"')
"""How to say where a profile's figures come from, as the refusal of one that does not says it
(:func:`_check_provenance_source`)."""


def _check_provenance_source(value: Any, path: str) -> None:
    """Refuse a profile whose ``provenance.source`` is missing, ``null`` or blank: nothing would
    say who made its tables (tiersim calibrate, the importer and the roofline calibration
    always write it), and its figures would print as sourced by the tables' own word alone."""
    if isinstance(value, str) and value.strip():
        return
    got = ("missing" if value is None else
           f"must name where its tables come from (got {shown_json(value)})")
    raise ProfileError(f"{path}: provenance.source: {got}; {PROVENANCE_SOURCE_FIX}")


def _provenance(prov: dict) -> dict[str, str]:
    """A profile's ``provenance`` as text: each value as the file writes it (``true``, ``5``,
    ``["a"]``: Python's ``str`` made them 'True' and '['a']', which a note then quoted as the
    file's, as in "provenance.status says 'True'"), a ``null`` as no value stated (it read
    'None', a status of a calibration that did not finish)."""
    return {str(k): v if isinstance(v, str) else json_written(v) for k, v in prov.items()
            if v is not None}


def _parse_source(value: Any, where: str, fitted: bool = False) -> str:
    if fitted and isinstance(value, str) and value.startswith("fitted"):
        return value
    if value not in SOURCES:
        raise ProfileError(f"{where}: must be one of {', '.join(SOURCES)} "
                           f"(got {shown_json(value)})")
    return value


def _parse_table(raw: Any, where: str, path: str) -> Table:
    loc = f"{path}: {where}"
    if not isinstance(raw, dict):
        raise ProfileError(f"{loc}: must be an object")
    _unknown_field(raw, TABLE_FIELDS, loc)
    op = raw.get("op")
    if not isinstance(op, str) or op not in OP_AXES:  # a list or object is no op (unhashable)
        raise ProfileError(f"{loc}.op: must be one of {', '.join(OP_AXES)} (got {shown_json(op)})")
    dtype = _parse_dtype(raw, op, loc)
    _check_timing(raw.get("timing"), op, f"{loc}.timing")
    source = _parse_source(raw.get("source"), f"{loc}.source")
    key = _parse_key(raw.get("key"), op, f"{loc}.key", module_dtype(dtype or "")[1])
    axes = _parse_axes(raw.get("axes"), op, f"{loc}.axes")
    latency = _parse_latency(raw.get("latency_s"), axes, f"{loc}.latency_s")
    extra = {k: str(raw[k]) for k in _OPTIONAL_TABLE_FIELDS if k in raw}
    return Table(op, dtype, source, key, axes, latency, extra)


#: Values of a table's optional ``timing`` field: ``eager`` (timed outside CUDA graphs, read
#: without its launch floor in graph steps) or ``graph`` (as if absent).
TIMINGS = ("eager", "graph")


def _check_timing(value: Any, op: str, where: str) -> None:
    """Refuse a ``timing`` other than :data:`TIMINGS` (a typo would read an eagerly timed
    table with its launch floor in every CUDA-graph step), and ``eager`` on a table of another
    op than ``gemm``: only GEMMs are read without their launch floor (such a MoE or attention
    table was labelled so, read as measured, and not made non-decreasing)."""
    if value is not None and value not in TIMINGS:
        raise ProfileError(f"{where}: must be one of {', '.join(TIMINGS)} "
                           f"(got {shown_json(value)}); "
                           "eager: timed outside CUDA graphs")
    if value == "eager" and op != "gemm":
        raise ProfileError(f"{where}: 'eager' applies to gemm tables only (their launch floor "
                           f"is removed in CUDA-graph steps); remove it from this {op} table")


def _parse_dtype(raw: dict, op: str, loc: str) -> str | None:
    field_name = OP_DTYPE[op]
    other = next((f for f in ("precision", "kv_dtype") if f in raw and f != field_name), None)
    if other is not None:
        takes = f"takes {field_name}" if field_name else "has no dtype field"
        raise ProfileError(f"{loc}.{other}: not a field of op {op!r} (it {takes}); remove it")
    if field_name is None:
        return None
    value = raw.get(field_name)
    if not isinstance(value, str) or not value:
        raise ProfileError(f"{loc}.{field_name}: required for op {op!r} (e.g. 'bf16', 'fp8')")
    from tiersim.hardware.precisions import PRECISIONS

    formats = ", ".join(PRECISIONS)
    if field_name == "precision" and value not in PRECISIONS:
        raise ProfileError(f"{loc}.precision: unknown weight format "
                           f"{shown_json(value)}; use one of "
                           f"{formats}")
    kv, module, weights = module_dtype(value)
    if field_name == "kv_dtype" and (kv not in TABLE_KV_DTYPES
                                     or (module and weights not in PRECISIONS)):
        raise ProfileError(f"{loc}.kv_dtype: unknown KV-cache dtype "
                           f"{shown_json(value)}; use one of "
                           f"{', '.join(TABLE_KV_DTYPES)}, or for an MLA (or DSA) module "
                           f"'<kv> mla-<weight format>' ('<kv> dsa-...') ({formats})")
    if field_name == "kv_dtype":  # one name per format: fp8_e4m3 is the fp8 tables' format
        from tiersim.hardware.precisions import kv_dtype_name

        return kv_dtype_name(kv) + (f" {module}-{weights}" if module else "")
    return value


def _stray_module_field(raw: dict, names: tuple[str, ...], loc: str) -> None:
    """Refuse a module key field (:data:`MODULE_KEYS`) on a table of another kind."""
    for name in raw:
        kinds = [k for k, fields in MODULE_KEYS.items() if name in fields]
        if kinds and name not in names:
            which = " or ".join(k.upper() for k in kinds)
            dtypes = " or ".join(f"'<kv> {k}-<weight format>'" for k in kinds)
            raise ProfileError(f"{loc}.{name}: only {'an' if kinds[0] == 'mla' else 'a'} "
                               f"{which} module's table (kv_dtype {dtypes}) carries it; "
                               "remove it")


def _article(kind: str) -> str:
    """``"an MLA"`` or ``"a DSA"``: a module kind with its article."""
    return f"{'an' if kind == 'mla' else 'a'} {kind.upper()}"


def _with_module_default(raw: dict, kind: str, loc: str) -> dict:
    """A module table's key with the :data:`OMITTED_KEYS` of the measured shape
    (:data:`MEASURED_MODULE_KEYS`) its other fields give, where it leaves them all out;
    refused where it gives some only, or where it leaves them out at a shape none was
    measured at."""
    omitted = OMITTED_KEYS.get(kind, ())
    missing = [n for n in omitted if n not in raw]
    if not missing:
        return raw
    shapes = MEASURED_MODULE_KEYS[kind]
    names = " or ".join(f"{name}'s" for name in shapes)
    if len(missing) < len(omitted):
        raise ProfileError(f"{loc}.{missing[0]}: {_article(kind)} module's key gives all of "
                           f"{', '.join(omitted)} or none (none: {names} shapes); "
                           f"add {', '.join(missing)}")
    found = [key for key in shapes.values()
             if all(raw.get(n) == v for n, v in key.items() if n not in omitted)]
    if not found:
        raise ProfileError(f"{loc}.{omitted[0]}: {_article(kind)} module's key leaves out "
                           f"{' and '.join(omitted)} only at {names} shapes, and this key is "
                           f"at none of them; add {', '.join(omitted)}")
    return {**raw, **{n: found[0][n] for n in omitted}}


def _parse_key(raw: Any, op: str, loc: str, kind: str = "") -> dict[str, int]:
    """The key of a table of ``op`` (a module's of ``kind``, :data:`MODULE_KINDS`: with its
    :data:`MODULE_KEYS`, which no other table carries)."""
    names = (*OP_KEYS[op], *MODULE_KEYS.get(kind, ()))
    if not isinstance(raw, dict):
        raise ProfileError(f"{loc}: must be an object with {', '.join(names)}")
    _stray_module_field(raw, names, loc)
    raw = _with_module_default(raw, kind, loc)
    module_fields = {n for fields in MODULE_KEYS.values() for n in fields}
    unknown = sorted(str(k) for k in raw if k not in names and k not in module_fields)
    if unknown:  # a table is matched on its whole key: a field it ignored would match anyway
        raise ProfileError(f"{loc}.{unknown[0]}: not a key field of op {op!r} (its key is "
                           f"{', '.join(names)}); remove it")
    key = {}
    for name in names:
        value = raw.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_KEY:
            raise ProfileError(f"{loc}.{name}: must be a whole number from 1 to {MAX_KEY} "
                               f"(got {shown_json(value)})")
        key[name] = value
    return key


def _parse_axes(raw: Any, op: str, loc: str) -> dict[str, np.ndarray]:
    names = OP_AXES[op]
    if not isinstance(raw, dict) or set(raw) != set(names):
        got = sorted(raw) if isinstance(raw, dict) else raw
        raise ProfileError(f"{loc}: op {op!r} needs exactly the axes {list(names)} (got {got})")
    axes = {}
    for name in names:
        values = raw[name]
        arr = _plain_axis(values)
        if arr is None:  # not the common case: each check in turn, naming what is wrong
            arr = _checked_axis(values, f"{loc}.{name}")
        if np.any(np.diff(arr) <= 0):
            raise ProfileError(f"{loc}.{name}: must be strictly ascending")
        axes[name] = arr
    points = math.prod(a.size for a in axes.values())
    if points > MAX_TABLE_POINTS:
        sizes = " x ".join(f"{a.size:,}" for a in axes.values())
        raise ProfileError(f"{loc}: {points:,} points ({sizes}); a table holds at most "
                           f"{MAX_TABLE_POINTS:,} (thin it: the step model interpolates between "
                           "points)")
    return axes


def _checked_axis(values: Any, where: str) -> np.ndarray:
    """An axis's ``values`` as float64, or the first of its checks it fails as one line."""
    if (
        not isinstance(values, list)
        or not values
        or not all(_is_number(v) and v > 0 for v in values)
    ):
        raise ProfileError(f"{where}: must be a non-empty list of positive numbers")
    if len(values) > MAX_AXIS_POINTS:
        raise ProfileError(f"{where}: {len(values):,} points; a table axis holds at "
                           f"most {MAX_AXIS_POINTS:,} (thin it: the step model interpolates "
                           "between points)")
    arr = _floats(values)
    if arr is None or not np.all(np.isfinite(arr)):
        raise ProfileError(f"{where}: a value is too large for a number (at most "
                           "about 1.8e308)")
    return arr


def _plain_axis(values: Any) -> np.ndarray | None:
    """An axis's ``values`` as float64 where they pass :func:`_checked_axis` as the common
    case does: a list of at most :data:`MAX_AXIS_POINTS` ints and finite floats, all above 0,
    checked at C speed; None otherwise, and :func:`_checked_axis` says why. NOTE: a shipped
    profile's 150,000 axis and 210,000 latency values checked one by one (here and in
    :func:`_all_numbers`) were a quarter of reading it, once per run."""
    if (not isinstance(values, list) or not values or len(values) > MAX_AXIS_POINTS
            or not set(map(type, values)) <= _PLAIN_NUMBERS):
        return None
    arr = _floats(values)
    if arr is None or not 0.0 < arr.min() <= arr.max() < np.inf:  # a NaN fails both
        return None
    return arr


_PLAIN_NUMBERS = {int, float}
"""The types JSON numbers are read as (a ``bool``, an int subclass, is no number here)."""


#: Most points one table axis may hold: measured tables hold tens to hundreds, and every
#: table read is fitted non-decreasing (:func:`monotone`) when a model first uses it.
MAX_AXIS_POINTS = 10_000
MAX_TABLE_POINTS = 100_000
"""Most points one table may hold, over all its axes (the shipped tables hold at most 204):
every point of a table read is fitted and checked against the roofline in Python, about 8 us
each, so a 4,000 x 4,000 table (31 MiB) ran a two-minute scenario for 92 s at 1.4 GB."""


def _parse_latency(raw: Any, axes: dict[str, np.ndarray], loc: str) -> np.ndarray:
    shape = tuple(a.size for a in axes.values())
    try:
        arr = np.asarray(raw, dtype=np.float64) if _all_numbers(raw) else None
    except (TypeError, ValueError):
        arr = None
    except OverflowError:  # an integer beyond float64: out of range below
        arr = np.full(shape, np.inf) if np.shape(raw) == shape else None
    if arr is None or arr.shape != shape:
        got = "ragged or non-numeric" if arr is None else f"shape {arr.shape}"
        raise ProfileError(f"{loc}: must have shape {shape} to match the axes (got {got})")
    bad = ~np.isfinite(arr) | (arr < MIN_SECONDS) | (arr > MAX_SECONDS)
    if np.any(bad):
        raise ProfileError(f"{loc}{np.argwhere(bad)[0].tolist()}: latencies must be seconds "
                           f"from {MIN_SECONDS:g} to {MAX_SECONDS:g}")
    return arr


def _floats(values: list) -> np.ndarray | None:
    """``values`` as float64, None where one is an integer beyond float64's range."""
    try:
        return np.asarray(values, dtype=np.float64)
    except OverflowError:
        return None


def _all_numbers(raw: Any) -> bool:
    """Whether ``raw`` is a number or (nested) lists of JSON numbers only: numpy would also
    read the text "1e-5" as a number, which a profile never writes."""
    if isinstance(raw, list):
        if set(map(type, raw)) <= _PLAIN_NUMBERS:  # a row of numbers, checked at C speed
            return True
        return all(_all_numbers(x) for x in raw)
    return isinstance(raw, int | float) and not isinstance(raw, bool)


def _check_unique(tables: list[Table], path: str) -> None:
    seen: dict[str, int] = {}
    for i, t in enumerate(tables):
        if t.name in seen:
            raise ProfileError(
                f"{path}: tables[{i}]: duplicates tables[{seen[t.name]}] ({t.name}); keep one"
            )
        seen[t.name] = i


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)  # any int: ranges are checked after
