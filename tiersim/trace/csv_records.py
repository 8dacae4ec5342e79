"""A CSV trace's records checked by pyarrow's CSV reader, so that pandas may parse some of its
columns alone (:func:`tiersim.trace.source.read_raw`'s ``left_out``).

pandas reading some columns (``usecols``) takes a row with more fields than the header (its
values then shift) or fewer (the cells left off read as blank), and never decodes the columns
it skips; parsing every column, as it was, catches each of these, but a column that nothing
reads (an Azure CSV's 200-byte text column) then took three times the file's size at the peak.
pyarrow's streaming reader checks every record instead, a block of the file at a time (its
arrays dropped as soon as read): each record that is not blank has the header's number of
fields (separators and line ends inside quotes not counted) and is UTF-8 text. A file it does
not vouch for is parsed whole again (:class:`Unvouched`), which names what is wrong with the
message, row and line it always gave.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv


class Unvouched(Exception):
    """A CSV whose records pyarrow does not find all of the header's width and UTF-8 text (or
    does not count as pandas counts them): every column is parsed, which says what is wrong."""


def record_counts(path: Path, width: int) -> Iterator[int]:
    """The number of data records of the CSV ``path`` checked so far, after each block that
    pyarrow reads: every record of ``width`` fields (the header's, as pandas reads it) and UTF-8
    text; a record of spaces and tabs alone is skipped, as pandas skips it. Raises
    :class:`Unvouched` at the first record that is not so, or a header of another width.

    A record longer than a block (:data:`BLOCK_BYTES`) has the file read again in the next,
    larger blocks, the records already counted not counted twice."""
    counted = 0
    for block in BLOCK_BYTES:
        try:
            for checked in _block_counts(path, width, block):
                if checked > counted:
                    counted = checked
                    yield checked
            return
        except Unvouched:
            continue
    raise Unvouched


def _block_counts(path: Path, width: int, block: int) -> Iterator[int]:
    """:func:`record_counts` read in blocks of ``block`` bytes, from the file's start."""
    try:
        with _undecodable_rows_quiet():
            reader = pa_csv.open_csv(path, read_options=_read_options(block),
                                     parse_options=_PARSE, convert_options=_text_columns(width))
        if len(reader.schema) != width:
            raise Unvouched
        checked = -1  # the header is the first record read
        batches = iter(reader)
        while True:
            with _undecodable_rows_quiet():
                batch = next(batches, None)
            if batch is None:
                return
            checked += batch.num_rows
            yield checked
    except MemoryError:  # pyarrow's ArrowMemoryError too: the file is not at fault
        raise
    except pa.ArrowException:
        raise Unvouched from None


def _skip_blank(row) -> str:
    """pyarrow's answer to a record not of the header's width: skip one of spaces and tabs
    alone (pandas reads no row from it), stop at any other."""
    return "skip" if not row.text.strip(" \t") else "error"


@contextlib.contextmanager
def _undecodable_rows_quiet():
    """pyarrow decodes the text of a record not of the header's width before it asks
    :func:`_skip_blank`, and printed 'Exception ignored in: <function _skip_blank ...>' and a
    traceback where the record is not UTF-8; the read fails all the same (:class:`Unvouched`:
    every column is parsed, which names the line), so that is not printed."""
    hook = sys.unraisablehook

    def quiet(unraisable) -> None:
        if not (unraisable.object is _skip_blank
                and isinstance(unraisable.exc_value, UnicodeDecodeError)):
            hook(unraisable)

    sys.unraisablehook = quiet
    try:
        yield
    finally:
        sys.unraisablehook = hook


BLOCK_BYTES = (1 << 16, 1 << 20, 1 << 24)
"""Bytes pyarrow reads at a time: 64 KiB, or where a record is longer (a long prompt), 1 MiB,
then 16 MiB (a longer record has the file parsed with every column). NOTE: larger blocks held
more at the peak (a 100k-row Azure CSV with a 200-byte text column, read_trace: 187-201 MiB in
blocks of 256 KiB against 159-163 in 64 KiB, 133 without the column; 1M rows, ``tiersim trace
inspect``: 259 MiB in pyarrow's own 1 MiB blocks against 227 in 256 KiB)."""


def _read_options(block: int) -> pa_csv.ReadOptions:
    """Blocks of ``block`` bytes, the header read as a record (checked as the others)."""
    return pa_csv.ReadOptions(autogenerate_column_names=True, block_size=block,
                              use_threads=False)


_PARSE = pa_csv.ParseOptions(newlines_in_values=True, invalid_row_handler=_skip_blank)


def _text_columns(width: int) -> pa_csv.ConvertOptions:
    """Every one of ``width`` columns read as text: checked as UTF-8, never typed (a type
    guessed from the first block could fail on a later one)."""
    return pa_csv.ConvertOptions(column_types={f"f{i}": pa.string() for i in range(width)})


class Records:
    """pyarrow's check of a CSV's records (:func:`record_counts`), read as far as asked."""

    def __init__(self, path: Path, width: int):
        self._counts = record_counts(path, width)
        self.checked = 0
        self._done = False

    def vouch(self, rows: int) -> None:
        """Check the first ``rows`` data records, or every one where the file has fewer
        (:class:`Unvouched` where one of them is refused)."""
        while self.checked < rows and not self._done:
            checked = next(self._counts, None)
            self._done = checked is None
            self.checked = self.checked if checked is None else checked

    def count(self) -> int:
        """Check every record: the number of data records (:class:`Unvouched` where one of
        them is refused)."""
        for checked in self._counts:
            self.checked = checked
        return self.checked

    def vouch_all(self, rows: int) -> None:
        """Check every record, ``rows`` data records in all (:class:`Unvouched` otherwise)."""
        if self.count() != rows:
            raise Unvouched
