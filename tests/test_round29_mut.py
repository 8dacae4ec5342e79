"""Round 29 hand mutation audit: each test here kills a hand-made mutant that the suite let
live (a min for a max, a dropped term, a boundary moved by one) with a closed form or a tiny
hand-computed case, never a figure copied from the code's own output."""

from __future__ import annotations

import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml
from test_hybrid import QWEN35_397B
from test_sliding_prefill import GPT_OSS

from tiersim import results, summary
from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
from tiersim.engine.request import Req
from tiersim.engine.spec_decode import SpecDecoding, SpecScheduler
from tiersim.fleet import limits, parallel, proportional_prefill, with_offload
from tiersim.hardware import get_model
from tiersim.paths import bundled
from tiersim.perf.assembly import AssembledStepModel
from tiersim.perf.base import LinearStepModel, StepShape
from tiersim.perf.memory import kv_bytes_per_token, weight_bytes
from tiersim.plan.evaluate import Design, SimEvaluator
from tiersim.routing import TierInfo, build_router
from tiersim.routing.accuracy import tier_output_tokens
from tiersim.runner import run_scenario
from tiersim.scenario import TierConfig, load_scenario


def _trace(tmp_path, prompts: list[int], outputs: list[int]):
    """A CSV trace of requests arriving at 0 s with these prompt and output tokens."""
    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": range(len(prompts)), "arrival_s": 0.0,
                  "input_tokens": prompts, "output_tokens": outputs}).to_csv(trace, index=False)
    return trace


def _scenario(tmp_path, rows: dict, **tier_edits):
    """The tiny scenario over the trace ``rows``, every request on its first tier (w4a16),
    whose fields ``tier_edits`` replaces."""
    trace = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(trace, index=False)
    doc = tiny_doc(trace={"path": str(trace)},
                   router={"policy": "static_split", "fractions": [1, 0]})
    doc["tiers"][0].update(tier_edits)
    return load_scenario(write_yaml(tmp_path / "s.yaml", doc))


def test_the_kv_peak_is_the_fullest_replicas(tmp_path):
    # round robin: replica 0 holds 1,000 + 10 tokens, replica 1 holds 100 + 10; a request's KV
    # at its last step holds prompt + output - 1 tokens: ceil(1009 / 16) = 64 blocks against
    # ceil(109 / 16) = 7 (16-token blocks)
    rows = {"request_id": [0, 1], "arrival_s": [0.0, 0.0], "input_tokens": [1000, 100],
            "output_tokens": [10, 10]}
    out = run_scenario(_scenario(tmp_path, rows, replicas=2, balancer="round_robin"))
    tier = out.tiers[0]
    assert tier.kv_peak_frac * tier.kv_capacity_blocks == pytest.approx(64)


def test_a_run_lasts_until_the_fleets_last_step_ends():
    # a pass that gave no answer ran until 5 s; a response cache's last answer came at 2 s
    assert summary.run_end_s(SimpleNamespace(busy_until_s=5.0), end_s=2.0) == 5.0
    assert summary.run_end_s(SimpleNamespace(busy_until_s=1.0), end_s=2.0) == 2.0
    assert summary.run_end_s(SimpleNamespace(busy_until_s=1.0)) == 1.0


def test_a_probability_equal_to_its_threshold_passes():
    # "the first tier whose calibrated probability of being good enough is at least its
    # threshold": p = 0.7 at threshold 0.7 goes to the cheap tier, p just below to the top
    tiers = [TierInfo("cheap", cost_weight=1.0), TierInfo("top", cost_weight=2.0)]
    router = build_router({"policy": "threshold", "thresholds": [0.7]}, tiers)
    router.classifier = SimpleNamespace(p_good_enough=lambda df: np.array([0.7, 0.7 - 1e-9]))
    df = pd.DataFrame({"correct_cheap": [1.0, 1.0], "correct_top": [1.0, 1.0]})
    assert router.assign(df, np.random.default_rng(0)).tier.tolist() == [0, 1]


# ---- tiersim/perf/memory.py -----------------------------------------------------------------


@pytest.mark.parametrize("tp", [1, 2])
def test_a_tied_lm_head_is_stored_once(tp):
    # a model whose lm_head shares its embedding matrix holds the vocab x hidden matrix once:
    # Llama-3.1-8B's 128,256 x 4,096 at 2 bytes (BF16), split over tp GPUs by vocab rows
    untied = get_model("Llama-3.1-8B")
    tied = dataclasses.replace(untied, tie_embeddings=True)
    rows = -(-128_256 // tp)
    saved = weight_bytes(untied, "bf16", tp=tp) - weight_bytes(tied, "bf16", tp=tp)
    assert saved == rows * 4096 * 2


# ---- tiersim/engine/replica.py --------------------------------------------------------------


@pytest.mark.parametrize("balancer", ["least_tokens", "prefix_aware"])
def test_a_decode_stretch_in_flight_counts_only_its_work_left(balancer):
    # every step takes 10 ms. A (10 + 2,000 tokens) goes to replica 0 and B (10 + 10) to
    # replica 1 at 0 s; at 19 s A has decoded about 1,900 of its 1,999 steps (one stretch
    # still in flight): about 100 token computations left against replica 1's none, so C
    # (10 + 500) goes to replica 1; at 19.005 s D goes to replica 0 (about 100 left against
    # C's 509). Without a prefix cache, prefix_aware picks as least_tokens does.
    model = LinearStepModel(overhead=0.01, per_prefill_token=0.0, per_decode_seq=0.0,
                            per_context_token=0.0)
    tier = TierSpec("t", 2, 1000, model, SchedulerLimits(max_num_seqs=8, block_size=16),
                    balancer=balancer)
    work = Workload(np.array([0.0, 0.0, 19.0, 19.005]), np.array([10, 10, 10, 10]),
                    np.array([2000, 10, 500, 300]), np.zeros(4, dtype=np.int64))
    assert simulate([tier], work).replica.tolist() == [0, 1, 1, 0]


def test_the_fleet_is_busy_until_a_pass_without_an_answer_ends():
    # every step takes 10 ms: the first pass (10 + 5 tokens) prefills in one step and decodes
    # 4 more, ending at 0.05 s; its escalation is longer than the top tier's context (12
    # tokens) and is dropped, so no finish_s records those 0.05 s, busy_until_s does
    model = LinearStepModel(overhead=0.01, per_prefill_token=0.0, per_decode_seq=0.0,
                            per_context_token=0.0)
    cheap = TierSpec("cheap", 1, 100, model, SchedulerLimits(block_size=16))
    top = TierSpec("top", 1, 100, model, SchedulerLimits(block_size=16, max_model_len=12))
    work = Workload(np.array([0.0]), np.array([10]), np.array([5]), np.array([0]),
                    escalate_to=np.array([1]))
    res = simulate([cheap, top], work)
    assert res.dropped.tolist() == [True] and np.isnan(res.finish_s[0])
    assert res.busy_until_s == pytest.approx(0.05)


# ---- tiersim/engine/cluster.py --------------------------------------------------------------


def test_a_tiers_output_multiplier_rounds_as_routing_does():
    # 1.5 x (5, 3, 1) output tokens: 7.5, 4.5 and 1.5 rounded half to even (np.rint, as the
    # router's tier_output_tokens rounds) are 8, 4 and 2; truncated they would be 7, 4, 1
    tier = TierSpec("t", 1, 1000, LinearStepModel(), SchedulerLimits(block_size=16),
                    output_multiplier=1.5)
    out = np.array([5, 3, 1])
    work = Workload(np.zeros(3), np.full(3, 10), out, np.zeros(3, dtype=np.int64))
    served = simulate([tier], work).output_tokens
    assert served.tolist() == [8, 4, 2]
    routed = tier_output_tokens(out, np.zeros(3, dtype=np.int64),
                                [TierInfo("t", output_length_multiplier=1.5)])
    assert served.tolist() == routed.tolist()


def test_an_escalated_requests_queueing_sums_both_passes():
    # every step takes 10 ms, one sequence a replica. On cheap, C (10 + 5 tokens) runs first
    # and ends at 0.05 s, so A waits 0.05 s, then runs until 0.10 s and escalates. On top, B
    # (10 + 20) runs until 0.20 s, so A's second pass waits 0.10 s: queue_s = 0.05 + 0.10
    model = LinearStepModel(overhead=0.01, per_prefill_token=0.0, per_decode_seq=0.0,
                            per_context_token=0.0)
    lim = SchedulerLimits(max_num_seqs=1, block_size=16)
    tiers = [TierSpec("cheap", 1, 100, model, lim), TierSpec("top", 1, 100, model, lim)]
    work = Workload(np.zeros(3), np.full(3, 10), np.array([5, 5, 20]), np.array([0, 0, 1]),
                    escalate_to=np.array([-1, 1, -1]))
    res = simulate(tiers, work)
    assert res.finish_s[0] == pytest.approx(0.05) and res.finish_s[2] == pytest.approx(0.20)
    assert res.escalated.tolist() == [False, True, False]
    assert res.queue_s[1] == pytest.approx(0.15)


def test_the_steps_after_a_dropped_step_are_dropped_when_it_is():
    # a session's first step (1,000 + 10 tokens) is longer than the tier's 500-token context
    # and is dropped on arriving at 1 s; the step that follows it is never sent and counts as
    # dropped at that moment, not at the 7 s its row holds (a follower's row time is not read)
    tier = TierSpec("t", 1, 1000, LinearStepModel(),
                    SchedulerLimits(block_size=16, max_model_len=500))
    work = Workload(np.array([1.0, 7.0]), np.array([1000, 10]), np.array([10, 10]),
                    np.zeros(2, dtype=np.int64), follows=np.array([-1, 0]))
    res = simulate([tier], work)
    assert res.dropped.tolist() == [True, True]
    assert res.arrival_s.tolist() == [1.0, 1.0]


def test_a_finished_step_caches_only_the_output_blocks_its_kv_holds():
    # a 16-token prompt and 16 output tokens: the last output token is never computed, so the
    # KV holds 31 tokens, one full 16-token block (the prompt's) and no full output block;
    # the follower (prompt = those 32 tokens and 16 more) hits the prompt's block alone
    tier = TierSpec("t", 1, 1000, LinearStepModel(),
                    SchedulerLimits(block_size=16, enable_prefix_caching=True))
    work = Workload(np.zeros(2), np.array([16, 48]), np.array([16, 10]),
                    np.zeros(2, dtype=np.int64), follows=np.array([-1, 0]),
                    prefix_hashes=[[1], [1, 2, 3]], output_hashes=[[2], []],
                    hash_block_tokens=16)
    assert simulate([tier], work).cache_hit_tokens.tolist() == [0, 16]


# ---- tiersim/engine/spec_decode.py ----------------------------------------------------------


def test_a_verify_step_emits_no_more_than_is_left_and_a_lone_request_pays_its_steps():
    # k = 3 drafts all accepted: a verify step emits 4 tokens. 6 output tokens: the prefill
    # step emits 1, one verify step 4, the next only the 1 left (not 4); every token
    # computation counted outstanding (10 + 6 - 1) is done, none twice; alone on the replica,
    # the request is attributed every step's whole 10 ms
    sched = SpecScheduler(SchedulerLimits(max_num_seqs=4, max_num_batched_tokens=64,
                                          block_size=16), 100,
                          SpecDecoding(k=3, acceptance=(1.0,)))
    req = Req(0, prompt=10, output=6, arrival=0.0)
    assert sched.add(req) and sched.outstanding == 15
    steps = 0
    while not sched.idle():
        steps += 1
        sched.complete(sched.schedule(0.0), 1, 0.01 * steps, 0.01)
    assert (steps, req.n_out, req.tokens) == (3, 6, 16)
    assert sched.outstanding == 0
    assert req.gpu_s == pytest.approx(0.03)


# ---- tiersim/fleet.py -----------------------------------------------------------------------


def test_a_provisioned_fleet_of_data_parallel_ranks_pays_every_gpu(tmp_path):
    # w4a16: 2 replicas of 2 GPUs as 2 data-parallel ranks of 1 GPU (4 engine replicas) at
    # $3.50 a GPU-hour; bf16: 1 replica of 1 GPU at $7. 5 GPUs, $21 an hour, paid for the
    # run's duration
    doc = tiny_doc(trace={"path": str(_trace(tmp_path, [100] * 4, [10] * 4))})
    doc["tiers"][0].update(replicas=2, gpus_per_replica=2, data_parallel=2)
    doc["tiers"][1].update(cost_per_gpu_hour=7.0)
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)))
    assert run.cost_model == "provisioned"
    assert run.gpu_hours == pytest.approx(5 * run.duration_s / 3600)
    assert run.cost_usd == pytest.approx((4 * 3.5 + 7.0) * run.duration_s / 3600)
    assert run.tier("w4a16").gpus == 4


def test_a_split_keeps_its_proportion_at_another_replica_count():
    # 1P 2D carried to 5 replicas: 5 / 3 = 1.67 prefill replicas, nearest 2 (2P 3D, not
    # 1P 4D); to 2 replicas: 1P 1D (at least one of each); below 2 replicas: no split
    assert proportional_prefill(1, 2, 5) == 2
    assert proportional_prefill(1, 2, 2) == 1
    assert proportional_prefill(3, 1, 8) == 6
    assert proportional_prefill(1, 2, 1) is None


def test_expert_parallel_spans_every_gpu_of_the_replica():
    # 4 GPUs a replica as 2 data-parallel ranks of tensor parallel 2: experts split over all
    # 4 GPUs with expert_parallel, not over one rank's 2
    tier = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0,
                      gpus_per_replica=4, data_parallel=2, expert_parallel=True)
    assert parallel(tier) == (2, 2, 4)
    assert parallel(tier.model_copy(update={"expert_parallel": False})) == (2, 2, 1)


def test_a_speculative_hybrid_tier_holds_a_state_per_verified_position(tmp_path):
    # k = 3: vLLM keeps 1 + 3 recurrent states a sequence, each in whole KV blocks of the
    # scheduler's 16 tokens on 8 GPUs
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN35_397B))
    tier = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0,
                      gpus_per_replica=8, speculative={"k": 3, "acceptance": 0.7})
    model = get_model(str(folder))
    per_block = kv_bytes_per_token(model, "bf16", 8) * 16
    assert limits(tier, str(folder)).state_blocks == math.ceil(
        4 * model.state_bytes_per_seq(8) / per_block)


def test_an_offload_level_is_sized_in_gb_of_1e9_bytes():
    # 100 GB of host memory per GPU at 50 GB/s read and 25 GB/s write: 1e9 bytes a GB
    tier = TierConfig(name="t", precision="bf16", replicas=1, cost_per_gpu_hour=1.0,
                      scheduler={"enable_prefix_caching": True, "kv_offload": [
                          {"name": "host", "capacity_gb": 100, "read_gb_s": 50,
                           "write_gb_s": 25}]})
    model = "Qwen3-Coder-30B-A3B"
    level = with_offload(limits(tier, model), model, tier).kv_levels[0]
    assert (level.capacity_bytes, level.read_bytes_per_s, level.write_bytes_per_s) == (
        100e9, 50e9, 25e9)


# ---- tiersim/perf/assembly.py ---------------------------------------------------------------


class _PrefillContextOps:
    """Operator times where only prefill attention costs anything: 1 s per cached token a
    chunk's op reads (GEMMs, decode attention, collectives and overhead free)."""

    overhead_s = 0.0

    def gemm(self, m, n, k, precision):
        """Free."""
        return np.zeros_like(np.asarray(m, dtype=np.float64))

    def moe(self, tokens):
        """Free."""
        return np.zeros_like(np.asarray(tokens, dtype=np.float64))

    def attn_prefill(self, tokens, context):
        """1 s per cached token."""
        return float(context)

    def attn_decode(self, batch, context_per_seq):
        """Free."""
        return np.zeros_like(np.asarray(context_per_seq, dtype=np.float64))

    def allreduce(self, nbytes, gpus=None):
        """Free."""
        return np.zeros_like(np.asarray(nbytes, dtype=np.float64))

    def sources(self):
        """None."""
        return {}


def test_a_sliding_layer_reads_at_most_its_window_of_cached_tokens():
    # gpt-oss-20b's shape: 12 full and 12 sliding layers, a 128-token window. One new token
    # after 1,000 cached: a full layer's op reads 1,000, a sliding layer's 128
    step = AssembledStepModel(GPT_OSS, "bf16", 1, _PrefillContextOps(), "test")
    t = step.step_time(StepShape(prefill_chunks=((1, 1000),), decode_seqs=0,
                                 decode_context=0))
    assert t == pytest.approx(12 * 1000 + 12 * 128)


# ---- tiersim/results.py ---------------------------------------------------------------------


def test_a_split_fleet_names_its_decode_replicas():
    # 4 replicas of 2 GPUs, 1 of them prefill: the other 3 decode
    assert results.fleet_size(4, 2, 1) == "4 x 2 (1P 3D)"
    assert results.fleet_size(4, 2) == "4 x 2"


def test_a_rounding_sized_gap_to_a_free_baseline_reads_zero():
    # a baseline of 0 USD has no share; a gap of float rounding (1e-15 USD) is no gap
    words = "USD (the baseline costs 0 USD: no percentage)"
    assert results.saving_without_share(None, 1e-15) == f"0 {words}"
    assert results.saving_without_share(None, -1e-15) == f"0 {words}"
    assert results.saving_without_share(None, -0.25) == f"-0.25 {words}"
    assert results.saving_without_share(0.5, 1.0) is None


def test_a_met_limit_prints_at_the_digits_asked():
    # 0.99999 s under a 1 s limit is met: 3 digits ("1") print it, as the limit reads; a
    # missed 1.00001 s takes 6 digits to read apart from it ("1.00001" against "1")
    assert results.over_digits(0.99999, 1.0, 3) == 3
    assert results.over_digits(1.00001, 1.0, 3) == 6


# ---- tiersim/plan/evaluate.py ---------------------------------------------------------------


def test_a_planned_tier_of_data_parallel_ranks_pays_every_gpu():
    # w4a16 on 2 GPUs a replica as 2 data-parallel ranks of 1 GPU: 2 engine replicas of
    # $3.50/hour each, so 1 replica costs 2 x 3.50 = $7.00 an hour and 3 cost $21.00
    scenario = load_scenario(bundled("scenarios", "tiny.yaml"))
    scenario.tiers[0].gpus_per_replica, scenario.tiers[0].data_parallel = 2, 2
    evaluator = SimEvaluator(scenario)
    design = Design(("w4a16",), (2,))
    assert evaluator.evaluate(design, {"w4a16": 1}).cost_per_hour_usd == pytest.approx(7.0)
    assert evaluator.evaluate(design, {"w4a16": 3}).cost_per_hour_usd == pytest.approx(21.0)


def test_a_planned_fleet_is_paid_until_a_pass_without_an_answer_ends(tmp_path, monkeypatch):
    # one request (100 + 10 tokens) escalated by a cascade to bf16, whose 50-token context
    # refuses it after w4a16's first pass ran: no finish, no later arrival, but the plan's
    # fleet ran until that pass ended, as the run's did (the run's duration, not 0 s). Routing
    # by capability (round 35) cancels that escalation (w4a16 holds the request); it is
    # switched off here, so bf16 refuses it as it refuses one larger than its KV cache
    monkeypatch.setattr("tiersim.routing.base.by_capability", lambda a, df, tiers: a)
    doc = tiny_doc(trace={"path": str(_trace(tmp_path, [100], [10]))},
                   router={"policy": "cascade",
                           "cascade": {"threshold": 10.0, "signal_noise": 0.0}})
    doc["tiers"][1]["scheduler"] = {"max_model_len": 50}
    scenario = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    with pytest.warns(UserWarning, match="refused after its first pass ran"):
        run = run_scenario(scenario)
    planned = SimEvaluator(scenario).evaluate(Design(("w4a16", "bf16"), (1, 1)),
                                              {"w4a16": 1, "bf16": 1})
    assert run.dropped == planned.dropped == 1
    assert run.duration_s > 0
    assert planned.duration_s == pytest.approx(run.duration_s)


def test_a_planned_fleet_reads_as_its_run(tmp_path):
    # the plan simulates the design the run runs (2 w4a16 replicas, every request on them);
    # its figures must be the run's: p99 TTFT, TPOT (over output tokens less one), end to end
    # (from arrival), the dropped request scored 0 in the accuracy, the busy share of 2
    # replicas over the run
    doc = tiny_doc(trace={"path": str(_trace(tmp_path, [100, 10_000, 100], [10, 10, 50]))},
                   router={"policy": "static_split", "fractions": [1, 0]})
    doc["tiers"][0].update(replicas=2, scheduler={"max_model_len": 4096})
    doc["tiers"][1]["scheduler"] = {"max_model_len": 4096}  # else bf16 would take request 1
    scenario = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    with pytest.warns(UserWarning, match="1 of 3 requests were dropped"):
        run = run_scenario(scenario)
    planned = SimEvaluator(scenario).evaluate(Design(("w4a16", "bf16"), (1, 1)),
                                              {"w4a16": 2, "bf16": 1})
    assert run.dropped == planned.dropped == 1
    assert (planned.ttft_p99_s, planned.tpot_p99_s, planned.e2e_p99_s, planned.accuracy) == \
        pytest.approx((run.ttft_p99_s, run.tpot_p99_s, run.e2e_p99_s, run.accuracy))
    assert planned.tiers["w4a16"].utilization == pytest.approx(run.tier("w4a16").utilization)


def test_a_planned_cascade_pays_the_busy_time_of_both_tiers(tmp_path):
    # every request escalates (signal below 10): each runs on w4a16, then on bf16; attributed
    # cost is both tiers' busy replica-seconds at their price, as the run bills them
    doc = tiny_doc(trace={"path": str(_trace(tmp_path, [100, 300], [10, 20]))},
                   router={"policy": "cascade",
                           "cascade": {"threshold": 10.0, "signal_noise": 0.0}},
                   cost_model="attributed")
    scenario = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    run = run_scenario(scenario)
    planned = SimEvaluator(scenario).evaluate(Design(("w4a16", "bf16"), (1, 1)),
                                              {"w4a16": 1, "bf16": 1})
    assert run.cost_usd > run.tier("bf16").attributed_cost_usd > 0
    assert planned.cost_usd == pytest.approx(run.cost_usd)
