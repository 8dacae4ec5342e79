"""Round 22 (results): printed and written numbers checked against each other and their inputs,
each a mismatch found from outside and fixed."""

from __future__ import annotations

from tiersim.report.figures import frontier
from tiersim.report.load import load_dir
from tiersim.sweep.run import run_sweep
from tiersim.sweep.testing import synthetic_runner


def _replicas_runner(doc: dict, source: str = "scenario") -> dict:
    """A synthetic point whose fleet of ``synthetic.replicas`` replicas costs that many USD at
    one accuracy; one replica misses the SLOs its uniform baselines are held to."""
    summary = synthetic_runner(doc, source)
    replicas = int(doc["synthetic"]["replicas"])
    summary.update(cost_usd=float(replicas), accuracy=0.9)
    summary["savings"] = {
        "cost_model": "provisioned", "routed_cost_usd": float(replicas), "accuracy": 0.9,
        "routed_slo_met": replicas > 1, "routed_floor_met": None,
        "uniform": {"w4a16": {"cost_usd": 1.5, "accuracy": 0.7},
                    "bf16": {"cost_usd": 2.5, "accuracy": 0.9}}}
    return summary


def test_sweep_pareto_front_leaves_out_points_that_miss_their_slos(tmp_path):
    """The sweep's Pareto front, under a caption calling points off it 'never worth choosing',
    ran through the cheapest point though its fleet missed the SLOs (the table beside it said
    not comparable): a 1-replica point missing them was drawn as the front, the 2-replica point
    that met them as off it."""
    doc = {"name": "reps", "seed": 0, "synthetic": {"replicas": 1},
           "sweep": {"synthetic.replicas": [1, 2, 3]}}
    out = tmp_path / "sweep"
    run_sweep(doc, out, workers=1, runner=_replicas_runner, validator=None, report=False,
              source="reps.yaml")
    traces = {t.name: list(t.x) for t in frontier(load_dir(out)).fig.data}
    assert traces["Pareto front of the sweep"] == [2.0]
    assert traces["sweep points missing their SLOs or floor (not on the front)"] == [1.0]
    assert traces["sweep points"] == [2.0, 3.0]
