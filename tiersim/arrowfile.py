"""Local files for pyarrow, named as the operating system names them.

pyarrow encodes a path given as text in UTF-8, which fails (``UnicodeEncodeError: surrogates
not allowed``) on a name the file system allows but UTF-8 does not: a folder named in Latin-1,
or any non-ASCII name under a C locale with Python's UTF-8 mode off, which Python holds with
surrogates. Every Parquet and JSON-lines file tiersim reads or writes is opened here instead,
by its bytes (``os.fsencode``), as Python's own ``open`` does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa


def arrow_file(path: str | Path, mode: str = "rb") -> pa.NativeFile:
    """``path`` opened as a pyarrow file (``"rb"`` to read, ``"wb"`` to write); close it, or use
    it in a ``with`` block. A missing file raises ``FileNotFoundError`` as ``open`` does."""
    return pa.OSFile(os.fsencode(path), mode)
