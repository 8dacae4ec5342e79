"""Figures the docs quote from a benchmark command must be what the command prints today (a
profile refit once left docs/serving.md quoting 7% / 22% for a check that printed 16% / 57%)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str) -> str:
    """The stdout of ``python benchmarks/<script>`` (one line on failure)."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_serving_doc_quotes_the_disaggregated_check_as_it_prints():
    pytest.importorskip("aiconfigurator_core")
    last = _run("disagg_silicon.py").strip().splitlines()[-1]
    printed = re.fullmatch(r"(\d+) rows: median \|TTFT error\| (\d+)%, median \|TPOT error\| "
                           r"(\d+)%", last)
    assert printed, last
    doc = " ".join((ROOT / "docs" / "serving.md").read_text().split())
    quoted = re.search(r"median \|TPOT error\| (\d+)% \([^)]*\), median \|TTFT error\| (\d+)%",
                       doc)
    assert quoted, "docs/serving.md no longer quotes the disaggregated cross-check"
    rows, ttft, tpot = printed.groups()
    assert quoted.groups() == (tpot, ttft), (
        f"docs/serving.md quotes TPOT {quoted.group(1)}% / TTFT {quoted.group(2)}%; "
        f"python benchmarks/disagg_silicon.py prints {tpot}% / {ttft}% over {rows} rows")
    assert f": {rows} rows;" in doc


def test_doc_tables_are_what_the_bundled_scenarios_give_now():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import doc_tables

    assert doc_tables.stale(list(doc_tables.TABLES), write=False) == []
