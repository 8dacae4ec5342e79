"""Round 57 (helper plan57): trust in ``tiersim plan``'s results: the report names where the
plan's figures come from, the robust saving's seeds, plan.json's costliest run, one basis per
saving, and what a split tier's score covers."""

from __future__ import annotations

import html
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiersim.report.page import page_text


def _tiny_plan(tmp_path, capsys) -> tuple[dict, list[str]]:
    """plan.json and the console lines of ``tiersim plan tiny`` at its own seed alone."""
    from tiersim.cli import main

    capsys.readouterr()
    out = tmp_path / "p"
    assert main(["plan", "tiny", "--out", str(out), "--check-seeds", "0", "--no-report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    return json.loads((out / "plan.json").read_text()), lines


# ------------------------------------------------------------ 1. the report shows sources


def test_the_report_plan_section_names_where_latency_and_cost_come_from(tmp_path, capsys):
    """plan.json's ``sources`` (which step times at which GPU counts, which cost model at which
    prices) were in plan.json alone: the report's plan section gave the cost model's name and
    no step-time source. They are rows of its own table now, as plan.json words them."""
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    data, _ = _tiny_plan(tmp_path, capsys)
    section = plan_section(PlanResult.from_json(data))
    assert "<h3>Where the plan's figures come from</h3>" in section
    for name, key in (
        ("latency (every p99) comes from", "latency"),
        ("cost of the trace comes from", "cost"),
        ("USD per hour comes from", "cost_per_hour"),
    ):
        assert f"<td>{page_text(name)}</td><td>{page_text(data['sources'][key])}</td>" in section
    assert html.unescape(page_text(data["sources"]["latency"])).startswith(
        "simulated, step times from w4a16: "
    )


def test_a_plan_with_no_fleet_shows_its_sources_and_an_old_plan_json_none():
    """With no fleet meeting the constraints the designs' figures still rest on the same step
    times and prices, so the section names them; a plan.json written before round 56 has no
    ``sources`` and its section no such table."""
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    old = {"scenario": "tiny", "constraints": {"ttft_p99_s": 2.0}, "plan": None, "reason": "x"}
    sources = {
        "latency": "simulated, step times from a: roofline (7 ops)",
        "cost": "provisioned GPUs x duration x $/GPU-hour at a 2 USD per GPU-hour",
        "cost_per_hour": "provisioned GPUs x $/GPU-hour at a 2 USD per GPU-hour",
    }
    said = plan_section(PlanResult.from_json({**old, "sources": sources}))
    assert "<td>latency (every p99) comes from</td><td>simulated, step times from a: " in said
    assert "figures come from" not in plan_section(PlanResult.from_json(old))


# ------------------------------------------- 2. which runs a robust saving compares


@pytest.fixture(scope="module")
def attributed(tmp_path_factory):
    """tests/test_round56_plan56_robust_cost.py's robust scenario under the attributed cost
    model (seeds 3 and 4; the plan's costliest run is seed 4's; uniform BF16 costs the same at
    both): (stdout lines, plan.json)."""
    from conftest import write_yaml
    from test_round51_seeds import plan
    from test_round53_robust53 import robust_doc

    tmp = tmp_path_factory.mktemp("attributed")
    doc = {**robust_doc(1.00), "cost_model": "attributed"}
    out = tmp / "p"
    args = ("--out", str(out), "--robust", "--check-seeds", "1", "--no-report")
    code, said, _ = plan(str(write_yaml(tmp / "s.yaml", doc)), *args)
    assert code == 0
    return said.splitlines(), json.loads((out / "plan.json").read_text())


def test_a_robust_saving_names_the_seeds_of_the_runs_it_compares(attributed):
    """Under --robust the saving over the trace is the plan's costliest run against the
    baseline's costliest, which can be two seeds' runs; the line named neither. It names them
    now, and plan.json records them; a baseline that costs the same at every seed is compared
    at the plan's seed (modelled figures)."""
    lines, data = attributed
    robust, saving = data["robust"], data["plan"]["savings"]
    assert (robust["baseline_cost_seed"], robust["least_saving_seed"]) == (4, 4)
    assert robust["least_saving_frac"] == saving["vs_uniform_frac"]
    assert (
        "  saves 17.6 % against the cheapest sized uniform fleet (bf16), simulated; under "
        "--robust, the plan's costliest run against bf16's, both at seed 4"
    ) in lines


def test_the_report_says_the_same_runs_as_the_line(attributed):
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    _, data = attributed
    section = plan_section(PlanResult.from_json(data))
    assert (
        "<td>which runs it compares</td><td>under --robust, the plan&#x27;s costliest run "
        "against bf16&#x27;s, both at seed 4</td>"
    ) in section


def test_two_seeds_and_the_least_saving_at_one_seed_are_named():
    """Where the plan's costliest run is seed 4's and the baseline's seed 3's, the saving sets
    two seeds' runs side by side; the words name both, and the least the plan saves against
    the baseline's run at one seed (which the worst-against-worst figure can overstate)."""
    from tiersim.results_seeds import robust_saving_words

    robust = {
        "worst_seed": {"cost_usd": 4},
        "baseline_cost_seed": 3,
        "least_saving_seed": 4,
        "least_saving_frac": 0.03,
    }
    saving = {
        "saving_basis": "over_the_trace",
        "vs_uniform_frac": 0.22,
        "baseline_uniform_design": "bf16",
    }
    assert robust_saving_words(robust, saving) == (
        "under --robust, the plan's costliest run (seed 4) against bf16's (seed 3); against "
        "bf16's run at the same seed it saves 3.00 % at least (seed 4)"
    )
    assert robust_saving_words({**robust, "least_saving_frac": -0.05}, saving).endswith(
        "at the same seed it costs 5.00 % more at seed 4"
    )
    # per hour: one USD/hour at every seed, no seed to name; an older plan.json: none
    assert robust_saving_words(robust, {**saving, "saving_basis": "per_hour"}) is None
    assert robust_saving_words({"worst_seed": {"cost_usd": 4}}, saving) is None


@given(st.lists(st.tuples(st.floats(0.01, 1e3), st.floats(0.01, 1e3)), min_size=2, max_size=5))
def test_the_least_one_seed_saving_is_never_above_the_robust_saving(costs):
    """The robust saving (the plan's costliest run against the baseline's) is never below the
    least saving at one seed: the words add the lower figure, never a higher one."""
    from tiersim.plan.robust import _saving_seeds
    from tiersim.results_plan import costliest_seed

    rows = [
        {"seed": k, "cost_usd": p, "duration_s": 1.0, "cost_per_hour_usd": 1.0}
        for k, (p, _) in enumerate(costs)
    ]
    base = [{**r, "cost_usd": b} for r, (_, b) in zip(rows, costs)]
    found = _saving_seeds(rows, base, costliest_seed(rows), "attributed")
    robust = 1 - max(p for p, _ in costs) / max(b for _, b in costs)
    assert found["least_saving_frac"] <= robust + 1e-12
    assert base[found["baseline_cost_seed"]]["cost_usd"] == max(b for _, b in costs)


# ------------------------------------------- 3. plan.json's costliest seed is the costliest


def test_a_plan_json_naming_a_cheaper_seed_as_the_costliest_is_refused(attributed):
    """The reader checked that the plan's cost and run were the named seed's row, not that the
    named seed was the costliest: naming seed 3 with seed 3's cost and run was read."""
    from tiersim.errors import TiersimError
    from tiersim.results import PlanResult

    _, data = attributed
    edited = json.loads(json.dumps(data))
    cheap = edited["robust"]["per_seed"][0]  # seed 3's run, the cheaper
    edited["robust"]["worst_seed"]["cost_usd"] = 3
    edited["plan"]["cost_usd"], edited["plan"]["duration_s"] = (
        cheap["cost_usd"],
        cheap["duration_s"],
    )
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(edited, "p/plan.json")
    top = data["robust"]["per_seed"][1]["cost_usd"]
    assert str(err.value) == (
        "p/plan.json: malformed plan ('plan.robust.worst_seed.cost_usd' must be the costliest "
        f"seed's run, seed 4 at {top} USD in 'plan.robust.per_seed', got seed 3 at "
        f"{cheap['cost_usd']} USD); rerun `tiersim plan` to rewrite it"
    )


def test_a_baseline_cost_seed_that_is_not_its_costliest_is_refused(attributed):
    from tiersim.errors import TiersimError
    from tiersim.results import PlanResult

    _, data = attributed
    edited = json.loads(json.dumps(data))
    edited["robust"]["baseline_per_seed"][0]["cost_usd"] = 1.0  # seed 3's now the costliest
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(edited, "p/plan.json")
    assert "'plan.robust.baseline_cost_seed' must be the costliest seed's run, seed 3 at 1.0" in (
        str(err.value)
    )


# ------------------------------------------- 4. one gap, each basis named


def test_the_baselines_line_says_its_gap_on_the_savings_basis_too(attributed):
    """The plan "saves 17.6 %" (a share of uniform BF16's cost) and uniform BF16 read "21.4 %
    dearer than the plan" (a share of the plan's): two numbers for one gap, neither basis
    named. The baseline's line now says the same gap on the saving's basis, in the console and
    the report alike (modelled figures)."""
    from tiersim.report.page import plan_section
    from tiersim.results import PlanResult

    lines, data = attributed
    words = (
        "meets every constraint; 21.4 % dearer than the plan (the saving's baseline: the same "
        "gap is 17.6 % of this fleet's cost, the share the plan saves)"
    )
    assert f"  uniform bf16 (3 x 1 GPU): {words}, cost 0.0379 USD" in lines
    assert page_text(words) in plan_section(PlanResult.from_json(data))


def test_per_hour_the_gap_is_a_share_of_usd_per_hour_and_other_fleets_are_as_before():
    from tiersim.results_plan_lines import baseline_gap_words

    saving = {"baseline_uniform_design": "bf16", "vs_uniform_frac": 0.4}
    base = {"design": "bf16", "replicas": {"bf16": 5}, "dearer_basis": "per_hour"}
    assert baseline_gap_words({**base, "dearer_by_frac": 2 / 3}, saving) == (
        " (the saving's baseline: the same gap is 40.0 % of this fleet's USD/hour, the share "
        "the plan saves)"
    )
    # the plan dearer than its baseline: "costs 11.1 % more than" it, the fleet "10.0 % cheaper"
    assert baseline_gap_words(
        {**base, "dearer_by_frac": -0.1}, {**saving, "vs_uniform_frac": -1 / 9}
    ).endswith("11.1 % of this fleet's USD/hour, the share the plan costs more)")
    assert baseline_gap_words({**base, "design": "fp8", "dearer_by_frac": 0.5}, saving) == ""
    assert baseline_gap_words({**base, "dearer_by_frac": 0.0}, saving) == ""  # a tie


# ------------------------------------------- 5. what a split tier's score covers


def _cascade_split_plan(constraints: dict):
    """A cascade fp8 + bf16 whose cheap tier fp8 is split, as plan.json holds it."""
    from tiersim.results import PlanResult

    splits = [
        {"label": "1P 2D", "prefill_replicas": 1, "decode_replicas": 2, "score": 0.8,
         "ttft_p99_s": 0.5, "tpot_p99_s": 0.05, "e2e_p99_s": 8.0},
        {"label": "aggregated", "prefill_replicas": 0, "decode_replicas": 0, "score": 0.9,
         "ttft_p99_s": 0.4, "tpot_p99_s": 0.06, "e2e_p99_s": 9.0},
    ]  # fmt: skip
    chosen = {"design": "fp8+bf16", "tiers": ["fp8", "bf16"], "replicas": {"fp8": 3, "bf16": 2},
              "gpus_per_replica": {"fp8": 1, "bf16": 1}, "router": {"policy": "cascade"},
              "per_tier": {"fp8": {"replicas": 3, "prefill": 1}}, "cost_usd": 1.0,
              "cost_model": "provisioned"}  # fmt: skip
    split = {"tier": "fp8", "chosen": splits[0], "splits": splits}
    return PlanResult(scenario="c", constraints=constraints, plan=chosen, disaggregation=split)


def test_a_cascades_split_score_says_which_requests_and_limits_it_covers():
    """A split tier is scored on the p99s of the requests that end on it, against the fleet's
    limits: in a cascade the cheap tier's score leaves out the requests it escalates (scored
    under the tier they end on, both passes there), and no split's score reads the task
    latency limit. The line read "worst of p99 TTFT, TPOT and end-to-end over their SLOs", as
    if of the fleet's requests; it says what it covers now, console and report alike."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.report.page import plan_section

    held = {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1, "e2e_p99_s": 10.0, "session_p99_s": 60.0}
    plan = _cascade_split_plan(held)
    covers = (
        "score = worst of p99 TTFT, TPOT and end-to-end over their SLOs, its p99s those of the "
        "requests that end on this tier, held to the fleet's limits (a request it escalates is "
        "scored under the tier it ends on, both passes there); the task latency limit is not "
        "in the score (the fleet as a whole is held to it)"
    )
    line = next(x for x in format_plan(plan).splitlines() if x.startswith("  fp8 split:"))
    assert line == (f"  fp8 split: 1P 2D (of 1P 2D score 0.800; aggregated score 0.900; {covers})")
    assert f"<p>chosen: 1P 2D ({page_text(covers)})</p>" in plan_section(plan)


def test_a_one_tier_split_without_a_task_limit_reads_as_before():
    from tiersim.results_plan_lines import split_score_words

    one = {"replicas": {"bf16": 3}}
    assert split_score_words({"e2e_p99_s": 2.0}, one) == (
        "score = worst of p99 TTFT, TPOT and end-to-end over their SLOs"
    )
    assert split_score_words({}, one) == "score = worse of p99 TTFT and TPOT over their SLOs"
    assert split_score_words({"session_p99_s": 9.0}, one).endswith(
        "; the task latency limit is not in the score (the fleet as a whole is held to it)"
    )
