"""A run whose every request was dropped has no per-token cost to scale the estimated uniform
fleets from: no uniform tier is named the cheapest, and the closed form says why it has no
prices (before: uniform costs NaN, written null, yet w4a16 was named "the cheapest uniform tier
meeting the floor" and the closed form said "bf16 is not dearer than w4a16")."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from tiersim.routing.metrics import savings
from tiersim.routing.types import TierInfo

TIERS = [TierInfo("cheap", cost_weight=1.0), TierInfo("top", cost_weight=2.0)]


def test_estimated_savings_with_every_request_dropped_name_no_baseline():
    df = pd.DataFrame({"correct_cheap": np.ones(4), "correct_top": np.ones(4),
                       "input_tokens": np.full(4, 100), "output_tokens": np.full(4, 10)})
    out = savings(df, np.zeros(4, int), np.zeros(4), TIERS, dropped=np.ones(4, bool))
    assert out["uniform"]["cheap"]["cost_usd"] is None
    assert out["uniform"]["top"]["cost_usd"] is None
    assert out["baseline_uniform_tier"] is None
    assert out["static_split_cost_usd"] is None


def test_a_run_that_answers_nothing_says_why_it_has_no_estimate(tmp_path):
    from conftest import run_nothing_answered

    done = run_nothing_answered(tmp_path)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["completed"] == 0
    assert summary["savings"]["baseline_uniform_tier"] is None
    assert summary["analytic"] == {"note": (
        "no request was answered, so there is no per-token cost to estimate the uniform "
        "fleets' costs from: no trade to model (--baselines sizes them by simulation)")}
    row = [line for line in done.stdout.splitlines() if "vs uniform" in line]
    assert row and "estimated saving vs uniform" in row[0] and "no request was answered" in \
        done.stdout.replace("│", " ").replace("\n", " ").replace("  ", " ")
