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
from tiersim.errors import TiersimError
from tiersim.jsonio import read_json
from tiersim.sweep.atomic import (
    clean,
    points_dir,
    write_json_atomic,
    write_point,
    write_text_atomic,
    write_with_atomic,
)

__all__ = ["collect", "flatten", "read_axes", "read_points", "record_row", "remove_stale_temps",
           "table_matches", "table_rows", "write_json_atomic", "write_point", "write_text_atomic",
           "points_dir"]


def remove_stale_temps(out_dir: Path) -> int:
    """Delete temp files a killed sweep left half-written (``points/`` and the folder itself);
    return how many. Call only while holding the folder's lock."""
    stale = [*points_dir(out_dir).glob(".*.tmp"), *Path(out_dir).glob(".*.tmp"),
             *Path(out_dir).glob("report.html.tmp")]
    stale = [path for path in stale if path.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return len(stale)


def read_points(out_dir: Path) -> dict[str, dict[str, Any]]:
    """All stored point records by id (temp files and unreadable files are ignored)."""
    records = {}
    for path in sorted(points_dir(out_dir).glob("*.json")):
        try:
            record = read_json(path, "a sweep point record")
        except TiersimError:  # not a regular file, too big, not JSON: run the point again
            continue
        if _is_record(record, path.stem):  # anything else is not a point record: run again
            records[str(record.get("point_id", path.stem))] = record
    return records


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
    if not _run_time(record.get("wall_s")):
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
        row[axis] = json.dumps(value) if isinstance(value, (list, dict)) else value
    for key, value in flatten(record.get("summary") or {}).items():
        row[key if key not in row else f"summary.{key}"] = value
    return row


def collect(out_dir: Path, axes: list[str], ids: list[str] | None = None,
            records: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Build and write ``sweep.parquet`` from the stored points (or ``records``, as read by
    :func:`read_points`). ``ids`` (the points of the current plan, in grid order) restricts
    and orders them, and each row's ``index`` is its place there, not the index the point had
    in the plan that ran it (a value added in front of an axis moves every point)."""
    records = read_points(out_dir) if records is None else records
    if ids is None:
        rows = [record_row(r, axes) for r in records.values()]
    else:
        rows = [{**record_row(records[i], axes), "index": n} for n, i in enumerate(ids)
                if i in records]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame = frame.sort_values("index", kind="stable").reset_index(drop=True)
    frame = _uniform_columns(frame)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"tiersim.sweep.axes"] = json.dumps(axes).encode()
    table = table.replace_schema_metadata(meta)
    write_with_atomic(Path(out_dir) / "sweep.parquet", lambda handle: pq.write_table(table, handle))
    return frame


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


def _uniform_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Make mixed-type object columns strings so Arrow can store them."""
    for column in frame.columns:
        if frame[column].dtype != object:
            continue
        kinds = {type(v) for v in frame[column] if v is not None and v == v}
        numeric = kinds <= {int, float}  # a bool beside numbers is text: Arrow refuses the mix
        if len(kinds) > 1 and not numeric:
            frame[column] = frame[column].map(lambda v: None if v is None else str(v))
    return frame


def read_axes(path: Path) -> list[str]:
    """The axis columns recorded in a ``sweep.parquet`` file's metadata."""
    with arrow_file(path) as handle:
        meta = pq.read_schema(handle).metadata or {}
    return json.loads(meta.get(b"tiersim.sweep.axes", b"[]"))
