"""Trace formats: how each is recognised from its columns and turned into the canonical table.

Each format is one entry of :data:`FORMATS`: its required columns and a converter
``convert(raw, src) -> (table, notes)``. Converters check every column they use (see
:mod:`tiersim.trace.checks`), give ``arrival_s`` relative to the first request, and
``request_id`` = the 0-based data row in the file, so ids stay traceable after windows and drops.
``notes`` lists anything the converter changed on purpose (e.g. dropped failed requests).
A logged format's rows with 0 output tokens (requests that failed or were cancelled before
their first token) are dropped with a counted note in every logged format, by one rule
(:func:`_served`); a canonical table is the replay itself, so its counts must be > 0.
A logged format (Azure, BurstGPT, Mooncake) keeps the canonical optional columns it has
(:func:`carried`: ``prompt_hash``, ``correct_<tier>`` ...) and the columns the caller reads
(``keep`` of :func:`tiersim.trace.loader.read_trace`), and notes the columns it does not read.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from tiersim.errors import escaped
from tiersim.trace import canonical, checks, units
from tiersim.trace.checks import shown_name
from tiersim.trace.filecheck import Source
from tiersim.trace.trace_columns import (  # noqa: F401 - is_trace_column re-exported
    LENGTH_COLUMNS,
    REQUIRED,
    is_trace_column,
)

Converted = tuple[pd.DataFrame, list[str]]

KNOWN = (*canonical.CORE, *canonical.NAMED, "subject")
"""Canonical column names something reads: the core and named optional columns and the
classifier's ``subject`` (:mod:`tiersim.routing.classifier`); a column of another name in a
canonical file is noted, with the names it is close to."""

@dataclass(frozen=True)
class Format:
    """A trace format: the columns that identify it and its converter."""

    name: str
    required: tuple[str, ...]
    convert: Callable[[pd.DataFrame, Source], Converted]
    description: str


def _convert_azure(raw: pd.DataFrame, src: Source) -> Converted:
    ns = checks.datetimes_ns(src, raw["TIMESTAMP"], "TIMESTAMP")
    checks.sorted_times(src, ns, raw["TIMESTAMP"], "TIMESTAMP")
    s = _served(raw, src, lambda i: (ns - ns[i]) / 1e9, "ContextTokens", "GeneratedTokens",
                OWN["azure"], SERVED_LABELS["azure"])
    return s.table, [*s.notes, *s.coarse("TIMESTAMP"), *s.dropped]


def _check_prefix_hashes(src: Source, extra: dict, prompt_tokens: np.ndarray) -> None:
    """A carried ``prefix_hashes`` column holds at most one id per 512 prompt tokens, as a
    canonical trace's must (:func:`tiersim.trace.canonical.check_hash_counts`)."""
    if "prefix_hashes" in extra:
        canonical.check_hash_counts(src, extra["prefix_hashes"], prompt_tokens, "prefix_hashes")


OWN = {"azure": ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
       "burstgpt": ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens",
                    "Log Type"),
       "mooncake": ("timestamp", "input_length", "output_length", "hash_ids")}
"""The columns of each logged format that its converter reads or knows (BurstGPT's Model is
noted; its totals and log type say nothing a run uses)."""


READ = {"azure": OWN["azure"], "burstgpt": ("Timestamp", "Model", "Request tokens",
                                             "Response tokens"),
        "mooncake": OWN["mooncake"]}
"""The columns whose values each logged format's converter reads (:func:`columns_used`)."""

NOTED = {"burstgpt": ("Total tokens",)}
"""The columns each logged format's converter reads for a note alone (BurstGPT's totals,
compared with the sum: :func:`totals_mismatch`): read from a CSV as categories (a code a row),
decoded from a Parquet file, whose columns are decoded or not read at all."""


def columns_used(columns: list[str], format: str = "auto",
                 keep: Collection[str] | None = None,
                 decoded: bool = False) -> set[str] | None:
    """The columns of a file with ``columns`` whose values its converter reads: a logged
    format's own (:data:`READ`; with ``decoded``, for a file whose other columns are not read
    at all, as a Parquet file's, those it reads for a note too: :data:`NOTED`, which a CSV
    reads as categories) and the canonical optional columns; of a canonical table, with
    ``keep`` (the other columns the caller reads: a response cache's key), the canonical
    columns (:data:`KNOWN`, the prefixed optional ones) and ``keep``; None (all of them) for a
    canonical table without ``keep`` (every column carried in the table), or when the format
    is not known from the columns alone (the loader then refuses the file, or names the format
    itself)."""
    name = _complete_format(columns, format)
    if name is None:
        return None
    if name == "canonical":
        return None if keep is None else {c for c in columns if c in keep or c in KNOWN
                                          or c.startswith(canonical.PREFIXES)}
    if name not in READ:
        return None
    noted = NOTED.get(name, ()) if decoded else ()
    return {c for c in columns if c in READ[name] or c in noted or canonical.is_optional(c)
            or c in (keep or ())}


def _complete_format(columns: list[str], format: str = "auto") -> str | None:
    """The format a file with ``columns`` is read as (``format``, or the one format whose
    required columns are all there when ``auto``); None where its required columns are not all
    there, or several formats' are."""
    complete = complete_formats(columns)
    name = format if format != "auto" else complete[0] if len(complete) == 1 else None
    return name if name in complete else None


def columns_left_out(columns: list[str], format: str = "auto",
                     keep: Collection[str] | None = None) -> set[str]:
    """The columns of a logged format's CSV with ``columns`` that are not parsed at all, as a
    Parquet file's are not decoded: neither read by its converter, for values or a note
    (:func:`columns_used` with ``decoded``), nor its own (:data:`OWN`: BurstGPT's ``Log Type``,
    a few short words, stays categories). A canonical table's are all parsed (those it does not
    read are carried in its table)."""
    name = _complete_format(columns, format)
    if name not in OWN:
        return set()
    used = columns_used(columns, format, keep, decoded=True) or set()
    return {c for c in columns if c not in used and c not in OWN[name]}


def file_columns(raw: pd.DataFrame, src: Source) -> list[str]:
    """The file's columns, those read into ``raw`` and those the read left out (their values
    never decoded: ``src.unread``), in file order (``src.order``; the read ones were named
    first, so a Parquet file's notes named its columns otherwise than the same CSV's), for the
    notes that name columns not read."""
    columns = [*raw.columns, *src.unread]
    if not src.order:
        return columns
    at = {name: i for i, name in enumerate(src.order)}
    return sorted(columns, key=lambda name: at.get(name, -1))  # one not in it: first, as read


def carried(raw: pd.DataFrame, src: Source, own: tuple[str, ...],
            rows: np.ndarray | None = None) -> tuple[dict, list[str]]:
    """The canonical optional columns (``prompt_hash``, ``correct_<tier>``, ``task_type``,
    ``feat_*`` ...: :data:`tiersim.trace.canonical.NAMED` and its prefixes) of a logged trace,
    checked as a canonical trace's are, and the columns the caller reads (``src.kept``: a
    response cache's key, carried as they are, the format's own too), and a note naming its
    other columns, which are not read (they were dropped silently: a Mooncake ``prompt_hash``
    was never a cache key); the canonical core columns (``request_id``, ``arrival_s`` ...) are
    named apart, as the canonical table's own, not as typos of themselves.
    With ``rows`` (0-based, increasing) only those rows are checked and returned."""
    others = [c for c in file_columns(raw, src) if c not in own]
    asked = [c for c in raw.columns if c in src.kept and c not in canonical.CORE]
    kept = [*(c for c in others if canonical.is_optional(c) and c not in asked), *asked]
    core = [c for c in others if c in canonical.CORE]
    notes = unread_note([c for c in others if c not in kept and c not in core], "neither this "
                        "format's nor a canonical optional column such as prompt_hash or "
                        "correct_<tier>")
    if core:  # a canonical table's own columns (they were named as typos of themselves)
        name = next(n for n, columns in OWN.items() if columns == own)
        *head, last = FORMATS[name].required
        notes.append(f"column(s) {', '.join(shown_name(c) for c in core)} not read (canonical "
                     f"columns: this format's requests are read from its {', '.join(head)} "
                     f"and {last}, each request's id being its data row)")
    if rows is None:
        return canonical.optional_columns(raw[kept], src), notes + canonical.text_ids_notes(
            raw[kept], src.typed)
    part = raw[kept].iloc[rows].reset_index(drop=True)
    return (canonical.optional_columns(part, replace(src, rows=rows)),
            notes + canonical.text_ids_notes(part, src.typed))


def unread_note(unread: list[str], why: str) -> list[str]:
    """A note naming columns that are not read (at most 10; the names are the file's text,
    escaped), each with the canonical names it is close to (a typo: ``sesion_id``)."""
    if not unread:
        return []
    shown = ", ".join(_unread_name(c) for c in unread[:10])
    more = f" and {len(unread) - 10} more" if len(unread) > 10 else ""
    return [f"column(s) {shown}{more} not read ({why})"]


def _unread_name(name: str) -> str:
    """A column not read, for a note: its name, cut and escaped, and what it may be a typo of
    (a name tiersim reads is no typo: a file of token lengths does not read ``step``)."""
    text = shown_name(name)
    close = [] if canonical.is_optional(name) else difflib.get_close_matches(
        name, KNOWN, n=2, cutoff=0.65)
    return f"{text} ({' or '.join(close)}?)" if close else text


def _seconds(src: Source, raw: pd.DataFrame, column: str,
             unit: str) -> tuple[Callable[[int], np.ndarray], list[str]]:
    """A numeric time column in ``unit`` ("seconds" or "milliseconds"), checked and sorted, as
    a function of a 0-based row giving every row's seconds since that row (the rows from it
    on are the ones read), and a note when its sizes do not fit the unit
    (:mod:`tiersim.trace.units`).

    An integer column is sorted and made relative to its first row in integers, exactly, before
    it becomes float64: 2**60 + 100 ms timestamps (beyond 2**53, where float64 rounds) keep
    their 0.1 s steps; below 2**53 the result is the same as in floats.
    """
    s = raw[column]
    scale = 1.0 if unit == "seconds" else 1e-3
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu":
        ints = s.to_numpy()
        checks.sorted_times(src, ints, s, column)
        def since(i: int) -> np.ndarray:  # exact from row i on: sorted, below 2**64
            return (ints.astype(np.uint64) - np.uint64(ints[i])).astype(np.float64) * scale
        t = ints
    else:
        t = checks.numbers(src, s, column, f"timestamp in {unit}")
        checks.sorted_times(src, t, s, column)
        checks.exact_times(src, t, s, column, unit)

        def since(i: int) -> np.ndarray:
            with np.errstate(over="ignore"):  # an overflow: an infinite arrival, refused later
                return (t - t[i]) * scale
    seconds = since(0)
    # one note: a first time sized as a Unix time in a finer unit names that unit (the gaps'
    # note would advise 1000 for nanoseconds too); gaps of a minute or more argue against
    # seconds read as milliseconds, so where both fire (fractional milliseconds a minute
    # apart) the gaps' note alone is said
    epoch = units.epoch_note(column, t, unit)
    if unit == "seconds":
        return since, epoch or units.seconds_note(column, seconds)
    return since, (epoch or units.seconds_note(column, seconds, unit)
                     or units.milliseconds_note(column, t))


def _convert_burstgpt(raw: pd.DataFrame, src: Source) -> Converted:
    if "Model" in raw.columns:  # a list or an object names no model (it gave a traceback)
        canonical.one_value_each(raw["Model"], src, "Model", "request's model name")
    since, unit_notes = _seconds(src, raw, "Timestamp", "seconds")
    s = _served(raw, src, since, "Request tokens", "Response tokens", OWN["burstgpt"],
                SERVED_LABELS["burstgpt"])
    notes = [*s.notes, *unit_notes, *s.coarse("Timestamp"),
             *_burstgpt_totals(raw, s.inp, s.out, s.keep), *s.dropped]
    return s.table, notes + _burstgpt_models(raw, s.keep)


_NO_TOKEN = ("requests that produced no token", "requests that produced no token: failed or "
             "cancelled; only served requests are replayed")
SERVED_LABELS = {"azure": ("GeneratedTokens", *_NO_TOKEN),
                 "burstgpt": ("response tokens", "failed requests", "failed requests in BurstGPT"),
                 "mooncake": ("output_length", *_NO_TOKEN)}
"""How each logged format's notes name a row with no output (:func:`_served`): its output
column, what such rows are when none is left, and what they are in the drop note."""


@dataclass(frozen=True)
class Served:
    """A logged trace's served requests (:func:`_served`): the canonical ``table``, the notes
    on its columns (``notes``) and on the rows dropped (``dropped``), which rows of the file
    were kept (``keep``) and every row's token counts (``inp``, ``out``)."""

    table: pd.DataFrame
    notes: list[str]
    dropped: list[str]
    keep: np.ndarray
    inp: np.ndarray
    out: np.ndarray

    def coarse(self, column: str) -> list[str]:
        """The note on the served requests' arrivals when ``column``'s times are coarse
        enough to make bursts (:func:`tiersim.trace.units.coarse_note`)."""
        return units.coarse_note(column, self.table["arrival_s"].to_numpy())


def _served(raw: pd.DataFrame, src: Source, since: Callable[[int], np.ndarray], prompt: str,
            output: str,
            own: tuple[str, ...], label: tuple[str, str, str],
            time_notes: list[str] = ()) -> Served:
    """The canonical table of a logged trace's served requests, and the notes on it: the one
    rule, for every logged format (Azure, BurstGPT, Mooncake), on rows without output.

    A logged request with 0 output tokens produced no token: it failed, was cancelled or was
    refused before its first token (an engine that ran a prompt's prefill samples a first token
    from it), so there is no response to replay, and whether its prefill ran at all is not in
    the log. Such rows are dropped, counted in a note, and times count from the first request
    kept; their prompt may be 0 too (a failed request logs none). A request with output but a
    0-token prompt is no request an engine serves (vLLM refuses an empty prompt): the row is
    refused, as is a log with no served request. ``since(i)`` is every row's seconds since
    0-based row ``i`` (exact from there on); ``label`` is the output column's name in the notes
    and what a dropped row is (:data:`SERVED_LABELS`); ``time_notes`` go before the notes on
    prefix hashes. Only the rows
    kept are checked for the canonical optional columns (a failed request has no labels)."""
    out = checks.tokens(src, raw[output], output, allow_zero=True)
    keep = out > 0
    inp = checks.tokens(src, raw[prompt], prompt, served=keep)
    every_inp, every_out = inp, out
    words, what, _ = label
    if not keep.any():
        raise src.error(f"every row has 0 {words} ({what}, which tiersim drops), so no "
                        "request is left; use the rows of successful requests", None, output)
    _no_failed_parent(raw, src, keep, words)
    every = bool(keep.all())
    rows = np.flatnonzero(keep)
    sel = slice(None) if every else rows  # every row: views, no copies of long columns
    extra, notes = carried(raw, src, own, None if every else rows)
    notes += time_notes
    kept = src if every else replace(src, rows=rows)
    inp, out = inp[sel], out[sel]
    if "hash_ids" in own and "hash_ids" in raw.columns:  # Mooncake's own prefix hashes
        if extra.pop("prefix_hashes", None) is not None:
            notes.append("column 'prefix_hashes' is not read: a Mooncake trace's prompt block "
                         "hashes are its 'hash_ids'")
        ids = raw["hash_ids"] if every else raw["hash_ids"].iloc[rows]
        extra["prefix_hashes"] = canonical.hash_column(ids.reset_index(drop=True), kept,
                                                         "hash_ids", low=0)
        canonical.check_hash_counts(kept, extra["prefix_hashes"], inp, "hash_ids")
        notes += _fewer_hash_ids(extra["prefix_hashes"], inp)
    else:
        _check_prefix_hashes(kept, extra, inp)
    # seconds since the first request kept, as every format gives them
    table = canonical.build(rows, since(int(rows[0]))[sel], inp, out, extra)
    if "session_id" in raw.columns:  # text ids by name in errors, as a canonical trace's
        ids = raw[["session_id"]]
        table = canonical.with_session_names(table, ids if every else ids.iloc[rows], src.typed)
    dropped = []
    if not keep.all():
        dropped = dropped_notes(int((~keep).sum()), len(raw), int(np.argmax(~keep)),
                                int(rows[0]), float(since(0)[rows[0]]), label)
    return Served(table, notes, dropped, keep, every_inp, every_out)


def dropped_notes(count: int, rows: int, first: int, kept: int, start: float,
                  label: tuple[str, str, str], whole: bool = True) -> list[str]:
    """The notes on a logged trace's ``count`` rows without output (:func:`_served`) of the
    ``rows`` read, the first at 0-based data row ``first``, and, where the first request
    kept (0-based row ``kept``) comes ``start`` s after the first row, that times count from
    it. ``label``: the format's :data:`SERVED_LABELS`; not ``whole``: the rows read stop at a
    window's end (:mod:`tiersim.trace.windowed`), so the count is of the rows before it."""
    words, _, why = label
    read = f"{rows:,}" if whole else f"the first {rows:,} (read up to the window's end)"
    notes = [f"dropped {count:,} of {read} rows with 0 {words} ({why}; first at row {first + 1})"]
    if start > 0:
        notes.append(f"times count from the first request kept (row {kept + 1}, {start:g} s "
                     "after the first row)")
    return notes


def _no_failed_parent(raw: pd.DataFrame, src: Source, keep: np.ndarray,
                      words: str = "response tokens") -> None:
    """Refuse a kept row whose session ``parent`` is a failed request (``keep`` False), which
    is dropped: it was refused as a parent "not an earlier step of session", though the file
    holds that step (``words`` name the output column in the message, as the drop note
    names it). Without a ``parent`` column a step follows the one before
    (:func:`_no_failed_step_before`). Cells that are no numbers are left for the session checks
    to name."""
    if keep.all() or not {"session_id", "step"} <= set(raw.columns):
        return
    if "parent" not in raw.columns:
        _no_failed_step_before(raw, src, keep, words)
        return
    sid, step = _session_keys(raw["session_id"], src.typed), checks.to_floats(raw["step"])
    parent = checks.to_floats(raw["parent"])
    following = np.flatnonzero(keep & (parent >= 0))
    hit = pd.MultiIndex.from_arrays([sid[following], parent[following]]).isin(
        pd.MultiIndex.from_arrays([sid[~keep], step[~keep]]))
    first = checks.first_true(hit)
    if first is None:
        return
    i = int(following[first])
    at = checks.first_true(~keep & (sid == sid[i]) & (step == parent[i]))
    raise src.error(f"parent {checks.show_number(parent[i])} is a failed request (row "
                    f"{at + 1}: 0 {words}), which tiersim drops, so this step cannot "
                    "follow it; remove this step, or leave its parent empty to replay it as a "
                    "new root", i, "parent")


def _session_keys(ids: pd.Series, typed: bool = False) -> np.ndarray:
    """Session ids as float64 keys for the checks on failed steps: numbers as they are (NaN
    where a cell is no number, left for the session checks to name); text ids (aiperf's
    ``"conv_0"``, :func:`tiersim.trace.canonical.text_ids`) by their number in order of first
    appearance, NaN where blank. Read as numbers, every text id was NaN, so a step after a
    failed one passed unchecked, and a failed parent ended in a traceback. ``typed``: as
    :func:`tiersim.trace.canonical.text_ids`'s."""
    if not canonical.text_ids(ids, typed):
        return checks.to_floats(ids)
    codes, uniques = pd.factorize(ids)  # each distinct id once: a long one is not copied a row
    names = pd.Series(np.asarray(uniques, dtype=object)).map(
        lambda v: v.strip() or None if isinstance(v, str) else v)
    keys = pd.factorize(names)[0].astype(np.float64)
    keys[keys < 0] = np.nan  # a blank id
    return np.where(codes < 0, np.nan, keys[np.maximum(codes, 0)])


def _session_name(ids: pd.Series, keys: np.ndarray, i: int, typed: bool = False) -> str:
    """Row ``i``'s session as the file writes it: its text id, else its number."""
    if canonical.text_ids(ids, typed):
        return str(ids.iloc[i]).strip()
    return checks.show_number(keys[i])


def _no_failed_step_before(raw: pd.DataFrame, src: Source, keep: np.ndarray,
                           words: str = "response tokens") -> None:
    """Refuse a kept session step whose step before (the one it follows without a ``parent``
    column) is only a failed request: dropped, it left the step to follow the one before it,
    its prompt without the failed step's tokens, without a word. ``words`` name the output
    column in the message, as the drop note names it."""
    sid, step = _session_keys(raw["session_id"], src.typed), checks.to_floats(raw["step"])
    rows = np.flatnonzero(~(np.isnan(sid) | np.isnan(step)))
    # each (session, step) by its first kept row, else its first row, in step order
    rows = rows[np.lexsort((rows, ~keep[rows], step[rows], sid[rows]))]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (sid[rows][1:] != sid[rows][:-1]) | (step[rows][1:] != step[rows][:-1])
    heads = rows[first]
    after_failed = np.zeros(len(heads), dtype=bool)
    after_failed[1:] = (sid[heads][1:] == sid[heads][:-1]) & keep[heads][1:] & ~keep[heads][:-1]
    bad = np.flatnonzero(after_failed)
    if not len(bad):
        return
    at = bad[np.argmin(heads[bad])]
    i, failed = int(heads[at]), int(heads[at - 1])
    raise src.error(f"step {checks.show_number(step[i])} of session "
                    f"{_session_name(raw['session_id'], sid, i, src.typed)} follows step "
                    f"{checks.show_number(step[failed])} (without a parent "
                    "column each step follows the one before), a failed request (row "
                    f"{failed + 1}: 0 {words}), which tiersim drops, so this step "
                    "cannot follow it; remove this step, or add a parent column that leaves its "
                    "parent empty to replay it as a new root", i, "step")


TOTALS_BLOCK = 1 << 20
"""Rows of BurstGPT's ``Total tokens`` compared at a time (the column stays categories)."""


def _burstgpt_totals(raw: pd.DataFrame, inp: np.ndarray, out: np.ndarray,
                     keep: np.ndarray) -> list[str]:
    """A note when BurstGPT's ``Total tokens`` is not ``Request tokens + Response tokens`` in
    some row kept (``keep``; in the log it always is): the file's columns are shifted or
    swapped, so the lengths replayed may be wrong (:func:`totals_note`)."""
    count, first, shown = totals_mismatch(raw, inp, out, keep)
    if not count:
        return []
    return totals_note(count, int(keep.sum()), first, shown, int(inp[first]), int(out[first]))


def totals_mismatch(raw: pd.DataFrame, inp: np.ndarray, out: np.ndarray,
                    keep: np.ndarray) -> tuple[int, int | None, str | None]:
    """The rows kept (``keep``) of ``raw`` whose ``Total tokens`` is not ``inp + out``: their
    count, the first's 0-based row in ``raw`` and its total as shown. A blank or unreadable
    total, or a failed request's (dropped), is not compared: nothing reads it. The column, read
    as categories, is compared a block of rows at a time: no float a row for the whole file."""
    if "Total tokens" not in raw.columns:
        return 0, None, None
    s = raw["Total tokens"]
    if isinstance(s.dtype, pd.CategoricalDtype):
        values = checks.to_floats(pd.Series(np.asarray(s.cat.categories, dtype=object)))
        lookup, codes = np.append(values, np.nan), s.cat.codes.to_numpy()  # code -1: missing
    else:
        lookup, codes = None, None
    count, first, shown = 0, None, None
    for start in range(0, len(raw), TOTALS_BLOCK):
        end = start + TOTALS_BLOCK
        total = (lookup[codes[start:end]] if lookup is not None
                 else checks.to_floats(s.iloc[start:end]))
        with np.errstate(invalid="ignore"):
            bad = (np.isfinite(total) & (total != inp[start:end] + out[start:end])
                   & keep[start:end])
        count += int(bad.sum())
        if first is None and bad.any():
            first = start + int(np.argmax(bad))
            shown = checks.show_number(float(total[first - start]))
    return count, first, shown


def totals_note(count: int, kept: int, first: int, shown: str, inp: int,
                out: int) -> list[str]:
    """The note on ``count`` of ``kept`` rows whose Total tokens is not Request tokens +
    Response tokens, the first at 0-based row ``first``, its total ``shown`` against ``inp +
    out``."""
    return [f"its Total tokens is not Request tokens + Response tokens in {count:,} of "
            f"{kept:,} rows kept (first at row {first + 1}: {shown} against "
            f"{inp} + {out}): the run reads the request and response "
            "columns, so check that the file's columns are not shifted or swapped"]


def _burstgpt_models(raw: pd.DataFrame, keep: np.ndarray) -> list[str]:
    """A note when the log's ``Model`` column names several models: their requests are served
    as one stream by the scenario's model (a :class:`ModelMix`, which the loader says again of
    the rows a window keeps). The names are the file's text, so their control characters are
    escaped (a terminal escape in a name would recolour or retitle the terminal showing the
    note)."""
    if "Model" not in raw.columns:
        return []
    # NOTE: each distinct cell is named once and rows are counted by codes (naming every row,
    # a string a row, took 600 MB for BurstGPT's 5.3 million rows); the codes of the rows
    # kept are coded again, so that the names are in order of first appearance among them
    codes, values = pd.factorize(raw["Model"], use_na_sentinel=False)
    cells, order = pd.factorize(codes[keep])
    names = model_names(values.take(order))
    keys, folded = pd.factorize(names.str.casefold())
    shown = [escaped(name) for name in names.groupby(keys).first()]  # as first spelled
    if not noted_models(shown):
        return []
    # a model's code a row, in the least type that holds them (held until a window is cut)
    mix = ModelMix(keys[cells].astype(np.min_scalar_type(len(folded) - 1)), shown)
    return [mix] if mix else []


BLANK_MODEL = "(blank)"
"""How the model note names a blank or missing ``Model`` cell."""


def model_names(values) -> pd.Series:
    """The names of a BurstGPT log's distinct ``Model`` cells ``values``, as the model note
    shows them: stripped, a blank or missing cell :data:`BLANK_MODEL`."""
    names = pd.Series(values).astype("string").str.strip()
    return names.where(names.fillna("") != "", BLANK_MODEL)


def noted_models(shown: list[str]) -> bool:
    """Whether the models ``shown`` (one name a model) of a log's rows get a note
    (:class:`ModelMix`): several (a partly blank column's blank cells are one of them), or
    none named, the column blank in every row (which was read without a word, as if it named
    one model)."""
    return len(shown) >= 2 or shown == [BLANK_MODEL]


class ModelMix(str):
    """The note on the models a BurstGPT log's rows call (empty for one named model), with the
    model of each row of the converted table (``keys``, into ``shown``), so that
    :meth:`within` can say it of the rows a window keeps: a window of one model's rows was told
    of the file's mix, served "as one stream"."""

    keys: np.ndarray
    shown: list[str]

    def __new__(cls, keys: np.ndarray, shown: list[str], where: str = "") -> ModelMix:
        """The mix of models over ``keys`` (indices into ``shown``), as one line of text."""
        shares = pd.Series(keys, copy=False).value_counts(normalize=True)
        text = ""
        if len(shares) >= 2:
            mix = ", ".join(f"{shown[key]} {_percent(share)}"
                            for key, share in shares.head(4).items())
            more = f" and {len(shares) - 4} more" if len(shares) > 4 else ""
            text = (f"its Model column names {len(shares)} models ({mix}{more}){where}; their "
                    "requests are served as one stream by the scenario's model (filter the "
                    "rows to study one)")
        elif [shown[key] for key in shares.index] == [BLANK_MODEL]:
            text = (f"its Model column names no model{where} (every cell is blank); the "
                    "requests are served by the scenario's model")
        note = super().__new__(cls, text)
        note.keys, note.shown = keys, shown
        return note

    def within(self, rows: np.ndarray | None) -> list[str]:
        """The note as plain text (no rows held), of the table ``rows`` a window keeps (None:
        every row); none where they call one model."""
        if rows is None:
            return [str(self)]
        text = str(ModelMix(self.keys[rows], self.shown, " in the window's requests"))
        return [text] if text else []


def _percent(share: float) -> str:
    """A share as a whole percentage, "<1%" for a small one that is not none."""
    return "<1%" if 0 < share < 0.005 else f"{100 * share:.0f}%"


def _convert_mooncake(raw: pd.DataFrame, src: Source) -> Converted:
    since, unit_notes = _seconds(src, raw, "timestamp", "milliseconds")
    s = _served(raw, src, since, "input_length", "output_length", OWN["mooncake"],
                SERVED_LABELS["mooncake"], unit_notes)
    return s.table, [*s.notes, *s.coarse("timestamp"), *s.dropped]


def _fewer_hash_ids(hashes: np.ndarray, input_tokens: np.ndarray) -> list[str]:
    """A note when Mooncake ``hash_ids`` hold fewer ids than a prompt's 512-token blocks in
    some row: Mooncake writes one per block (every line of its FAST'25 trace), so fewer may be
    ids of larger blocks, each still counted as 512 tokens (cache hits undercounted). An
    empty list, which says a prompt has no prefix blocks, is not counted."""
    counts = np.fromiter((len(h) for h in hashes), dtype=np.int64, count=len(hashes))
    blocks = -(-np.asarray(input_tokens, dtype=np.int64) // canonical.HASH_BLOCK_TOKENS)
    fewer = (counts > 0) & (counts < blocks)
    i = checks.first_true(fewer)
    if i is None:
        return []
    size = canonical.HASH_BLOCK_TOKENS
    return [f"hash_ids holds fewer ids than the prompt's {size}-token blocks in "
            f"{int(fewer.sum()):,} of {len(fewer):,} rows (first at row {i + 1}: {counts[i]} "
            f"id{'s' if counts[i] != 1 else ''} for {input_tokens[i]} tokens, {blocks[i]} "
            f"blocks); Mooncake writes one id per {size}-token block, so a block without one "
            "is never cached: if the ids are of larger blocks, cache hits are undercounted (no "
            "setting changes the block size)"]


def _convert_canonical(raw: pd.DataFrame, src: Source) -> Converted:
    arrival = checks.numbers(src, raw["arrival_s"], "arrival_s", "arrival time in seconds",
                             low=(0, ">= 0"))
    checks.sorted_times(src, arrival, raw["arrival_s"], "arrival_s")
    checks.exact_times(src, arrival, raw["arrival_s"], "arrival_s", "seconds")
    inp = checks.tokens(src, raw["input_tokens"], "input_tokens")
    out = checks.tokens(src, raw["output_tokens"], "output_tokens")
    if "request_id" in raw.columns:
        ids = checks.whole_numbers(src, raw["request_id"], "request_id", "request id")
        checks.unique_ints(src, ids, "request_id")
    else:
        ids = np.arange(len(raw))
    names = file_columns(raw, src)
    canonical.no_internal(names, src)  # a Parquet file's unread too
    extra = canonical.optional_columns(raw, src)
    if "prefix_hashes" in extra:
        canonical.check_hash_counts(src, extra["prefix_hashes"], inp, "prefix_hashes")
    unused = [c for c in raw.columns if c not in src.kept]  # kept: read by the caller
    notes = [*canonical.text_ids_notes(raw, src.typed),
             *unread_note(_not_canonical(unused), "not a canonical column: carried in the "
                          "table, used by nothing"),
             *unread_note(_not_canonical(src.unread), "not a canonical column: left out of the "
                          "table, used by nothing")]
    if "hash_ids" in names and "prefix_hashes" not in names:
        notes.append("column 'hash_ids' is not read: a canonical trace's prompt block hashes "
                     "are 'prefix_hashes' (rename the column to model prefix caching with it)")
    table = canonical.build(ids, arrival, inp, out, extra)
    return canonical.with_session_names(table, raw, src.typed), notes


def _not_canonical(columns) -> list[str]:
    """The ``columns`` a canonical trace does not read (``hash_ids`` has its own note)."""
    return [c for c in columns if c not in KNOWN and c != "hash_ids"
            and not c.startswith(canonical.PREFIXES)]


FORMATS: dict[str, Format] = {
    f.name: f for f in (
        Format("azure", REQUIRED["azure"], _convert_azure,
               "Azure LLM inference trace 2023/2024"),
        Format("burstgpt", REQUIRED["burstgpt"],
               _convert_burstgpt, "BurstGPT CSV"),
        Format("mooncake", REQUIRED["mooncake"], _convert_mooncake,
               "Mooncake JSONL"),
        Format("canonical", REQUIRED["canonical"], _convert_canonical,
               "tiersim canonical Parquet/CSV"),
    )
}


def detect(columns: list[str]) -> str | None:
    """The format whose required columns best match ``columns`` (None when none match).

    A table holding every required column of more than one format is ambiguous (see
    :func:`complete_formats`); the loader refuses it rather than let this pick one.
    """
    present = set(columns)
    scores = {name: sum(c in present for c in f.required) for name, f in FORMATS.items()}
    best = max(scores, key=scores.get)
    return best if scores[best] > 0 else None


def complete_formats(columns: list[str]) -> list[str]:
    """The formats whose required columns are all in ``columns``, in :data:`FORMATS` order."""
    present = set(columns)
    return [name for name, f in FORMATS.items() if set(f.required) <= present]


ARRIVAL_NAMES = ("arrival_s", "timestamp", "arrived_at")
"""Names a column of arrival times goes by (casefolded): the canonical one, the logged
formats' and Vidur's trace-replay files' (:func:`arrival_lookalikes`)."""


def arrival_lookalikes(columns: list[str]) -> list[str]:
    """The columns of a table of token lengths (:func:`is_length_only`) that may be its arrival
    times under another name: close to ``arrival_s`` or a logged format's ``timestamp`` in any
    case, misspelt, or with an invisible character (a second byte-order mark, a zero-width
    space), which made the file read as lengths without a word on the column."""
    read = {*LENGTH_COLUMNS, *canonical.CORE, *canonical.NAMED}
    return [c for c in columns if c not in read and difflib.get_close_matches(
        str(c).casefold(), ARRIVAL_NAMES, n=1, cutoff=0.65)]


def token_renames(columns: list[str]) -> str:
    """For a table of token lengths (:func:`is_length_only`), the renames of its Sarathi/Vidur
    token columns (:data:`LENGTH_COLUMNS`) that, beside arrival times, make it a canonical
    trace, in words (``num_prefill_tokens to input_tokens and ...``); empty when it has the
    canonical token columns."""
    present = set(columns)
    pairs = [f"{old} to {new}" for old, new in zip(LENGTH_COLUMNS, ("input_tokens",
                                                                   "output_tokens"), strict=True)
             if old in present and new not in present]
    return " and ".join(pairs)


def is_length_only(columns: list[str]) -> bool:
    """True for a table of token lengths without arrival times (a table that holds a trace
    format's every column is that trace, whatever other columns it has)."""
    present = set(columns)
    if complete_formats(columns):
        return False
    return set(LENGTH_COLUMNS) <= present or (
        {"input_tokens", "output_tokens"} <= present and "arrival_s" not in present)


def expected_columns() -> str:
    """One line listing each format's required columns, for error messages."""
    return "; ".join(f"{n} ({', '.join(f.required)})" for n, f in FORMATS.items())
