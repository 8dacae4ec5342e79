"""Round 54 (casc54): the seed check's ``source`` says where its figures came from. Under
``--robust`` they are read from the search's own runs at each seed
(:data:`tiersim.cli.plan_seeds.REUSE_ROBUST_RUNS`), yet plan.json and the printed block said
"simulated by the plan's evaluator, the planned scenario with only its seed changed"."""

from __future__ import annotations

import pytest

from tiersim.cli.plan_seeds import check_source
from tiersim.results import PlanResult
from tiersim.results_seeds import seed_check_lines


@pytest.mark.parametrize(("reused", "simulated", "source"), [
    ([], [1, 2, 3], "modelled: simulated by the plan's evaluator, the planned scenario with "
                    "only its seed changed"),
    ([1, 2, 3], [], "modelled: read from the --robust search's own runs at each seed, the "
                    "planned fleet in the scenario with only its seed changed"),
    ([1, 2], [3], "modelled: seeds 1, 2 read from the --robust search's own runs there, seed 3 "
                  "simulated by the plan's evaluator, the planned fleet in the scenario with "
                  "only its seed changed"),
])
def test_the_source_says_which_seeds_were_read_and_which_simulated(reused, simulated, source):
    """Every seed simulated: as before; every one read: says so; both: which were which."""
    assert check_source(reused, simulated) == source


def _check(source: str) -> dict:
    """A seed check of a uniform plan (its own baseline) that held at seeds 0 and 1."""
    return {"source": source, "seeds": [0, 1], "planned_seed": 0, "met_seeds": [0, 1],
            "accuracy_floor": None, "accuracy_basis": "expected", "baseline_is_plan": True,
            "baseline_uniform_tier": "bf16", "failed": [], "share_ranges": {},
            "tiers": ["bf16"], "design": "bf16", "saving_basis": None,
            "ranges": {"ttft_p99_s": [0.5, 0.6], "tpot_p99_s": [0.05, 0.06],
                       "accuracy": [0.79, 0.80], "vs_uniform_frac": None},
            "per_seed": [], "wall_s": 0.1}


def test_the_read_source_is_printed_and_read_back_strictly():
    """The block's header gives it, and plan.json's strict reader takes it back (a plan with
    no fleet but this check)."""
    check = _check(check_source([1], []))
    assert seed_check_lines(check)[0] == (
        "  seed check (modelled: read from the --robust search's own runs at each seed, the "
        "planned fleet in the scenario with only its seed changed; seed 0 planned, seed 1 "
        "checked):")
    data = {"scenario": "s", "constraints": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
            "plan": None, "reason": "r", "runners_up": [], "uniform": [], "evaluated": [],
            "seed_check": check}
    assert PlanResult.from_json(data).seed_check["source"] == check["source"]
