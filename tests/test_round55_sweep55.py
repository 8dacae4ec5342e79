"""Round 55 (sweep55): a sweep speaks per hour where its points are provisioned, and an
estimated saving says what it is an estimate of.

1. ``tiersim sweep``'s line per point gave no cost, and the report's Points table the cost over
   the run alone, while ``tiersim run`` and ``tiersim plan`` speak in USD/hour under
   ``provisioned`` cost. Each provisioned point's line now starts with its USD/hour and its cost
   over the run; the Points table has a ``provisioned cost (USD per hour)`` column beside the
   cost of the run; sweep.parquet's ``cost_per_hour_usd`` is in docs/CONTRACTS.md.
2. Under ``--no-baselines`` the saving is estimated from the run's per-token attributed cost
   (the work each request takes at its tier's load per replica), not from fleets' USD/hour: on
   tiny at fractions 0.5 / 0.5 it read 0.383 % saved at 7.00 USD/hour and 5.94 % with a second
   bf16 replica at 10.5 USD/hour, where the uniform bf16 fleet sized by simulation is 3.50
   USD/hour (the simulated saving: "costs 100 % more per hour", "costs 200 % more per hour").
   The cell now reads "(estimate, on per-token attributed cost: not a USD/hour gap)".
All figures modelled (tiny.yaml, the roofline profile).
"""

from __future__ import annotations

import contextlib
import io

import pandas as pd
import pytest
import yaml
from conftest import tiny_doc

EST = "(estimate, on per-token attributed cost: not a USD/hour gap)"


@pytest.fixture(scope="module")
def fleet_sweep(tmp_path_factory):
    """tiny over a second bf16 replica, with and without simulated baselines: {flag: (folder,
    console)}."""
    from tiersim.cli import main

    root = tmp_path_factory.mktemp("sweep55")
    doc = tiny_doc()
    doc["sweep"] = {"tiers.bf16.replicas": [1, 2]}
    path = root / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = {}
    for flag in ("--no-baselines", "--baselines"):
        out = root / flag.strip("-")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            assert main(["sweep", str(path), "--out", str(out), "-w", "1", flag]) == 0
        done[flag] = out, buf.getvalue()
    return done


def _point_lines(console: str) -> list[str]:
    lines = console.splitlines()
    at = lines.index("each point's verdicts (as the report's Points table gives them):")
    return lines[at + 1:at + 3]


def test_each_point_gives_its_usd_per_hour_and_says_what_its_estimate_is_of(fleet_sweep):
    """The estimate grows with the dearer fleet (0.383 % -> 5.94 %) while the USD/hour beside it
    grows 7.00 -> 10.5: the words say the estimate is no USD/hour gap."""
    assert _point_lines(fleet_sweep["--no-baselines"][1]) == [
        "  tiers.bf16.replicas 1: cost 7.00 USD/hour (provisioned; 0.206 USD over the run); "
        f"router FPR as counts: 2 of 5; meets SLOs: yes; saved vs uniform: 0.383 % {EST} vs bf16",
        "  tiers.bf16.replicas 2: cost 10.5 USD/hour (provisioned; 0.309 USD over the run); "
        f"router FPR as counts: 2 of 5; meets SLOs: yes; saved vs uniform: 5.94 % {EST} vs bf16"]


def test_simulated_baselines_give_the_saving_per_hour_beside_the_same_rates(fleet_sweep):
    """The same points sized against simulated uniform fleets: the USD/hour figure on the line
    is the one the per-hour saving is a share of (uniform bf16 1 x 1 GPU, 3.50 USD/hour)."""
    assert _point_lines(fleet_sweep["--baselines"][1]) == [
        "  tiers.bf16.replicas 1: cost 7.00 USD/hour (provisioned; 0.206 USD over the run); "
        "router FPR as counts: 2 of 5; meets SLOs: yes; saved vs uniform: costs 100 % more per "
        "hour vs bf16 (uniform fleets simulated)",
        "  tiers.bf16.replicas 2: cost 10.5 USD/hour (provisioned; 0.309 USD over the run); "
        "router FPR as counts: 2 of 5; meets SLOs: yes; saved vs uniform: costs 200 % more per "
        "hour vs bf16 (uniform fleets simulated)"]
    table = pd.read_parquet(fleet_sweep["--baselines"][0] / "sweep.parquet")
    assert table["savings.uniform.bf16.cost_per_hour_usd"].tolist() == [3.5, 3.5]


def test_the_parquet_and_the_points_table_give_the_usd_per_hour(fleet_sweep):
    """sweep.parquet's ``cost_per_hour_usd`` (the contract) is the line's figure; the Points
    table shows it beside the cost of the run, under the plan section's name."""
    for out, _ in fleet_sweep.values():
        table = pd.read_parquet(out / "sweep.parquet")
        assert table["cost_per_hour_usd"].tolist() == [7.0, 10.5]
        assert table["cost_model"].tolist() == ["provisioned"] * 2
        page = (out / "report.html").read_text()
        assert ("<th>cost of the run (USD, provisioned)</th><th>provisioned cost (USD per "
                "hour)</th>") in page
        assert '<td class="num">0.206</td><td class="num">7.00</td>' in page
        assert '<td class="num">0.309</td><td class="num">10.5</td>' in page
    estimated = fleet_sweep["--no-baselines"][0]
    page = (estimated / "report.html").read_text()
    assert f"<td>0.383 % {EST} vs bf16</td>" in page
    # why the estimate grows with the dearer fleet (docs/planning.md): the second bf16 replica
    # halves bf16's load, so each bf16 request's attributed price, and the all-bf16 estimate
    # over the trace, rises more than the routed fleet's attributed cost
    table = pd.read_parquet(estimated / "sweep.parquet")
    assert table["savings.uniform.bf16.cost_usd"].round(4).tolist() == [0.0525, 0.0598]
    assert table["savings.routed_cost_usd"].round(4).tolist() == [0.0523, 0.0562]
    assert table["savings.routed_cost_per_hour_usd"].isna().all()


def test_a_point_costed_another_way_has_no_usd_per_hour():
    """An attributed point keeps its line and Points row as before: its cost over the run is no
    fleet's rate (its ``cost_per_hour_usd`` is still in sweep.parquet, provisioned)."""
    from tiersim.report.page import _provisioned
    from tiersim.sweep.verdicts import cost_text

    row = {"cost_model": "attributed", "cost_per_hour_usd": 7.0, "cost_usd": 0.02}
    assert cost_text(row) is None
    assert cost_text({**row, "cost_model": "provisioned"}) == (
        "cost 7.00 USD/hour (provisioned; 0.0200 USD over the run)")
    assert cost_text({"cost_model": "provisioned"}) is None  # a table written before the column
    both = pd.DataFrame({"cost_model": ["attributed", "provisioned"],
                         "cost_per_hour_usd": [7.0, 10.5]})
    assert _provisioned(both).tolist() == [False, True]
    assert _provisioned(both.head(1)) is None
    assert _provisioned(both.drop(columns="cost_per_hour_usd")) is None


def _fpr_data(tmp_path, slo_met: list[bool]):
    from tiersim.report.load import ReportData

    sweep = pd.DataFrame({"router.confusion.fpr": [0.0, 0.1, 0.2, 0.3], "status": ["ok"] * 4,
                          "cost_usd": [3.5, 3.4, 3.3, 3.2], "accuracy": [0.8, 0.79, 0.78, 0.77],
                          "savings.routed_slo_met": slo_met,
                          "savings.routed_floor_met": [None] * 4})
    return ReportData(directory=tmp_path, sweep=sweep, sweep_axes=["router.confusion.fpr"])


def test_the_fpr_figure_marks_points_whose_saving_is_not_comparable(tmp_path):
    """(3) The FPR figure drew "cost saved vs lowest FPR" for every point of routing.yaml's
    sweep, each of which misses its SLOs (p99 TPOT 133 ms against 100 ms, modelled), with
    nothing saying so, where the Points table reads "not comparable: misses its SLOs". Such
    points are now red crosses over their saving, and the caption says how many."""
    from tiersim.report.figures import MISSED_NAME, fpr_sweep

    panel = fpr_sweep(_fpr_data(tmp_path, [True, False, True, False]))
    crosses = [t for t in panel.fig.data if t.name == MISSED_NAME]
    assert len(crosses) == 1 and list(crosses[0].x) == [0.1, 0.3]
    assert [round(y, 6) for y in crosses[0].y] == [round(100 * (1 - 3.4 / 3.5), 6),
                                                   round(100 * (1 - 3.2 / 3.5), 6)]
    assert panel.caption.endswith(
        " Red crosses: 2 of the 4 points drawn miss their SLOs or accuracy floor, so their cost "
        "saved is not comparable (the Points table says which was missed; size such a fleet "
        "with tiersim plan).")
    every = fpr_sweep(_fpr_data(tmp_path, [False] * 4))
    assert every.caption.endswith(
        " Red crosses: every point drawn misses its SLOs or accuracy floor, so its cost saved is "
        "not comparable (the Points table says which was missed; size such a fleet with "
        "tiersim plan).")
    one = fpr_sweep(_fpr_data(tmp_path, [True, True, True, False]))
    assert "Red crosses: 1 of the 4 points drawn misses its SLOs" in one.caption
    none = fpr_sweep(_fpr_data(tmp_path, [True] * 4))
    assert MISSED_NAME not in {t.name for t in none.fig.data}
    assert "Red crosses" not in none.caption
