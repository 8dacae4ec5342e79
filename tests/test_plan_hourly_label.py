"""The plan's first line labels its hourly figure: it is the provisioned rent (GPUs x
USD/GPU-hour) whatever the cost model of the cost beside it."""

from __future__ import annotations

from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def test_the_hourly_cost_beside_an_attributed_cost_says_provisioned(tmp_path, capsys):
    """Before: "cost 0.004401 USD (attributed), 3.5 USD/hour", as if the attributed ledger ran
    at 3.5 USD an hour (the report calls it "provisioned cost (USD per hour)")."""
    doc = tiny_doc(tiers=[tiny_doc()["tiers"][1]], router={"policy": "uniform"},
                   cost_model="attributed")
    doc["trace"]["window"] = [240, 270]
    code = main(["plan", str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                 str(tmp_path / "p"), "--no-report"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 0
    # the rate to 3 figures, as the report's plan section shows it (3.50)
    assert first.endswith("USD (attributed) over the run's 30 s, 3.50 USD/hour provisioned "
                          "(GPUs x USD/GPU-hour)")
