"""Round 50 hand mutation audit: each test here kills a hand-made mutant of the cost, routing,
closed-form, engine, metrics or sweep code that the suite let live (a boundary moved by one, a
dropped request counted, a share for its complement), with a closed form or a tiny
hand-computed case, never a figure copied from the code's own output."""

from __future__ import annotations

import numpy as np
import pytest

from tiersim import analytic
from tiersim.routing import TierInfo, build_router
from tiersim.routing.accuracy import needed_tier
from tiersim.routing.metrics import error_rates, wilson_ci

TIERS3 = [
    TierInfo("w4", accuracy={"easy": 0.97, "hard": 0.4}, cost_weight=1.0),
    TierInfo("fp8", accuracy={"easy": 0.99, "hard": 0.7}, cost_weight=1.6),
    TierInfo("bf16", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=2.5),
]


# ---- the two-type closed form ------------------------------------------------------------------

def test_the_kink_puts_the_hard_share_on_the_top_tier():
    """At the oracle's kink every hard request, 1 - p of them, is on the top tier (the mutant
    reported p, the easy share, as ``kink.top_share``)."""
    out = analytic.summary(analytic.TwoType(p=0.7, eps=0.01, delta=0.3, dc=2.0, c0=1.0))
    assert out["kink"]["top_share"] == pytest.approx(0.3)
    assert out["kink"]["cost"] == pytest.approx(1.0 + 0.3 * 2.0)


def test_an_easy_loss_above_the_hard_loss_is_refused():
    """eps > delta swaps the two types (the easy requests are the hard ones): refused; equal
    losses (one type) are the model's edge and allowed."""
    with pytest.raises(ValueError, match="need eps <= delta"):
        analytic.TwoType(p=0.5, eps=0.3, delta=0.2)
    with pytest.raises(ValueError, match="need eps <= delta"):
        analytic.TwoType(p=0.5, eps=0.2 + 1e-9, delta=0.2)
    assert analytic.max_saving(0.5, 0.2, 0.2) == 0.0
    analytic.TwoType(p=0.5, eps=0.2, delta=0.2)


# ---- routing metrics and injected confusion ----------------------------------------------------

def test_a_dropped_request_is_no_silent_failure():
    """Request 0 is dropped on the cheap tier (wrong there, right on top): a visible failure;
    request 1 was answered wrong on the cheap tier where the top tier is right: silent. One of
    two requests (the mutant counted both)."""
    realised = np.array([[0.0, 1.0], [0.0, 1.0]])
    rates = error_rates(np.array([0, 0]), realised, dropped=np.array([True, False]))
    assert rates["silent_failure_rate"] == 0.5
    assert error_rates(np.array([0, 0]), realised)["silent_failure_rate"] == 1.0


def test_wilson_interval_of_five_in_ten_is_the_textbook_one():
    """Wilson's score interval of 5 of 10 at 95 %: centre 0.5, half-width
    z sqrt(0.25 / 10 + z^2 / 400) / (1 + z^2 / 10) = 0.26341 (0.2366, 0.7634 as tabulated)."""
    z = 1.959963984540054
    half = z * np.sqrt(0.25 / 10 + z * z / 400) / (1 + z * z / 10)
    lo, hi = wilson_ci(5, 10)
    assert (lo, hi) == pytest.approx((0.5 - half, 0.5 + half), abs=1e-12)
    assert (round(lo, 4), round(hi, 4)) == (0.2366, 0.7634)


def test_confusion_rates_summing_to_one_are_accepted():
    """``fpr + fnr must be <= 1``: exactly 1 is allowed (every request draws one of the two)."""
    build_router({"policy": "oracle", "confusion": {"fpr": 0.5, "fnr": 0.5}}, TIERS3)
    build_router({"policy": "oracle", "confusion": {"fpr": 0.0, "fnr": 1.0}}, TIERS3)


def test_cascade_false_positives_cancel_only_escalations_that_were_needed():
    """A cascade's injected false positive cancels an escalation of a request that needed a
    tier above the cheap one; at fpr 1 every such escalation is cancelled and no other: a
    request the cheap tier already answered as well as the top (wrong on both) stays
    escalated. The mutant cancelled those too, cutting cost with no error to show for it."""
    import pandas as pd

    # realised labels (w4, fp8, bf16): needed tiers 2, 0 (all wrong), 1, 0 (all right), 2
    labels = np.array([[0, 0, 1], [0, 0, 0], [0, 1, 1], [1, 1, 1], [0, 1, 1], [0, 0, 1]], float)
    df = pd.DataFrame({"input_tokens": 100, "output_tokens": 10,
                       **{f"correct_{t.name}": labels[:, k] for k, t in enumerate(TIERS3)}})
    need = needed_tier(labels)
    wrong = labels[:, 0] < 0.5
    cfg = {"policy": "cascade", "cascade": {"signal_noise": 0.0}, "confusion": {"fpr": 1.0}}
    a = build_router(cfg, TIERS3).assign(df, np.random.default_rng(0))
    assert a.escalated.tolist() == (wrong & (need == 0)).tolist() == [
        False, True, False, False, False, False]


# ---- static splits and estimated uniform costs -------------------------------------------------

def test_a_split_names_each_fleet_with_its_own_share():
    """Fleets a (60 %, 10 USD/hour) and b (100 %, 30): 70 % takes a quarter of the requests
    on b, three quarters on a, 15 USD/hour. test_round38_static_mix's split is half and half,
    so it could not tell the shares apart (the mutant swapped them: 25 % a, 75 % b)."""
    from tiersim.routing.metrics import static_split_saving

    out = static_split_saving("provisioned", 0.7, (1.0, 12.0),
                              [(1.0, 10.0, 0.6), (3.0, 30.0, 1.0)], ["a", "b"])
    assert out["static_split_mix"] == pytest.approx({"a": 0.75, "b": 0.25})
    assert out["static_split_cost_per_hour_usd"] == pytest.approx(0.75 * 10 + 0.25 * 30)
    assert out["static_split_cost_usd"] == pytest.approx(0.75 * 1 + 0.25 * 3)


def test_a_fleet_within_the_floor_tolerance_of_the_accuracy_reaches_it_alone():
    """The floor rule (reaches_floor: at least the accuracy less 1e-9) makes b, 1e-12 under the
    routed accuracy, a split of its own: b alone (the mutant required the exact accuracy: no
    tier reached it, and no tier above it was left to mix with, so there was no split)."""
    from tiersim.routing.metrics import split_mixes

    assert split_mixes(0.8, [0.5, 0.8 - 1e-12]) == [(1, 1, None)]


def test_estimated_costs_weigh_the_escalation_passes_in_the_run_wide_scale():
    """Four requests of 100 tokens; three run once on tier 0 (weight 1) for 0.1 USD each, one
    escalates from tier 0 to tier 1 (weight 4) for 0.5 USD in all. Tier 0 is priced by its own
    single passes: 0.3 USD / 300 tokens x 400 = 0.4 USD. Tier 1 served no single pass, so it is
    priced by the run-wide scale: 0.8 USD over 4 x 100 x 1 + 100 x 4 = 800 weighted tokens,
    x 4 x 400 tokens = 1.6 USD (the mutant left the escalation out of the weighted tokens:
    0.8 / 400 per token, 3.2 USD)."""
    from tiersim.routing.metrics import uniform_cost_estimates

    tiers = [TierInfo("w4", cost_weight=1.0), TierInfo("bf16", cost_weight=4.0)]
    out = uniform_cost_estimates(np.full(4, 100.0), np.zeros(4, dtype=np.int64),
                                 np.array([False, False, False, True]),
                                 np.array([0.1, 0.1, 0.1, 0.5]), tiers,
                                 escalate_to=np.array([-1, -1, -1, 1]))
    assert out == pytest.approx([0.4, 1.6])


def test_the_estimated_saving_is_the_baseline_less_the_routed_cost():
    """Routed: 2 USD at accuracy 1 (each request on the tier that answers it right); uniform
    bf16 (accuracy 1) costs 5 USD, w4 (accuracy 0.5) 1 USD: the baseline is bf16, the saving
    5 - 2 = 3 USD, 60 % (the mutant's USD gap had the wrong sign)."""
    import pandas as pd

    from tiersim.routing.metrics import savings

    tiers = [TierInfo("w4", cost_weight=1.0), TierInfo("bf16", cost_weight=4.0)]
    df = pd.DataFrame({"input_tokens": [10, 10], "output_tokens": [10, 10],
                       "correct_w4": [1.0, 0.0], "correct_bf16": [1.0, 1.0]})
    out = savings(df, np.array([0, 1]), np.array([0.5, 1.5]), tiers,
                  uniform_costs=np.array([1.0, 5.0]), basis="realised")
    assert (out["accuracy"], out["baseline_uniform_tier"]) == (1.0, "bf16")
    assert out["vs_uniform_usd"] == pytest.approx(3.0)
    assert out["vs_uniform_frac"] == pytest.approx(0.6)


# ---- SLO attainment ---------------------------------------------------------------------------

def test_a_one_token_answer_within_its_ttft_meets_the_slo():
    """A one-token output has no time per output token (no gap between tokens): it meets the
    SLO on its TTFT alone. Request 0 (11 tokens, TTFT 0.5 s, TPOT 0.1 s) and request 1 (one
    token, TTFT 0.5 s) both meet TTFT <= 1 s and TPOT <= 0.2 s; request 2 (one token, TTFT
    2 s) misses it: 2 of 3. The mutant failed every one-token answer (1 of 3)."""
    import pandas as pd

    from tiersim.metrics import Slo, add_latencies, request_stats

    df = add_latencies(pd.DataFrame({
        "arrival_s": [0.0, 1.0, 2.0], "first_token_s": [0.5, 1.5, 4.0],
        "finish_s": [1.5, 1.5, 4.0], "input_tokens": [100, 100, 100],
        "output_tokens": [11, 1, 1], "queue_s": [0.0, 0.0, 0.0],
        "expected_accuracy": [1.0, 1.0, 1.0]}))
    stats = request_stats(df, Slo(ttft_s=1.0, tpot_s=0.2))
    assert stats.slo_attainment == pytest.approx(2 / 3)
    assert stats.tpot_p50_s == pytest.approx(0.1)  # the one-token answers have none


def _three_requests():
    """Request 0 on tier 0 (TTFT 0.5 s), request 1 on tier 1 (TTFT 3 s), request 2 on tier 1
    dropped (no first token, no finish); the last finish at 4 s."""
    import pandas as pd

    from tiersim.metrics import add_latencies

    return add_latencies(pd.DataFrame({
        "arrival_s": [0.0, 1.0, 2.0], "first_token_s": [0.5, 4.0, np.nan],
        "finish_s": [1.5, 4.0, np.nan], "input_tokens": [100, 100, 100],
        "output_tokens": [11, 1, 50], "queue_s": [0.0, 0.0, np.nan],
        "expected_accuracy": [1.0, 1.0, 0.0], "final_tier": [0, 1, 1]}))


def test_request_throughput_counts_answered_requests_only():
    """2 answered requests over 4 s: 0.5 requests/s (the mutant counted the dropped one: 0.75),
    and 12 output tokens over 4 s."""
    from tiersim.metrics import Slo, request_stats

    stats = request_stats(_three_requests(), Slo(ttft_s=1.0, tpot_s=0.2))
    assert stats.duration_s == 4.0
    assert stats.throughput_req_s == pytest.approx(0.5)
    assert stats.throughput_tok_s == pytest.approx(12 / 4)


def test_a_tiers_p99_ttft_is_of_its_own_requests():
    """Tier 0 answered one request in 0.5 s: its p99 TTFT is 0.5 s, not the fleet's (the
    mutant gave every tier the whole run's p99, 2.975 s here); tier 1's one answered request
    took 3 s (its dropped one has no TTFT). :func:`tiersim.summary._tier_stats` makes a run's
    tier table (``metrics.tier_stats``, its unused twin, is gone); a whole run's is below."""
    from tiersim.summary import _tier_stats

    df = _three_requests()
    final, ttft, tpot = (df[c].to_numpy() for c in ("final_tier", "ttft_s", "tpot_s"))
    zero, one = _tier_stats(final == 0, ttft, tpot), _tier_stats(final == 1, ttft, tpot)
    assert (zero.requests, zero.share, zero.ttft_p99_s, zero.tpot_p99_s) == (
        1, pytest.approx(1 / 3), 0.5, pytest.approx(0.1))
    assert (one.requests, one.ttft_p99_s, one.tpot_p99_s) == (2, 3.0, None)


def test_a_runs_tier_figures_are_of_its_own_requests_and_every_rank(tmp_path):
    """The summary's per-tier figures (summary.json ``tiers``, the console's tier table): p99
    TTFT over the requests answered on that tier, as requests.parquet holds them (the mutant
    gave each tier the whole run's p99), and utilisation as busy replica-seconds over the
    tier's engine replicas (bf16: one replica of 2 data-parallel ranks, 1 GPU each, so 2
    schedulers) x the run's duration; its busy seconds are its attributed cost over its price
    per replica-second, 3.50 / 3600 USD (the mutant divided by 1 replica: twice the share)."""
    import pandas as pd
    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 300]})
    doc["tiers"][1].update(gpus_per_replica=2, data_parallel=2, expert_parallel=True)
    path = write_yaml(tmp_path / "dp.yaml", doc)
    run = run_scenario(load_scenario(path), out_dir=tmp_path / "o", scenario_path=path)
    rows = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    p99 = {name: np.percentile(rows.loc[rows["final_tier"] == name, "ttft_s"].dropna(), 99)
           for name in ("w4a16", "bf16")}
    assert p99["w4a16"] != pytest.approx(p99["bf16"])  # else the case shows nothing
    for name, ranks in (("w4a16", 1), ("bf16", 2)):
        tier = run.tier(name)
        assert tier.ttft_p99_s == pytest.approx(p99[name], rel=1e-12)
        busy = tier.attributed_cost_usd / (3.5 / 3600)
        assert tier.utilization == pytest.approx(busy / (ranks * run.duration_s))


# ---- the engine ---------------------------------------------------------------------------------

def test_a_preempted_request_keeps_its_first_admission():
    """Two requests of 16 prompt and 40 output tokens on 4 KV blocks of 16 tokens: both are
    admitted at 0 s (a block each) and take a second block at 16 tokens; at 32 tokens each
    needs a third, which 4 blocks cannot hold: the newest (request 1) is preempted, and
    re-admitted once request 0 is done.
    Its queueing delay (``admitted - arrival``, docs/metrics.md: admission time less the time
    the pass entered the queue) is 0: it was admitted at once. The mutant moved its admission
    to the re-admission, which counted the time it ran before it was preempted as queueing."""
    from tiersim.engine import ReplicaScheduler, Req, SchedulerLimits

    sched = ReplicaScheduler(SchedulerLimits(max_num_seqs=4, max_num_batched_tokens=64,
                                             block_size=16, watermark=0.0), 4)
    first, second = Req(0, prompt=16, output=40, arrival=0.0), Req(1, 16, 40, 0.0)
    assert sched.add(first) and sched.add(second)
    t, readmitted = 0.0, None
    while not sched.idle():
        plan = sched.schedule(t)
        if plan.empty:
            continue
        if second.preemptions and readmitted is None and second in dict(plan.chunks):
            readmitted = t
        t += 1.0
        sched.complete(plan, 1, t, 1.0)
    assert (first.preemptions, second.preemptions) == (0, 1)
    assert readmitted is not None and readmitted >= first.finish > 0
    assert (first.admitted, second.admitted) == (0.0, 0.0)
    assert sched.free == 4 and sched.peak_blocks == 4


def test_an_escalated_requests_preemptions_sum_both_passes():
    """The requests of the hand-stepped case above, on a cheap tier of 4 blocks; request 1,
    preempted there once, then escalates to a top tier where it runs alone (40 steps of 10 ms
    after 0.63 s: done at 1.03 s) and is never preempted. Its ``preemptions`` are over both
    passes (docs/metrics.md): 1, which the mutant overwrote with the second pass's 0. Its
    queueing is 0 on both passes: admitted at once each time."""
    from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
    from tiersim.perf.base import LinearStepModel

    model = LinearStepModel(overhead=0.01, per_prefill_token=0.0, per_decode_seq=0.0,
                            per_context_token=0.0)
    lim = SchedulerLimits(max_num_seqs=4, max_num_batched_tokens=64, block_size=16,
                          watermark=0.0)
    tiers = [TierSpec("cheap", 1, 4, model, lim), TierSpec("top", 1, 4, model, lim)]
    work = Workload(np.zeros(2), np.full(2, 16), np.full(2, 40), np.array([0, 0]),
                    escalate_to=np.array([-1, 1]))
    res = simulate(tiers, work)
    assert res.escalated.tolist() == [False, True]
    assert res.finish_s.tolist() == pytest.approx([0.40, 1.03])
    assert res.preemptions.tolist() == [0, 1]
    assert res.queue_s.tolist() == [0.0, 0.0]


# ---- the sweep table ----------------------------------------------------------------------------

def test_a_summary_field_named_as_a_column_does_not_replace_it():
    """A point's row holds its own status and axis values; a summary field of the same name
    goes under ``summary.<name>`` beside them (the mutant wrote the summary's over them, so the
    axis column showed another value than the point ran at)."""
    from tiersim.sweep.store import record_row

    record = {"point_id": "p1", "index": 0, "status": "ok", "values": {"seed": 3},
              "summary": {"seed": 0, "status": "other", "cost_usd": 1.5}}
    row = record_row(record, ["seed"])
    assert (row["status"], row["seed"], row["cost_usd"]) == ("ok", 3, 1.5)
    assert (row["summary.status"], row["summary.seed"]) == ("other", 0)


# ---- the planner's verdict on a simulated fleet --------------------------------------------------

def _outcome(ttft, tpot, dropped, requests=4):
    """A one-tier simulated fleet of ``requests`` requests, ``dropped`` of them dropped."""
    from tiersim.plan.evaluate import Outcome, TierOutcome

    return Outcome(ttft_p99_s=ttft, tpot_p99_s=tpot, dropped=dropped, accuracy=0.5,
                   cost_usd=1.0, cost_per_hour_usd=1.0, duration_s=3600.0,
                   tiers={"a": TierOutcome(1, requests, ttft, tpot, dropped, 0.5)})


def test_a_fleet_that_finished_nothing_meets_no_latency():
    """Every request dropped: no p99 to measure, which is no latency met (the mutant read the
    missing p99s as 0 s: plan.json's margins said TTFT and TPOT met, and the search saw the
    fleet 10x over by its drops alone, not at the cap of a fleet that serves nothing)."""
    from tiersim.plan.constraints import OVERSHOOT_CAP, Constraints, margins, verdict

    limits = Constraints(ttft_p99_s=1.0, tpot_p99_s=0.1)
    nothing = _outcome(None, None, dropped=4)
    out = margins(nothing, limits)
    assert (out["ttft_p99_s"]["met"], out["tpot_p99_s"]["met"], out["dropped"]["met"]) == (
        False, False, False)
    v = verdict(nothing, limits)
    assert not v.ok and v.overshoot == OVERSHOOT_CAP
    # one-token answers only, all served: no TPOT to measure, and none over the limit
    assert margins(_outcome(0.5, None, dropped=0), limits)["tpot_p99_s"]["met"] is True


def test_a_fleet_that_drops_requests_is_over_by_its_drops():
    """1 of 4 requests dropped, both p99s within their limits: the fleet misses, and its
    overshoot is the drops' 10 x 1 / 4 = 2.5 (the mutant left only the latencies' -0.5, an
    overshoot that reads as met, <= 0, for a fleet that missed)."""
    from tiersim.plan.constraints import Constraints, verdict

    v = verdict(_outcome(0.5, 0.05, dropped=1), Constraints(ttft_p99_s=1.0, tpot_p99_s=0.1))
    assert not v.ok and v.overshoot == pytest.approx(2.5)
    met = verdict(_outcome(0.5, 0.05, dropped=0), Constraints(ttft_p99_s=1.0, tpot_p99_s=0.1))
    assert met.ok and met.overshoot <= 0


# ---- the planner's fleets, as the run costs them -----------------------------------------------

def test_a_planned_fleet_is_paid_until_the_response_cache_last_answers(tmp_path):
    """Requests 0 and 1 (prompts a and b) arrive at 0 s and the fleet answers them in well
    under a second; request 2 repeats prompt a at 100 s and the cache answers it 5 ms later.
    Under provisioned cost the run pays its fleet for those 100.005 s; the plan's simulation of
    the same fleet must too (the mutant paid only until its last simulated finish, so the plan
    quoted a fraction of the run's cost for the same fleet)."""
    import pandas as pd
    from conftest import tiny_doc, write_yaml

    from tiersim.plan.evaluate import Design, SimEvaluator
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": [0, 1, 2], "arrival_s": [0.0, 0.0, 100.0],
                  "input_tokens": [100, 120, 100], "output_tokens": [10, 10, 10],
                  "prompt_hash": ["a", "b", "a"]}).to_csv(trace, index=False)
    doc = tiny_doc(trace={"path": str(trace)}, cost_model="provisioned",
                   router={"policy": "static_split", "fractions": [1, 0],
                           "response_cache": {"mode": "lru", "size": 5, "lookup_s": 0.005}})
    scenario = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    run = run_scenario(scenario)
    assert run.duration_s == pytest.approx(100.005)
    planned = SimEvaluator(scenario).evaluate(Design(("w4a16", "bf16"), (1, 1)),
                                              {"w4a16": 1, "bf16": 1})
    # two replicas of one GPU at 3.50 USD/GPU-hour for 100.005 s
    assert planned.duration_s == pytest.approx(100.005)
    assert planned.cost_usd == pytest.approx(2 * 3.5 * 100.005 / 3600) == \
        pytest.approx(run.cost_usd)


def test_the_plan_draws_the_scenarios_seed_as_the_run_does(tmp_path):
    """``tiersim plan`` simulates a design from the scenario's seed, as ``tiersim run`` does:
    a random 50/50 split of 40 requests of different lengths over two tiers of different
    accuracy lands each request where the run's does, so the planned accuracy and cost of the
    run's own fleet are the run's, at a seed other than 0 (the mutant drew the plan from seed
    0 whatever the scenario said, and quoted another split's figures)."""
    import pandas as pd
    from conftest import tiny_doc, write_yaml

    from tiersim.plan.evaluate import Design, SimEvaluator
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    rng = np.random.default_rng(5)
    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": range(40), "arrival_s": np.arange(40) * 0.05,
                  "input_tokens": rng.integers(50, 400, 40),
                  "output_tokens": rng.integers(5, 40, 40)}).to_csv(trace, index=False)
    doc = tiny_doc(trace={"path": str(trace)}, seed=7, cost_model="attributed",
                   router={"policy": "static_split", "fractions": [0.5, 0.5]})
    scenario = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    run = run_scenario(scenario)
    planned = SimEvaluator(scenario).evaluate(Design(("w4a16", "bf16"), (1, 1)),
                                              {"w4a16": 1, "bf16": 1})
    assert planned.accuracy == pytest.approx(run.accuracy, abs=1e-12)
    assert planned.cost_usd == pytest.approx(run.cost_usd, rel=1e-9)
    assert planned.tiers["w4a16"].requests == run.tier("w4a16").requests
