"""Names in the report's figures are drawn as written: plotly reads ``<b>``, ``<a href>`` and
entities in trace names, categories and titles as markup, so each figure's text is escaped."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import plotly.graph_objects as go

from tiersim.report.figures import build_panels, plain_text
from tiersim.report.load import ReportData
from tiersim.results import RunResult

GOLDEN = Path(__file__).parent / "golden" / "tiny_summary.json"
NAME = '<a href="https://x">w</a><b>4</b>&amp;'
SHOWN = "&lt;a href=\"https://x\"&gt;w&lt;/a&gt;&lt;b&gt;4&lt;/b&gt;&amp;amp;"


def _renamed(run: RunResult, old: str, new: str) -> RunResult:
    """``run`` with tier ``old`` called ``new`` in its tiers and savings."""
    tiers = tuple(dataclasses.replace(t, name=new) if t.name == old else t for t in run.tiers)
    uniform = tuple(dataclasses.replace(u, tier=new) if u.tier == old else u
                    for u in run.savings.uniform)
    return dataclasses.replace(run, tiers=tiers,
                               savings=dataclasses.replace(run.savings, uniform=uniform))


def test_a_tier_name_with_markup_is_drawn_as_written():
    """The bar's category, the frontier's marker label: "w4&" in bold with a link, before."""
    run = _renamed(RunResult.read(GOLDEN), "w4a16", NAME)
    panels = {p.key: p.fig for p in build_panels(ReportData(Path("."), run=run))}
    bars = panels["p99_per_tier"].data[0]
    assert SHOWN in bars.x and NAME not in bars.x
    uniform = next(t for t in panels["frontier"].data if t.name.startswith("uniform tiers"))
    assert SHOWN in uniform.text


def test_plain_text_keeps_numbers_and_turns_newlines_into_breaks():
    fig = go.Figure(go.Scatter(x=[1.0, 2.0], y=[0.5, 0.7], name="a<b",
                               text=["p = 1\nq = <2>", "r"]))
    fig.update_layout(title="cost & <i>accuracy</i>", xaxis_title="tiers.<b>x</b>.replicas")
    plain_text(fig)
    trace = fig.data[0]
    assert list(trace.x) == [1.0, 2.0] and trace.name == "a&lt;b"
    assert list(trace.text) == ["p = 1<br>q = &lt;2&gt;", "r"]
    assert fig.layout.title.text == "cost &amp; &lt;i&gt;accuracy&lt;/i&gt;"
    assert fig.layout.xaxis.title.text == "tiers.&lt;b&gt;x&lt;/b&gt;.replicas"
