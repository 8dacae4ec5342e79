"""The floor router's fit keeps the standard error of its calibration accuracy estimate and the
cuts it would pick at the floor 1.96 of them lower and higher; a run notes where the cheapest
tier's share swings by more than 20 points across that (the default job's FP8 share was 90% / 1%
/ 70% at seeds 1-3 with nothing said)."""

from __future__ import annotations

import html
import json
import math

import numpy as np
import pytest
from conftest import run_cli, tiny_doc, write_yaml

from tiersim.errors import Note
from tiersim.results import RunResult
from tiersim.routing.constrained import FRAGILE_SHARE, Z95, accuracy_se
from tiersim.routing.policies import build_router
from tiersim.routing.types import TierInfo
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

TIERS = [TierInfo("cheap", cost_weight=1.0), TierInfo("top", cost_weight=2.0)]
SCORE = np.arange(1, 9) / 10  # eight calibration rows, already in score order


def _fitted(router_cfg: dict, cheap: list[float], top: list[float]):
    """``router_cfg``'s cuts fitted on the eight rows above (no classifier: the calibration
    rows are given)."""
    router = build_router(router_cfg, TIERS)
    router.calibration_rows = lambda df: (SCORE, np.column_stack([cheap, top]).astype(float))
    return router.fit_cuts(None)


def test_se_and_re_picks_on_expected_correctness_by_hand():
    """Cut c sends rows [0, c) to cheap. Accuracy by c (cheap prefix + top suffix, over 8):
    c=4: 8/8, c=5: 7.8/8 = 0.975, c=6: 7.4/8 = 0.925, c=7: 6.8/8 = 0.85, c=8: 6/8 = 0.75; the
    cheapest at the floor 0.82 is c=7."""
    cheap = [1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2]
    fit = _fitted({"policy": "floor", "floor": 0.82}, cheap, [1.0] * 8)
    assert fit.shares == (7 / 8, 1 / 8) and math.isclose(fit.accuracy, 0.85)
    values = [1, 1, 1, 1, 0.8, 0.6, 0.4, 1]  # each row on the tier it gets
    mean = sum(values) / 8
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / 7 / 8)  # sample sd over sqrt(n)
    assert math.isclose(fit.accuracy_se, se) and math.isclose(se, 0.0823754471, rel_tol=1e-9)
    lo, hi = fit.floor_range
    assert math.isclose(lo, 0.82 - Z95 * se) and math.isclose(hi, 0.82 + Z95 * se)
    # at 0.6585 every row goes cheap (0.75 meets it); at 0.9815 only c=4 (1.0) does
    assert fit.shares_at_floor_range == ((1.0, 0.0), (0.5, 0.5))
    d = fit.as_dict()
    assert d["calibration_accuracy_se"] == fit.accuracy_se
    assert d["floor_range"] == [lo, hi]
    assert d["shares_at_floor_range"] == [[1.0, 0.0], [0.5, 0.5]]


def test_se_on_draws_is_binomial():
    """With ``confusion`` set the rows are 0/1 draws: sqrt(p (1 - p) / n), not the sample sd
    (which would be 0.125 here)."""
    cheap, top = [1, 1, 1, 1, 1, 0, 1, 0], [1, 1, 1, 1, 1, 1, 1, 0]
    fit = _fitted({"policy": "floor", "floor": 0.82, "confusion": {"fpr": 0, "fnr": 0}},
                  cheap, top)
    assert fit.shares == (5 / 8, 3 / 8)  # rows 0-4 cheap, 5-7 top: 7 of 8 right
    assert math.isclose(fit.accuracy_se, math.sqrt(0.875 * 0.125 / 8))
    assert math.isclose(accuracy_se(np.array([1, 1, 1, 0.0]), "realised"),
                        math.sqrt(0.75 * 0.25 / 4))
    assert accuracy_se(np.array([1.0]), "expected") == 0.0


def test_budget_keeps_the_se_without_re_picks():
    """The budget's constraint is cost, no estimate of accuracy: no range, no re-pick."""
    fit = _fitted({"policy": "budget", "budget_relative": 0.7}, [1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2],
                  [1.0] * 8)
    assert fit.accuracy_se > 0 and fit.floor_range is None and fit.shares_at_floor_range is None
    assert fit.as_dict()["floor_range"] is None


DIFF = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14,
                       "hint_auroc": 0.72}}


def _scenario(tmp_path, floor: float):
    """The tiny scenario with the default job's tiers and accuracies (FP8 hard 0.76, BF16
    0.80) behind the floor router, FP8 at 3.0 USD an hour: priced at the decode batch this
    load gives a replica (round 53), tiny's roofline FP8 at 3.5 costs 1.12 x BF16 per
    request (as its runs alone do), and the floor router sent it nothing."""
    t = tiny_doc()["tiers"]
    fp8 = dict(t[0], name="fp8", precision="fp8", cost_per_gpu_hour=3.0,
               accuracy={"easy": 1.0, "hard": 0.76, "hopeless": 0.0})
    bf16 = dict(t[1], accuracy={"easy": 1.0, "hard": 0.80, "hopeless": 0.0})
    doc = tiny_doc(tiers=[fp8, bf16], router={"policy": "floor"}, accuracy_floor=floor,
                   workload=DIFF)
    return write_yaml(tmp_path / "s.yaml", doc)


NOTE = ("s.yaml: the floor router fitted its cuts on 158 calibration rows, whose accuracy "
        "estimate is good to ±5.38 points (95%); cut at its floor (0.8) ± that, its cheapest tier "
        "(fp8) gets 11-100 % of the requests (89 % as fitted), so the fleet's latency and floor "
        "hold for these draws only: check the plan at other seeds (`tiersim plan "
        "--check-seeds`) or size it for them (`tiersim plan --robust`), or fit on a larger "
        "labelled sample or set a floor further from the "
        "tiers' accuracies")
"""The note at the floor 0.80 (158 calibration rows of 317 requests; the figures are the
classifier's fit on them at seed 0)."""


def test_run_notes_a_split_that_swings_and_keeps_the_fit(tmp_path):
    """FP8 and BF16 differ by under a point of accuracy: across the floor's interval the FP8
    share runs 11-100 %. The command prints the note, the summary keeps it and the fit, the
    report shows it, and the summary reads back."""
    out = tmp_path / "o"
    proc = run_cli("run", str(_scenario(tmp_path, 0.80)), "--out", str(out), "--no-baselines")
    assert proc.returncode == 0, proc.stderr
    printed = [line for line in (proc.stdout + proc.stderr).splitlines()
               if "calibration rows" in line]
    assert printed == [f"note: {tmp_path / 's.yaml'}{NOTE.removeprefix('s.yaml')}"]
    data = json.loads((out / "summary.json").read_text())
    assert NOTE in data["notes"]
    fit = data["router"]["fit"]
    assert fit["calibration_rows"] == 158
    assert {"calibration_accuracy_se", "floor_range", "shares_at_floor_range"} <= set(fit)
    ends = fit["shares_at_floor_range"]
    assert ends[0][0] - ends[1][0] > FRAGILE_SHARE and ends[0] == [1.0, 0.0]
    assert RunResult.read(out / "summary.json").router.fit == fit
    assert f"<li>{html.escape(NOTE)}</li>" in (out / "report.html").read_text()


def test_no_note_for_a_floor_far_from_the_tiers(tmp_path):
    """At a floor of 0.5 both tiers are far above it: FP8 takes every request at both ends of
    the interval, and no note is given; a router without cuts writes no ``fit``."""
    with pytest.warns(Note, match="tier bf16 ran no request"):  # FP8 takes them all
        run = run_scenario(load_scenario(_scenario(tmp_path, 0.5)), baselines=False)
    assert not [n for n in run.notes if "calibration rows" in n]
    assert run.router.fit["shares_at_floor_range"] == [[1.0, 0.0], [1.0, 0.0]]
    tiny = run_scenario(load_scenario(write_yaml(tmp_path / "t.yaml", tiny_doc())),
                        baselines=False)
    assert tiny.router.fit is None and "fit" not in tiny.router.to_json()
