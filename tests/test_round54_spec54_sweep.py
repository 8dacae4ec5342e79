"""Round 54 (spec54): a sweep shows p50 TPOT, the figure speculative decoding moves most: in the
report's Points table always (where the sweep table has the column), and first on each point's
console line where an axis sets a ``speculative`` key. fresh54's acceptance sweep (0.5 to 0.85)
moved p50 TPOT from 17.1 to 8.17 ms and showed neither figure (modelled)."""

from __future__ import annotations

import contextlib
import dataclasses
import io

import pytest
import yaml
from conftest import tiny_doc

AXIS = "tiers.bf16.speculative.acceptance"


@pytest.fixture(scope="module")
def spec_sweep(tmp_path_factory):
    """tiny's bf16 tier alone, speculative (k=3, a draft head), 30 s of the trace, swept over
    acceptance 0.5 and 0.9: (folder, console output, stdout and stderr)."""
    from tiersim.cli import main

    root = tmp_path_factory.mktemp("sweep54")
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    doc["tiers"] = [{**doc["tiers"][1],
                     "speculative": {"k": 3, "acceptance": 0.7, "head_cost": 0.05}}]
    doc["router"] = {"policy": "uniform"}
    doc["sweep"] = {AXIS: [0.5, 0.9]}
    path = root / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = root / "out"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        assert main(["sweep", str(path), "--out", str(out), "-w", "1", "--no-baselines"]) == 0
    return out, buf.getvalue()


def test_each_points_line_gives_p50_tpot_first_on_a_speculative_axis(spec_sweep):
    """Exact lines: p50 TPOT halves from acceptance 0.5 to 0.9 (modelled)."""
    lines = spec_sweep[1].splitlines()
    at = lines.index("each point's verdicts (as the report's Points table gives them):")
    # round 55 (sweep55): the point's USD/hour and cost over the run follow the p50 TPOT, and
    # the estimate says what it is of
    est = "0 % (estimate, on per-token attributed cost: not a USD/hour gap) vs bf16"
    assert lines[at + 1:at + 3] == [
        f"  {AXIS} 0.5: p50 TPOT 8.39 ms (modelled); cost 3.50 USD/hour (provisioned; 0.0294 "
        f"USD over the run); router FPR as counts: -; meets SLOs: yes; saved vs uniform: {est}",
        f"  {AXIS} 0.9: p50 TPOT 4.13 ms (modelled); cost 3.50 USD/hour (provisioned; 0.0294 "
        f"USD over the run); router FPR as counts: -; meets SLOs: yes; saved vs uniform: {est}"]


def test_the_points_table_has_a_p50_tpot_column(spec_sweep):
    """Between the p99 TTFT and p99 TPOT columns, in seconds as the others."""
    page = (spec_sweep[0] / "report.html").read_text()
    assert "<th>TTFT p99 (s)</th><th>TPOT p50 (s)</th><th>TPOT p99 (s)</th>" in page
    assert ('<td class="num">0.235</td><td class="num">0.00839</td><td class="num">0.0408</td>'
            in page)
    assert ('<td class="num">0.237</td><td class="num">0.00413</td><td class="num">0.0306</td>'
            in page)


def test_only_a_speculative_axis_adds_the_figure_to_the_console():
    """Other axes keep their verdict lines as they were."""
    from tiersim.sweep.verdicts import _figures

    assert _figures([AXIS]) == ("tpot_p50_s",)
    assert _figures(["tiers.0.speculative.k", "seed"]) == ("tpot_p50_s",)
    assert _figures(["router.floor", "tiers.bf16.replicas"]) == ()
    assert _figures(["speculative_tier_price"]) == ()  # a part of a key, not the block


def test_a_sweep_table_without_the_column_shows_neither(spec_sweep, tmp_path):
    """A sweep.parquet written without ``tpot_p50_s`` (a hand-made or foreign table) still
    gives its lines and its Points table, without the figure."""
    import pyarrow.parquet as pq

    from tiersim.report.load import load_dir
    from tiersim.report.page import sweep_headline
    from tiersim.sweep.verdicts import verdict_lines

    data = load_dir(spec_sweep[0])
    old = dataclasses.replace(data, sweep=data.sweep.drop(columns=["tpot_p50_s"]))
    points = sweep_headline(old)
    assert "<th>TTFT p99 (s)</th><th>TPOT p99 (s)</th>" in points
    assert "TPOT p50" not in points
    folder = tmp_path / "old"
    folder.mkdir()
    table = pq.read_table(spec_sweep[0] / "sweep.parquet")
    pq.write_table(table.drop(["tpot_p50_s"]), folder / "sweep.parquet")
    lines = verdict_lines(folder, [AXIS], report=False)
    assert lines[1] == (f"  {AXIS} 0.5: cost 3.50 USD/hour (provisioned; 0.0294 USD over the "
                        "run); router FPR as counts: -; meets SLOs: yes; saved vs uniform: 0 % "
                        "(estimate, on per-token attributed cost: not a USD/hour gap) vs bf16")
