"""Round 15 of hostile input and wrong numbers, each found from outside and fixed: the exact line
a user sees, or the number that was wrong."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import disagg_file, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

from tiersim.perf.profile import AnchoredTable, Profile, ProfileOps, Table, monotone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
            "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
            "vocab_size": 128256, "max_position_embeddings": 131072}


def _table(op: str, dtype: str, key: dict, axis: list[float], latency: list[float],
           **extra: str) -> Table:
    name = "m" if op == "gemm" else "tokens"
    return Table(op, dtype, "public", key, {name: np.asarray(axis, float)},
                 np.asarray(latency, float), extra)


# ------------------------------------------------------------------ a step never slower for less


def test_a_spike_in_a_measured_table_is_read_as_the_next_larger_point():
    # NVIDIA's block-FP8 GEMM at n=5120 k=2048 reads 137 us at m=128 and 50 us at m=129: a
    # batch of 128 decoded 50% slower than one of 256
    spike = _table("gemm", "bf16", {"n": 5120, "k": 2048}, [64, 127, 128, 129, 160, 192, 256],
                   [24e-6, 128e-6, 137e-6, 50e-6, 52e-6, 54e-6, 60e-6])
    assert spike.lookup(128.0) == pytest.approx(54e-6)  # pooled up to 192 at their median
    assert spike.lookup(64.0) == pytest.approx(24e-6)
    assert spike.lookup(256.0) == pytest.approx(60e-6)
    assert list(monotone(np.array([3.0, 1.0, 2.0]))) == [2.0, 2.0, 2.0]


def test_a_flat_run_of_noisy_points_is_not_read_low():
    # a running minimum read NVIDIA's GEMM tables about 2% fast (the least of many samples)
    noisy = np.array([10.1, 10.0, 10.2, 9.6, 10.1, 10.3, 9.9, 10.0, 20.0])
    assert np.median(monotone(noisy)[:-1]) == pytest.approx(np.median(noisy[:-1]), rel=0.01)
    running_min = np.minimum.accumulate(noisy[::-1])[::-1]
    assert np.median(running_min[:-1]) == pytest.approx(9.75)  # 2.5% low


def test_an_anchored_table_is_never_slower_at_a_smaller_batch():
    class Roof:
        """A rescaling whose ratio dips at 16 tokens (another expert layout's routing)."""

        def target(self, t):
            return np.where(np.asarray(t) == 16, 1.0, 2.0)

        def source(self, t):
            return np.ones_like(np.asarray(t, float))

    base = _table("moe", "fp8", {}, [8, 16, 32], [10e-6, 20e-6, 30e-6])
    roof = Roof()
    anchored = AnchoredTable(base, roof.target, roof.source).on_grid("fp8", {})
    times = [float(np.asarray(anchored.lookup(np.array([t]))).reshape(-1)[0])
             for t in (8.0, 16.0, 32.0)]
    assert times == pytest.approx([20e-6, 20e-6, 60e-6])  # 8 tokens: 20 us, not 20 us x 2 = 40


def test_every_layout_of_one_model_anchors_on_the_same_measured_model():
    # Qwen3-Coder-480B at W4A16 borrowed a 0.19 Qwen3-30B table at TP4 and Kimi's 0.24 table at
    # TP8: 7.9x faster at TP8
    from tiersim.perf.profile import _shape_distance

    near = {"hidden": 7168, "inter": 2048, "num_experts": 384, "top_k": 8, "ep": 1, "tp": 8}
    far = {"hidden": 2048, "inter": 768, "num_experts": 128, "top_k": 8, "ep": 1, "tp": 1}
    for tp in (4, 8):
        want = {"hidden": 6144, "inter": 2560, "num_experts": 160, "top_k": 8, "ep": 1, "tp": tp}
        assert _shape_distance("moe", near, want) < _shape_distance("moe", far, want)


def test_a_graph_read_gemm_is_never_slower_at_a_smaller_batch():
    from tiersim.hardware import get_gpu, get_model
    from tiersim.perf.profile import EagerCost
    from tiersim.perf.roofline import RooflineOps

    eager = _table("gemm", "fp8_block", {"n": 1024, "k": 3072}, [1, 16, 17, 32, 64],
                   [58e-6, 78e-6, 60e-6, 86e-6, 79e-6], timing="eager")
    profile = Profile("p", "H200", {}, 0.0, "roofline", [eager],
                      eager=EagerCost(graph_max_tokens=512, source="fitted"))
    model = get_model("Llama-3.1-8B")
    ops = ProfileOps(profile, model, "fp8", get_gpu("H200"),
                     fallback=RooflineOps(model, "fp8", get_gpu("H200")))
    times = ops.gemm(np.array([16.0, 17.0, 32.0, 64.0]), 1024, 3072, "fp8_block")
    assert np.all(np.diff(times) >= 0)
    # the launch floor: the median of the rows at up to 16 tokens (58 and 78 us: 68 us); 16
    # tokens' 10 us pooled with 17's roofline (60 - 68 < 0) at their mean; 32's 18 us pooled
    # with 64's 11 us
    small = max(2e-6, float(ops.fallback.gemm(17.0, 1024, 3072, "fp8_block")))
    assert times == pytest.approx([(10e-6 + small) / 2] * 2 + [14.5e-6] * 2)


# ------------------------------------------------------------------ NVIDIA's folders bridged


def test_an_older_folders_moe_curve_is_carried_to_the_newer_kernel():
    # NVIDIA's vLLM 0.19 INT4 Marlin MoE is 2-4x slower than 0.24's at the one shape both
    # timed (Kimi-K2.5's, which serving rows on vLLM 0.16 match); the 0.19 curve alone made
    # W4A16 slower than BF16 on every Qwen3-30B layout
    pytest.importorskip("aiconfigurator_core")
    from tiersim.hardware import get_model
    from tiersim.perf.aiconfigurator import Importer

    imp = Importer("h200", "vllm")
    table = imp.moe("w4a16", get_model("Qwen3-Coder-30B-A3B"), 1)
    assert table.extra["engine_version"] == "0.19.0 bridged to 0.24.0"
    assert "carried to vllm 0.24.0's kernel" in table.extra["notes"]
    bf16 = imp.moe("bf16", get_model("Qwen3-Coder-30B-A3B"), 1)
    assert table.lookup(128.0) < 0.7 * bf16.lookup(128.0)
    same = imp.moe("bf16", get_model("Qwen3-Coder-30B-A3B"), 1)
    assert "bridged" not in same.extra["engine_version"]  # the newest folder has it


# ------------------------------------------------------------------ plans on the run's basis


def test_the_time_series_counts_a_request_being_served_as_running(tmp_path, capsys):
    doc = tiny_doc()
    doc["tiers"] = [doc["tiers"][1]]
    doc["router"] = {"policy": "uniform"}
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-baselines",
                        "--no-report")
    assert code == 0, err
    ts = pd.read_parquet(tmp_path / "o" / "timeseries.parquet")
    req = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    start = (req["arrival_s"] + req["queue_s"]).to_numpy()
    end = req["finish_s"].to_numpy()
    # since round 26 a row is the time-weighted mean over [time_s, the next row's time_s)
    times = ts["time_s"].to_numpy()
    for t0, t1, running in zip(times[:-1], times[1:], ts["running"], strict=False):
        served = np.clip(np.minimum(end, t1) - np.maximum(start, t0), 0.0, None).sum()
        assert running == pytest.approx(served / (t1 - t0), rel=1e-9, abs=1e-9), t0
    assert ts["running"].iloc[-1] == 0


def test_a_plan_with_a_response_cache_sizes_what_the_run_sizes(tmp_path, capsys):
    # the planner sized for every request; the planned run then called its own fleet 98% dearer
    # than a uniform fleet half its size
    doc = tiny_doc(cost_model="provisioned")
    doc["tiers"] = [dict(doc["tiers"][1], replicas=1)]
    doc["trace"]["time_scale"] = 8.0  # 2 replicas for every request, 1 for the cache's misses
    doc["router"] = {"policy": "uniform", "response_cache": {
        "size": 200, "popularity": {"distinct": 2000, "exponent": 1.1}}}
    path = write_yaml(tmp_path / "rc.yaml", doc)
    code, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report")
    assert code == 0, err
    planned = yaml.safe_load((tmp_path / "p" / "scenario.yaml").read_text())
    code, err = run_cli(capsys, "run", tmp_path / "p" / "scenario.yaml", "--out",
                        tmp_path / "r", "--no-report")
    assert code == 0, err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert planned["tiers"][0]["replicas"] == 1
    assert summary["savings"]["uniform"]["bf16"]["replicas"] == 1


def test_a_planned_scenario_keeps_data_parallel_only_where_it_divides_the_gpus(tmp_path,
                                                                              capsys):
    doc = tiny_doc()
    doc["tiers"] = [dict(doc["tiers"][1], replicas=2, gpus_per_replica=2, data_parallel=2,
                         expert_parallel=True)]
    doc["router"] = {"policy": "uniform"}
    doc["trace"]["window"] = [240, 270]
    path = write_yaml(tmp_path / "dp.yaml", doc)
    code, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report",
                        "--gpus-per-replica", "1")
    assert code == 0, err
    tier = yaml.safe_load((tmp_path / "p" / "scenario.yaml").read_text())["tiers"][0]
    assert tier["gpus_per_replica"] == 1 and tier["data_parallel"] == 1


def test_a_disaggregated_tier_is_sized_at_its_best_split(tmp_path, capsys):
    # sized at the scenario's prefill:decode ratio, then split: 7 x TP2 where 5 meet the SLOs
    path = disagg_file(tmp_path / "d.yaml", ("replicas: 5", "replicas: 2"),
                       ("prefill_replicas: 4", "prefill_replicas: 1"))
    code, err = run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--no-report",
                        "--gpus-per-replica", "2")
    assert code == 0, err
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert plan["plan"]["replicas"]["bf16"] <= 5  # disagg.yaml's own 5 x TP2 (4P 1D) meet both
    code, err = run_cli(capsys, "run", tmp_path / "p" / "scenario.yaml", "--out",
                        tmp_path / "r", "--no-report", "--no-baselines")
    assert code == 0, err
    run = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert run["ttft_p99_s"] == pytest.approx(plan["plan"]["margins"]["ttft_p99_s"]["value"])


def test_a_plan_that_no_replica_count_can_fix_says_what_sets_the_p99():
    from tiersim.plan.search import _double

    class Stuck:
        ok, violators, overshoot = False, ("a",), 3.0

    replicas, why = _double(["a"], {"a": 1}, lambda r: Stuck(), 1024)
    assert replicas is None
    assert "in a cascade the first pass an escalated request waits for" in why


# ------------------------------------------------------------------ sweeps


def _sweep_doc(tmp_path, sweep: dict, **overrides) -> str:
    doc = tiny_doc(**overrides)
    doc["trace"]["window"] = [240, 270]
    doc["sweep"] = sweep
    return str(write_yaml(tmp_path / "s.yaml", doc))


def test_a_renamed_tier_keeps_the_axis_that_names_it(tmp_path, capsys):
    # renaming tier 1 removed the tier another axis names: the whole sweep aborted, for ever;
    # then those points failed alone; an axis now names the base scenario's tier in every point
    path = _sweep_doc(tmp_path, {"tiers.1.name": ["bf16", "big"], "seed": [0],
                                 "tiers.bf16.replicas": [1, 2]})
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "o", "-w", "1",
                        "--no-report", "--no-baselines")
    assert code == 0, err
    frame = pd.read_parquet(tmp_path / "o" / "sweep.parquet")
    assert sorted(frame["status"]) == ["ok"] * 4


def test_a_hand_edited_point_record_is_run_again(tmp_path, capsys):
    from tiersim.sweep.store import read_points

    path = _sweep_doc(tmp_path, {"seed": [0, 1]})
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "o", "-w", "1",
                        "--no-report", "--no-baselines")
    assert code == 0, err
    files = sorted((tmp_path / "o" / "points").glob("*.json"))
    edits = [lambda r: r["summary"].update(ttft_p99_s="fast"),
             lambda r: r["values"].update(seed=7)]
    for file, edit in zip(files, edits, strict=True):
        record = json.loads(file.read_text())
        edit(record)
        file.write_text(json.dumps(record))
    assert read_points(tmp_path / "o") == {}
    (files[0]).write_text(json.dumps({**json.loads(files[0].read_text()), "summary": {}}))
    assert read_points(tmp_path / "o") == {}


def test_a_sweep_point_records_the_code_that_ran_it():
    from tiersim.sweep.run import _package_digest, tiersim_version

    assert tiersim_version().endswith("+" + _package_digest())
    assert len(_package_digest()) == 12


def test_raising_a_limit_keeps_a_sweeps_finished_points():
    from tiersim.sweep.run import base_digest

    doc = tiny_doc()
    assert base_digest(doc) == base_digest({**doc, "limits": {"max_sweep_points": 20000}})


def test_a_grid_above_the_hard_cap_is_not_told_to_raise_a_limit():
    from tiersim.sweep.axes import SweepError, expand

    with pytest.raises(SweepError) as caught:
        expand({"a": list(range(1001)), "b": list(range(1000))}, "s.yaml", 2_000_000)
    assert "split it into smaller sweeps" in str(caught.value)
    with pytest.raises(SweepError) as caught:
        expand({"a": list(range(11))}, "s.yaml", 10)
    assert str(caught.value).endswith("to allow more (at most 1,000,000)")


def test_a_scenario_without_a_sweep_map_says_its_sweep_is_one_point(tmp_path, capsys):
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "o", "-w", "1",
                        "--no-report", "--no-baselines")
    assert code == 0, err
    assert f"note: {path}: has no sweep: map, so the sweep is its one point" in err


def _two_point_sweep(tmp_path, capsys):
    """A finished two-seed sweep into ``tmp_path / "o"``: its sweep.json path and content."""
    path = _sweep_doc(tmp_path, {"seed": [0, 1]})
    code, err = run_cli(capsys, "sweep", path, "--out", tmp_path / "o", "-w", "1",
                        "--no-report", "--no-baselines")
    assert code == 0, err
    manifest = tmp_path / "o" / "sweep.json"
    return manifest, json.loads(manifest.read_text())


def test_a_report_refuses_a_sweep_table_short_of_its_points(tmp_path, capsys):
    manifest, doc = _two_point_sweep(tmp_path, capsys)
    doc["points"].append({"point_id": "ffffffffffff", "index": 2, "values": {"seed": 2}})
    manifest.write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", tmp_path / "o"))
    assert line == (f"Error: {tmp_path / 'o'}: sweep.parquet holds 2 of the 3 points sweep.json "
                    "lists (the sweep was extended or stopped before its table was rewritten); "
                    "run its `tiersim sweep` command again to finish it")
    doc["points"].pop()
    manifest.write_text(json.dumps(doc))
    run = tmp_path / "run"
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "r.yaml", doc), "--out", run,
                        "--no-baselines", "--no-report")
    assert code == 0, err
    (tmp_path / "o" / "summary.json").write_bytes((run / "summary.json").read_bytes())
    line = one_error_line(*run_cli(capsys, "report", tmp_path / "o"))
    assert "holds a sweep (sweep.parquet) and a run's summary.json" in line


def test_a_report_refuses_a_sweep_table_of_more_points_than_sweep_json(tmp_path, capsys):
    """A table of an earlier, bigger grid (a sweep of a cut grid killed before its table was
    rewritten) is not drawn as the grid sweep.json lists."""
    manifest, doc = _two_point_sweep(tmp_path, capsys)
    doc["points"].pop()
    manifest.write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", tmp_path / "o"))
    assert line == (f"Error: {tmp_path / 'o'}: sweep.parquet holds 1 point sweep.json does not "
                    "list (the table is of an earlier grid, left by a sweep stopped before its "
                    "table was rewritten); run its `tiersim sweep` command again to rewrite it")


def test_a_half_written_report_a_kill_left_is_removed_by_the_next_command(tmp_path, capsys):
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    path = write_yaml(tmp_path / "s.yaml", doc)
    (tmp_path / "o").mkdir()
    left = tmp_path / "o" / ".report-zzz.html.tmp"
    left.write_bytes(b"x" * 100)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-baselines",
                        "--no-report")
    assert code == 0, err
    assert not left.exists()


def test_a_local_ray_gets_as_many_cpus_as_workers(monkeypatch):
    from tiersim.sweep import executors

    seen = {}

    class FakeRay:
        def init(self, **kwargs):
            seen.update(kwargs)

    executors._ray_init(FakeRay(), None, 2)
    assert seen["num_cpus"] == 2


# ------------------------------------------------------------------ traces


def test_a_parquet_footer_that_miscounts_its_rows_is_refused(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    good = tmp_path / "t.parquet"
    pq.write_table(pa.table({"arrival_s": np.arange(300.0), "input_tokens": [10] * 300,
                             "output_tokens": [5] * 300}), good)
    data = good.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    at = data.index(b"\x16\xd8\x04", footer)  # num_rows 300 as a Thrift i64 field
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(data[:at] + b"\x16\xec\x04" + data[at + 3:])  # 310
    line = one_error_line(*run_cli(capsys, "trace", "inspect", bad))
    assert line == (f"Error: {bad}: its footer says 310 rows but its row groups hold 300; the "
                    "file is damaged, write it again")


def test_a_blank_line_before_a_csv_header_keeps_the_header_checks(tmp_path, capsys):
    dup = tmp_path / "dup.csv"
    dup.write_text("\narrival_s,input_tokens,output_tokens,input_tokens\n0,10,5,7000\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", dup))
    assert "names the column 'input_tokens' twice" in line
    wide = tmp_path / "wide.csv"
    wide.write_text("\n" + ",".join(f"c{i}" for i in range(20000)) + "\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", wide))
    assert "first line is longer than 65,536 bytes" in line


def test_a_trace_with_arrival_times_and_length_columns_is_a_trace(tmp_path, capsys):
    # inspect read it as lengths (input p50 1000), run refused it as having no arrival times
    from tiersim.cli.app import main

    path = tmp_path / "mix.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,num_prefill_tokens,"
                    "num_decode_tokens\n0,10,5,1000,900\n1,20,6,1000,900\n")
    capsys.readouterr()
    assert main(["trace", "inspect", str(path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["format"] == "canonical" and stats["input_tokens"]["p50"] == 15.0


def test_inspect_refuses_a_window_on_a_file_without_arrival_times(capsys):
    line = one_error_line(*run_cli(capsys, "trace", "inspect", "sharegpt_lengths", "--window",
                                   "0", "10"))
    assert line.endswith("holds token lengths but no arrival times, so --window has nothing "
                         "to act on; drop it")


def test_inspect_shows_a_file_name_with_escapes_as_text(tmp_path, capsys):
    name = tmp_path / "e\x1b[31m.csv"
    name.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n")
    from tiersim.cli.app import main

    capsys.readouterr()
    assert main(["trace", "inspect", str(name)]) == 0
    out = capsys.readouterr().out
    assert "\x1b[31m" not in out and "\\x1b[31m" in out


def test_a_late_arrival_is_shown_exactly(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n999999999,20,6\n"
                    "1000000001,20,6\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert "arrival 1000000001 s is more than 1e+09 s" in line


# ------------------------------------------------------------------ models and scenarios


def test_a_2507_release_is_not_read_as_the_catalogues_40k_context_model():
    from tiersim.errors import TiersimError
    from tiersim.hardware import get_model

    with pytest.raises(TiersimError, match="^unknown model 'Qwen3-30B-A3B-2507'"):
        get_model("Qwen3-30B-A3B-2507")


@pytest.mark.parametrize("make", ["folder", "fifo", "dangling"])
def test_an_unreadable_hf_quant_config_is_not_skipped(tmp_path, make):
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(LLAMA_8B))
    side = folder / "hf_quant_config.json"
    if make == "folder":
        side.mkdir()
    elif make == "fifo":
        os.mkfifo(side)
    else:
        side.symlink_to(tmp_path / "missing-blob")
    what = ("a link that leads to no file" if make == "dangling"
            else "not a regular file (a folder, device or pipe)")
    with pytest.raises(TiersimError) as caught:
        load_hf_config(folder)
    assert str(caught.value) == (f"{side}: {what}; the checkpoint's formats are read from it: "
                                 "put the file there, or remove the name")


def test_a_config_quantization_beside_a_side_file_says_which_decides(tmp_path):
    from tiersim.errors import Note
    from tiersim.hardware.hf_config import load_hf_config

    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(
        dict(LLAMA_8B, quantization_config={"quant_method": "fp8"})))
    (folder / "hf_quant_config.json").write_text(json.dumps(
        {"quantization": {"quant_algo": "NVFP4", "group_size": 16}}))
    with pytest.warns(Note, match="not read: .*quantization_config \\(fp8\\) decides"):
        model = load_hf_config(folder)
    assert {fmt for _, fmt, _ in model.checkpoint} == {"fp8"}


def test_a_string_flag_in_a_config_is_refused(tmp_path):
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "mixtral", "hidden_size": 4096,
                                "intermediate_size": 14336, "num_hidden_layers": 32,
                                "num_attention_heads": 32, "num_key_value_heads": 8,
                                "vocab_size": 32000, "num_local_experts": 8,
                                "num_experts_per_tok": 2, "use_qk_norm": "false"}))
    with pytest.raises(TiersimError, match="key 'use_qk_norm': must be true or false"):
        load_hf_config(path)


def _scenario_error(tmp_path, capsys, doc) -> str:
    path = write_yaml(tmp_path / "s.yaml", doc)
    return one_error_line(*run_cli(capsys, "run", path, "--no-baselines", "--no-report"))


def test_a_response_cache_key_the_trace_lacks_is_refused(tmp_path, capsys):
    doc = tiny_doc()
    doc["trace"] = {"path": "mooncake_synthetic.parquet", "window": [0, 60]}
    doc["router"] = {"policy": "static_split", "fractions": [0.5, 0.5],
                     "response_cache": {"size": 20, "key": "prompt_hsah"}}
    line = _scenario_error(tmp_path, capsys, doc)
    assert line.endswith("router.response_cache.key: the trace has no 'prompt_hsah' column; "
                         "name one it has, or drop key: to use prompt_hash / prefix_hashes")
    doc["router"]["response_cache"]["key"] = "input_tokens"
    line = _scenario_error(tmp_path, capsys, doc)
    assert "'input_tokens' is not a prompt key" in line


def test_a_draft_of_another_vocabulary_is_refused(tmp_path, capsys):
    doc = tiny_doc(model="Llama-3.1-8B")
    doc["tiers"][1]["speculative"] = {"k": 3, "acceptance": 0.7,
                                      "draft_model": "Qwen3-Coder-30B-A3B"}
    line = _scenario_error(tmp_path, capsys, doc)
    assert line.endswith("tiers[1].speculative.draft_model: Qwen3-Coder-30B-A3B's vocabulary "
                         "(151,936 tokens) is not Llama-3.1-8B's (128,256); a draft proposes "
                         "token ids the served model verifies, so use a draft of the same "
                         "tokenizer")


def test_a_draft_no_smaller_than_its_target_is_refused(tmp_path, capsys):
    """A 70B draft for an 8B target ran (TPOT 5x slower than without speculation) and one for
    a 70B target too: a draft must have fewer parameters than the model it drafts for."""
    doc = tiny_doc(model="Llama-3.1-8B")
    doc["tiers"][1]["speculative"] = {"k": 3, "acceptance": 0.7, "draft_model": "Llama-3.1-70B"}
    doc["tiers"][1]["gpus_per_replica"] = 4
    line = _scenario_error(tmp_path, capsys, doc)
    assert line.endswith("tiers[1].speculative.draft_model: Llama-3.1-70B (70.6 B parameters) is "
                         "not smaller than Llama-3.1-8B (8.0 B parameters); a draft must have "
                         "fewer parameters than the target, or its k steps cost more than the "
                         "tokens they save, so use a smaller draft of the same tokenizer (the "
                         "path of its config.json) or a draft head (drop draft_model)")
    doc["model"] = "Llama-3.1-70B"
    line = _scenario_error(tmp_path, capsys, doc)
    assert line.endswith("Llama-3.1-70B (70.6 B parameters) is not smaller than Llama-3.1-70B "
                         "(70.6 B parameters); a draft must have fewer parameters than the "
                         "target, or its k steps cost more than the tokens they save, so use a "
                         "smaller draft of the same tokenizer (Llama-3.1-8B) or a draft head "
                         "(drop draft_model)")


def test_expert_parallel_on_a_dense_model_is_refused_at_any_gpu_count(tmp_path, capsys):
    doc = tiny_doc(model="Llama-3.1-8B")
    doc["tiers"][1]["expert_parallel"] = True
    line = _scenario_error(tmp_path, capsys, doc)
    assert line.endswith("tiers[1].expert_parallel: Llama-3.1-8B has no experts; "
                         "expert_parallel needs a MoE model (drop it)")


def test_a_checkpoint_tier_of_a_bf16_checkpoint_reads_the_bf16_prior(tmp_path, capsys):
    doc = tiny_doc()
    doc["tiers"][1]["precision"] = "checkpoint"
    doc["trace"]["window"] = [240, 270]
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-baselines",
                        "--no-report")
    assert code == 0, err


def test_an_empty_or_looping_model_name_says_so(tmp_path):
    from tiersim.errors import TiersimError
    from tiersim.hardware import get_model

    with pytest.raises(TiersimError, match="^model name is empty; "):
        get_model("")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(TiersimError, match="a link that leads to no file \\(or the links loop"):
        get_model(str(tmp_path / "a"))


def test_an_unknown_kv_dtype_lists_auto():
    from tiersim.errors import TiersimError
    from tiersim.hardware.precisions import kv_dtype_bytes

    with pytest.raises(TiersimError, match="use 'bf16', 'fp8' or 'auto'"):
        kv_dtype_bytes("fp4")  # fp8_e5m2 has its own line (round 22)


# ------------------------------------------------------------------ the harness


def test_the_harness_names_a_config_file_by_its_stem(tmp_path):
    from tiersim.calibrate.shapes import from_config

    path = tmp_path / "Qwen--Qwen3-8B_config.json"
    path.write_text(json.dumps(dict(LLAMA_8B, model_type="llama")))
    assert from_config(path).name == "Qwen--Qwen3-8B_config"


def test_a_torch_without_fp8_is_one_line(monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    from tiersim.calibrate.cli import main

    monkeypatch.delattr(torch, "float8_e4m3fn")
    code = main(["--device", "cpu", "--quick", "--out", "/tmp/never-written.json"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert err.strip().startswith(f"Error: torch {torch.__version__} has no float8_e4m3fn")


def test_a_plan_names_a_tier_whose_own_p99_is_over_the_slo():
    # the fleet's p99 TPOT met 0.1 s while BF16's 28% of requests saw 131 ms, and nothing said so
    from tiersim.cli.plan import _tiers_over_slo

    chosen = {"per_tier": {"fp8": {"requests": 72, "tpot_p99_s": 0.08, "ttft_p99_s": 0.4},
                           "bf16": {"requests": 28, "tpot_p99_s": 0.131, "ttft_p99_s": 0.5}}}
    lines = _tiers_over_slo(chosen, {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1})
    assert lines == ["  note: tier bf16's own tpot_p99_s is 0.131 s (modelled), "
                     "over the 0.1 s SLO, which "
                     "the fleet's p99 meets (28% of the requests go to it)"]


def test_a_trace_files_checks_run_once_per_version_of_it(tmp_path, monkeypatch):
    # a million-line Mooncake JSONL was scanned three times (5 s each) before it was parsed
    from tiersim.trace import filecheck as source

    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n")
    calls = []
    real = source.check_shape
    monkeypatch.setattr(source, "check_shape", lambda p, kind: calls.append(p) or real(p, kind))
    source._checked_kind.cache_clear()
    assert source.open_checked(path) == source.open_checked(path) == "csv"
    assert len(calls) == 1
    path.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1,20,6\n")  # a new version
    os.utime(path, ns=(1, 1))
    source.open_checked(path)
    assert len(calls) == 2
