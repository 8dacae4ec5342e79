"""Reading a trace file into a raw table, whatever its format (:func:`read_raw`), and its column
names (:func:`column_names`).

The file is looked at first (:func:`tiersim.trace.filecheck.open_checked`), then read by its
format's reader (:mod:`tiersim.trace.read_csv`, :mod:`tiersim.trace.read_jsonl`,
:mod:`tiersim.trace.read_parquet`). Rows in every error are 1-based *data* rows
(:class:`tiersim.trace.filecheck.Source`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tiersim.trace.filecheck import Source, no_duplicate_columns, open_checked
from tiersim.trace.read_csv import csv_columns, read_csv_file
from tiersim.trace.read_jsonl import read_jsonl_file
from tiersim.trace.read_parquet import parquet_columns, read_parquet_file


def read_raw(path: str | Path, used=None, left_out=None) -> tuple[pd.DataFrame, Source]:
    """Read a CSV, JSONL or Parquet trace as it is, with column names stripped of spaces.

    ``used(columns) -> set | None`` picks, from a CSV's or Parquet file's stripped column
    names, the columns whose values are used (None: all); a CSV's others are read as categories
    (:func:`tiersim.trace.read_csv.read_csv_file`), a Parquet file's are not decoded
    (:func:`tiersim.trace.read_parquet.parquet_selection`; the Source's ``unread``).
    ``left_out(columns) -> set`` picks, of a CSV's others, those it does not parse at all, as a
    Parquet file's."""
    p = Path(path)
    kind = open_checked(p)
    if kind == "csv":
        return read_csv_file(path, used, left_out)
    if kind == "parquet":
        df, src = read_parquet_file(p, used)
    else:
        df, src = read_jsonl_file(p, str(path), used)
    df.columns = [str(c).strip() for c in df.columns]
    no_duplicate_columns(list(df.columns), src)
    return df, src


def column_names(path: str | Path) -> list[str]:
    """A trace's column names as :func:`read_raw` gives them; a Parquet file's from its schema
    and a CSV's from its header, without reading its rows."""
    return names_and_raw(path)[0]


def names_and_raw(path: str | Path) -> tuple[list[str], tuple[pd.DataFrame, Source] | None]:
    """A trace's column names (:func:`column_names`) and, where finding them reads the whole
    file (JSON lines: a key may first appear on any line), that read (:func:`read_raw`'s
    result), to pass on (``raw`` of :func:`tiersim.trace.loader.read_trace`) rather than read
    the file again; None for a Parquet file or a CSV, whose names are read alone."""
    kind = open_checked(path)
    if kind == "parquet":
        return parquet_columns(Path(path)), None
    if kind == "csv":
        return csv_columns(Path(path)), None
    raw = read_raw(path)
    return [*raw[0].columns, *raw[1].unread], raw
