"""fresh55a (a capacity planner new to tiersim): the plan's first line read "cost 4.84 USD
(provisioned), 14.0 USD/hour provisioned" and did not say what the 4.84 USD is the cost of (the
report calls it "cost of the trace"). The line now says: the run's simulated seconds, the
trace's span and its drain (plan.json ``plan.duration_s``); and "1 simulations" reads "1
simulation"."""

from __future__ import annotations

import json

from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def test_the_plans_cost_says_the_time_it_is_paid_over(tmp_path, capsys):
    doc = tiny_doc(tiers=[tiny_doc()["tiers"][1]], router={"policy": "uniform"})
    doc["trace"]["window"] = [240, 270]
    code = main(["plan", str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                 str(tmp_path / "p"), "--no-report", "--check-seeds", "0"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 0
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())["plan"]
    assert round(plan["duration_s"]) == 30
    assert first.startswith("plan (1 simulation in ")  # it read "1 simulations"
    assert first.endswith("; cost 0.0294 USD (provisioned) over the run's 30 s, 3.50 USD/hour "
                          "provisioned (GPUs x USD/GPU-hour)")
