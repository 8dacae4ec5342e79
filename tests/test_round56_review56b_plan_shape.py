"""Round 56, review56b: ``tiersim report`` of a plan folder whose plan.json holds text where a
design's p99 (TPOT, and since round 56 end-to-end and task latency), a split's p99
end-to-end or a split comparison's seconds go is one line naming the key, not a traceback.

Round 56 writes each design's fleet p99 end-to-end and task latency (``e2e_p99_s``,
``session_p99_s``) where the plan holds their limits, each split's ``e2e_p99_s`` and each split
record's ``wall_s``, and the report reads them (the p99 line, the split table, the head line);
the report's shape check (:func:`tiersim.report.load.check_plan_shape`) knew none of them, nor
a design's ``tpot_p99_s``, which the p99 line reads beside its TTFT: a hand-edited ``"x"`` ended
``tiersim report`` in ``TypeError: can't multiply sequence by non-int of type 'float'``, or
(a split's end-to-end, its seconds) was read as a figure.
"""

from __future__ import annotations

import json

import pytest
from conftest import tiny_doc, write_yaml
from test_round5_analytic_report_plan import PLAN, error_line

SPLIT = {"tier": "bf16", "chosen": {"label": "1P 1D"}, "splits": [{"label": "1P 1D"}]}

CASES = {
    "plan tpot": ({"plan": {"tpot_p99_s": "x"}}, "plan.tpot_p99_s"),
    "plan e2e": ({"plan": {"e2e_p99_s": "x"}}, "plan.e2e_p99_s"),
    "plan task": ({"plan": {"session_p99_s": "x"}}, "plan.session_p99_s"),
    "uniform e2e": ({"uniform": [{"design": "bf16", "e2e_p99_s": "x"}]}, "uniform[0].e2e_p99_s"),
    "uniform tpot": ({"uniform": [{"design": "bf16", "tpot_p99_s": "x"}]}, "uniform[0].tpot_p99_s"),
    "split e2e": (
        {"disaggregation": {**SPLIT, "splits": [{"label": "1P 1D", "e2e_p99_s": "x"}]}},
        "disaggregation.splits[0].e2e_p99_s",
    ),
    "split seconds": ({"disaggregation": {**SPLIT, "wall_s": "x"}}, "disaggregation.wall_s"),
}


@pytest.mark.parametrize("case", CASES)
def test_text_for_a_round_56_figure_is_one_line(capsys, tmp_path, case):
    change, where = CASES[case]
    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps({**PLAN, **change}))
    assert error_line(capsys, "report", folder) == (
        f"Error: {folder / 'plan.json'}: {where}: expected a number >= 0, got the text 'x'; "
        "rerun `tiersim plan` to rewrite it"
    )


def test_a_written_plan_edited_so_is_one_line(capsys, tmp_path):
    """A plan tiny writes under ``--slo-e2e-p99``, its uniform fleet's p99 end-to-end edited
    to text: the report ended in the TypeError (round 56's p99 line reads it)."""
    from test_round51_seeds import plan

    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "p"
    code, text, _ = plan(str(path), "--out", str(out), "--slo-e2e-p99", "3.0", "--no-report")
    assert code == 0, text
    data = json.loads((out / "plan.json").read_text())
    assert isinstance(data["uniform"][0]["e2e_p99_s"], float)
    data["uniform"][0]["e2e_p99_s"] = "x"
    (out / "plan.json").write_text(json.dumps(data))
    assert error_line(capsys, "report", out) == (
        f"Error: {out / 'plan.json'}: uniform[0].e2e_p99_s: expected a number >= 0, got the "
        "text 'x'; rerun `tiersim plan` to rewrite it"
    )
