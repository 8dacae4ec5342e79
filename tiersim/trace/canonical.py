"""The canonical request table (DESIGN.md section 3): building it, checking optional columns,
writing it to Parquet.

Core columns: ``request_id`` int64, ``arrival_s`` float64 (non-decreasing), ``input_tokens`` and
``output_tokens`` int32 > 0. Optional: ``session_id`` int64, ``step`` int32, ``task_type``
category, ``difficulty_class`` category (text, missing: none), ``prefix_hashes`` list of int64
(in every row, ``[]`` for none; in CSV written as ``[1, 2, 3]``), ``difficulty`` float32 in
[0, 1], ``correct_<tier>`` float32 in [0, 1] (true/false read as 1/0), ``feat_*`` numeric
within +-1e15, ``prompt`` text (missing: none; a dictionary-encoded Parquet column: category),
``prompt_hash`` (in every row). A missing hash list, id or prompt hash is refused alike from
Parquet, CSV and JSON lines.
Other columns pass through unchanged, with a note naming them (and the canonical name each is
close to: ``sesion_id`` (session_id?)), as nothing reads them; a run and ``tiersim trace
inspect`` (``keep`` of :func:`tiersim.trace.loader.read_trace`) read a CSV's as categories and
leave a Parquet file's out, never decoded; a column ``keep`` names (a run's response cache
key) is read, and not noted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tiersim.atomic import write_with_atomic
from tiersim.errors import TraceError, shown, unprintable, unprintable_words
from tiersim.trace import checks
from tiersim.trace.filecheck import Source
from tiersim.trace.trace_columns import CORE, NAMED

BY_VALUE = ("session_id", "prompt", "task_type", "step_type", "subject", "difficulty_class")
"""Text columns checked by their distinct values when read as categories (:func:`by_value`),
so read from Parquet as categories (:func:`tiersim.trace.read_parquet.text_as_categories`)."""
PREFIXES = ("correct_", "p_correct_", "feat_")
"""Prefixes of the optional columns read by their prefix."""
FOLLOWS = "follows_id"
"""Internal column: the ``request_id`` of a step's predecessor, -1 for a session's first step."""
OUTPUT_HASHES = "output_hashes"
"""Internal column (``context: accumulate`` with generated hashes): the hashes of the full blocks
a step's output completes beyond its prompt's full blocks, as its follower's prompt holds them
(empty for a session's last step). A replica that caches prefixes caches them when the step
finishes, as vLLM caches a block of generated tokens once it is full."""
INTERNAL = (FOLLOWS, OUTPUT_HASHES)
"""Columns tiersim makes itself (:mod:`tiersim.workload.sessions`), refused in a trace: a
trace's ``follows_id`` was taken for the session links (a plain trace's ended the run in a
traceback)."""


def is_optional(name: str) -> bool:
    """Whether ``name`` is an optional canonical column (by its name or its prefix)."""
    return name in NAMED or name.startswith(PREFIXES)


MAX_FEATURE = 1e15
"""Largest absolute ``feat_*`` value: the classifier's solver freezes (or refuses) values past
1e30 left after scaling, which a constant column of 1e50 leaves from rounding."""
MAX_TOOL_S = 1e6
"""Longest tool or think time a session step may wait (seconds, about 11.6 days)."""


def build(request_id: np.ndarray, arrival_s: np.ndarray, input_tokens: np.ndarray,
          output_tokens: np.ndarray, extra: dict | None = None) -> pd.DataFrame:
    """Assemble a canonical table from checked arrays (dtypes are set here), every column at
    once: adding ``extra`` one column at a time fragmented the frame (pandas' PerformanceWarning
    from a trace of 100 or more columns)."""
    return pd.DataFrame({
        "request_id": np.asarray(request_id, dtype=np.int64),
        "arrival_s": np.asarray(arrival_s, dtype=np.float64),
        "input_tokens": np.asarray(input_tokens, dtype=np.int32),
        "output_tokens": np.asarray(output_tokens, dtype=np.int32),
        **(extra or {}),
    })


def optional_columns(raw: pd.DataFrame, src: Source) -> dict:
    """Check and convert the optional canonical columns present in ``raw``; others pass as-is."""
    out = {}
    for name in raw.columns:
        if name in CORE:
            continue
        no_internal([name], src)
        out[name] = _optional(raw[name], name, src)
    return out


def no_internal(columns, src: Source) -> None:
    """Refuse the first of ``columns`` named as a column tiersim makes itself
    (:data:`INTERNAL`), whether its values are read or not (a Parquet file's column left out of
    the read is refused as the same CSV's is)."""
    name = next((c for c in columns if c in INTERNAL), None)
    if name is not None:
        raise src.error(f"{name} is the name of a column tiersim makes itself (for agentic "
                        "sessions); rename the column, or remove it", None, name)


TIMES_REFUSED = {"parent": "parent", "tool_s": "tool time in seconds",
                 "spec_acceptance": "acceptance rate"}
"""Number columns, with their labels, not read by :func:`tiersim.trace.checks.numbers` as
they stand (a parent is read per session; the others are filled first), refused up front as
date-time or duration columns: a Parquet ``parent`` of durations read 1 ns as step 1."""


def distinct(s: pd.Series, src: Source) -> tuple[pd.Series, Source, np.ndarray]:
    """A category column (a dictionary-encoded Parquet column) as its distinct values: one
    row for each (a missing value too), as objects, in the order of their first rows; a
    Source naming those rows; and each row's place among them. A check of the few rows
    checks every row, and ``values[places]`` gives every row's value, without the one long
    text of a dictionary copied into each row (a 2,000-row file of one 100,000-character
    string took 400-800 MB)."""
    codes = s.cat.codes.to_numpy()
    _, firsts, places = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(firsts)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    firsts = firsts[order]
    rows = firsts if src.rows is None else np.asarray(src.rows)[firsts]
    values = pd.Series(s.iloc[firsts].astype(object).to_numpy(), dtype=object)
    return values, replace(src, rows=rows), rank[places.ravel()]


def by_value(s: pd.Series, src: Source, check):
    """``check(s, src)``, which checks a column and returns its values; of a category column,
    of its distinct values only (:func:`distinct`), given back as a Categorical of the values
    ``check`` returns (missing ones missing; categories sorted, as a Categorical of every
    row's value has them): a dictionary's one long text is neither checked nor copied once
    per row."""
    if not isinstance(s.dtype, pd.CategoricalDtype):
        return check(s, src)
    values, value_src, places = distinct(s, src)
    return pd.Categorical(np.asarray(check(values, value_src), dtype=object))[places]


def distinct_text(s: pd.Series) -> set[str]:
    """The distinct values of a label column as text (``astype(str)`` of each), found before
    each is made text: of a category column, from its few categories (each row's copy of a
    dictionary's one long label took hundreds of MB)."""
    return set(pd.Series(s.unique(), dtype=object).astype(str).tolist())


def _session_ids(s: pd.Series, src: Source) -> np.ndarray:
    """Session ids as int64; a category column is checked by its distinct values. A column
    holding text ids (aiperf's ``"conv_0"``) is numbered by :func:`_numbered_texts`."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        values, value_src, places = distinct(s, src)
        return _session_ids(values, value_src)[places]
    if text_ids(s, src.typed):
        return _numbered_texts(s, src)
    _no_names_beside_numbers(s, src)
    return checks.whole_numbers(src, s, "session_id", "session id")


def _no_names_beside_numbers(s: pd.Series, src: Source) -> None:
    """Refuse a column holding both names (text that is no number) and numbers, at its first
    name, naming the first number's row and both fixes: read as numbers, a name was refused
    "is not a number ...; write a number", though names alone are read (hex ids, "a3f9c2d1",
    beside one of digits only, "49201837", read so)."""
    texts = [v for v in _distinct(s) if isinstance(v, str) and v.strip()]
    names = {v for v, no in zip(texts, _no_numbers(texts), strict=True) if no}
    if not names:
        return
    named = s.isin(names).to_numpy()
    blank = s.map(lambda v: isinstance(v, str) and not v.strip()).to_numpy(dtype=bool)
    j = checks.first_true(~named & s.notna().to_numpy() & ~blank)
    if j is None:  # names and blanks: a blank is refused as a missing id
        return
    i = checks.first_true(named)
    raise src.error(f"session id is a name (got {checks.short(s.iloc[i])}) where row "
                    f"{src.row(j)}'s is a number; give every session id as a number, or every "
                    "one as a name that is no number (names are numbered in order of first "
                    "appearance)", i, "session_id")


TEXT_IDS_NOTE = ("column 'session_id' holds text ids (as aiperf writes them): read as the whole "
                 "numbers 0 to {last:,}, one for each of its {ids} in the order each first "
                 "appears (a run that replays the sessions writes these numbers in "
                 "requests.parquet's session_id column)")
"""The note a trace with text session ids gets (:func:`text_ids_notes`)."""


def text_ids(s: pd.Series, typed: bool = False) -> bool:
    """Whether a session id column holds text ids (aiperf's ``"conv_0"``): every id given is
    text that is no number (a blank cell is a missing id), or, in a file that types its values
    (``typed``: JSON lines, Parquet; :attr:`tiersim.trace.filecheck.Source.typed`), every id is
    text and one is no number: hex ids (``"a3f9c2d1"``) with one of digits only
    (``"49201837"``) are names there, as the file types them. Such ids are names, numbered in
    order of first appearance. A column of numbers written as text is read as numbers; one
    mixing numbers and other text where the file does not type them (a CSV's ``3``, ``x``) is
    checked as numbers, and its first text refused, as a typo more likely than a name."""
    values = [v for v in _distinct(s) if not (isinstance(v, str) and not v.strip())]
    if not values or not all(isinstance(v, str) for v in values):
        return False
    names = _no_numbers(values)
    return bool(names.any()) if typed else bool(names.all())


def _distinct(s: pd.Series) -> list:
    """The distinct values a column holds (of a category column, its used categories, never
    each row's copy of a long text); none for a column of numbers."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        codes = s.cat.codes.to_numpy()
        return list(s.cat.categories[np.unique(codes[codes >= 0])])
    if s.dtype != object and not pd.api.types.is_string_dtype(s.dtype):
        return []
    try:
        return list(pd.unique(s.dropna()))
    except TypeError:  # a list or map in a cell: no id, refused as a number is
        return []


def _no_numbers(texts: list[str]) -> np.ndarray:
    """Whether each of ``texts`` is no number as the trace's cells are read
    (:func:`tiersim.trace.checks.to_floats`: NaN). Python's ``float`` read ``1001_1``, Arabic-
    Indic digits and a trailing no-break space as numbers, which the cells' reader does not, so
    a CSV of ids such as ``1001_1`` was refused "session id is not a number". NOTE: the cells'
    reader is asked only of the texts Python's ``float`` reads (it reads every text that
    reader does): a million names ``conv_k`` took 6 s through it, 2 s through ``float``."""
    out = np.array([_not_a_float(text) for text in texts], dtype=bool)
    maybe = np.flatnonzero(~out)
    if len(maybe):
        out[maybe] = np.isnan(checks.to_floats(pd.Series([texts[i] for i in maybe], dtype=object)))
    return out


def _not_a_float(text: str) -> bool:
    """Whether Python's ``float`` reads no number in ``text``."""
    try:
        float(text)
    except ValueError:
        return True
    return False


def _numbered_texts(s: pd.Series, src: Source) -> np.ndarray:
    """Text session ids as int64, 0 for the first distinct id of the file, 1 for the next
    one to appear, and so on (the same file always numbers alike); a missing or blank id is
    refused, as in a column of numbers."""
    texts = s.map(lambda v: v.strip() if isinstance(v, str) else v)
    i = checks.first_true((texts.isna() | texts.eq("")).to_numpy())
    if i is not None:
        raise src.error("missing session id; fill it in or remove the row", i, "session_id")
    codes, _ = pd.factorize(texts.astype(str), sort=False)
    return codes.astype(np.int64)


SESSION_NAMES = "session_names"
"""The canonical table's ``attrs`` key holding a text ``session_id`` column's ids, in the
order they are numbered (:func:`session_names`), so errors name a session as the file writes
it."""


def session_names(raw: pd.DataFrame, typed: bool = False) -> tuple[str, ...] | None:
    """The text session ids of ``raw`` (aiperf's ``"conv_0"``), stripped, the one numbered k
    at place k (:func:`_numbered_texts`'s order of first appearance); None where the column is
    absent or holds numbers (``typed``: as :func:`text_ids`'s). A category column is read by
    its categories, not a copy a row."""
    if "session_id" not in raw.columns or not text_ids(raw["session_id"], typed):
        return None
    firsts = pd.factorize(raw["session_id"], sort=False)[1]
    return tuple(dict.fromkeys(str(v).strip() for v in firsts if isinstance(v, str)))


def with_session_names(table: pd.DataFrame, raw: pd.DataFrame,
                       typed: bool = False) -> pd.DataFrame:
    """``table`` with :func:`session_names` of ``raw`` in its ``attrs`` where it has them."""
    names = session_names(raw, typed)
    if names is not None:
        table.attrs[SESSION_NAMES] = names
    return table


def text_ids_notes(raw: pd.DataFrame, typed: bool = False) -> list[str]:
    """The note on a trace whose ``session_id`` column holds text ids (none otherwise;
    ``typed``: as :func:`text_ids`'s)."""
    if "session_id" not in raw.columns or not text_ids(raw["session_id"], typed):
        return []
    values = _distinct(raw["session_id"])
    count = len({str(v).strip() for v in values})
    ids = f"{count:,} distinct id{'' if count == 1 else 's'}"
    return [TEXT_IDS_NOTE.format(last=count - 1, ids=ids), *_spaced_ids_notes(values)]


SPACED_IDS_NOTE = ("column 'session_id' writes {ids} with spaces around it and without (first "
                   "{shown}): each read as one session, as ids are compared without the "
                   "spaces around them (a CSV's ', conv_0' holds ' conv_0'); give different "
                   "sessions different ids")
"""The note on text session ids that differ only by the spaces around them
(:func:`_spaced_ids_notes`)."""


def _spaced_ids_notes(values: list) -> list[str]:
    """The note on the distinct text ids ``values`` where two differ only by the spaces around
    them (``" a"``, ``"a"``), which are one session (:data:`SPACED_IDS_NOTE`); none otherwise.
    Kept apart, a CSV written with ``", "`` between cells split a session in two, and the two
    were named alike in every error; a number's spaces are never read either."""

    forms: dict[str, list[str]] = {}
    for v in values:
        if isinstance(v, str) and v.strip():
            forms.setdefault(v.strip(), []).append(v)
    merged = [written for written in forms.values() if len(written) > 1]
    if not merged:
        return []
    ids = "1 id" if len(merged) == 1 else f"{len(merged):,} ids"
    shown = " and ".join(checks.shown_name(v) for v in merged[0][:2])
    return [SPACED_IDS_NOTE.format(ids=ids, shown=shown)]


def _optional(s: pd.Series, name: str, src: Source):
    if name == "session_id":
        return _session_ids(s, src)
    if name == "step":
        return checks.whole_numbers(src, s, name, "step", low=(0, ">= 0"),
                                    high=(checks.INT32_MAX,
                                          f"at most {checks.INT32_MAX}")).astype(np.int32)
    if name in TIMES_REFUSED:  # checked before a fill makes the column one of objects
        checks.not_temporal(src, s, name, TIMES_REFUSED[name])
    if name == "parent":  # whether each is -1 or an earlier step: tiersim.workload.sessions
        return s.to_numpy()
    if name == "tool_s":  # missing means none (a session's first step)
        return checks.numbers(src, _filled(s, 0), name, "tool time in seconds",
                              low=(0, ">= 0"), high=(MAX_TOOL_S, "<= 1e6"))
    if name == "spec_acceptance":  # missing: the scenario's rate
        within = "between 0 and 1"
        values = checks.numbers(src, _filled(s, 0.0), name, "acceptance rate", low=(0, within),
                                high=(1, within))
        return np.where(s.isna().to_numpy(), np.nan, values)
    if name == "task_type":
        return by_value(s, src, _task_type)
    if name == "step_type":
        return by_value(s, src, _step_types)
    if name == "subject":  # the classifier's one-hot label (it crashed on undecodable bytes)
        return by_value(s, src, _subjects)
    if name == "difficulty_class":  # accuracy by class, the closed form's p (with labels)
        return by_value(s, src, _difficulty_classes)
    if name == "prefix_hashes":
        return _prefix_hashes(s, src)
    if name == "difficulty" or name.startswith(("correct_", "p_correct_")):
        within = "between 0 and 1"
        return checks.numbers(src, s, name, name, low=(0, within), high=(1, within),
                              flags=name.startswith("correct_")).astype(np.float32)
    if name.startswith("feat_"):
        bound = (f"between -{MAX_FEATURE:g} and {MAX_FEATURE:g} (the classifier's solver "
                 "stalls on larger ones); rescale the column")
        values = checks.numbers(src, s, name, "feature value", low=(-MAX_FEATURE, bound),
                                high=(MAX_FEATURE, bound), flags=True)
        return s.to_numpy() if pd.api.types.is_numeric_dtype(s.dtype) else values
    if name == "prompt":
        return by_value(s, src, _prompt)
    if name == "prompt_hash":
        return _prompt_hashes(s, src)
    if name in src.kept:  # a response cache's key (read_trace's keep)
        return _key_column(s, src, name)
    # a column carried, used by nothing: categories stay so (as objects, a dictionary's one
    # long string was copied into every row: read_parquet.text_as_categories)
    return s.array if isinstance(s.dtype, pd.CategoricalDtype) else s.to_numpy()


def _filled(s: pd.Series, value) -> pd.Series:
    """``s`` with its missing cells ``value``; a dictionary-encoded Parquet column, read as
    categories, is taken as its values first (a category column takes no value outside its
    categories: filling one raised TypeError)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    return s.fillna(value)


def _prompt(s: pd.Series, src: Source) -> np.ndarray:
    """Prompt text for the classifier's TF-IDF features: each cell text or missing (read as no
    text); a number or raw bytes is refused with its row. (A category column is checked by
    its distinct values and stays one, :func:`by_value`: as text, a dictionary's one long
    prompt was copied into every row.)"""
    cells = s.to_numpy(dtype=object)
    text = pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty")
    for i, cell in enumerate(() if text else cells):
        if not (isinstance(cell, str) or cell is None or cell is pd.NA
                or (isinstance(cell, float) and np.isnan(cell))):
            raise src.error(f"prompt must be text (got {_not_text(cell)}); write the prompt "
                            "as a string, or leave the cell empty", i, "prompt")
    return pd.Series(cells, index=s.index).where(s.notna(), "").to_numpy(dtype=object)


def _not_text(cell) -> str:
    """A prompt cell that is no text, for a message, by its kind and size alone: a prompt may
    hold a secret (docs/security.md), so neither the text of its bytes (a Parquet binary
    column) nor its number is shown: ``binary data of 22 bytes``, ``a number``."""
    if isinstance(cell, bytes | bytearray):
        return f"binary data of {len(cell):,} byte{'s' if len(cell) != 1 else ''}"
    if isinstance(cell, bool | np.bool_):
        return "true/false"
    if isinstance(cell, int | float | np.integer | np.floating):
        return "a number"
    return checks.short(cell)


def _step_types(s: pd.Series, src: Source) -> np.ndarray:
    """A session step's label: one printable text (or missing) per row."""
    one_value_each(s, src, "step_type", "row's step_type")
    _printable_labels(s, src, "step_type")
    return _whole_as_written(s).to_numpy()


def _whole_as_written(s: pd.Series) -> pd.Series:
    """A label column of whole numbers with a missing row as the text the file writes (``"1"``,
    missing kept missing): pandas makes such a column floats, which read ``"1.0"`` as text (a
    ``step_type`` of 1 and 2 with one empty row read 1.0 and 2.0, and ``fillna`` of the empty
    row with text was a pandas FutureWarning; a nullable integer column read the same). Any
    other column is as it was."""
    numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
    if not numeric or not s.isna().any():
        return s
    values = s.dropna().to_numpy(dtype=np.float64)
    exact = np.abs(values) < checks.EXACT_FLOAT_INT  # NaN and infinities too are not
    if not np.all(exact & (values == np.floor(values))):
        return s
    return s.astype("Int64").astype(object).where(s.notna(), None)


def _subjects(s: pd.Series, src: Source) -> np.ndarray:
    """The classifier's one-hot label: one printable value (or missing) per row, as a
    ``task_type`` (a right-to-left override in one was taken without a word)."""
    one_value_each(s, src, "subject", "row's subject")
    _printable_labels(s, src, "subject")
    return s.to_numpy()


MAX_CLASS_CHARS = 100
"""Longest ``difficulty_class`` name (characters): each class names a row of the console's
and report's accuracy table and a key of summary.json's ``accuracy_by_class`` (a sweep's
column ``accuracy_by_class.<class>.accuracy``)."""


def _difficulty_classes(s: pd.Series, src: Source) -> pd.Categorical:
    """Each request's difficulty class (``easy``, ``hard``, or any other name), read where the
    trace gives ``correct_<tier>`` labels (:func:`tiersim.routing.accuracy.prepare_workload`):
    one printable text of at most :data:`MAX_CLASS_CHARS` characters per row, spaces around it
    dropped, or missing (an empty cell: the request has no class, counted as
    ``unclassified``). A CSV cell is text as the file writes it (a column of whole numbers
    reads ``1``, not ``1.0``); in JSON lines or Parquet, which type their cells, a number or
    true/false is refused, as it is no class name."""
    column = "difficulty_class"
    one_value_each(s, src, column, "row's class name")
    if src.typed:
        _text_cells(s, src, column)
    cells = _whole_as_written(s).astype(object).to_numpy()
    names = [_class_name(cell) for cell in cells]
    text = pd.Series(names, dtype=object)
    _printable_labels(text, src, column)
    i = checks.first_true(text.map(lambda v: v is not None and len(v) > MAX_CLASS_CHARS)
                          .to_numpy(dtype=bool))
    if i is not None:
        raise src.error(f"difficulty_class is {len(names[i]):,} characters long, over the "
                        f"{MAX_CLASS_CHARS} a class name may have (it names a row of the "
                        "accuracy-by-class table); shorten it", i, column)
    _few_classes(names, src)
    return pd.Categorical(names)


MAX_CLASSES = 64
"""Distinct difficulty classes a trace may name: each is a row of the accuracy-by-class table
and a key of summary.json's ``accuracy_by_class`` (a column of a million distinct names made
a summary and a report of a million rows)."""


def _few_classes(names: list[str | None], src: Source) -> None:
    """Refuse a ``difficulty_class`` column of more than :data:`MAX_CLASSES` distinct names,
    at the row of the first name past them."""
    seen: set[str] = set()
    for i, name in enumerate(names):
        if name is None or name in seen:
            continue
        seen.add(name)
        if len(seen) > MAX_CLASSES:
            raise src.error(f"difficulty_class names more than {MAX_CLASSES} classes (this row's "
                            f"{shown(name)} is class {MAX_CLASSES + 1}); a class is a row "
                            "of the accuracy-by-class table: group the requests into a few "
                            "classes (easy, hard, ...)", i, "difficulty_class")


def _class_name(cell) -> str | None:
    """A difficulty class cell as its name: text (bytes decoded) without the spaces around
    it; None for a missing or blank cell."""
    if cell is None or cell is pd.NA or (isinstance(cell, float) and np.isnan(cell)):
        return None
    if isinstance(cell, bytes | bytearray):  # UTF-8, checked by one_value_each
        cell = bytes(cell).decode("utf-8")
    text = str(cell).strip()
    return text or None


def _text_cells(s: pd.Series, src: Source, column: str) -> None:
    """Refuse a number or true/false cell of ``column`` in a file that types its cells (JSON
    lines, Parquet): a class is named in text."""
    if pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty", "bytes"):
        return
    i = checks.first_true(s.map(lambda v: isinstance(v, bool | np.bool_ | int | float
                                                     | np.integer | np.floating)
                                and not (isinstance(v, float | np.floating) and np.isnan(v)))
                          .to_numpy(dtype=bool))
    if i is not None:
        raise src.error(f"{column} must be text, a class name such as easy or hard (got "
                        f"{_not_text(s.iloc[i])}); write the class name as a string, or leave "
                        "the cell empty", i, column)


def _task_type(s: pd.Series, src: Source) -> pd.Categorical:
    i = checks.first_true(s.isna().to_numpy())
    if i is not None:
        raise src.error("missing task_type; fill it in or remove the column", i, "task_type")
    one_value_each(s, src, "task_type", "row's task_type")
    _printable_labels(s, src, "task_type")
    return pd.Categorical(s.astype(str))


def _printable_labels(s: pd.Series, src: Source, name: str) -> None:
    """Refuse a label (a task or step type, shown in tables and reports, or a subject) holding a
    control or format character: a terminal escape or a right-to-left override would change
    what the reader sees, as in a tier's name."""
    labels = s.dropna().astype(str)
    for label in pd.unique(labels):
        bad = unprintable(label)
        if bad is not None:
            # NOTE: compared in Python: numpy's == drops a text's trailing NUL characters
            # ("a\x00" matched "a", naming the wrong row, or none: an IndexError)
            row = next(i for i, text in enumerate(s.astype(str)) if text == label)
            raise src.error(f"{name} contains {unprintable_words(bad)}; use printable text",
                            row, name)


def _prefix_hashes(s: pd.Series, src: Source) -> np.ndarray:
    """Lists of int64 block hashes (:func:`hash_column`)."""
    return hash_column(s, src, "prefix_hashes")


def _prompt_hashes(s: pd.Series, src: Source) -> np.ndarray:
    """Response-cache keys, one in every row: a missing key (null, an empty cell) is refused in
    every format, as it would be one shared key (NaN), and in CSV would turn a column of whole
    numbers into rounded floats (two keys reading as one)."""
    one_value_each(s, src, "prompt_hash")  # first: a list or undecodable bytes is no text
    missing = s.isna().to_numpy()
    if not pd.api.types.is_numeric_dtype(s.dtype):
        blank = s.astype("string").str.strip().eq("")
        missing = missing | blank.fillna(False).to_numpy(dtype=bool)
    i = checks.first_true(missing)
    if i is not None:
        raise src.error("missing prompt_hash; give every row its prompt's hash (the same "
                        "prompt, the same hash), or remove the column", i, "prompt_hash")
    _exact_keys(s, src)
    return s.to_numpy()


def _key_column(s: pd.Series, src: Source, name: str):
    """A column the caller reads as the response cache's key (``keep`` of
    :func:`tiersim.trace.loader.read_trace`), checked as ``prompt_hash`` is, with the file's
    row: one number or text per row, and exact (:func:`_exact_keys`; a column of whole numbers
    with a missing cell is read as decimals, so keys beyond 2^53 read as one key and answered
    each other from the cache). A missing cell stays missing: a prompt of its own."""
    one_value_each(s, src, name)
    _exact_keys(s, src, name)
    return s.array if isinstance(s.dtype, pd.CategoricalDtype) else s.to_numpy()


def check_prompt_lengths(src: Source, hashes: pd.Series, input_tokens: np.ndarray) -> None:
    """Refuse a ``prompt_hash`` given to prompts of different lengths: the response cache
    answers every repeat of a hash from its first answer, so a 30,000-token prompt sharing a
    100-token prompt's hash was counted as served for free. One line naming the first row
    whose length differs from its hash's first row (the hash itself, the file's text, is not
    shown)."""
    codes, _ = pd.factorize(hashes.to_numpy(), use_na_sentinel=False)  # 0, 1 ... by first row
    first = np.unique(codes, return_index=True)[1]  # each hash's first row
    lengths = np.asarray(input_tokens, dtype=np.int64)
    i = checks.first_true(lengths != lengths[first[codes]])
    if i is not None:
        j = int(first[codes[i]])
        raise src.error(f"prompt_hash is row {src.row(j)}'s, but this prompt has "
                        f"{int(lengths[i]):,} input tokens against {int(lengths[j]):,} there: a "
                        "hash names one prompt, which has one length (the response cache "
                        "would answer this request from that one's answer); give each prompt "
                        "its own hash, or fix input_tokens", i, "prompt_hash")


def one_value_each(s: pd.Series, src: Source, column: str,
                   value: str = "prompt's hash") -> None:
    """Refuse a cell of ``column`` holding a list or an object (a Parquet list or struct, a
    JSON array or object): a key or a label is one number or text per row, and such a cell is
    neither (nor can it be compared with another; as text it read ``"['plan']"``). ``value``
    names what each row holds, for the fix. Bytes (a Parquet binary column) are read as the
    text they hold, so bytes that are not UTF-8 are refused (reading them as text raised
    UnicodeDecodeError). A column pandas infers as text alone holds neither (its cells are
    not looked at one by one: 0.66 s a million, a BurstGPT Model column's, now 0.01 s)."""
    if s.dtype == object and pd.api.types.infer_dtype(s, skipna=True) not in ("string", "empty"):
        i = checks.first_true(s.map(lambda v: isinstance(v, list | tuple | dict | set
                                                         | np.ndarray)).to_numpy(dtype=bool))
        if i is not None:
            raise src.error(f"{column} must be one number or text per row (got "
                            f"{_many(s.iloc[i])}); write each {value} as one value", i, column)
    checks.utf8_bytes(src, s, column, column)  # categories of bytes (dictionary-encoded) too


def _many(cell) -> str:
    """A list or object cell for a message, by its kind and size (never its content)."""
    if isinstance(cell, dict):
        return f"an object of {len(cell):,} key{'s' if len(cell) != 1 else ''}"
    return checks.short(list(cell))


def _exact_keys(s: pd.Series, src: Source, name: str = "prompt_hash") -> None:
    """Refuse a prompt hash (column ``name``) read as a float beyond 2^53 (or not finite):
    floats there are spaced more than 1 apart, so two different hashes could read as one key.
    A column of narrower floats (a Parquet float32 or float16 column) is held to the whole
    numbers its own type holds exactly (2^24, 2^11): 16777217 was stored as 16777216, another
    prompt's hash."""
    if not pd.api.types.is_float_dtype(s.dtype):
        return
    values = s.to_numpy(dtype=np.float64)
    kind = s.dtype.numpy_dtype if hasattr(s.dtype, "numpy_dtype") else s.dtype
    bits = np.finfo(kind).nmant + 1
    i = checks.first_true(np.abs(values) >= 2.0 ** bits) if bits < 53 else None
    if i is not None:
        raise src.error(f"{name} {checks.show_number(values[i])} is stored as {kind}, "
                        f"which holds whole numbers exactly only below 2^{bits}, so two hashes "
                        "may have been stored as one; store hashes as integers or text", i,
                        name)
    i = checks.first_true(~(np.abs(values) < EXACT_FLOAT) & ~np.isnan(values))
    if i is not None:
        empty = (", and leave no cell empty (a column of whole numbers with an empty cell is "
                 "read as decimals)") if s.isna().any() else ""
        raise src.error(f"{name} {checks.show_number(values[i])} was read as a decimal number "
                        "that is not exact (beyond 2^53, or infinite), so two hashes could read "
                        "as one; write hashes as whole numbers (without a decimal point or "
                        f"exponent) or as text{empty}", i, name)


HASH_LOW, HASH_HIGH = -(2**63), 2**63
"""Block hash ids are int64: at least -2^63 and below 2^63 (Mooncake's are >= 0)."""
EXACT_FLOAT = 2**53
"""Whole numbers a float64 holds exactly; a JSON reader gives floats for ids beyond int64."""


HASH_BLOCK_TOKENS = 512
"""Prompt tokens per prefix hash id (Mooncake's block; the engine's ``hash_block_tokens``)."""


def check_hash_counts(src: Source, hashes: np.ndarray, input_tokens: np.ndarray,
                      column: str) -> None:
    """A prompt of ``n`` tokens spans ``ceil(n / 512)`` blocks, so it has at most that many
    hash ids; more would push its own first blocks out of the cache (and still count as hits
    in the cache's unbounded bound). One line naming the first row with too many."""
    counts = np.fromiter((len(h) for h in hashes), dtype=np.int64, count=len(hashes))
    blocks = -(-np.asarray(input_tokens, dtype=np.int64) // HASH_BLOCK_TOKENS)
    i = checks.first_true(counts > blocks)
    if i is not None:
        raise src.error(f"{counts[i]:,} prefix block ids for a {int(input_tokens[i]):,}-token "
                        f"prompt, which spans {blocks[i]:,} block(s) of {HASH_BLOCK_TOKENS} "
                        f"tokens; tiersim takes one id per {HASH_BLOCK_TOKENS}-token block, "
                        "Mooncake's size (no setting changes it; ids of smaller blocks, such as "
                        f"Bailian's 16-token ones, do not fit): remove the column {column} to "
                        f"replay without prefix caching, or give one id per {HASH_BLOCK_TOKENS} "
                        "prompt tokens", i, column)


PLACES_SORTED_IDS = 1 << 22
"""Hash ids :func:`check_hash_places` sorts at a time, about (4M: the ids are split by value
into buckets of about this many, each id's every sighting in one bucket)."""
PLACES_JOINED_ROWS = 1 << 16
"""Rows whose ids :func:`check_hash_places` joins at a time to pick a bucket's out of them."""


def check_hash_places(src: Source, hashes: np.ndarray, column: str) -> None:
    """Refuse a block hash id found at two places, in one prompt or in two: an id names its
    block with every block before it (Mooncake's ids are such prefix hashes), so it is block
    ``k`` of every prompt holding it. A repeated id (``[7, 7]``) or one at another place
    would count tokens as cached that no request computed. One line naming the first row
    where an id moves, and the row and place it had before; vectorised over the whole table
    (a million rows of a few ids take well under a second).

    NOTE (memory): the ids are split by value into buckets of about
    :data:`PLACES_SORTED_IDS`, each bucket's ids (in row order, each row's in place order)
    picked out of :data:`PLACES_JOINED_ROWS` rows joined at a time, then sorted by id alone
    (stable: by id, then row, then place); rows are found only for the ids that move. A
    lexsort of every id's id, row and place took 57 bytes an id traced at its peak (a 1.2M-row
    Mooncake file of 36M ids: its whole read's peak 2.7 GB); every id joined, with its place
    and bucket, took 13 (a 1M-line Mooncake trace of 30.5M ids: 510 MB more at the read's
    peak); now a bucket's ids take about 20 bytes each, and the sort about 30, whatever the
    table's size (each bucket's pass joins the rows' ids again: a little more time)."""
    lengths = np.fromiter((len(h) for h in hashes), dtype=np.int64, count=len(hashes))
    if lengths.sum() < 2:
        return
    ends = np.cumsum(lengths)  # each row's ids end before here, in the joined ids
    found = None  # the earliest (row, place) moved, its id, and its id's first (row, place)
    for ids, places, at in id_buckets(hashes, lengths, ends):
        moved = _first_moved(ids, places, at, ends)
        if moved is not None and (found is None or moved[:2] < found[:2]):
            found = moved
    if found is None:
        return
    row_k, place_k, hash_id, row_j, place_j = found
    where = _two_places(src, row_k, place_k, row_j, place_j)
    raise src.error(f"hash id {hash_id} is {where}; a block's id names it with every block "
                    "before it, so it has one place in every prompt (a repeated or moved id "
                    "would count tokens as cached that were never computed): give each "
                    f"block its own id, or remove the column {column} to replay without "
                    "prefix caching", row_k, column)


def _two_places(src: Source, row: int, place: int, first_row: int, first_place: int) -> str:
    """Where a moved hash id is and where it was first seen, in words: ``both block 1 and
    block 2 of this prompt`` for a repeat inside one prompt, else ``block 3 of this prompt but
    block 1 of the prompt of row 2``."""
    if first_row == row:
        return f"both block {first_place + 1} and block {place + 1} of this prompt"
    return (f"block {place + 1} of this prompt but block {first_place + 1} of the prompt of "
            f"row {src.row(first_row)}")


def id_buckets(hashes: np.ndarray, lengths: np.ndarray, ends: np.ndarray
               ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The joined ids of rows ``hashes`` (arrays or lists of ``lengths`` ids, ending before
    ``ends`` in the joined ids) split by value into buckets of about :data:`PLACES_SORTED_IDS`,
    each id's every sighting in one bucket: each bucket's ids in joined order, their places in
    their rows and their joined positions (None: every id, in one bucket). One pass over the
    rows a bucket; nothing for rows without ids."""
    count = -(-int(ends[-1]) // PLACES_SORTED_IDS) if len(ends) else 0
    for bucket in range(count):
        yield _bucket(hashes, lengths, ends, bucket, count)


def _bucket(hashes: np.ndarray, lengths: np.ndarray, ends: np.ndarray, bucket: int,
            count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The joined ids of rows of ``lengths`` ids (ending before ``ends``) whose value modulo
    ``count`` is ``bucket``, their places and their joined positions (None: every id, in one
    bucket), joined :data:`PLACES_JOINED_ROWS` rows at a time."""
    pieces = []
    for lo in range(0, len(hashes), PLACES_JOINED_ROWS):
        hi = lo + PLACES_JOINED_ROWS
        ids = np.concatenate(hashes[lo:hi], dtype=np.int64, casting="unsafe")  # as asarray
        if not len(ids):
            continue
        first = int(ends[lo] - lengths[lo])
        places = _places(ends[lo:hi] - first, lengths[lo:hi])
        at = None if count == 1 else np.flatnonzero(ids % count == bucket)
        pieces.append((ids, places, None) if at is None else (ids[at], places[at], at + first))
    ids, places = (np.concatenate([piece[i] for piece in pieces]) for i in (0, 1))
    return ids, places, None if count == 1 else np.concatenate([p[2] for p in pieces])


def _first_moved(ids: np.ndarray, places: np.ndarray, at: np.ndarray | None,
                 ends: np.ndarray) -> tuple[int, int, int, int, int] | None:
    """Among ``ids`` (at joined positions ``at``, increasing, None: every joined id, with
    their ``places``; rows end before ``ends``), the earliest sighting (by row, then place) of
    an id at another place than its first: its row, place, id, and its id's first row and
    place; None if none moves."""
    if not len(ids):
        return None
    order = np.argsort(ids, kind="stable")  # by id, then row, then place
    ids, places = ids[order], places[order]
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])  # each id's first sighting
    moved = np.flatnonzero(places != np.repeat(places[starts], np.diff(np.r_[starts,
                                                                             len(ids)])))
    if not len(moved):
        return None
    joined = order if at is None else at[order]  # each sorted id's joined position
    rows = np.searchsorted(ends, joined[moved], side="right")
    k = moved[np.lexsort((places[moved], rows))[0]]  # the earliest row that moves one
    j = starts[np.searchsorted(starts, k, side="right") - 1]
    row_k, row_j = (int(np.searchsorted(ends, joined[i], side="right")) for i in (k, j))
    return row_k, int(places[k]), int(ids[k]), row_j, int(places[j])


def _places(ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each joined id's 0-based place in its row (rows of ``lengths`` ids ending before
    ``ends``), int32 where the ids are fewer than 2**31."""
    dtype = np.int32 if ends[-1] < 2**31 else np.int64
    return np.arange(ends[-1], dtype=dtype) - np.repeat((ends - lengths).astype(dtype), lengths)


def hash_column(s: pd.Series, src: Source, column: str, low: int = HASH_LOW) -> np.ndarray:
    """A column of hash lists as one int64 array per row, the same from every format: list
    cells (Parquet, JSON lines) or text cells (CSV: ``[1, 2, 3]``, ``1 2 3``). A missing list
    (null, an empty cell) and a missing id inside one are errors; ``[]`` is no prefix blocks.

    NOTE: a list<int64> column read by pyarrow already holds int64 numpy arrays, so it is kept
    as it is (no per-row work); anything else is converted row by row.
    """
    i = checks.first_true(s.isna().to_numpy())
    if i is not None:
        raise _missing_list(src, column, i)
    if s.dtype != object:  # a CSV column of single numbers: each is a one-id list
        s = s.astype("string")
    first = s.iloc[0] if len(s) else None
    if isinstance(first, np.ndarray) and first.dtype == np.int64:
        cells = s.to_numpy()
        if all(isinstance(c, np.ndarray) and c.dtype == np.int64 for c in cells) and (
                low == HASH_LOW or _lowest(cells) >= low):
            return cells
    return hash_arrays(s, src, column, low)


LOWEST_CELLS = 1 << 16
"""Hash lists :func:`_lowest` joins at a time (65,536 Mooncake rows: about 16 MB of ids)."""


def _lowest(cells: np.ndarray) -> int:
    """The lowest id in int64 arrays ``cells``, or 0 when lower (none lower: 0), the arrays
    joined :data:`LOWEST_CELLS` at a time: joined all at once, a Mooncake trace's every id was
    copied to check it (1M rows of 30 ids: 244 MB more at the read's peak)."""
    return min((int(np.concatenate([cells[0][:0], *cells[i:i + LOWEST_CELLS]]).min(initial=0))
                for i in range(0, len(cells), LOWEST_CELLS)), default=0)


def _missing_list(src: Source, column: str, i: int):
    """The error for row ``i``'s missing hash list."""
    return src.error(f"missing {column}; write [] for a request with no prefix blocks", i,
                     column)


def hash_arrays(s: pd.Series, src: Source, column: str, low: int = HASH_LOW) -> np.ndarray:
    """Convert each cell (a list of integers in ``[low, 2^63)``) to an int64 array, naming the
    first bad row; an id out of range is refused, never wrapped."""
    out = np.empty(len(s), dtype=object)
    for i, cell in enumerate(s):  # NOTE: one small array per request is the column's layout
        out[i] = _hash_cell(cell, src, column, low, i)
    return out


def _hash_cell(cell, src: Source, column: str, low: int, i: int) -> np.ndarray:
    """One cell as an int64 array, range-checked before any conversion; a true/false element
    is no hash id (numpy would read it as 1 or 0)."""
    given = cell
    if isinstance(cell, str):
        cell = _text_items(cell, src, column, i)
    flag = _true_false_item(cell)
    if flag is not None:
        raise src.error(f"hash id is a true/false value (got {str(flag).lower()}); write a "
                        "whole number", i, column)  # true, as JSON writes it (it read True)
    try:
        values = np.asarray([] if cell is None else cell)
        if values.ndim != 1:
            raise ValueError
        if values.dtype.kind not in "iuf":  # text from a CSV cell, or Python ints
            items = values.tolist()
            _no_missing_id(items, src, column, i)
            values = np.asarray([_int(v) for v in items], dtype=object)
    except (TypeError, ValueError, OverflowError):
        raise src.error(f"{column} must be a list of integers, such as [1, 2, 3] (got "
                        f"{_not_a_list(given, cell)})", i, column) from None
    if values.dtype.kind == "f" and isinstance(cell, list) and all(type(v) is int for v in cell):
        values = np.asarray(cell, dtype=object)  # numpy types [2**63, 1] as floats: rounded
    if values.dtype.kind == "f":
        if np.isnan(values).any():  # a null inside the list (Parquet reads it as NaN)
            raise _missing_id(src, column, i, int(np.flatnonzero(np.isnan(values))[0]))
        values = _float_ids(values, src, column, i)
    if len(values) and (values.min() < low or values.max() >= HASH_HIGH):
        bad = next(int(v) for v in values.tolist() if not low <= int(v) < HASH_HIGH)
        lowest = "0" if low == 0 else "-2^63"
        raise src.error(f"hash id {bad} out of range (must be {lowest} <= id < 2^63)", i, column)
    return values.astype(np.int64)


def _float_ids(values: np.ndarray, src: Source, column: str, i: int) -> np.ndarray:
    """Row ``i``'s hash ids read as floats (a float list column; a JSON list holding an id
    beyond int64), as float64, refusing one that is no whole number below 2^53, or that is at
    or beyond the whole numbers its own float type holds exactly (2^24 in float32, 2^11 in
    float16: there two ids may have been stored as one). A narrow float is compared in float64
    (compared as it stood, 2^53 overflowed float16, and a RuntimeWarning was printed)."""
    wide = values.astype(np.float64)
    exact = np.isfinite(wide) & (wide == np.floor(wide)) & (np.abs(wide) < EXACT_FLOAT)
    if not exact.all():
        bad = float(wide[~exact][0])
        if np.isfinite(bad) and bad == np.floor(bad):  # 1.0 and 1e3 are taken: exact
            raise src.error(f"hash id {checks.show_number(bad)} was read as a decimal number, "
                            "exact only below 2^53 (two ids there could read as one); store the "
                            "ids as integers (digits alone, without a decimal point or "
                            "exponent)", i, column)
        raise src.error(f"hash id {bad:.6g} is not a whole number; write each id as a whole "
                        "number below 2^63", i, column)
    bits = np.finfo(values.dtype).nmant + 1
    beyond = np.abs(wide) >= 2.0 ** bits
    if bits < 53 and beyond.any():
        bad = float(wide[beyond][0])
        raise src.error(f"hash id {checks.show_number(bad)} is stored as {values.dtype}, which "
                        f"holds whole numbers exactly only below 2^{bits} (two ids there may "
                        "have been stored as one); store the ids as integers", i, column)
    return wide


def _not_a_list(given, items) -> str:
    """A hash-list cell that is no list of integers, for a message: a text cell (CSV) by its
    size and the first item that is no whole number (its text is not echoed), any other by its
    kind and size."""
    if not isinstance(given, str):
        return checks.short(given)
    position = next((n for n, item in enumerate(items, start=1) if not _whole(item)), None)
    where = "" if position is None else f" whose item {position} is not a whole number"
    return f"{checks.short(given)}{where}"


def _whole(item: str) -> bool:
    """Whether a text item of a hash list reads as a whole number (:func:`_int` takes it)."""
    try:
        _int(item)
    except ValueError:
        return False
    return True


_DIGITS = re.compile(r"\s*[+-]?[0-9]+\s*")
"""A whole number written as text: ASCII digits, an optional sign, spaces around."""


def _int(item) -> int:
    """A hash id as an int; text must be ASCII digits (:data:`_DIGITS`). Python's ``int`` also
    takes ``_`` between digits, so ``1_23`` and ``12_3`` (two ids) read as one, 123."""
    if isinstance(item, str) and not _DIGITS.fullmatch(item):
        raise ValueError(f"not a whole number: {len(item)} characters")
    return int(item)


NULL_WORDS = frozenset({"null", "none", "nan", "na", "<na>"})
"""Items of a hash list written as text that mean a missing id (as pandas reads such cells)."""


def _text_items(text: str, src: Source, column: str, i: int) -> list[str]:
    """The items of a hash list written as text: ``[1, 2, 3]``, ``1,2,3`` or numpy's ``[1 2 3]``
    (split at commas where there are any, else at spaces; an item left empty between commas is
    kept, and refused as a missing id). Blank text is a missing list."""
    inner = text.strip()
    if not inner:
        raise _missing_list(src, column, i)
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1].strip()
    if "," in inner:
        return [item.strip() for item in inner.split(",")]
    return inner.split()


def _no_missing_id(items: list, src: Source, column: str, i: int) -> None:
    """Refuse a missing id in a list (None, NaN, an empty text item or a null word such as
    ``null``): skipping it would move every later id to another block."""
    for position, item in enumerate(items):
        text = item.strip().lower() if isinstance(item, str) else None
        if item is None or (isinstance(item, float) and np.isnan(item)) or (
                text is not None and (not text or text in NULL_WORDS)):
            raise _missing_id(src, column, i, position, empty=text == "")


def _missing_id(src: Source, column: str, i: int, position: int, empty: bool = False):
    """The error for a missing id at 0-based ``position`` of row ``i``'s list, named from 1 as
    the items of a list are elsewhere (:func:`_not_a_list`): 'position 0' named the first."""
    what = "an empty item" if empty else "a null"
    return src.error(f"missing hash id ({what} at position {position + 1} of the list); every "
                     "id is a whole number", i, column)


def _true_false_item(cell) -> bool | None:
    """The first true/false element of a hash list (a bool array from a JSON reader, or a
    Python list), None when it has none."""
    if isinstance(cell, np.ndarray):
        if cell.dtype.kind == "b" and cell.size:
            return bool(cell.flat[0])
        if cell.dtype != object:
            return None
    if isinstance(cell, np.ndarray | list | tuple):
        return next((bool(v) for v in cell if isinstance(v, bool | np.bool_)), None)
    return None


def write_canonical(df: pd.DataFrame, path: str | Path, metadata: dict | None = None) -> Path:
    """Write a canonical table to Parquet (zstd), with ``metadata`` in the file's key-values.

    ``path`` must end in ``.parquet``: Parquet bytes in a ``.csv`` or ``.jsonl`` file would
    mislead whoever opens it (CSV has no place for the key-values; write it with
    ``df.to_csv``). The file is written whole or not at all (a temp file beside it, renamed
    over it)."""
    if Path(path).suffix.lower() != ".parquet":
        raise TraceError(str(path), "write_canonical writes Parquet; name the file .parquet "
                         "(for CSV, write the table with df.to_csv)")
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta.update({f"tiersim.{k}".encode(): str(v).encode() for k, v in (metadata or {}).items()})
    table = table.replace_schema_metadata(meta)
    # a temp file beside it, renamed over it whole: a write that fails (a column Parquet cannot
    # hold, a full disk, Ctrl-C) leaves the file it would replace as it was
    write_with_atomic(Path(path), lambda sink: pq.write_table(table, sink, compression="zstd"))
    return Path(path)
