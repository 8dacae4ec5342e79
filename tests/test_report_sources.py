"""Every headline figure of the report says where it comes from, in the words the console
prints beside the same figure (``tiersim run``'s source column)."""

from __future__ import annotations

import re
from pathlib import Path

from tiersim.cli.run import headline_table
from tiersim.report.page import run_headline
from tiersim.results import RunResult

GOLDEN = Path(__file__).parent / "golden"


def _headline_rows(page: str) -> dict[str, list[str]]:
    """The report's headline table: metric -> its other cells, as text."""
    body = page.split("<h2>Headline</h2>", 1)[1].split("</table>", 1)[0]
    rows = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in body.split("<tr>")[1:]]
    return {cells[0]: cells[1:] for cells in rows}


def _console_sources(run: RunResult) -> dict[str, str]:
    """The console's headline table: metric -> source."""
    table = headline_table(run)
    metrics, sources = (list(table.columns[i].cells) for i in (0, 2))
    return dict(zip(metrics, sources, strict=True))


def test_each_headline_figure_has_the_consoles_source():
    """The page's headline table had no source column: "TTFT p99 0.11 s" with nothing saying
    it was a roofline estimate, where the console said so on the same line."""
    run = RunResult.read(GOLDEN / "tiny_summary.json")
    rows = _headline_rows(run_headline(run))
    assert rows["metric"] == ["value", "unit", "source"]
    console = _console_sources(run)
    pairs = {"TTFT p99": "TTFT p50 / p99", "TPOT p50": "TPOT p50 / p99",
             "end-to-end p99": "end-to-end p99", "simulated duration": "duration",
             "cost (provisioned)": "cost (provisioned)",
             "attributed (busy GPU time only)": "attributed (busy GPU time only)",
             "GPU-hours provisioned": "GPU-hours provisioned",
             "expected accuracy": "expected accuracy", "requests": "requests (completed / "
                                                                   "dropped)"}
    for page_metric, console_metric in pairs.items():
        assert rows[page_metric][2].replace("&#x27;", "'") == console[console_metric]
    assert all(cells[2] for metric, cells in rows.items() if metric != "metric")
