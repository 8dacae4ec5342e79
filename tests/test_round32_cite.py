"""Every weight-size source docs/models.md cites is one a reader can follow: no citation by an
id of the project's private search tool, and every published checkpoint size names an http(s)
URL (the Hugging Face file or API address the figure is from, or the public page quoting it)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SIZES_CSV = ROOT / "benchmarks" / "data" / "published_sizes.csv"
MODELS_MD = ROOT / "docs" / "models.md"
PRIVATE_CITATIONS = ("read_file id", "project search index")
URL = re.compile(r"https?://[^\s,;)]+")


def _size_rows() -> list[dict]:
    """The rows of benchmarks/data/published_sizes.csv."""
    with SIZES_CSV.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("path", [SIZES_CSV, MODELS_MD], ids=lambda p: p.name)
@pytest.mark.parametrize("phrase", PRIVATE_CITATIONS)
def test_no_source_cites_the_private_search_index(path, phrase):
    """An id of the project's search tool is not a source a reader can look up."""
    text = path.read_text()
    assert phrase not in text.lower(), f"{path.name} still cites '{phrase}'"


@pytest.mark.parametrize("row", [r for r in _size_rows() if r["published_bytes"]],
                         ids=lambda r: r["config"])
def test_every_published_size_names_an_http_url(row):
    """Each published checkpoint size (the 16 rows with bytes) says where to read it."""
    assert URL.search(row["source"]), f"{row['config']}: no http(s) URL in its source"


def test_the_docs_table_rows_with_a_size_carry_their_url():
    """docs/models.md's table row of each published size shows the URL its CSV source names."""
    lines = MODELS_MD.read_text().splitlines()
    for row in (r for r in _size_rows() if r["published_bytes"]):
        table_row = next(line for line in lines if line.startswith(f"| {row['config']} |"))
        assert URL.search(row["source"]).group(0) in table_row, row["config"]
