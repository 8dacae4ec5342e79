"""The sweep report's frontier draws each point's own uniform fleets, not point 0's for all."""

from __future__ import annotations

from tiersim.report.figures import frontier
from tiersim.report.load import load_dir
from tiersim.sweep.run import run_sweep
from tiersim.sweep.testing import synthetic_runner


def priced_runner(doc: dict, source: str = "scenario") -> dict:
    """The synthetic summary with a ``savings`` block whose uniform fleets cost what the
    point's load makes them cost (``trace.time_scale`` scales it)."""
    summary = synthetic_runner(doc, source)
    scale = float(doc.get("trace", {}).get("time_scale", 1.0))
    summary["savings"] = {
        "cost_model": "provisioned", "routed_cost_usd": summary["cost_usd"],
        "accuracy": summary["accuracy"],
        "uniform": {"w4a16": {"cost_usd": 1.0 * scale, "accuracy": 0.7},
                    "bf16": {"cost_usd": 2.0 * scale, "accuracy": 0.9}}}
    return summary


def sweep_dir(tmp_path, scales):
    """A synthetic sweep over ``trace.time_scale`` with a seed axis that changes nothing."""
    doc = {"name": "scaled", "seed": 0, "trace": {"time_scale": 1.0},
           "sweep": {"trace.time_scale": scales, "seed": [0, 1]}}
    out = tmp_path / "sweep"
    run_sweep(doc, out, workers=1, runner=priced_runner, validator=None, report=False,
              source="scaled.yaml")
    return out


def traces_of(panel):
    """``{name: x values}`` of the frontier's uniform-tier series."""
    return {t.name: list(t.x) for t in panel.fig.data if t.name.startswith("uniform tiers")}


def test_each_set_of_uniform_fleets_is_drawn_with_its_points(tmp_path):
    panel = frontier(load_dir(sweep_dir(tmp_path, [1.0, 3.0])))
    assert traces_of(panel) == {
        "uniform tiers (every request on one tier) at trace.time_scale=1.0": [1.0, 2.0],
        "uniform tiers (every request on one tier) at trace.time_scale=3.0": [3.0, 6.0]}
    assert panel.caption.endswith(
        "The sweep's axes change the uniform fleets and static split (their price, accuracy, "
        "load or fleet), so each set is drawn with the axis values of its points (2 sets); compare "
        "each point with its own set.")


def test_one_set_of_uniform_fleets_is_drawn_once_unlabelled(tmp_path):
    panel = frontier(load_dir(sweep_dir(tmp_path, [2.0])))
    assert traces_of(panel) == {"uniform tiers (every request on one tier)": [2.0, 4.0]}
    assert "each set is drawn" not in panel.caption


def test_a_null_axis_value_is_listed_and_shown_as_null(tmp_path):
    """``profile: [null, p.json]`` was listed as the axis' one value ``p.json`` (null dropped),
    its points' cells a missing ``-`` and their hover text ``profile = nan``."""
    from tiersim.report import write_report
    from tiersim.report.figures import _point_labels

    doc = {"name": "nulls", "seed": 0,
           "sweep": {"profile": [None, "p.json"], "router.confusion.fpr": [0.0, 0.1]}}
    out = tmp_path / "sweep"
    run_sweep(doc, out, workers=1, runner=synthetic_runner, validator=None, report=False,
              source="nulls.yaml")
    text = write_report(out).read_text()
    assert "<tr><td>axis profile</td><td>null, p.json</td></tr>" in text
    assert text.count("<tr><td>null</td>") == 2
    data = load_dir(out)
    assert _point_labels(data.sweep.head(1), data.sweep_axes) == [
        "profile = null\nrouter.confusion.fpr = 0.0"]


def test_axis_values_are_shown_in_full_not_rounded_like_metrics(tmp_path):
    """3.50001 and 3.50002 were listed and tabled as '3.5, 3.5': two points read as one."""
    from tiersim.report import write_report

    doc = {"name": "prices", "seed": 0,
           "tiers": [{"name": "w4a16", "accuracy": 0.7}, {"name": "bf16", "accuracy": 0.9}],
           "sweep": {"tiers.bf16.cost_per_gpu_hour": [3.50001, 3.50002, 1200]}}
    out = tmp_path / "sweep"
    run_sweep(doc, out, workers=1, runner=synthetic_runner, validator=None, report=False,
              source="prices.yaml")
    text = write_report(out).read_text()
    assert ("<tr><td>axis tiers.bf16.cost_per_gpu_hour</td><td>3.50001, 3.50002, 1,200.0</td>"
            "</tr>") in text
    for cell in ("3.50001", "3.50002", "1,200.0"):
        assert f"<tr><td>{cell}</td>" in text


def test_the_fpr_figure_says_when_it_leaves_settings_out(tmp_path):
    """Eleven settings of the other axes drew ten lines, and nothing said one was left out."""
    from tiersim.report.figures import fpr_sweep

    doc = {"name": "fprs", "seed": 0,
           "tiers": [{"name": "w4a16", "accuracy": 0.7}, {"name": "bf16", "accuracy": 0.9}],
           "sweep": {"router.confusion.fpr": [0.0, 0.1],
                     "tiers.bf16.replicas": list(range(1, 12))}}
    out = tmp_path / "sweep"
    run_sweep(doc, out, workers=1, runner=synthetic_runner, validator=None, report=False,
              source="fprs.yaml")
    panel = fpr_sweep(load_dir(out))
    assert len({t.name for t in panel.fig.data}) == 10
    assert panel.caption.endswith("The first 10 of the 11 settings of the other axes are "
                                  "drawn; the sweep table has every point.")
