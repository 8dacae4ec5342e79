"""Round 57 (review57c): the FPR figure's flat-cost caption where the sweep has a second axis.

fresh57 captioned the FPR figure "The cost is the same at every point drawn ..." where every
point drawn costs the same, and kept "Each false positive saves money" otherwise. A sweep over
``router.confusion.fpr`` and a second axis that moves the cost (the cheap tier's replicas,
say) under provisioned cost draws one line per replica count, each flat at 0 % saved (the
fleet is kept at every rate), but the points differ between lines, so the caption said each
false positive saves money above flat lines. The check is now made on each line drawn.
"""

from __future__ import annotations

import pandas as pd

from tiersim.report.figures import fpr_sweep
from tiersim.report.load import ReportData

FPRS = [0.0, 0.05, 0.1, 0.2]


def _two_axis_data(tmp_path, costs: dict[int, list[float]]):
    """A sweep of FPR x ``tiers[0].replicas`` under provisioned cost, each count's costs."""
    rows = [
        {
            "router.confusion.fpr": fpr,
            "tiers[0].replicas": replicas,
            "status": "ok",
            "cost_model": "provisioned",
            "cost_per_1m_output_tokens": cost,
            "accuracy": 0.97 - fpr / 10,
            "savings.routed_slo_met": True,
            "savings.routed_floor_met": True,
        }
        for replicas, line in costs.items()
        for fpr, cost in zip(FPRS, line, strict=True)
    ]
    return ReportData(
        directory=tmp_path,
        sweep=pd.DataFrame(rows),
        sweep_axes=["router.confusion.fpr", "tiers[0].replicas"],
    )


def test_flat_lines_at_different_costs_do_not_say_false_positives_save_money(tmp_path):
    panel = fpr_sweep(_two_axis_data(tmp_path, {1: [73.5] * 4, 2: [80.25] * 4}))
    assert "saves money" not in panel.caption
    assert panel.caption.startswith(
        "The cost is the same at every rate on each line drawn (73.5 to 80.2 USD per 1M "
        "output tokens), so these false positives save nothing and only lose accuracy"
    )


def test_one_moving_line_keeps_the_saving_caption(tmp_path):
    panel = fpr_sweep(_two_axis_data(tmp_path, {1: [73.5] * 4, 2: [80.0, 79.0, 78.0, 77.0]}))
    assert panel.caption.startswith("Each false positive saves money")
