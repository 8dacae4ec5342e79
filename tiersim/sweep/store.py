"""Resumable result store of a sweep: one JSON file per point, collected into ``sweep.parquet``.

Layout of a sweep directory::

    DIR/points/<id>.json   one finished point (written to a temp file, then ``os.replace``)
    DIR/sweep.parquet      one row per point: point_id, index, status, error, wall_s,
                           the axis values (column = dotted path) and every summary metric,
                           nested keys flattened with dots (``tiers.bf16.ttft_p99_s``)

A point file is complete or absent, never half-written, so a sweep killed at any instant resumes
by skipping the ids whose files exist with ``status == "ok"``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tiersim.arrowfile import arrow_file
from tiersim.atomic import (
    clean,
    points_dir,
    write_json_atomic,
    write_point,
    write_text_atomic,
    write_with_atomic,
)
from tiersim.errors import TiersimError
from tiersim.jsonio import read_json

__all__ = ["collect", "flatten", "read_axes", "read_bookkeeping", "read_points", "read_table",
           "record_row", "remove_stale_temps",
           "table_matches", "table_rows", "table_status", "write_json_atomic", "write_point",
           "write_table", "write_text_atomic", "points_dir"]


SWEEP_WRITES = ("scenario.yaml", "sweep.json", "sweep.parquet", "report.html")
"""The files a sweep writes at the top of its folder, each through a ``.NAME.*.tmp`` file."""


def remove_stale_temps(out_dir: Path) -> int:
    """Delete temp files a killed sweep left half-written (``points/.ID.json.*.tmp`` and the
    folder's ``.NAME.*.tmp`` of each file it writes); return how many. A user's other ``.tmp``
    files stay. Call only while holding the folder's lock."""
    top = [path for name in SWEEP_WRITES for path in Path(out_dir).glob(f".{name}.*.tmp")]
    stale = [*points_dir(out_dir).glob(".*.json.*.tmp"), *top,
             *Path(out_dir).glob("report.html.tmp")]
    stale = [path for path in stale if path.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


def read_points(out_dir: Path) -> dict[str, dict[str, Any]]:
    """All stored point records by id (temp files and unreadable files are ignored)."""
    return dict(read_points_each(out_dir))


def read_bookkeeping(out_dir: Path, skipped: list[tuple[str, str]] | None = None
                     ) -> dict[str, dict[str, Any]]:
    """The stored point records as :func:`read_points` finds them, less their summaries where
    the folder holds more than :data:`TABLE_CHUNK` point files: what a sweep checks and counts
    (status, digests, inputs, versions, refusals). A summary is nine tenths of a record, and a
    sweep of many points held them all at its start and again at its end; :func:`collect`
    reads each one again as it writes its row. A smaller sweep keeps them (its table is
    written from them at once, each file read once). ``skipped``: as
    :func:`read_points_each` fills it."""
    if sum(1 for _ in points_dir(out_dir).glob("*.json")) <= TABLE_CHUNK:
        return dict(read_points_each(out_dir, skipped))
    return {point: {k: v for k, v in record.items() if k != "summary"}
            for point, record in read_points_each(out_dir, skipped)}


def read_points_each(out_dir: Path, skipped: list[tuple[str, str]] | None = None):
    """``(id, record)`` of each stored point, one at a time; temp files, unreadable files,
    files that are not a point's record and records this tiersim wrote whose content does not
    match the digest written with them (:func:`tiersim.atomic.point_digest`: edited or cut
    short since) are skipped (their points run again), each added to ``skipped``, when given,
    as its file's name and why."""
    for path in sorted(points_dir(out_dir).glob("*.json")):
        try:
            record = read_json(path, "a sweep point record")
        except TiersimError:  # not a regular file, too big, not JSON
            if skipped is not None and not path.is_dir():  # a folder in the way is refused
                skipped.append((path.name, "not JSON: cut short, or not a point file"))
            continue
        why = "not a point's record" if not _is_record(record, path.stem) else _altered(record)
        if why is None:
            yield str(record.get("point_id", path.stem)), record
        elif skipped is not None:
            skipped.append((path.name, why))


def _altered(record: dict[str, Any]) -> str | None:
    """Why a point record this tiersim build wrote (its ``tiersim`` version this one's) is not
    as it was stored: no digest, or one its content does not match; None when it matches, and
    for another build's record (its point runs again anyway, noted as such)."""
    from tiersim.atomic import point_digest
    from tiersim.sweep.build import ran_here

    if not ran_here(record):
        return None
    if "digest" not in record:
        return "no digest, which this tiersim stores with every point"
    if record["digest"] != point_digest(record):
        return "its content does not match the digest stored with it: edited since"
    return None


RUN_SUMMARY_RUNNERS = ("default_runner", "estimate_runner")
"""Runners whose point summaries are a run's ``summary.json`` (held to its reader)."""


def _is_record(record: Any, stem: str) -> bool:
    """Whether a stored point has a record's shape: a map whose ``inputs`` (when present) is a
    map, whose ``wall_s`` a run takes, whose id is its file's name and the id of its ``values``,
    and which, when marked ``ok``, holds a summary that reads as a run's (an edited or
    truncated file is not a finished point)."""
    from tiersim.results import RunResult
    from tiersim.sweep.axes import point_id

    if not isinstance(record, dict) or not isinstance(record.get("inputs", {}), dict):
        return False
    if not _run_time(record.get("wall_s")) or not _texts(record):
        return False
    values = record.get("values")
    if record.get("point_id", stem) != stem or not isinstance(values, dict):
        return False
    try:
        if point_id(values) != stem:
            return False
    except (TypeError, ValueError):
        return False
    summary = record.get("summary")
    if record.get("status") != "ok":
        return True
    if not isinstance(summary, dict) or not summary:
        return False
    if record.get("runner") not in RUN_SUMMARY_RUNNERS:
        return True  # another runner's summary has no schema to hold it to
    try:
        RunResult.from_json(summary, f"point {stem}")
    except (TiersimError, TypeError, ValueError, KeyError, AttributeError):
        return False
    return True


TEXT_FIELDS = ("point_id", "status", "error", "runner", "tiersim", "base_digest",
               "sweep_digest")
"""The fields of a point record that a sweep writes as text (or null)."""


def _texts(record: dict[str, Any]) -> bool:
    """Whether each of a record's :data:`TEXT_FIELDS` is text or null, as a sweep writes it: a
    list or map there (an edited file) was kept, and a resume ended in a traceback (a set of
    the runners, the table's ``error`` column)."""
    return all(record.get(key) is None or isinstance(record[key], str) for key in TEXT_FIELDS)


def _run_time(wall_s: Any) -> bool:
    """Whether a record's ``wall_s`` is one a run takes: none, or a finite number of seconds
    >= 0, as the report reads sweep.parquet (an edited -1 or text was kept, and the report
    refused the table the sweep rebuilt from it on every rerun)."""
    if wall_s is None:
        return True
    return (isinstance(wall_s, (int, float)) and not isinstance(wall_s, bool)
            and math.isfinite(wall_s) and wall_s >= 0)


def flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested dicts into dotted keys; lists become JSON strings."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(clean(value), default=str)
        else:
            flat[name] = value
    return flat


def record_row(record: dict[str, Any], axes: list[str]) -> dict[str, Any]:
    """One sweep.parquet row from a point record: ids, axis values, flattened summary."""
    row = {"point_id": record["point_id"], "index": record.get("index"),
           "status": record.get("status"), "error": record.get("error"),
           "wall_s": record.get("wall_s")}
    values = record.get("values", {})
    for axis in axes:
        value = values.get(axis)
        row[axis] = (json.dumps(value) if isinstance(value, (list, dict)) else
                     float(value) if isinstance(value, float) else value)  # not its text
    for key, value in flatten(record.get("summary") or {}).items():
        row[key if key not in row else f"summary.{key}"] = value
    return row


TABLE_CHUNK = 2000
"""Rows built and written at a time: the table is written in pieces of this many points."""


def collect(out_dir: Path, axes: list[str], ids: list[str] | None = None,
            records: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Write ``sweep.parquet`` as :func:`write_table` does and return the table as written
    (read back whole: a caller that does not need it calls :func:`write_table`)."""
    return read_table(write_table(out_dir, axes, ids, records))


def read_table(path: Path) -> pd.DataFrame:
    """The whole ``sweep.parquet`` at ``path``, as a frame (:func:`table_status` reads only
    the columns a sweep's closing line needs)."""
    with arrow_file(path) as handle:
        return pq.read_table(handle).to_pandas()


def write_table(out_dir: Path, axes: list[str], ids: list[str] | None = None,
                records: dict[str, dict[str, Any]] | None = None) -> Path:
    """Build and write ``sweep.parquet`` from the stored points (or ``records``, as read by
    :func:`read_points` or :func:`read_bookkeeping`: a record without its summary has it read
    again from its file); return its path. ``ids`` (the points of the current plan, in grid
    order) restricts and orders them, and each row's ``index`` is its place there, not the
    index the point had in the plan that ran it (a value added in front of an axis moves every
    point).

    The table is made in two passes over the points, :data:`TABLE_CHUNK` rows at a time: the
    first finds each column and the type its values take together (as pandas would read the
    whole table), the second writes the rows in pieces of that one schema; so the memory it
    takes does not grow with the points' summaries. A table of one piece keeps its rows from
    the first pass (each file read once); a bigger one holds none between the passes."""
    records = read_bookkeeping(out_dir) if records is None else records
    order = _table_order(records, ids)
    columns: dict[str, set[type]] = {}
    missing: set[str] = set()
    kept: list[dict[str, Any]] | None = [] if len(order) <= TABLE_CHUNK else None
    for count, row in enumerate(_rows(out_dir, axes, order, records, ids is not None)):
        _note_kinds(row, columns, missing, first=count == 0)
        if kept is not None:
            kept.append(row)
    schema = _schema(columns, missing, axes)
    rows = kept if kept is not None else _rows(out_dir, axes, order, records, ids is not None)
    path = Path(out_dir) / "sweep.parquet"
    write_with_atomic(path, lambda handle: _write_rows(handle, schema, rows, columns))
    return path


def table_status(path: Path) -> pd.DataFrame:
    """The ``point_id``, ``status`` and ``error`` columns of a ``sweep.parquet`` (those it
    has: a table of no rows has none), what a sweep counts and names its failed points by."""
    with arrow_file(path) as handle:
        have = set(pq.read_schema(handle).names)
        wanted = [name for name in ("point_id", "status", "error") if name in have]
        return pq.read_table(handle, columns=wanted).to_pandas()


def _table_order(records: dict[str, dict[str, Any]], ids: list[str] | None) -> list[str]:
    """The ids of the table's rows in order: ``ids``' stored points, else every stored point
    by its recorded index (points without one last)."""
    if ids is not None:
        return [i for i in ids if i in records]
    def key(point: str) -> tuple[bool, Any]:
        index = records[point].get("index")
        usable = isinstance(index, (int, float)) and not isinstance(index, bool) and index == index
        return (not usable, index if usable else 0)
    return sorted(records, key=key)


def _rows(out_dir: Path, axes: list[str], order: list[str],
          records: dict[str, dict[str, Any]], renumber: bool):
    """The table's rows, one at a time, each point's summary read from its file where
    ``records`` left it out."""
    for n, point in enumerate(order):
        record = records[point]
        if "summary" not in record:
            record = {**record, "summary": _stored_summary(out_dir, point)}
        row = record_row(record, axes)
        yield {**row, "index": n} if renumber else row


def _stored_summary(out_dir: Path, point: str) -> Any:
    """The summary stored in point ``point``'s file (None when it can no longer be read)."""
    try:
        record = read_json(points_dir(out_dir) / f"{point}.json", "a sweep point record")
    except TiersimError:
        return None
    return record.get("summary") if isinstance(record, dict) else None


def _note_kinds(row: dict[str, Any], columns: dict[str, set[type]], missing: set[str],
                first: bool) -> None:
    """Add one row to the columns seen (in order of first appearance) and the types of their
    values; a column a row lacks, or holds None or NaN in, is ``missing`` there."""
    for column in columns:
        if column not in row:
            missing.add(column)
    for column, value in row.items():
        if column not in columns:
            columns[column] = set()
            if not first:  # the rows before this one lack it
                missing.add(column)
        if value is None or (isinstance(value, float) and value != value):
            missing.add(column)
        else:
            columns[column].add(type(value))


def _column_type(kinds: set[type], has_missing: bool) -> pa.DataType:
    """The Arrow type of a column whose values are of ``kinds`` (and missing somewhere when
    ``has_missing``), as pandas reads such a column and Arrow stores it: whole numbers with
    a gap as floats, numbers mixed with anything else as text."""
    if not kinds:
        return pa.null()
    if kinds == {int}:
        return pa.float64() if has_missing else pa.int64()
    if kinds <= {int, float}:
        return pa.float64()
    if kinds == {bool}:
        return pa.bool_()
    return pa.string()


def _schema(columns: dict[str, set[type]], missing: set[str], axes: list[str]) -> pa.Schema:
    """The table's schema, the sweep's axes in its metadata."""
    fields = [pa.field(name, _column_type(kinds, name in missing))
              for name, kinds in columns.items()]
    return pa.schema(fields, metadata={b"tiersim.sweep.axes": json.dumps(axes).encode()})


def _write_rows(handle, schema: pa.Schema, rows, columns: dict[str, set[type]]) -> None:
    """Write ``rows`` to ``handle`` as one Parquet table of ``schema``, in pieces of
    :data:`TABLE_CHUNK` rows (one row group each), each piece held as its columns' values, not
    as its rows."""
    text = {name for name, kinds in columns.items() if len(kinds) > 1 and not kinds <= {int, float}}
    names = schema.names
    with pq.ParquetWriter(handle, schema) as writer:
        piece: list[list[Any]] = [[] for _ in names]
        count = 0
        for row in rows:
            get = row.get
            for values, name in zip(piece, names, strict=True):
                values.append(get(name))
            count += 1
            if count == TABLE_CHUNK:
                writer.write_batch(_batch(piece, schema, text))
                piece, count = [[] for _ in names], 0
        if count:
            writer.write_batch(_batch(piece, schema, text))


def _batch(piece: list[list[Any]], schema: pa.Schema, text: set[str]) -> pa.RecordBatch:
    """One piece of the table from each column's values (absent: null), those of mixed types
    as text (Arrow refuses a column of numbers and flags, say); NaN is null, as Arrow stores a
    pandas column."""
    arrays = []
    for field, values in zip(schema, piece, strict=True):
        if field.name in text:
            values = [None if v is None or v != v else str(v) for v in values]
        if field.type == pa.string():
            values = [_utf8(v) for v in values]
        arrays.append(pa.array(values, type=field.type, from_pandas=True))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _utf8(value: Any) -> Any:
    """Text as Arrow can store it: a byte of a file name that is not UTF-8 (Python holds it as
    a surrogate, ``caf\\udce9``) written as its escape, as the report page shows it."""
    if isinstance(value, str) and not value.isascii():
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def table_rows(out_dir: Path) -> list[tuple[Any, Any]] | None:
    """``(point_id, status)`` of each row of ``sweep.parquet``: ``[]`` when there is none,
    ``None`` when it is not a table a sweep wrote."""
    path = Path(out_dir) / "sweep.parquet"
    if not path.exists():
        return []
    try:
        with arrow_file(path) as handle:
            rows = pq.read_table(handle, columns=["point_id", "status"]).to_pylist()
    except Exception:  # noqa: BLE001 - not a table a sweep wrote
        return None
    return [(row["point_id"], row["status"]) for row in rows]


def table_matches(out_dir: Path, records: dict[str, dict[str, Any]]) -> bool:
    """Whether every row of ``sweep.parquet`` (if there is one) is a point still stored in
    ``records`` with the same status: else the table outlives the data it came from."""
    rows = table_rows(out_dir)
    return rows is not None and all(
        point in records and records[point].get("status") == status for point, status in rows)


def read_axes(path: Path) -> list[str]:
    """The axis columns recorded in a ``sweep.parquet`` file's metadata."""
    with arrow_file(path) as handle:
        meta = pq.read_schema(handle).metadata or {}
    return json.loads(meta.get(b"tiersim.sweep.axes", b"[]"))
