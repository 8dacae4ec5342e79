"""Round 52 (review52b): the sweep report's Points table words an estimated saving as
``tiersim run`` does.

The "saved vs uniform" column (:func:`tiersim.report.page.point_verdicts`) says it gives each
point's saving "as the run's console row gives it", but a point of ``tiersim sweep
--no-baselines`` (``savings.method: estimated``) read "25.0 % vs bf16" where its run prints
"25.0 % (estimate)": an estimate shown as a simulated saving. Exact estimates under
per-request prices read "(per-request prices)", as the run's row; a saving against a free
baseline (no share, a USD gap) read "-" where the run gives the gap.
"""

from __future__ import annotations

import pandas as pd

from tiersim.report.page import point_verdicts


def test_estimated_points_are_labelled_as_the_run_labels_them():
    sweep = pd.DataFrame({
        "point_id": ["p0", "p1", "p2", "p3"], "status": ["ok"] * 4,
        "savings.routed_slo_met": [True] * 4, "savings.routed_floor_met": [None] * 4,
        "savings.vs_uniform_frac": [0.25, 0.25, -0.032, None],
        "savings.vs_uniform_usd": [1.0, 1.0, -0.1, -2.0],
        "savings.saving_basis": ["trace", "trace", "per_hour", "trace"],
        "savings.method": ["estimated", "estimated", "simulated", "simulated"],
        "savings.cost_model": ["attributed", "fixed_per_request", "provisioned", "attributed"],
        "savings.baseline_uniform_tier": ["bf16"] * 4})
    assert point_verdicts(sweep)["saved vs uniform"] == [
        # round 55: the estimate says what it is of (not a gap in USD/hour)
        "25.0 % (estimate, on per-token attributed cost: not a USD/hour gap) vs bf16",
        "25.0 % (per-request prices) vs bf16",
        # round 56: a simulated saving says so, as the run's source column does
        "costs 3.20 % more per hour vs bf16 (uniform fleets simulated)",
        "costs 2 USD more (the baseline costs 0 USD: no percentage) vs bf16 (uniform fleets "
        "simulated)"]
