"""The text of a text trace's cells as the file writes them (:func:`written_cells`), read
again for an error message only: a CSV's field (:func:`tiersim.trace.read_csv.csv_cells`), a
JSON line's value (:func:`json_cells`).

This module imports no trace module above the CSV reader, so that the checks
(:mod:`tiersim.trace.checks`) can quote a cell without importing the readers of every format.
"""

from __future__ import annotations

import json

import pyarrow as pa

from tiersim.trace.filecheck import JSON_BLANK
from tiersim.trace.read_csv import csv_cells


def written_cells(path: str, header_lines: int, rows: list[int], column: str) -> dict[int, str]:
    """The text of 1-based data rows ``rows``' cells of ``column`` as a text trace writes them
    (``{row: text}``): a CSV's field, a JSON line's value (a number as its characters: ``1.7e9``,
    not the float it reads as). A row is left out where the file cannot be read again, or the
    row, the column or a value of text or a number is not there. One pass over the file, made
    only when an error is raised (as :func:`file_line`'s)."""
    try:
        if header_lines == 0:
            return json_cells(path, rows, column)
        return csv_cells(path, rows, column) if header_lines == 1 else {}
    except (OSError, UnicodeError, ValueError, pa.ArrowException):
        return {}


def json_cells(path: str, rows: list[int], column: str) -> dict[int, str]:
    """:func:`written_cells` of a JSON-lines file: each wanted line's value of key ``column``
    (stripped), text as it is, a number as written (``json.loads`` keeps its characters), and
    ``NaN``, ``Infinity`` and ``-Infinity``, which Python's reader takes, as written too."""
    wanted, found = set(rows), {}
    with open(path, newline="", encoding="utf-8-sig") as handle:
        lines = (line for line in handle if line.strip(JSON_BLANK))
        for row, line in enumerate(lines, start=1):
            if row in wanted:
                record = json.loads(line, parse_float=str, parse_int=str, parse_constant=str)
                value = next((v for k, v in record.items() if str(k).strip() == column), None)
                found |= {row: value} if isinstance(value, str) else {}
            if row >= max(wanted):
                break
    return found
