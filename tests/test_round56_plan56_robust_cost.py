"""Round 56, plan56: under ``--robust`` the plan's cost and the run it is the cost of are one
seed's.

A robust plan states the worst over its seeds figure by figure. Its head line reads "cost X
USD over the run's N s", and before round 56 X was the costliest seed's cost and N the longest
seed's run: under the attributed cost model (a run's cost is its busy replica time, not its
length) they can be two seeds. On tests/test_round53_robust53.py's robust scenario with FP8 at
1.00 USD/GPU-hour (seeds 3 and 4, FP8 3 + BF16 2), seed 4 sends BF16 81.9 % of the requests
and costs 0.0312 USD over a 29.476 s run; seed 3 sends it none and costs 0.0112 USD over
29.492 s: plan.json read 0.0312 USD over 29.492 s, a pair no seed ran (modelled, 2026-12-07).
Now both are the costliest seed's (of equal costs, the longest run's), plan.json's
``robust.per_seed`` gives each seed's run length beside its cost, ``worst_seed.cost_usd``
names the seed whose run both are, and the line names it where the seeds' runs differ.
"""

from __future__ import annotations

import json

import pytest
from conftest import write_yaml
from hypothesis import given
from hypothesis import strategies as st
from test_round51_seeds import plan
from test_round53_robust53 import robust_doc

from tiersim.plan.evaluate import Outcome
from tiersim.plan.robust import worst_outcome


def _outcome(cost: float, duration: float) -> Outcome:
    return Outcome(
        ttft_p99_s=0.1,
        tpot_p99_s=0.01,
        dropped=0,
        accuracy=0.9,
        cost_usd=cost,
        cost_per_hour_usd=10.0,
        duration_s=duration,
        attributed_cost_usd=cost,
    )


def test_the_worst_cost_comes_with_its_own_runs_length():
    """The costliest seed's cost, run length and attributed cost, not the longest run's."""
    worst = worst_outcome([_outcome(2.0, 10.0), _outcome(1.0, 20.0)])
    assert (worst.cost_usd, worst.duration_s, worst.attributed_cost_usd) == (2.0, 10.0, 2.0)


def test_of_equal_costs_the_longest_run():
    """A tie on cost (provisioned cost is one USD/hour at every seed, so the costliest run is
    the longest, as before) takes the longer run."""
    worst = worst_outcome([_outcome(2.0, 10.0), _outcome(2.0, 12.0), _outcome(1.0, 30.0)])
    assert (worst.cost_usd, worst.duration_s) == (2.0, 12.0)


@given(st.lists(st.tuples(st.floats(0, 1e3), st.floats(1, 1e4)), min_size=1, max_size=6))
def test_the_cost_and_length_are_always_one_runs(pairs):
    """Whatever the seeds' runs, the worst's cost and length are one seed's pair, and its cost
    the highest."""
    worst = worst_outcome([_outcome(c, d) for c, d in pairs])
    assert (worst.cost_usd, worst.duration_s) in pairs
    assert worst.cost_usd == max(c for c, _ in pairs)


@pytest.fixture(scope="module")
def attributed(tmp_path_factory):
    """The robust scenario, FP8 at 1.00 USD/GPU-hour, under the attributed cost model:
    (stdout, plan.json)."""
    tmp = tmp_path_factory.mktemp("attributed")
    doc = {**robust_doc(1.00), "cost_model": "attributed"}
    code, out, _ = plan(
        str(write_yaml(tmp / "s.yaml", doc)),
        "--out",
        str(tmp / "p"),
        "--robust",
        "--check-seeds",
        "1",
        "--no-report",
    )
    assert code == 0
    return out, json.loads((tmp / "p" / "plan.json").read_text())


def test_plan_json_cost_and_run_length_are_one_seeds(attributed):
    _, data = attributed
    chosen, robust = data["plan"], data["robust"]
    rows = {r["seed"]: r for r in robust["per_seed"]}
    seed = robust["worst_seed"]["cost_usd"]
    assert seed == 4
    assert (chosen["cost_usd"], chosen["duration_s"]) == (
        rows[4]["cost_usd"],
        rows[4]["duration_s"],
    )
    assert rows[3]["duration_s"] > rows[4]["duration_s"]  # the longer run is the cheaper seed's
    assert rows[3]["cost_usd"] < rows[4]["cost_usd"]


def test_the_line_names_the_seed_whose_run_it_is(attributed):
    out, _ = attributed
    assert out.splitlines()[0].endswith(
        ": fp8+bf16: fp8=3x1 GPU, bf16=2x1 GPU; cost 0.0312 USD (attributed) over seed 4's run "
        "of 29 s (the costliest seed's), 10.0 USD/hour provisioned (GPUs x USD/GPU-hour)"
    )


def test_a_plan_json_pairing_two_runs_is_refused(attributed, tmp_path):
    """Read back (``tiersim report``), a robust plan whose duration_s is another seed's run
    than its cost's is the one-line "malformed plan" error."""
    from tiersim.errors import TiersimError
    from tiersim.results import PlanResult

    _, data = attributed
    PlanResult.from_json(data)  # as written: read
    edited = json.loads(json.dumps(data))
    edited["plan"]["duration_s"] = edited["robust"]["per_seed"][0]["duration_s"]  # seed 3's
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(edited, "p/plan.json")
    said = str(err.value)
    assert said.startswith(
        "p/plan.json: malformed plan ('plan.plan.duration_s' must be the run of seed 4 "
        "('plan.robust.worst_seed.cost_usd'), "
    )
    assert said.endswith("); rerun `tiersim plan` to rewrite it")
