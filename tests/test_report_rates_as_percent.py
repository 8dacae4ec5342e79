"""The report's per-tier and router rates read as the console prints them ("40.0 %"), not as
bare fractions under headers that gave no unit ("FPR | 0.4", "utilization | 0.26")."""

from __future__ import annotations

from conftest import tiny_doc, write_yaml

from tiersim.cli.run import fmt as console
from tiersim.report.page import run_headline
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def _cell(value) -> str:
    """The report's cell of a rate the console prints as ``console(value, " %", 100)``."""
    text = console(value, " %", 100)
    return "<td>-</td>" if value is None else f'<td class="num">{text}</td>'


def test_rates_are_percents_as_on_the_console(tmp_path):
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), baselines=False)
    page = run_headline(run)
    t = run.tiers[1]
    assert (f"<td>{t.name}</td><td class=\"num\">{t.requests}</td>{_cell(t.share)}"
            in page)
    assert _cell(t.utilization) + _cell(t.kv_peak_frac) in page
    r = run.router
    assert f"<td>FPR</td>{_cell(r.fpr)}" in page and f"<td>FNR</td>{_cell(r.fnr)}" in page
    assert f"<td>escalation rate</td>{_cell(r.escalation_rate)}" in page
    assert "KV peak (fraction)" not in page
