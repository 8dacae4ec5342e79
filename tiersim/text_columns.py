"""Reading a table's text columns (prompt, task_type, step_type, subject) without a copy of
each row's text.

The trace reader gives these columns as categories (a dictionary-encoded Parquet column, or
one read as such: :data:`tiersim.trace.canonical.BY_VALUE`) whose categories are pandas'
Arrow-backed text. ``astype(str)``, ``to_numpy()`` and iterating such a column each made a
string per row (an Arrow string, then a Python one): 87 MB for a 300,000-row trace of 230-byte
prompts, per use. The helpers here make each distinct value a Python string once and give rows
their codes, or references to those strings; a column that is not one of categories is read
as before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _is_categories(column: pd.Series) -> bool:
    """Whether ``column`` is one of categories."""
    return isinstance(column.dtype, pd.CategoricalDtype)


def as_text(column: pd.Series) -> pd.Series:
    """``column.astype(str)``, same values row for row: of a category column, still one of
    categories (its codes), its categories made Python strings once (so reading it row by row,
    as TF-IDF and one-hot encoders do, hands out those strings, not a copy per row). Of
    categories of whole numbers with a missing row, each is its number as the trace wrote it
    (``"1"``, as when no row is missing), where ``astype(str)`` goes through float (``"1.0"``)."""
    if not _is_categories(column):
        return column.astype(str)
    text = pd.Index(np.asarray(column.cat.categories.astype(str), dtype=object), dtype=object)
    if not text.is_unique:  # two categories with one text (1 and "1"): as text, one value
        return column.astype(str)
    values = pd.Categorical.from_codes(column.cat.codes.to_numpy(), dtype=pd.CategoricalDtype(text))
    return pd.Series(values, index=column.index, name=column.name)


def text_lengths(column: pd.Series) -> np.ndarray:
    """Each row's length in characters as float64 (NaN for a missing value), of a column
    from :func:`as_text`: of a category column, each category's length taken by its codes."""
    if not _is_categories(column):
        return column.str.len().astype(float).to_numpy()
    lengths = np.array([len(v) for v in column.cat.categories] + [np.nan], dtype=np.float64)
    return lengths[column.cat.codes.to_numpy()]  # a missing row's code -1: the NaN


def row_values(column: pd.Series) -> np.ndarray:
    """``column.to_numpy()``, same values row for row: of a category column of text, an array
    of references to its categories, each made a Python string once, and NaN where a value is
    missing (``to_numpy`` gives NaN of categories of ``str``, but ``<NA>`` of ``string`` ones;
    :func:`pandas.isna` finds either)."""
    cats = column.cat.categories if _is_categories(column) else None
    if cats is None or not pd.api.types.is_string_dtype(cats.dtype):
        return column.to_numpy()
    values = np.append(np.asarray(cats, dtype=object), np.nan)
    return values[column.cat.codes.to_numpy()]  # a missing row's code -1: the NaN


def text_codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's place among the column's distinct values as text (-1 where missing), and
    those values (``astype(str)`` of each, Python strings), found without making each row's
    value text: of a category column, from its categories (some may be in no row; whole
    numbers read ``"1"`` with a row missing too, as :func:`as_text` gives)."""
    if _is_categories(column):
        codes, values = column.cat.codes.to_numpy(), column.cat.categories
    else:
        codes, values = pd.factorize(column)
    merged, text = pd.factorize(np.asarray(pd.Index(values).astype(str), dtype=object))
    return np.append(merged, -1)[codes], np.asarray(text, dtype=object)
