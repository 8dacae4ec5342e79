"""Round 16 of hostile input and wrong numbers, each found from outside and fixed: the exact line
a user sees, or the number that was wrong."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from test_disagg import split_tier
from test_spec_decode import spec_tier

from tiersim.engine import TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel

# ------------------------------------------------------------------ the engine


def test_a_split_tier_drops_what_its_decoders_cannot_hold_on_arrival_not_after_prefill():
    # request 0 fits a prefill pass (prompt + 1 token) but not a decoder (prompt + outputs):
    # it was prefilled first, holding request 1 behind a long prefill it then threw away
    work = Workload(np.array([0.0, 0.01]), np.array([3000, 100]), np.array([4000, 10]),
                    np.zeros(2, dtype=np.int64))
    split = simulate([split_tier(num_blocks=400)], work)
    aggregated = simulate([TierSpec("t", 1, 400, LinearStepModel(),
                                    split_tier().limits)], work)
    assert split.dropped.tolist() == aggregated.dropped.tolist() == [True, False]
    assert split.first_token_s[1] < 0.1
    assert split.first_token_s[1] == aggregated.first_token_s[1]


def test_speculative_draws_do_not_depend_on_where_the_tier_is_listed():
    rng = np.random.default_rng(3)
    n = 40
    spec = dataclasses.replace(spec_tier(acceptance=(0.6,)), name="spec")
    other = TierSpec("other", 1, 400, LinearStepModel(), spec.limits)
    base = dict(arrival_s=np.cumsum(rng.exponential(0.05, n)),
                input_tokens=rng.integers(10, 300, n), output_tokens=rng.integers(5, 200, n))
    first = simulate([spec, other], Workload(**base, tier=np.zeros(n, dtype=np.int64)))
    second = simulate([other, spec], Workload(**base, tier=np.ones(n, dtype=np.int64)))
    np.testing.assert_array_equal(first.finish_s, second.finish_s)
    np.testing.assert_array_equal(first.output_tokens, second.output_tokens)


# ------------------------------------------------------------------ routing


def test_a_floor_router_fits_its_cuts_on_the_basis_its_floor_is_judged_on():
    # ``confusion`` (zeros too) scores a run on realised draws; the cuts were fitted on
    # expected correctness, so the plan bought the top tier for a floor the draws already met
    from test_routing_constrained import fitted, two_type

    from tiersim.routing.accuracy import expected_matrix

    df = two_type()
    plain, _ = fitted({"policy": "floor", "floor": 0.9}, df)
    confused, a = fitted({"policy": "floor", "floor": 0.9, "confusion": {"fpr": 0.0}}, df)
    assert a.basis == "realised"
    rows = confused.classifier.train_index
    realised_acc = expected_matrix(df, confused.tiers, "realised")[rows]
    _, correct = confused.calibration_rows(df)
    np.testing.assert_array_equal(correct, realised_acc)
    assert confused.cuts.accuracy >= 0.9
    _, expected = plain.calibration_rows(df)
    assert not np.array_equal(expected, correct)


# ------------------------------------------------------------------ profiles and outputs


def test_a_table_axis_of_too_many_points_is_one_line(tmp_path):
    import json

    from tiersim.paths import bundled
    from tiersim.perf.profile import ProfileError, load_profile

    data = json.loads(bundled("profiles", "h200_aiconfigurator_vllm").read_text())
    data["tables"][0]["axes"] = {"m": list(range(1, 10_002))}
    data["tables"][0]["latency_s"] = [1e-3 - i * 1.8e-8 for i in range(10_001)]
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert str(err.value) == (f"{path}: tables[0].axes.m: 10,001 points; a table axis holds at "
                              "most 10,000 (thin it: the step model interpolates between points)")


def test_the_fast_isotonic_fit_pools_at_the_medians_a_plain_pool_takes():
    from tiersim.perf.profile import monotone

    def plain(latency):
        pools = []
        for value in latency:
            pools.append([value])
            while len(pools) > 1 and np.median(pools[-2]) > np.median(pools[-1]):
                pools[-2].extend(pools.pop())
        return np.array([float(np.median(p)) for p in pools for _ in p])

    rng = np.random.default_rng(0)
    for trial in range(200):
        x = rng.random(int(rng.integers(1, 120))) * 1e-4
        if trial % 3 == 0:
            x = np.sort(x)[::-1] + rng.random(x.size) * 1e-6
        np.testing.assert_array_equal(monotone(x), plain(x.tolist()))


def test_a_signal_during_the_renames_waits_for_the_whole_set(tmp_path, monkeypatch):
    import os
    import signal

    from tiersim import outputs

    seen = []
    real = os.replace

    def replace(src, dst):
        real(src, dst)
        seen.append(os.path.basename(dst))
        if len(seen) == 2:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(outputs.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt), outputs.signals_deferred():
        for name in ("a", "b", "c", "manifest.json"):
            (tmp_path / f"{name}.tmp").write_text(name)
            outputs.os.replace(tmp_path / f"{name}.tmp", tmp_path / name)
    assert seen == ["a", "b", "c", "manifest.json"]


def test_the_shipped_h200_profile_is_what_its_rebuild_writes(tmp_path):
    # two MLA tables had not been rebuilt since the importer changed (0.4 us a point)
    import json
    import shutil

    pytest.importorskip("aiconfigurator_core")
    from tiersim.paths import bundled
    from tiersim.perf.aiconfigurator import import_aiconfigurator

    shipped = bundled("profiles", "h200_aiconfigurator_vllm")
    out = tmp_path / shipped.name
    shutil.copy(shipped, out)  # the rebuild keeps the fitted overhead of the file it replaces
    import_aiconfigurator("h200", "vllm", out=out, name=shipped.stem)
    old, new = json.loads(shipped.read_text()), json.loads(out.read_text())
    for data in (old, new):
        data["provenance"].pop("date")
    assert new == old


# ------------------------------------------------------------------ planning


def test_a_plan_behind_a_response_cache_that_answers_everything_costs_what_the_run_costs(
        tmp_path, capsys):
    import json

    from test_hostile_inputs import run_cli

    scenario = tmp_path / "rc.yaml"
    scenario.write_text(
        "name: rc\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\ngpu: H200\nprofile: null\n"
        "trace: {path: azure2023_code.parquet, window: [240, 360], time_scale: 8.0}\n"
        "tiers: [{name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.50}]\n"
        "router: {policy: uniform, response_cache: {size: 200, popularity: {distinct: 2000,"
        " exponent: 1.1}}}\nslo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n")
    code, err = run_cli(capsys, "plan", scenario, "--out", tmp_path / "plan", "--no-report")
    assert code == 0 and "nan" not in err.lower()
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    code, _ = run_cli(capsys, "run", scenario, "--out", tmp_path / "run", "--no-report",
                      "--no-baselines")
    run = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert code == 0 and run["response_cache"]["hit_rate"] == 1.0
    assert plan["plan"]["cost_usd"] == pytest.approx(run["cost_usd"], rel=1e-9)


def test_a_held_data_parallel_layout_is_noted_when_a_tier_is_sized(tmp_path, capsys):
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc()
    doc["tiers"][1].update(gpus_per_replica=2, data_parallel=2)
    path = write_yaml(tmp_path / "dp.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-report")
    assert code == 0
    assert err.count("note: tier bf16: sized with data_parallel 2 at every GPU count it divides "
                     "(1 below it); tensor parallelism alone at those counts is not tried: set "
                     "data_parallel: 1 to size the tier that way") == 1


def test_a_split_tiers_uniform_baseline_names_its_split(tmp_path, capsys):
    # the baseline of a 3P 2D run was sized at 4P 1D and shown as "5 x 2", the run's own size
    from conftest import disagg_file
    from test_hostile_inputs import run_cli

    from tiersim.results import UniformBaseline

    path = disagg_file(tmp_path / "d.yaml", ("prefill_replicas: 4", "prefill_replicas: 3"),
                       ("decode_replicas: 1", "decode_replicas: 2"))
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "r", "--no-report")
    assert code == 0, err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["tiers"]["bf16"]["prefill_replicas"] == 3  # the run's own split: 3P 2D
    uniform = summary["savings"]["uniform"]
    baseline = UniformBaseline(tier="bf16", **uniform["bf16"])
    assert baseline.prefill_replicas is not None
    assert baseline.size() == (f"{baseline.replicas} x 2 ({baseline.prefill_replicas}P "
                               f"{baseline.replicas - baseline.prefill_replicas}D)")
    assert "prefill_replicas" not in UniformBaseline("t", 0.9, 1.0, 2, True, 1).to_json()


# ------------------------------------------------------------------ traces


def test_a_runs_notes_are_kept_in_its_summary_and_report(tmp_path, capsys):
    import json

    from conftest import cheap_first_tiers, tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    trace = tmp_path / "burst.csv"
    rows = ["Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"]
    rows += [f"{i},ChatGPT,{100 + i},{0 if i < 2 else 20},{120 + i},Conversation log"
             for i in range(40)]
    trace.write_text("\n".join(rows) + "\n")
    path = write_yaml(tmp_path / "b.yaml", tiny_doc(trace={"path": str(trace)},
                                                    tiers=cheap_first_tiers()))  # no order note
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-baselines")
    assert code == 0, err
    notes = json.loads((tmp_path / "o" / "summary.json").read_text())["notes"]
    # kept with file names, not the folder the command ran from: same seed, same bytes
    assert notes == ["burst.csv: dropped 2 of 40 rows with 0 response tokens (failed requests "
                     "in BurstGPT; first at row 1)",
                     "burst.csv: times count from the first request kept (row 3, 2 s after the "
                     "first row)"]
    assert all(f"note: {trace}{n.removeprefix('burst.csv')}" in err for n in notes)
    assert "<h3>Notes</h3>" in (tmp_path / "o" / "report.html").read_text()


BURST = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def _notes_of(path):
    import warnings

    from tiersim.trace.loader import read_trace

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = read_trace(path)
    return loaded, [str(w.message) for w in caught]


@pytest.mark.parametrize("name", ["plain.csv.zip", "plain.csv.gz", "plain.csv.xz",
                                  "plain.csv.bz2"])
def test_a_text_trace_named_like_an_archive_is_read_as_the_text_it_is(tmp_path, name):
    path = tmp_path / name
    path.write_text(BURST + "".join(f"{i},ChatGPT,100,20,120,Conversation log\n"
                                    for i in range(5)))
    loaded, _ = _notes_of(path)
    assert len(loaded.table) == 5


def test_a_jsonl_trace_named_gz_is_read_as_text(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    path.write_text("".join(f'{{"timestamp": {i}, "input_length": 100, "output_length": 5}}\n'
                            for i in range(4)))
    loaded, _ = _notes_of(path)
    assert len(loaded.table) == 4


def test_a_failed_burstgpt_row_with_no_prompt_is_dropped_not_refused(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text(BURST + "5,ChatGPT,472,18,490,Conversation log\n5,ChatGPT,0,0,0,"
                    "Conversation log\n6,GPT-4,100,20,120,API log\n")
    loaded, notes = _notes_of(path)
    assert loaded.table["input_tokens"].tolist() == [472, 100]
    assert any("its Model column names 2 models (ChatGPT 50%, GPT-4 50%)" in n for n in notes)
    bad = tmp_path / "bad.csv"
    bad.write_text(BURST + "5,ChatGPT,472,18,490,x\n6,ChatGPT,0,3,3,x\n")
    with pytest.raises(Exception) as err:
        _notes_of(bad)
    assert str(err.value) == (f"{bad}: row 2, column 'Request tokens': token count must be > 0 "
                              "(got 0) in a request that did not fail; fix or remove the row "
                              "(file line 3)")


def test_a_canonical_traces_mooncake_hash_column_is_named_as_not_read(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text('arrival_s,input_tokens,output_tokens,hash_ids\n0.0,100,10,"[1,2]"\n')
    _, notes = _notes_of(path)
    assert any("column 'hash_ids' is not read: a canonical trace's prompt block hashes are "
               "'prefix_hashes'" in n for n in notes)


def test_a_date_alone_has_no_offset(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10,100,10\n"
                    "2024-05-10 00:00:01,100,10\n")
    loaded, _ = _notes_of(path)
    assert loaded.table["arrival_s"].tolist() == [0.0, 1.0]


def test_a_burstgpt_model_mix_note_reads_its_shares_plainly(tmp_path):
    path = tmp_path / "b.csv"
    rows = [f"{i},ChatGPT,100,20,120,x" for i in range(300)]
    rows += ["300, chatgpt ,100,20,120,x", "301,GPT-4,100,20,120,x", "302,,100,20,120,x"]
    path.write_text(BURST + "\n".join(rows) + "\n")
    _, notes = _notes_of(path)
    assert any("its Model column names 3 models (ChatGPT 99%, GPT-4 <1%, (blank) <1%)" in n
               for n in notes)


def test_timestamps_with_and_without_an_offset_are_refused(tmp_path):
    path = tmp_path / "tz.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.5+02:00,100,"
                    "10\n2024-05-10 00:00:01,100,10\n")
    with pytest.raises(Exception) as err:
        _notes_of(path)
    assert str(err.value) == (
        f"{path}: row 2, column 'TIMESTAMP': mixes timestamps with a UTC offset (or Z) and "
        "without one (this row has none, so it would be read as UTC); write every timestamp "
        "the same way (file line 3)")


def test_a_bom_and_a_blank_line_before_the_header_do_not_shift_the_line_named(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf\r\n" + BURST.encode() + b"5,ChatGPT,10,2,12,x\n"
                     b"6,ChatGPT,-3,2,12,x\n")
    with pytest.raises(Exception) as err:
        _notes_of(path)
    assert str(err.value).endswith("(file line 4)")


# ------------------------------------------------------------------ models


def test_a_per_tensor_fp8_moe_says_it_reads_the_block_fp8_rows():
    from tiersim.perf import build_step_model

    for precision, rows in (("fp8", "fp8_block"), ("nvfp4", "int4_wo")):
        step = build_step_model("qwen3-coder-30b-a3b", precision, "h200", tp=1,
                                profile="h200_aiconfigurator_vllm")
        label = next(v for k, v in step.sources().items() if k.startswith("moe"))
        assert label.endswith(f"({precision} read through its {rows} rows)")
    bf16 = build_step_model("qwen3-coder-30b-a3b", "bf16", "h200", tp=1,
                            profile="h200_aiconfigurator_vllm")
    assert "read through" not in next(v for k, v in bf16.sources().items()
                                      if k.startswith("moe"))


def test_a_block_fp8_split_into_partial_blocks_is_noted(tmp_path, capsys):
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.perf.memory import block_split_problem

    config = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
              "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
              "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
              "moe_intermediate_size": 768, "max_position_embeddings": 40960,
              "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                                      "activation_scheme": "dynamic"}}
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    model = load_hf_config(folder)
    assert block_split_problem(model, "checkpoint", 2) == ""  # 384 = 3 blocks
    assert block_split_problem(model, "checkpoint", 4, ep=4) == ""  # whole experts
    assert block_split_problem(model, "bf16", 4) == ""
    doc = tiny_doc(model=str(folder), router={"policy": "uniform"})
    doc["tiers"] = [{"name": "ckpt", "precision": "checkpoint", "replicas": 1,
                     "gpus_per_replica": 4, "cost_per_gpu_hour": 3.5,
                     "accuracy": {"easy": 1.0, "hard": 0.8}}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    note = ("tier ckpt: its block-FP8 expert width 768 over 4 GPUs is 192 per GPU, not whole "
            "128-wide blocks: vLLM refuses to load that split in the versions that check it; "
            "set expert_parallel, or split it over 1 or 2 GPUs")
    assert f"note: {note}" in err
    assert note in json.loads((tmp_path / "o" / "summary.json").read_text())["notes"]
    dense = {**config, "model_type": "qwen2", "intermediate_size": 8960}
    for key in ("num_experts", "num_experts_per_tok", "moe_intermediate_size"):
        dense.pop(key)
    (folder / "config.json").write_text(json.dumps(dense))
    assert block_split_problem(load_hf_config(folder), "checkpoint", 4).endswith(
        "not whole 128-wide blocks: vLLM refuses to load that split in the versions that check "
        "it; split it over 1 or 2 GPUs")


def test_a_split_comparison_names_the_link_its_latencies_assume():
    from tiersim.cli.run import provenance_lines
    from tiersim.paths import bundled

    line = provenance_lines(bundled("scenarios", "disagg"))[0]
    assert line.startswith("latencies simulated, step times from bf16: ")
    assert line.endswith(" + scenario (bf16: prefill-to-decode link)")
