"""Round 52, a new user's walk through an FP8 + BF16 floor-routed plan (Llama-3.1-70B on Azure
conv): the fragile-cuts note names the floor the router cut at, which the plan raises above the
scenario's accuracy_floor (the note said "cut at the floor ± that" beside an accuracy floor of
0.785 while its interval was centred on router.floor 0.795), and the seed check's header says
"seed 1 checked", not "seeds 1 checked", where one seed is checked."""

from __future__ import annotations

import pytest

from tiersim.errors import Note
from tiersim.results_seeds import seed_check_lines
from tiersim.routing.types import TierInfo
from tiersim.runner import _note_fragile_cuts

# The fit of the planned fleet FP8 2 x 1 + BF16 1 x 2 GPU (router.floor 0.795, accuracy_floor
# 0.785) at seed 0, as its summary.json kept it (`tiersim plan` on 180 s of azure2023_conv at
# time_scale 2, Llama-3.1-70B, 2026-12-07; modelled).
FIT = {"calibration_rows": 392, "calibration_accuracy_se": 0.01755231233,
       "floor_range": [0.7605974678, 0.8294025322], "shares": [0.637755102, 0.362244898],
       "shares_at_floor_range": [[1.0, 0.0], [0.0, 1.0]]}
INFOS = [TierInfo("fp8", cost_weight=1.0), TierInfo("bf16", cost_weight=2.0)]


def test_fragile_note_names_the_floor_it_cut_at():
    """0.795 ± 3.44 points is the interval floor_range holds; the note names 0.795, so a
    reader does not centre it on the accuracy_floor 0.785."""
    with pytest.warns(Note) as caught:
        _note_fragile_cuts(FIT, INFOS, "s.yaml")
    assert [str(w.message) for w in caught] == [
        "s.yaml: the floor router fitted its cuts on 392 calibration rows, whose accuracy "
        "estimate is good to ±3.44 points (95%); cut at its floor (0.795) ± that, its cheapest "
        "tier (fp8) gets 0-100 % of the requests (64 % as fitted), so the fleet's latency and "
        "floor hold for these draws only: check the plan at other seeds (`tiersim plan "
        "--check-seeds`) or size it for them (`tiersim plan --robust`), or fit on a larger "
        "labelled sample or set a floor further from the tiers' accuracies"]


def _check(seeds: list[int]) -> dict:
    """A seed check of a uniform plan (its own baseline) that held at every seed."""
    return {"source": "modelled: simulated by the plan's evaluator, the planned scenario with "
                      "only its seed changed",
            "seeds": seeds, "planned_seed": seeds[0], "met_seeds": seeds,
            "accuracy_floor": None, "accuracy_basis": "expected", "baseline_is_plan": True,
            "baseline_uniform_tier": "bf16", "failed": [], "share_ranges": {}, "tiers": ["bf16"],
            "ranges": {"ttft_p99_s": [0.5, 0.6], "tpot_p99_s": [0.05, 0.06],
                       "accuracy": [0.79, 0.80]},
            "per_seed": []}


@pytest.mark.parametrize(("seeds", "words"), [([0, 1], "seed 1 checked"),
                                              ([0, 1, 2], "seeds 1, 2 checked")])
def test_seed_check_header_counts_its_seeds(seeds, words):
    """`tiersim plan --robust --check-seeds 1` printed "seed 0 planned, seeds 1 checked"."""
    header = seed_check_lines(_check(seeds))[0]
    assert header == ("  seed check (modelled: simulated by the plan's evaluator, the planned "
                      f"scenario with only its seed changed; seed 0 planned, {words}):")


def test_robust_help_does_not_cap_the_cost_at_n_plus_1():
    """`--help` read "(up to N + 1 times the search's simulations)"; a robust plan of 180 s of
    Azure conv (Llama-3.1-70B, FP8 + BF16) took 80 simulations against 15 without --robust (5.3
    times at N = 3), and default.yaml 360 against 89: the worst seed sizes larger fleets, which
    the search judges too."""
    import typing

    from tiersim.cli.plan import plan

    option = typing.get_type_hints(plan, include_extras=True)["robust"].__metadata__[0]
    assert "up to N + 1 times the search's simulations" not in option.help
    assert option.help.endswith(
        "(up to N + 1 simulations a fleet judged; the worst seed can make the search judge "
        "larger fleets too, so it can take more than N + 1 times the simulations of the plan "
        "without --robust).")


def test_sweep_floor_verdict_names_the_accuracy_floor(tmp_path):
    """A sweep over ``router.floor`` [0.795, 0.81] on an accuracy_floor of 0.785: the point at
    0.81 read "meets floor: yes" at 79.46 % accuracy, as if 0.81 were met; the header now names
    the floor it judges. An accuracy_floor axis varies it: the header names none."""
    import pandas as pd

    from tiersim.report.load import ReportData
    from tiersim.report.page import point_verdicts, sweep_headline

    sweep = pd.DataFrame({
        "point_id": ["p0", "p1"], "status": ["ok"] * 2, "router.floor": [0.795, 0.81],
        "accuracy": [0.7899617834, 0.7946496815], "accuracy_floor": [0.785] * 2,
        "savings.routed_slo_met": [True, False], "savings.routed_floor_met": [True, True]})
    verdicts = point_verdicts(sweep)
    assert verdicts["meets accuracy floor 78.5 %"] == ["yes", "yes"]
    page = sweep_headline(ReportData(tmp_path, sweep=sweep, sweep_axes=["router.floor"]))
    assert "<th>meets SLOs</th><th>meets accuracy floor 78.5 %</th>" in page
    varied = sweep.assign(accuracy_floor=[0.78, 0.79])
    assert "meets accuracy floor" in point_verdicts(varied)
