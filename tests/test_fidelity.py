"""The fidelity benchmark: row selection, the simulated load generator, the error arithmetic and
the report lines, on hand-built rows and a linear step model (nothing timed)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402

from tiersim.engine import SchedulerLimits, TierSpec, simulate  # noqa: E402
from tiersim.perf.base import LinearStepModel, StepShape  # noqa: E402

MODEL = LinearStepModel(
    overhead=0.005, per_prefill_token=2e-5, per_decode_seq=1e-4, per_context_token=1e-8
)


def tier(num_blocks: int = 10**5, max_tokens: int = 8192, model=MODEL, replicas=1) -> TierSpec:
    """One tier of ``replicas`` replicas on the linear test model."""
    limits = SchedulerLimits(max_num_seqs=256, max_num_batched_tokens=max_tokens)
    return TierSpec("t", replicas, num_blocks, model, limits)


def make_row(**overrides) -> dict:
    """A silicon-sample row (vLLM, Llama-3.1-70B, TP 4) with keyword overrides."""
    row = {
        "id": "r0", "backend": "vllm", "backend_version": "0.12.0", "mode": "agg",
        "model_path": "meta-llama/Llama-3.1-70B", "system": "h200_sxm", "precision": "fp8",
        "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "isl": 1024, "osl": 128,
        "batch_size": 8, "tp_size": 4, "pp_size": 1, "attention_dp_size": 1.0,
        "moe_tp_size": 4.0, "moe_ep_size": 1.0, "silicon_ttft_ms": 100.0,
        "silicon_tpot_ms": 10.0, "model": "Llama-3.1-70B",
    }
    row.update(overrides)
    return row


P3 = fs.Protocol(per_client=3)


# ---------------------------------------------------------------- the load generator


def test_one_client_sees_one_prefill_then_decodes():
    res = fs.replay(tier(), isl=100, osl=10, concurrency=1, proto=P3)
    assert res["sim_ttft_ms"] == pytest.approx((0.005 + 2e-5 * 100) * 1e3)
    # decode i (i = 1..9) computes token 100 + i over a context that includes it
    decode = [0.005 + 1e-4 + 1e-8 * (100 + i) for i in range(1, 10)]
    assert res["sim_tpot_ms"] == pytest.approx(np.mean(decode) * 1e3)


def test_load_generator_starts_every_client_at_zero_and_chains_k_requests():
    proto = fs.Protocol(per_client=4)  # the default protocol: burst start, every round counted
    assert not proto.stagger and proto.all_rounds and proto.rounds() == slice(0, 4)
    work = fs.closed_loop_workload(isl=50, osl=5, concurrency=3, proto=proto, gap_s=0.0)
    assert len(work) == 12  # N = k x C requests
    assert list(work.follows) == [-1, -1, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert list(work.arrival_s[:3]) == [0.0, 0.0, 0.0]
    res = simulate([tier()], work)
    for i in range(3, 12):  # each request arrives exactly when its client's previous finishes
        assert res.arrival_s[i] == res.finish_s[i - 3]


def test_burst_ttft_is_the_mean_over_every_request_including_the_first_queue():
    """Two clients arrive together at a server that runs one request at a time: the second
    waits for the first to finish, and the mean TTFT counts that wait."""
    limits = SchedulerLimits(max_num_seqs=1, max_num_batched_tokens=8192)
    one_at_a_time = TierSpec("t", 1, 10**5, MODEL, limits)
    res = fs.replay(one_at_a_time, isl=100, osl=2, concurrency=2, proto=fs.Protocol(per_client=1))
    prefill = 0.005 + 2e-5 * 100
    decode = 0.005 + 1e-4 + 1e-8 * 101
    assert res["sim_ttft_ms"] == pytest.approx((prefill + (prefill + decode + prefill)) / 2 * 1e3)


def test_more_requests_per_client_dilute_the_start_up_burst():
    burst = [
        fs.replay(tier(max_tokens=512), 500, 20, 16, fs.Protocol(per_client=k))["sim_ttft_ms"]
        for k in (1, 4)
    ]
    assert burst[1] < burst[0]


def test_warmup_rounds_are_sent_but_left_out_of_the_means():
    """``warmup`` leading rounds run (they load the server) but are not averaged: the burst
    round left out, the mean TTFT is that of the later rounds alone."""
    warm = fs.Protocol(per_client=4, warmup=1)
    assert warm.rounds() == slice(1, 4)
    limits = SchedulerLimits(max_num_seqs=1, max_num_batched_tokens=8192)
    one_at_a_time = TierSpec("t", 1, 10**5, MODEL, limits)
    with_burst = fs.replay(one_at_a_time, 100, 2, 2, fs.Protocol(per_client=4))
    without = fs.replay(one_at_a_time, 100, 2, 2, warm)
    assert without["sim_ttft_ms"] != pytest.approx(with_burst["sim_ttft_ms"])
    work = fs.closed_loop_workload(100, 2, 2, warm, 0.0)
    res = simulate([one_at_a_time], work)
    later = (res.first_token_s - res.arrival_s)[2:]
    assert without["sim_ttft_ms"] == pytest.approx(later.mean() * 1e3)
    with pytest.raises(ValueError, match="warmup"):
        fs.Protocol(per_client=2, warmup=2)


def test_staggered_workload_spaces_round_zero():
    proto = fs.Protocol(stagger=True, per_client=4, all_rounds=False)
    work = fs.closed_loop_workload(isl=50, osl=5, concurrency=3, proto=proto, gap_s=0.25)
    assert list(work.arrival_s[:3]) == [0.0, 0.25, 0.5]
    assert proto.rounds() == slice(1, 3)


@settings(max_examples=25, deadline=None)
@given(
    conc=st.integers(1, 12),
    isl=st.integers(1, 600),
    osl=st.integers(2, 40),
    stagger=st.booleans(),
)
def test_replay_is_bounded_by_an_idle_replica(conc, isl, osl, stagger):
    """Sharing the replica can only slow a request down: TTFT and TPOT are at least those of a
    lone client."""
    proto = fs.Protocol(stagger=stagger, per_client=3)
    alone = fs.replay(tier(max_tokens=512), isl, osl, 1, proto)
    shared = fs.replay(tier(max_tokens=512), isl, osl, conc, proto)
    assert shared["sim_ttft_ms"] >= alone["sim_ttft_ms"] * (1 - 1e-9)
    assert shared["sim_tpot_ms"] >= alone["sim_tpot_ms"] * (1 - 1e-9)


def test_data_parallel_ranks_share_the_clients():
    """Eight clients on two DP ranks see about the batch of four clients on one rank (the
    balancer may leave a rank one request ahead for a while), well below eight on one."""
    four = fs.replay(tier(), 200, 20, 4, P3)["sim_tpot_ms"]
    eight = fs.replay(tier(), 200, 20, 8, P3)["sim_tpot_ms"]
    two_ranks = fs.replay(tier(replicas=2), 200, 20, 8, P3)["sim_tpot_ms"]
    assert four * (1 - 1e-9) <= two_ranks < four + 0.25 * (eight - four)


def test_protocol_validates_its_options():
    assert fs.Protocol(per_client=6, all_rounds=False).rounds() == slice(1, 5)
    with pytest.raises(ValueError, match="per-client"):
        fs.Protocol(per_client=2, all_rounds=False)
    with pytest.raises(ValueError, match="length-spread"):
        fs.Protocol(spread=1.0)


def test_length_spread_keeps_lengths_in_range_and_is_seeded():
    proto = fs.Protocol(spread=0.2, seed=3)
    a, b = proto.lengths(1000, 500, 0), proto.lengths(1000, 500, 0)
    assert np.array_equal(a, b) and not np.array_equal(a, proto.lengths(1000, 500, 1))
    assert a.min() >= 800 and a.max() <= 1200 and abs(a.mean() - 1000) < 20
    assert fs.Protocol(spread=0.5).lengths(2, 50, 1).min() == 2  # TPOT needs two outputs


def test_command_line_protocols(monkeypatch, tmp_path):
    def proto(*argv: str) -> fs.Protocol:
        return fs.protocol_from_args(fs.build_parser().parse_args(argv))

    fit = tmp_path / "fit.json"
    monkeypatch.setattr(fs, "FIT_JSON", fit)
    assert proto() == fs.Protocol(per_client=fs.UNFITTED_PER_CLIENT)
    fit.write_text('{"per_client": 3, "length_spread": 0.0}')
    assert proto() == fs.Protocol(per_client=3)
    assert proto("--per-client", "7").per_client == 7
    assert proto("--steady-state") == fs.Protocol(stagger=True, per_client=6, all_rounds=False)


def test_cycle_estimate_is_prefill_plus_decodes():
    # 1000-token prompt in 512-token chunks: two chunk-sized steps (an upper bound)
    prefill = 2 * (0.005 + 2e-5 * 512)
    decode = 0.005 + 1e-4 * 4 + 1e-8 * 4 * (1000 + 10)
    assert fs.cycle_estimate(MODEL, 1000, 20, 4, max_tokens=512) == pytest.approx(
        prefill + 20 * decode
    )


def test_small_kv_cache_preempts_and_still_finishes():
    res = fs.replay(tier(num_blocks=100), isl=200, osl=200, concurrency=8, proto=P3)
    assert res["preemptions"] > 0 and res["sim_tpot_ms"] > 0


def test_budget_chunks_long_prompts():
    seen = []

    class Spy(LinearStepModel):
        def step_time(self, shape: StepShape) -> float:
            seen.append(shape.num_tokens)
            return super().step_time(shape)

    fs.replay(tier(max_tokens=256, model=Spy()), isl=1000, osl=2, concurrency=1, proto=P3)
    assert max(seen) == 256


# ---------------------------------------------------------------- row selection


def test_layout_reads_tp_dp_and_ep():
    assert fs.parallel_layout(make_row()) == (4, 1, 1)
    # no attention_dp column: the experts' extra GPUs are attention data-parallel ranks
    qwen = make_row(tp_size=1, attention_dp_size=np.nan, moe_tp_size=2.0, moe_ep_size=1.0)
    assert fs.aic_layout(qwen) == (1, 2, 2, 1)
    assert fs.parallel_layout(qwen) == (1, 2, 1)
    ep = make_row(tp_size=4, attention_dp_size=np.nan, moe_tp_size=1.0, moe_ep_size=4.0)
    assert fs.parallel_layout(ep) == (4, 1, 4)
    with pytest.raises(fs.Unrepresentable, match="pipeline"):
        fs.parallel_layout(make_row(pp_size=2))
    with pytest.raises(fs.Unrepresentable, match="experts on 8 GPUs"):
        fs.parallel_layout(make_row(moe_tp_size=8.0))


def test_case_of_a_served_row_and_the_reasons_for_others(monkeypatch):
    monkeypatch.setitem(fs.IMPORT_MISSING, "on", False)  # the saved profiles only
    case = fs.case_of(make_row())
    assert (case.tp, case.dp, case.engine) == (4, 1, "vllm")
    if fs.aic_installed():  # NVIDIA's FP8 export of the BF16 release (test_round33_lead.py)
        assert case.model.endswith("nvidia--Llama-3.1-70B-Instruct-FP8_config.json")
        assert case.precision == "checkpoint"
    else:
        assert (case.model, case.precision) == ("llama-3.1-70b", "fp8")
    reasons = {
        "disaggregated": make_row(mode="disagg"),
        "no config": make_row(model_path="acme/Unknown-1B"),
        "no sglang profile": make_row(backend="sglang", model_path="openai/gpt-oss-120b"),
        "no tiersim format": make_row(precision="int2"),
    }
    for reason, row in reasons.items():
        with pytest.raises(fs.Unrepresentable, match=reason):
            fs.case_of(row)


def test_a_row_of_a_model_no_saved_profile_covers_replays_on_tables_imported_for_it(
        monkeypatch):
    pytest.importorskip("aiconfigurator_core")
    row = make_row(backend="trtllm", model_path="Qwen/Qwen3-235B-A22B-FP8", tp_size=4,
                   moe_tp_size=4.0)
    with monkeypatch.context() as saved_only:
        saved_only.setitem(fs.IMPORT_MISSING, "on", False)
        with pytest.raises(fs.Unrepresentable, match="no trtllm profile"):
            fs.case_of(row)
    case = fs.case_of(row)
    tier, sources = fs.replica_tier(case, 8, "fp8")
    tables = {k: v for k, v in sources.items() if k not in ("overhead", "eager")}
    assert all(v.startswith("measured:aiconfigurator trtllm") for v in tables.values())
    assert any(k.startswith("moe fp8_block hidden=4096") for k in tables)


def test_unrepresentable_rows_are_counted_not_raised():
    out = fs.simulate_row(make_row(mode="disagg"), "fp8", P3, fs.Knobs())
    assert out == {"unrepresentable": "disaggregated prefill/decode serving is not modelled"}


def test_a_checkpoint_with_formats_is_served_in_them():
    spec = fs.ModelSpec("X", "does-not-exist", "x/x")
    assert not fs.declares_formats(spec)
    spec = fs.MODELS["MiniMaxAI/MiniMax-M2.5"]
    assert fs.declares_formats(spec)  # block FP8 in its config.json


def test_training_rows_are_the_named_subset():
    df = pd.DataFrame([
        make_row(), make_row(model="Llama-3.1-8B"), make_row(backend="trtllm"),
    ])
    assert list(fs.training_mask(df)) == [True, False, False]


# ---------------------------------------------------------------- error arithmetic and report


def results(**cols) -> pd.DataFrame:
    """A hand-built result frame: measured 100 ms TTFT / 10 ms TPOT unless given."""
    n = len(next(iter(cols.values())))
    base = {"backend": ["vllm"] * n, "model": ["Llama-3.1-70B"] * n,
            "silicon_ttft_ms": [100.0] * n, "silicon_tpot_ms": [10.0] * n,
            "unrepresentable": [np.nan] * n}
    base.update(cols)
    return fs.add_errors(pd.DataFrame(base))


def test_errors_are_predicted_over_measured_minus_one():
    res = results(sim_ttft_ms=[150.0, 50.0], sim_tpot_ms=[11.0, 8.0],
                  aic_ttft_ms=[100.0, 130.0], aic_tpot_ms=[12.0, 10.0])
    assert list(res["ttft_err"]) == pytest.approx([0.5, -0.5])
    assert list(res["tpot_err"]) == pytest.approx([0.1, -0.2])
    assert fs.median_abs(res["tpot_err"]) == pytest.approx(15.0)
    assert fs.median_abs(res["aic_ttft_err"]) == pytest.approx(15.0)


def test_final_line_format_and_same_rows_for_both_estimators():
    res = results(
        sim_ttft_ms=[150.0, 50.0, np.nan], sim_tpot_ms=[11.0, 8.0, np.nan],
        aic_ttft_ms=[100.0, 130.0, 500.0], aic_tpot_ms=[12.0, 10.0, 50.0],
        unrepresentable=[np.nan, np.nan, "no config"],
    )
    # the third row is not replayed, so aiconfigurator's 400% error there is left out too
    assert fs.final_line(res) == (
        "vllm all median |TPOT error| = 15.0%, |TTFT error| = 50.0% (n=2); "
        "aiconfigurator 10.0%, 15.0%"
    )
    assert fs.summary_lines(res)[-1] == fs.final_line(res)
    assert "1 rows: no config" in "\n".join(fs.unrepresentable_lines(res))
    # rows of a model aiconfigurator cannot estimate: "n/a", not "nan%"
    res["aic_tpot_err"] = res["aic_ttft_err"] = np.nan
    assert fs.final_line(res).endswith("; aiconfigurator n/a, n/a")


def test_summary_has_a_line_per_engine_model_and_engine():
    res = results(backend=["trtllm", "vllm", "vllm"],
                  model=["Llama-3.1-70B", "Llama-3.1-70B", "gpt-oss-120b"],
                  sim_ttft_ms=[100.0, 110.0, np.nan], sim_tpot_ms=[10.0, 12.0, np.nan],
                  aic_ttft_ms=[100.0, 100.0, 100.0], aic_tpot_ms=[10.0, 10.0, 10.0],
                  unrepresentable=[np.nan, np.nan, "no config"])
    lines = fs.summary_lines(res)
    assert lines[0].startswith("trtllm Llama-3.1-70B") and "n=  1" in lines[0]
    assert not any(line.startswith("vllm gpt-oss") for line in lines)  # nothing replayed
    assert lines[1].startswith("trtllm all median |TPOT error| = 0.0%")
    assert lines[-1].startswith("vllm all median |TPOT error| = 20.0%, |TTFT error| = 10.0%")
    none = results(backend=["sglang"], model=["Qwen3-32B"], sim_ttft_ms=[np.nan],
                   sim_tpot_ms=[np.nan], unrepresentable=["no sglang profile"])
    assert fs.summary_lines(none)[0] == "sglang: no row replayed (see below)"


def test_fit_picks_the_overhead_eager_costs_and_load_generator_with_the_smallest_error(
        monkeypatch):
    """A stand-in replay whose TPOT error is zero at 0.3 ms + 7.5 us x layers of overhead and
    whose TTFT error is zero at 5 requests per client, +-10% lengths and 0.2 ms of eager time
    per layer; on the MoE training rows (batch 16 here) zero at 0.4 ms per MoE layer: the fit
    must find exactly those."""

    def fake_run(df, kv_dtype, proto, jobs, knobs=None):
        tpot = abs(knobs.overhead_s - 0.3e-3) * 100 + abs(knobs.overhead_per_layer_s - 7.5e-6) * 1e4
        eager = knobs.eager
        if df["model"].isin(["MiniMax-M2.5", "gpt-oss-120b"]).all():
            ttft = abs(eager.per_moe_layer_s - 0.4e-3) * 1e3
        else:
            ttft = (abs(proto.per_client - 5) * 0.1 + abs(proto.spread - 0.1)
                    + abs(eager.per_layer_s - 0.2e-3) * 1e3)
        return pd.DataFrame({"tpot_err": [tpot, -tpot], "ttft_err": [ttft, ttft]})

    monkeypatch.setattr(fs, "run", fake_run)
    monkeypatch.setattr(fs, "FIT_PASSES", 3)
    train = pd.DataFrame([make_row(), make_row(batch_size=16),
                          make_row(model="MiniMax-M2.5"), make_row(model="gpt-oss-120b")])
    knobs, proto = fs.fit(train, "fp8", jobs=1)
    assert knobs.overhead_s == pytest.approx(0.3e-3)
    assert knobs.overhead_per_layer_s == pytest.approx(7.5e-6)
    assert knobs.eager.per_layer_s == pytest.approx(0.2e-3)
    assert knobs.eager.per_moe_layer_s == pytest.approx(0.4e-3)
    assert knobs.eager.graph_max_tokens == 512
    assert proto == fs.Protocol(per_client=5, spread=0.1)


def test_trtllm_fit_uses_its_own_rows_and_keeps_the_fitted_load_generator(monkeypatch):
    """``--fit-engine trtllm``: overhead and eager costs from TensorRT-LLM's training rows only
    (a stand-in replay whose errors vanish at 0.5 ms + 2.5 us x layers, 0.1 ms per layer and
    1.2 ms per MoE layer); the load generator stays the one fitted for vLLM (same client), and
    the knobs change only TensorRT-LLM's profile."""
    seen = []

    def fake_run(df, kv_dtype, proto, jobs, knobs=None):
        seen.append(set(df["backend"]))
        assert proto == fs.Protocol(per_client=7, spread=0.2)
        tpot = abs(knobs.overhead_s - 0.5e-3) * 100 + abs(knobs.overhead_per_layer_s - 2.5e-6) * 1e4
        eager = knobs.eager
        if df["model"].eq("gpt-oss-120b").all():
            ttft = abs(eager.per_moe_layer_s - 1.2e-3) * 1e3
        else:
            ttft = abs(eager.per_layer_s - 0.1e-3) * 1e3
        return pd.DataFrame({"tpot_err": [tpot, -tpot], "ttft_err": [ttft, ttft]})

    monkeypatch.setattr(fs, "run", fake_run)
    monkeypatch.setattr(fs, "fitted", lambda: {"per_client": 7, "length_spread": 0.2})
    train = pd.DataFrame([make_row(backend="trtllm"), make_row(backend="trtllm", batch_size=16),
                          make_row(backend="trtllm", model="gpt-oss-120b"),
                          make_row(model="gpt-oss-120b"), make_row()])
    knobs, proto = fs.fit(train, "fp8", jobs=1, engine="trtllm")
    assert seen and all(backends == {"trtllm"} for backends in seen)
    assert (knobs.engine, proto) == ("trtllm", fs.Protocol(per_client=7, spread=0.2))
    assert knobs.overhead_s == pytest.approx(0.5e-3)
    assert knobs.overhead_per_layer_s == pytest.approx(2.5e-6)
    assert knobs.eager.per_layer_s == pytest.approx(0.1e-3)
    assert knobs.eager.per_moe_layer_s == pytest.approx(1.2e-3)
    vllm, trt = fs.engine_profile("vllm", knobs), fs.engine_profile("trtllm", knobs)
    assert trt.eager == knobs.eager and trt.overhead_s == pytest.approx(0.5e-3)
    assert vllm.eager != knobs.eager and vllm.overhead_s != pytest.approx(0.5e-3)


def test_fit_without_the_engines_training_rows_says_so():
    with pytest.raises(SystemExit, match="no trtllm training rows"):
        fs.fit(pd.DataFrame([make_row()]), "fp8", jobs=1, engine="trtllm")


def test_write_fit_keeps_the_other_engines_entry(monkeypatch, tmp_path):
    """A TensorRT-LLM fit adds its entry to fit.json and leaves vLLM's load generator (which the
    default run and disagg_silicon.py read) alone; a vLLM fit then keeps the TensorRT-LLM entry;
    each writes its overhead and eager cost into its own profile."""
    fit_json = tmp_path / "fit.json"
    fit_json.write_text('{"per_client": 8, "length_spread": 0.3, "overhead_s": 0.0}')
    profiles = {}
    for engine in ("vllm", "trtllm"):
        profiles[engine] = tmp_path / f"{engine}.json"
        profiles[engine].write_text(fs.profile_path(engine).read_text())
    monkeypatch.setattr(fs, "FIT_JSON", fit_json)
    monkeypatch.setattr(fs, "profile_path", lambda engine: profiles[engine])
    monkeypatch.setattr(fs, "profile_file", lambda engine, system=fs.FIT_SYSTEM: str(
        profiles[engine] if system == fs.FIT_SYSTEM else tmp_path / f"{engine}_{system}.json"))
    eager = fs.EagerCost(512, 1e-4, 1e-3, source="fitting")
    trt = fs.Knobs(overhead_s=5e-4, overhead_per_layer_s=7.5e-6, eager=eager, engine="trtllm")
    fs.write_fit(trt, fs.Protocol(per_client=8, spread=0.3), 72, 97)
    doc = json.loads(fit_json.read_text())
    assert (doc["per_client"], doc["length_spread"]) == (8, 0.3)
    assert doc["trtllm"]["overhead_s"] == 5e-4 and doc["trtllm"]["moe_rows"] == 97
    written = json.loads(profiles["trtllm"].read_text())
    assert written["overhead_s"]["per_layer_s"] == 7.5e-6
    assert "--fit-engine trtllm" in written["eager_s"]["source"]
    vllm = fs.Knobs(overhead_s=0.0, overhead_per_layer_s=1e-5, eager=eager)
    fs.write_fit(vllm, fs.Protocol(per_client=5, spread=0.1), 60, 159)
    doc = json.loads(fit_json.read_text())
    assert (doc["per_client"], doc["length_spread"], doc["overhead_per_layer_s"]) == (5, 0.1, 1e-5)
    assert doc["trtllm"]["overhead_s"] == 5e-4


def test_a_model_nobody_listed_replays_from_the_config_aiconfigurator_ships(monkeypatch):
    """A row of a model missing from MODELS (here Qwen3-0.6B) is read from the config
    aiconfigurator-core ships for it, replays on tables imported at its shapes (on the saved
    profile alone: anchored ones, and it says so: its LM head, 151,936 x 1,024, is off NVIDIA's
    GEMM grid; Qwen3-1.7B at TP 2 read none once the profile shipped every grid shape and
    attention shape, round 28), and is reported after the listed models."""
    pytest.importorskip("aiconfigurator_core")
    assert "Qwen/Qwen3-0.6B" not in fs.MODELS
    spec = fs.spec_for("Qwen/Qwen3-0.6B")
    assert spec.name == "Qwen3-0.6B" and spec.tiersim.endswith("Qwen--Qwen3-0.6B_config.json")
    row = make_row(model_path="Qwen/Qwen3-0.6B", model="Qwen3-0.6B", tp_size=1, moe_tp_size=1.0)
    out = fs.simulate_row(row, "auto", P3, fs.Knobs())
    assert out["sim_tpot_ms"] > 0 and out["sim_ttft_ms"] > 0 and out["anchored_tables"] == 0
    with monkeypatch.context() as saved_only:
        saved_only.setitem(fs.IMPORT_MISSING, "on", False)
        assert fs.simulate_row(row, "auto", P3, fs.Knobs())["anchored_tables"] > 0
    assert fs.ordered_models({"Qwen3-0.6B", "Kimi-K2.5", "Llama-3.1-8B"}) == [
        "Llama-3.1-8B", "Kimi-K2.5", "Qwen3-0.6B"]
    unknown = fs.simulate_row(make_row(model_path="nobody/NoSuchModel"), "auto", P3, fs.Knobs())
    assert unknown == {"unrepresentable": "no config for nobody/NoSuchModel: no benchmarks/data/"
                       "configs/NoSuchModel/config.json, and aiconfigurator-core ships no "
                       "nobody--NoSuchModel_config.json"}
    assert fs.spec_for(float("nan")) is None and fs.model_label("") == ""


def test_one_measured_row_replays():
    rows = fs.load_rows()
    row = rows[(rows.backend == "vllm") & (rows.model == "Llama-3.1-70B") & (rows.tp_size == 8)]
    res = fs.run(row.iloc[[0]], "fp8", P3, jobs=1)
    assert res["sim_tpot_ms"].iloc[0] > 0 and np.isfinite(res["tpot_err"].iloc[0])
    assert res["preemptions"].iloc[0] == 0


# ---------------------------------------------------------------- another GPU's rows (held out)


def test_an_h100_row_replays_on_nvidias_h100_tables_with_the_h200_fit():
    """A row measured on H100 runs on the H100 profile (NVIDIA's H100 tables), with the
    overhead and eager cost fitted on H200 carried over and labelled so; the same server on the
    slower GPU decodes slower."""
    row = make_row(system="h100_sxm", tp_size=4, batch_size=16, isl=1024, osl=256)
    case = fs.case_of(row)
    assert case.gpu == "h100"
    h100, sources = fs.replica_tier(case, 16, "auto")
    assert sources["gemm fp8 n=2560 k=8192"].startswith("measured:aiconfigurator vllm")
    assert "applied unchanged to h100_sxm rows" in sources["overhead"]
    h200_prof = fs.resolve_profile(fs.ENGINE_PROFILES["vllm"])
    h100_prof = fs.engine_profile("vllm", gpu="h100")
    assert (h100_prof.overhead_s, h100_prof.overhead_per_layer_s, h100_prof.eager.per_layer_s) == (
        h200_prof.overhead_s, h200_prof.overhead_per_layer_s, h200_prof.eager.per_layer_s)
    on_h100 = fs.simulate_row(row, "auto", P3, fs.Knobs())
    on_h200 = fs.simulate_row(make_row(tp_size=4, batch_size=16, isl=1024, osl=256), "auto", P3,
                              fs.Knobs())
    assert on_h100["sim_tpot_ms"] > on_h200["sim_tpot_ms"]
    assert on_h100["roofline_tables"] == 0


def test_roofline_knob_replays_without_any_profile_on_its_calibration(monkeypatch):
    """``--roofline``: the model a run with no profile gets. Every table is the roofline (the
    FP8 GEMMs' label says what the calibration divides them by) and the host time says where
    it was fitted; its calibration (FP8 kernels derated, vLLM's
    host time) makes it slower than the bare roofline on these H100 FP8 rows, which reads
    faster than NVIDIA's measured tables (the bias the calibration divides out)."""
    from tiersim.perf import roofline_calibration

    row = make_row(system="h100_sxm", tp_size=4, batch_size=16, isl=1024, osl=256)
    roof = fs.Knobs(roofline=True)
    assert fs.engine_profile("vllm", roof, "h100") is None
    tier, sources = fs.replica_tier(fs.case_of(row), 16, "auto", roof)
    tables = {k: v for k, v in sources.items() if k not in fs.HOST_TIME}
    assert tables and sorted(fs.on_roofline(sources)) == sorted(tables)
    # the FP8 GEMMs say what the calibration divided them by; the rest are bare
    assert tables["gemm fp8"] == ("roofline; calibrated: divided by 0.36-0.86 (by rows and "
                                  "weight size), the median ratio of bare-roofline to measured "
                                  "time over NVIDIA's H200 fp8 GEMM tables")
    assert {v for k, v in tables.items() if k != "gemm fp8"} == {"roofline"}
    assert sources["overhead"].startswith("fitted: benchmarks/fidelity_silicon.py --fit")
    assert sources["overhead"].endswith(
        "fitted on the H200, applied unchanged to tiersim's roofline of the H100")
    on_roof = fs.simulate_row(row, "auto", P3, roof)
    on_tables = fs.simulate_row(row, "auto", P3, fs.Knobs())
    assert on_roof["roofline_tables"] > 0 == on_tables["roofline_tables"]
    monkeypatch.setattr(roofline_calibration, "shipped", lambda: None)
    bare = fs.simulate_row(row, "auto", P3, roof)
    assert bare["sim_tpot_ms"] < on_tables["sim_tpot_ms"] < on_roof["sim_tpot_ms"]


def test_a_vllm_fit_is_written_into_every_gpus_profile(tmp_path, monkeypatch):
    """``--fit`` (``write_fit``) rewrites the H200 profile; the other GPUs' vLLM profiles
    (shipped) get the same values, labelled as moved, so they never disagree."""
    h200 = tmp_path / "h200.json"
    h200.write_text(fs.profile_path("vllm").read_text())
    others = {}
    for system in fs.SYSTEM_IMPORTS:
        others[system] = tmp_path / f"{system}.json"
        others[system].write_text(Path(fs.profile_file("vllm", system)).read_text())
    monkeypatch.setitem(fs.ENGINE_PROFILES, "vllm", str(h200))
    monkeypatch.setattr(fs, "profile_path", lambda engine: h200)
    monkeypatch.setattr(fs, "profile_file", lambda engine, system=fs.FIT_SYSTEM: str(
        h200 if system == fs.FIT_SYSTEM else others.get(system, tmp_path / "none.json")))
    monkeypatch.setattr(fs, "FIT_JSON", tmp_path / "fit.json")
    eager = dataclasses.replace(fs.resolve_profile(h200).eager, per_layer_s=3e-4)
    fs.write_fit(fs.Knobs(overhead_s=0.00123, overhead_per_layer_s=2e-6, eager=eager), P3, 5, 7)
    assert fs.resolve_profile(h200).overhead_s == 0.00123
    assert set(others) >= {"h100_sxm", "b200_sxm"}
    for system, path in others.items():
        moved = fs.resolve_profile(path)
        assert (moved.overhead_s, moved.overhead_per_layer_s) == (0.00123, 2e-6), system
        assert moved.eager.per_layer_s == 3e-4
        assert moved.overhead_source.endswith(f"applied unchanged to {system} rows")
        assert moved.gpu == fs.SYSTEM_GPU[system].upper() and len(moved.tables) > 300


def test_shipped_with_merges_a_systems_models_into_the_shipped_ones():
    from tiersim.perf.aiconfigurator import SHIPPED_MODELS

    merged = fs.shipped_with({"llama-3.1-70b": (("nvfp4",), (8, 16)), "new": (("bf16",), (1,))})
    assert set(merged) == set(SHIPPED_MODELS) | {"new"}
    assert merged["llama-3.1-70b"] == (("bf16", "fp8", "nvfp4"), (1, 2, 4, 8, 16))
    assert SHIPPED_MODELS["llama-3.1-70b"] == (("bf16", "fp8"), (1, 2, 4, 8))  # not mutated


def test_a_b200_row_replays_on_nvidias_native_fp4_tables():
    """A B200 NVFP4 row: its experts read the native NVFP4 MoE table (FlashInfer) and every
    table is measured."""
    pytest.importorskip("aiconfigurator_core")  # NVIDIA's NVFP4 config of MiniMax ships there
    row = make_row(system="b200_sxm", model_path="MiniMaxAI/MiniMax-M2.5", precision="fp4",
                   gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4", tp_size=4, batch_size=8)
    case = fs.case_of(row)
    assert case.gpu == "b200" and "NVFP4" in case.model
    tier, sources = fs.replica_tier(case, 8, "auto")
    moe = next(v for k, v in sources.items() if k.startswith("moe nvfp4"))
    assert moe.startswith("measured:aiconfigurator vllm")
    assert fs.on_roofline(sources) == []
    table = fs.engine_profile("vllm", gpu="b200").find(
        "moe", "nvfp4", {"hidden": 3072, "inter": 1536, "num_experts": 256, "top_k": 8,
                         "ep": 1, "tp": 4})
    assert "trtllmnvfp4" in table.extra["kernel"]


def test_rows_of_other_systems_and_without_a_precision(monkeypatch):
    with pytest.raises(fs.Unrepresentable, match="no tiersim GPU for system 'mi300x'"):
        fs.case_of(make_row(system="mi300x"))
    assert fs.case_of(make_row(precision=float("nan"))).precision == "bf16"
    monkeypatch.setitem(fs.IMPORT_MISSING, "on", False)  # the saved profiles only
    with pytest.raises(fs.Unrepresentable, match="no trtllm profile"):
        fs.case_of(make_row(system="h100_sxm", backend="trtllm"))  # H100 TRT: no Llama-70B


def test_other_systems_are_held_out_not_fitted(capsys):
    with pytest.raises(SystemExit):
        fs.main(["--fit", "--system", "h100_sxm"])
    assert "--fit fits on h200_sxm rows only" in capsys.readouterr().err
    assert fs.rows_csv("h100_sxm").name == "silicon_h100.csv"
    assert fs.profile_file("vllm", "h100_sxm").endswith("h100_aiconfigurator_vllm.json")
    assert fs.profile_file("trtllm") == fs.ENGINE_PROFILES["trtllm"]


def test_aiconfigurator_estimates_every_readable_model_listed_or_not():
    pytest.importorskip("aiconfigurator_core")
    rows = pd.DataFrame([
        make_row(id="a", backend="trtllm"),
        make_row(id="b", model_path="Qwen/Qwen3-1.7B", model="Qwen3-1.7B"),
        make_row(id="c", model_path="nobody/NoSuchModel", model="NoSuchModel"),
        make_row(id="d", mode="disagg"),
    ])
    assert list(fs.aic_todo(rows)["id"]) == ["b", "a"]  # vLLM rows first


def test_a_run_listed_twice_counts_once_and_one_filed_under_two_layouts_is_not_scored():
    rows = pd.DataFrame([
        make_row(id="a"),
        make_row(id="a-again", backend_version="0.18.0"),  # same run listed twice
        make_row(id="tp8", tp_size=8, silicon_ttft_ms=55.5, silicon_tpot_ms=7.25),
        make_row(id="tp64", tp_size=64, silicon_ttft_ms=55.5, silicon_tpot_ms=7.25),
        make_row(id="other", tp_size=8, silicon_ttft_ms=60.0, silicon_tpot_ms=7.25),
    ])
    kept = fs.drop_repeats(rows)
    assert list(kept["id"]) == ["a", "tp8", "tp64", "other"]
    why = fs.layout_conflicts(kept)
    assert why.isna().tolist() == [True, False, False, True]
    assert why.iloc[1] == "the same measurement is filed under 2 layouts (which one ran is unknown)"
    blank = pd.DataFrame([make_row(id="x", silicon_tpot_ms=np.nan),
                          make_row(id="y", tp_size=8, silicon_tpot_ms=np.nan)])
    assert fs.layout_conflicts(blank).isna().all()  # two rows measuring nothing do not conflict
    out = fs.simulate_row({**kept.iloc[2].to_dict(), "conflict": why.iloc[2]}, "auto", P3,
                          fs.Knobs())
    assert out == {"unrepresentable": why.iloc[2]}


def test_an_fp4_row_runs_nvidias_nvfp4_checkpoint_of_the_model_where_one_ships():
    """A row of MiniMax-M2.5 (block-FP8 checkpoint) measured at ``fp4`` ran NVIDIA's NVFP4
    checkpoint of it: that config is read, labelled, and estimated by aiconfigurator too; an
    ``fp4`` row of a checkpoint with other formats and no NVFP4 config is not served in the
    wrong format."""
    pytest.importorskip("aiconfigurator_core")
    base = dict(model_path="MiniMaxAI/MiniMax-M2.5", tp_size=4, moe_tp_size=4.0)
    fp8 = make_row(**base, precision="fp8")
    fp4 = make_row(**base, precision="fp4")
    assert fs.row_spec(fp8).name == fs.row_label(fp8) == "MiniMax-M2.5"
    assert fs.row_spec(fp4).name == fs.row_label(fp4) == "MiniMax-M2.5-NVFP4"
    assert fs.row_spec(fp4).aic == "nvidia/MiniMax-M2.5-NVFP4"
    assert fs.case_of(fp4).model.endswith("nvidia--MiniMax-M2.5-NVFP4_config.json")
    qwen = make_row(model_path="Qwen/Qwen3-235B-A22B-FP8", precision="fp4", tp_size=4,
                    moe_tp_size=4.0)
    with pytest.raises(fs.Unrepresentable, match="FP4 run of a checkpoint that declares"):
        fs.case_of(qwen)
    gpt = make_row(model_path="openai/gpt-oss-120b", precision="fp4", tp_size=4, moe_tp_size=4.0)
    assert fs.case_of(gpt).precision == "checkpoint"  # its MXFP4 experts are the FP4 run


def test_a_copy_rounded_to_hundredths_is_the_same_run_and_a_misfiled_twin_leaves_no_doubt():
    """A gap-analysis file copies a run with its times rounded to 0.01 ms: still one run. A
    copy filed under the tp x ep its id contradicts (:func:`id_conflict`) does not put the
    layout of the run it copies in doubt; two rows whose times differ by more are two runs."""
    rows = pd.DataFrame([
        make_row(id="a", silicon_ttft_ms=148.606387, silicon_tpot_ms=10.431418),
        make_row(id="a-copy", silicon_ttft_ms=148.61, silicon_tpot_ms=10.43),
        make_row(id="b", silicon_ttft_ms=148.63, silicon_tpot_ms=10.43),
        make_row(id="m_agg_c8_tp4_ep4_1", silicon_ttft_ms=148.63, silicon_tpot_ms=10.43,
                 tp_size=16, moe_ep_size=4.0),
    ])
    kept = fs.drop_repeats(rows)
    assert list(kept["id"]) == ["a", "b", "m_agg_c8_tp4_ep4_1"]
    assert fs.layout_conflicts(kept).isna().tolist() == [True, False, False]
    misfiled = kept["id"].str.startswith("m_")
    assert fs.layout_conflicts(kept, among=~misfiled).isna().all()


def test_the_copied_rows_count_each_run_once_and_list_doubtful_layouts():
    """Pinned to the copied sample: 967 H200 rows hold 144 repeats (96 to every digit, 48 more
    to the 0.01 ms a gap-analysis copy rounds to); of the 823 left, 71 carry a layout their own
    id contradicts, and no other measurement is filed under two layouts (the twin of a row its
    id contradicts is not in doubt). The H100 file: 868 once repeats count once, 15
    contradicted by their ids."""
    h200 = fs.load_rows()
    assert len(pd.read_csv(fs.rows_csv())) == 967 and len(h200) == 823
    why = h200["conflict"].dropna()
    assert why.str.startswith("the same measurement").sum() == 0
    assert why.str.startswith("its id says").sum() == 71
    h100 = fs.load_rows("h100_sxm")
    assert len(h100) == 868 and h100["conflict"].notna().sum() == 15
    train = fs.training_mask(h200, fs.FIT_TRAINING["trtllm"][1])
    assert train.sum() == 62 and h200.loc[train, "conflict"].isna().all()


def test_a_layout_the_id_contradicts_and_the_recorded_client_count():
    row = make_row(id="m_agg_1024x1024_c16_tp4_ep4_3", tp_size=16, moe_tp_size=4.0,
                   moe_ep_size=4.0)
    assert fs.id_conflict(row) == ("its id says tp4 ep4, its columns TP 16 EP 4 (which ran is "
                                   "unknown)")
    assert fs.id_conflict(make_row(id="m_agg_c8_tp4_ep4_1", moe_tp_size=1.0,
                                   moe_ep_size=4.0)) is None
    assert fs.id_conflict(make_row(id="m_agg_c8_tp4_epnone_1", moe_tp_size=1.0,
                                   moe_ep_size=4.0)) is None  # the engine chose the split
    assert fs.id_conflict(make_row(id="dsr1_h200_agg_c4_cfg81")) is None
    dp = make_row(batch_size=4, silicon_data_source="f.csv; silicon_concurrency=16")
    assert fs.clients(dp) == 16 and fs.clients(make_row(batch_size=4)) == 4


def test_an_h100_replica_holds_an_h100s_kv_cache_and_a_bf16_engine_keeps_bf16_kv():
    case = fs.case_of(make_row(tp_size=4))
    h100 = fs.replica_tier(dataclasses.replace(case, gpu="h100"), 16, "auto")[0]
    h200 = fs.replica_tier(case, 16, "auto")[0]
    assert h100.num_blocks < 0.5 * h200.num_blocks  # 80 GB against 141 GB, same weights
    trt = fs.case_of(make_row(backend="trtllm", precision=float("nan")))
    bf16 = fs.replica_tier(trt, 16, "auto")[1]
    assert any(k.startswith("attn_decode bf16") for k in bf16)
    fp8 = fs.replica_tier(fs.case_of(make_row(backend="trtllm")), 16, "auto")[1]
    assert any(k.startswith("attn_decode fp8") for k in fp8)


@pytest.mark.parametrize("over, reason", [
    ({"batch_size": 0}, "no clients (batch_size 0)"),
    ({"isl": 0}, "isl 0 (at least 1 needed)"),
    ({"osl": 1}, "osl 1 (at least 2 needed)"),
    ({"tp_size": 0}, "tp_size 0 (at least 1 needed)"),
    ({"backend": "tensorrt"}, "no tiersim profile for engine 'tensorrt'"),
    ({"mode": "spec"}, "mode 'spec': only aggregated serving is modelled"),
])
def test_a_row_that_cannot_run_as_a_closed_loop_says_why(over, reason):
    assert fs.simulate_row(make_row(**over), "auto", P3, fs.Knobs()) == {"unrepresentable": reason}


def test_a_newer_sample_missing_a_column_still_loads(monkeypatch, tmp_path):
    rows = pd.DataFrame([make_row(id="a"), make_row(id="b", tp_size=8, silicon_tpot_ms=7.0)])
    rows.drop(columns=["moe_ep_size", "pp_size", "model"]).to_csv(tmp_path / "s.csv", index=False)
    monkeypatch.setattr(fs, "rows_csv", lambda system="h200_sxm": tmp_path / "s.csv")
    df = fs.load_rows()
    assert list(df["id"]) == ["a", "b"] and df["moe_ep_size"].isna().all()
    assert fs.simulate_row({**df.iloc[0].to_dict()}, "auto", P3, fs.Knobs())["sim_tpot_ms"] > 0


def test_a_filter_that_matches_no_row_says_so(capsys):
    assert fs.main(["--model", "Nope", "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{fs.rows_csv()}: no row matches --engine/--model; its models: ")
    assert "Llama-3.1-70B" in err


def test_vllm_rows_cache_prefixes_as_vllm_v1_does_by_default():
    # fresh prompts never hit; a preempted request comes back to its blocks still cached
    vllm = fs.replica_tier(fs.case_of(make_row()), 16, "auto")[0]
    trt = fs.replica_tier(fs.case_of(make_row(backend="trtllm")), 16, "auto")[0]
    assert vllm.limits.enable_prefix_caching and not trt.limits.enable_prefix_caching


def test_after_fit_the_report_replays_the_written_profile_not_the_fitted_knobs(monkeypatch):
    """``--fit`` prints the figures of what ships: the profile it wrote, whose eager cost keeps
    ``--fit-cpp-moe``'s rate for C++-launched experts. Replaying the fit's own knobs (which lack
    that rate) charged Kimi-K2.5's Marlin experts the Triton rate: +22% TTFT in the printout
    against +6% in any later run (2026-12-06)."""
    fitted = fs.Knobs(overhead_s=1e-3, eager=fs.EagerCost(512, 2e-4, 8e-4, source="fitting"))
    seen = []

    class Replayed(Exception):
        pass

    def fake_run(df, kv_dtype, proto, jobs, knobs=None):
        seen.append(knobs)
        raise Replayed

    monkeypatch.setattr(fs, "fit", lambda df, kv, jobs, engine="vllm": (fitted, fs.Protocol(8)))
    monkeypatch.setattr(fs, "write_fit", lambda *a, **k: None)
    monkeypatch.setattr(fs, "run", fake_run)
    with pytest.raises(Replayed):
        fs.main(["--fit", "--engine", "vllm", "--model", "Llama-3.1-70B"])
    assert seen == [fs.Knobs()]
