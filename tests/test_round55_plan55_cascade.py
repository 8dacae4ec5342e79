"""Round 55, plan55: a cascade beside the plan read "meets every constraint; 500 % dearer than
the plan per hour" and did not say why (fresh54b: "1,767 % dearer"). The planner knows it:
each request the cascade escalates pays for its first tier's answer, then waits through its
second tier's, so both tiers are sized for the SLO on requests served twice (the first pass
is part of an escalated request's TTFT: :func:`tiersim.plan.search._double`). The line now
says so in one clause, with the share escalated, where the design escalates and is dearer;
plan.json's ``missed`` holds it, so the report's "Other designs" row gives the same words.

Every figure is modelled: scenarios/cascade.yaml's first two minutes (its sweep left out), the
floor-less plan uniform NVFP4 1 x 1 GPU (3.50 USD/hour) and the cascade NVFP4 5 + BF16 1 (21.0
USD/hour); tiny's floor-routed W4A16 + BF16 escalates nothing and gets no clause.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import yaml
from conftest import tiny_doc, write_yaml

from tiersim.cli import main

REPO = Path(__file__).resolve().parents[1]


def _runner_ups(tmp_path: Path, capsys, doc: dict, report: bool = False) -> tuple[list, dict]:
    path = write_yaml(tmp_path / "s.yaml", doc)
    out = tmp_path / "p"
    capsys.readouterr()
    args = ["plan", str(path), "--check-seeds", "0", "--out", str(out)]
    assert main(args + ([] if report else ["--no-report"])) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  runner-up ")]
    return lines, json.loads((out / "plan.json").read_text())


def test_a_dearer_cascade_says_why(tmp_path, capsys):
    doc = yaml.safe_load((REPO / "scenarios" / "cascade.yaml").read_text())
    doc.pop("sweep")
    doc["trace"]["window"] = [0, 120]
    doc["trace"]["path"] = str(REPO / "tiersim" / "traces" / doc["trace"]["path"])
    lines, data = _runner_ups(tmp_path, capsys, doc, report=True)
    said = ("meets every constraint; 500 % dearer than the plan per hour (a cascade: the 30.7% "
            "of requests it escalates pay for nvfp4's answer, then wait through bf16's)")
    assert lines == [f"  runner-up nvfp4+bf16 (nvfp4 5 x 1 GPU + bf16 1 x 1 GPU): {said}"]
    assert [r["missed"] for r in data["runners_up"]] == [said]
    assert f"<td>{said}</td>" in html.unescape((tmp_path / "p" / "report.html").read_text())


def test_a_router_that_escalates_nothing_gets_no_clause(tmp_path, capsys):
    lines, _ = _runner_ups(tmp_path, capsys, tiny_doc())
    assert lines == ["  runner-up w4a16+bf16 (w4a16 1 x 1 GPU + bf16 1 x 1 GPU): meets every "
                     "constraint; 100 % dearer than the plan per hour"]
