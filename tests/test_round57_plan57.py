"""Round 57 (helper plan57): trust in ``tiersim plan``'s results: the report names where the
plan's figures come from, the robust saving's seeds, plan.json's costliest run, one basis per
saving, and what a split tier's score covers."""

from __future__ import annotations

import html
import json

from tiersim.report.page import page_text


def _tiny_plan(tmp_path, capsys) -> tuple[dict, list[str]]:
    """plan.json and the console lines of ``tiersim plan tiny`` at its own seed alone."""
    from tiersim.cli import main

    capsys.readouterr()
    out = tmp_path / "p"
    assert main(["plan", "tiny", "--out", str(out), "--check-seeds", "0", "--no-report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return json.loads((out / "plan.json").read_text()), lines


# ------------------------------------------------------------ 1. the report shows sources


def test_the_report_plan_section_names_where_latency_and_cost_come_from(tmp_path, capsys):
    """plan.json's ``sources`` (which step times at which GPU counts, which cost model at which
    prices) were in plan.json alone: the report's plan section gave the cost model's name and
    no step-time source. They are rows of its own table now, as plan.json words them."""
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    data, _ = _tiny_plan(tmp_path, capsys)
    section = plan_section(PlanResult.from_json(data))
    assert "<h3>Where the plan's figures come from</h3>" in section
    for name, key in (
        ("latency (every p99) comes from", "latency"),
        ("cost of the trace comes from", "cost"),
        ("USD per hour comes from", "cost_per_hour"),
    ):
        assert f"<td>{page_text(name)}</td><td>{page_text(data['sources'][key])}</td>" in section
    assert html.unescape(page_text(data["sources"]["latency"])).startswith(
        "simulated, step times from w4a16: "
    )


def test_a_plan_with_no_fleet_shows_its_sources_and_an_old_plan_json_none():
    """With no fleet meeting the constraints the designs' figures still rest on the same step
    times and prices, so the section names them; a plan.json written before round 56 has no
    ``sources`` and its section no such table."""
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    old = {"scenario": "tiny", "constraints": {"ttft_p99_s": 2.0}, "plan": None, "reason": "x"}
    sources = {
        "latency": "simulated, step times from a: roofline (7 ops)",
        "cost": "provisioned GPUs x duration x $/GPU-hour at a 2 USD per GPU-hour",
        "cost_per_hour": "provisioned GPUs x $/GPU-hour at a 2 USD per GPU-hour",
    }
    said = plan_section(PlanResult.from_json({**old, "sources": sources}))
    assert "<td>latency (every p99) comes from</td><td>simulated, step times from a: " in said
    assert "figures come from" not in plan_section(PlanResult.from_json(old))
