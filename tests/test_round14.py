"""Round 14 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the number that was wrong."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.hardware.hf_config import load_hf_config
from tiersim.hardware.precisions import weight_formats
from tiersim.input_files import file_digest
from tiersim.perf.memory import checkpoint_bytes, kv_bytes_per_token
from tiersim.trace import load_trace

LLAMA_70B = {"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672,
             "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
             "vocab_size": 128256, "max_position_embeddings": 131072}
QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
             "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
             "num_experts_per_tok": 8, "vocab_size": 151936}
W4_GROUP = {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 128}}


def config(tmp_path, fields: dict, quant: dict | None = None, side: dict | None = None):
    """A model folder holding ``config.json`` (and ``hf_quant_config.json`` when given)."""
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    doc = dict(fields, **({"quantization_config": quant} if quant else {}))
    (folder / "config.json").write_text(json.dumps(doc))
    if side is not None:
        (folder / "hf_quant_config.json").write_text(json.dumps(side))
    return folder


# ------------------------------------------------------------------ weight formats by layer


def test_an_ignore_list_naming_one_layer_keeps_the_rest_of_the_group_quantised(tmp_path):
    # one of 80 down_proj matrices left in BF16 made every layer's MLP BF16: 123 GB, not 40
    quant = {"quant_method": "compressed-tensors", "config_groups": {"g": W4_GROUP},
             "ignore": ["lm_head", "model.layers.0.mlp.down_proj"]}
    model = load_hf_config(config(tmp_path, LLAMA_70B, quant))
    mlp = weight_formats(model, "checkpoint").mlp
    assert mlp.name == "w4a16"
    assert mlp.weight_bits == pytest.approx(4.125 + (16 - 4.125) / (3 * 80))  # down_proj: 1/3
    assert "some modules in another format" in mlp.label
    assert checkpoint_bytes(model) / 1e9 == pytest.approx(39.85, abs=0.01)


def test_an_ignore_list_of_every_layer_is_the_group_in_bf16(tmp_path):
    quant = {"quant_method": "fp8", "modules_to_not_convert": ["re:.*self_attn.*"]}
    model = load_hf_config(config(tmp_path, LLAMA_70B, quant))
    assert [g for g, *_ in model.checkpoint] == ["mlp"]


def test_a_long_ignore_list_of_plain_names_is_matched_in_time(tmp_path):
    names = [f"model.layers.{i}.mlp.experts.{e}.gate_proj" for i in range(80) for e in range(64)]
    model = load_hf_config(config(tmp_path, LLAMA_70B, {"quant_method": "fp8",
                                                        "modules_to_not_convert": names}))
    assert model.checkpoint == (("attention", "fp8", 8.0), ("mlp", "fp8", 8.0))


def test_modelopt_mixed_precision_in_config_groups_is_read(tmp_path):
    # it was read as all BF16: 141 GB for an NVFP4 checkpoint of 42 GB
    nvfp4 = {"num_bits": 4, "type": "float", "group_size": 16}  # W4A4: activations NVFP4 too
    quant = {"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION", "ignore": ["lm_head"],
             "config_groups": {"group_0": {"targets": ["Linear"], "weights": nvfp4,
                                           "input_activations": nvfp4}}}
    model = load_hf_config(config(tmp_path, LLAMA_70B, quant))
    assert model.checkpoint == (("attention", "nvfp4", 4.5), ("mlp", "nvfp4", 4.5))
    assert checkpoint_bytes(model) / 1e9 == pytest.approx(42.71, abs=0.01)


def test_modelopt_per_layer_formats_are_counted_layer_by_layer(tmp_path):
    # layer 0's format was taken for all 48: 31.2 GB where 47 of 48 layers are NVFP4 (18.4 GB);
    # a key naming a module outranks one naming its parent
    layers = {f"model.layers.{i}.{part}": {"quant_algo": "FP8" if i == 0 else "NVFP4"}
              for i in range(48) for part in ("self_attn", "mlp.experts")}
    layers["model.layers.47.self_attn.q_proj"] = {"quant_algo": "UNQUANTIZED"}
    side = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": layers}}
    model = load_hf_config(config(tmp_path, QWEN3_MOE, side=side))
    fmt = dict((g, (f, b)) for g, f, b in model.checkpoint)
    q_share = 32 * 128 / (2 * 32 * 128 + 2 * 4 * 128)  # q_proj's share of the attention weights
    last = q_share * 16.0 + (1 - q_share) * 4.5
    assert fmt["experts"] == ("nvfp4", pytest.approx((8.0 + 47 * 4.5) / 48))
    assert fmt["attention"] == ("nvfp4", pytest.approx((8.0 + 46 * 4.5 + last) / 48))
    assert checkpoint_bytes(model) / 1e9 == pytest.approx(18.37, abs=0.02)


def test_formats_are_weighed_module_by_module(tmp_path):
    # targets were checked on layer 0's stand-in modules and applied to whole groups; an MLP
    # split across formats took the first group's; an ignore list naming 3 of 128 experts made
    # all of them BF16 (hand counts: parameters x bits / 8)
    def gb(fields, quant=None, side=None):
        return checkpoint_bytes(load_hf_config(config(tmp_path, fields, quant, side))) / 1e9

    llama = dict(LLAMA_70B, hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                 intermediate_size=14336)
    w4 = {"num_bits": 4, "type": "int", "group_size": 128}
    ct = {"quant_method": "compressed-tensors", "ignore": ["lm_head"]}
    later = {"targets": [r"re:model\.layers\.([1-9]|[12][0-9]|3[01])\..*"], "weights": w4}
    first = {**ct, "ignore": ["lm_head", r"re:model\.layers\.0\..*"]}  # vLLM: targeted or ignored
    assert gb(llama, {**first, "config_groups": {"g": later}}) == pytest.approx(6.024, abs=1e-3)
    down = {"targets": ["re:.*down_proj"], "weights": w4}
    rest = {**ct, "ignore": ["lm_head", "re:.*(q|k|v|o|gate|up)_proj"]}
    assert gb(llama, {**rest, "config_groups": {"g": down}}) == pytest.approx(13.271, abs=1e-3)
    named_first = {"g0": {"targets": ["Linear"], "weights": w4},
                   "g1": {"targets": ["re:.*self_attn.*"], "weights": {"num_bits": 8,
                                                                       "type": "float"}}}
    assert gb(llama, {**ct, "config_groups": named_first}) == pytest.approx(6.351, abs=1e-3)
    some = {"quant_method": "fp8", "weight_block_size": [128, 128],
            "modules_to_not_convert": [r"re:.*experts\.(0|64|127)\..*"]}
    assert gb(QWEN3_MOE, some) == pytest.approx(31.854, abs=1e-3)


@pytest.mark.parametrize(("weights", "expected"), [
    ({"num_bits": 4, "type": "float", "group_size": 32}, None),  # MXFP4, said not modelled
    ({"num_bits": "4", "type": "int"},
     "key 'quantization_config.config_groups.g.weights.num_bits': must be a whole number of "
     "bits (got \"4\")"),
])
def test_compressed_tensors_formats(tmp_path, weights, expected):
    quant = {"quant_method": "compressed-tensors", "config_groups": {"g": {
        "targets": ["Linear"], "weights": weights}}}
    folder = config(tmp_path, QWEN3_MOE, quant)
    if expected is None:
        model = load_hf_config(folder)
        assert dict((g, f) for g, f, _ in model.checkpoint)["experts"] == "mxfp4"
        return
    with pytest.raises(Exception) as err:
        load_hf_config(folder)
    assert str(err.value) == f"{folder / 'config.json'}: {expected}"


def test_a_null_head_dim_is_hidden_over_heads(tmp_path):
    fields = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "head_dim": None, "vocab_size": 32768, "sliding_window": None}
    assert load_hf_config(config(tmp_path, fields)).head_dim == 128


# ------------------------------------------------------------------ KV bytes with "auto"


def test_auto_kv_bytes_are_the_declared_fp8_everywhere(tmp_path):
    # disaggregation and KV offload sized blocks at BF16 for a checkpoint declaring FP8 KV
    side = {"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8",
                             "exclude_modules": ["lm_head"]}}
    model = load_hf_config(config(tmp_path, QWEN3_MOE, side=side))
    assert kv_bytes_per_token(model, "auto") == kv_bytes_per_token(model, "fp8")
    assert kv_bytes_per_token(model, "auto") == kv_bytes_per_token(model, "bf16") / 2


# ------------------------------------------------------------------ sweeps and outputs


def test_a_file_rewritten_with_its_mtime_kept_is_hashed_again(tmp_path):
    # a sweep recorded the old digest for points that read the new content, and mixed them
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,000001,000001\n")
    before = file_digest(path)
    stat = path.stat()
    path.write_text("arrival_s,input_tokens,output_tokens\n0,000001,000003\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_mtime_ns == stat.st_mtime_ns
    assert file_digest(path) != before


@pytest.mark.parametrize("argv", [("--out", ""), ("--out=",), ("-o", " ")])
def test_an_empty_out_folder_is_refused(tmp_path, capsys, monkeypatch, argv):
    # it was read as ".": the run wrote into, and overwrote files of, the current folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.html").write_text("mine")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    line = one_error_line(*run_cli(capsys, "run", scenario, *argv))
    assert line == ("Error: --out is empty (an unset shell variable?): it would write into the "
                    "current folder; name the folder, or give --out . for this one")
    assert (tmp_path / "report.html").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "s.yaml"]


def test_analytic_finds_a_bundled_scenario_and_trace_by_name(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "analytic", "--scenario", "routing_example.yaml")
    assert code == 0 and "using the bundled scenarios/routing_example.yaml" in err
    line = one_error_line(*run_cli(capsys, "analytic", "--trace", "azure2023_conv.parquet",
                                   "--cheap", "a", "--top", "b"))
    assert "no column correct_a, correct_b" in line  # found: it is the labels that are missing


# ------------------------------------------------------------------ traces


def test_burstgpt_times_count_from_the_first_request_kept(tmp_path, capsys):
    # a failed first row 1,000 s before the rest made the run 1,010 s long and 100x the cost
    trace = tmp_path / "bg.csv"
    trace.write_text("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                     "0,ChatGPT,472,0,472,Conversation log\n"
                     "1000,ChatGPT,472,5,477,Conversation log\n"
                     "1010,ChatGPT,10,5,15,Conversation log\n")
    table = load_trace(trace)
    assert table["arrival_s"].tolist() == [0.0, 10.0]
    assert table["request_id"].tolist() == [1, 2]


@pytest.mark.parametrize(("name", "content", "expected"), [
    # the BOM hid a repeated column of a CSV
    ("t.csv", b"\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens,TIMESTAMP\n"
              b"2023-11-16 18:15:46,374,44,2023-11-16 18:15:40\n",
     "names the column 'TIMESTAMP' twice (the header, file line 1); keep one (which copy holds "
     "the data cannot be known)"),
    # the BOM took the blame for a later JSON line
    ("t.jsonl", b'\xef\xbb\xbf{"timestamp": 0, "input_length": 1000, "output_length": 10}\n'
                b'{"timestamp": 2, "input_length": "x", "output_length": 10}\n',
     "row 2: key 'input_length' is text here and a number on earlier lines; write every line's "
     "value of that key the same way (file line 2)"),
])
def test_a_bom_neither_hides_nor_takes_the_blame(tmp_path, capsys, name, content, expected):
    trace = tmp_path / name
    trace.write_bytes(content)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == f"Error: {trace}: {expected}"


def test_a_parquet_index_named_as_a_column_is_named(tmp_path, capsys):
    trace = tmp_path / "t.parquet"
    frame = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [1, 2],
                          "output_tokens": [1, 2]})
    frame.set_index(pd.Index([5.0, 6.0], name="arrival_s")).to_parquet(trace)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: its pandas index and a column are both named "
                    "'arrival_s'; keep one (drop the index with reset_index(drop=True), or "
                    "rename it) and write the file again")


# ------------------------------------------------------------------ one accuracy basis


@pytest.fixture(scope="module")
def routing_runs(tmp_path_factory):
    """routing_example at floor 0.935 (its router sets confusion: realised draws), planned and
    run: (plan.json, summary.json)."""
    from tiersim.cli.app import main
    from tiersim.paths import bundled

    folder = tmp_path_factory.mktemp("basis")
    text = bundled("scenarios", "routing_example.yaml").read_text()
    assert "accuracy_floor: 0.94" in text
    scenario = folder / "r.yaml"
    scenario.write_text(text.replace("accuracy_floor: 0.94", "accuracy_floor: 0.935")
                        .replace("path: azure2023_conv.parquet", "path: " + str(
                            bundled("traces", "azure2023_conv.parquet"))))
    assert main(["plan", str(scenario), "--out", str(folder / "plan"), "--no-report"]) == 0
    assert main(["run", str(scenario), "--out", str(folder / "run"), "--no-report"]) == 0
    return (json.loads((folder / "plan" / "plan.json").read_text()),
            json.loads((folder / "run" / "summary.json").read_text()))


def test_plan_scores_uniform_fleets_on_the_basis_run_does(routing_runs):
    # plan called uniform nvfp4 0.93 (expected) and infeasible; run scored it 93.97% (realised)
    # and meeting the floor, and the two commands recommended opposite fleets
    plan, summary = routing_runs
    run_uniform = summary["savings"]["uniform"]
    plan_uniform = {u["design"]: u for u in plan["uniform"]}
    for tier in ("nvfp4", "bf16"):
        assert plan_uniform[tier]["accuracy"] == pytest.approx(run_uniform[tier]["accuracy"])
    assert plan_uniform["nvfp4"]["feasible"] and plan["plan"]["design"] == "nvfp4"


def test_analytic_estimates_on_the_basis_run_does(routing_runs, tmp_path, capsys, monkeypatch):
    _, summary = routing_runs
    monkeypatch.chdir(tmp_path)
    code, out = stdout_of(capsys, "analytic", "--scenario", "routing_example.yaml", "--json")
    assert code == 0
    out = json.loads(out)
    params = summary["analytic"]["params"]
    assert out["params"]["p"] == pytest.approx(params["p"])
    assert out["params"]["delta"] == pytest.approx(params["delta"])


def stdout_of(capsys, *argv: str) -> tuple[int, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout)."""
    from tiersim.cli.app import main

    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


def test_the_realised_score_is_not_called_expected(capsys):
    code, out = stdout_of(capsys, "run", "routing_example", "--no-report")
    assert code == 0 and "accuracy (realised draws)" in out and "expected accuracy" not in out


# ------------------------------------------------------------------ sweeps and wrappers


def test_a_sweep_value_no_point_accepts_is_blamed_on_its_own_axis(tmp_path, capsys):
    # it blamed the first axis ('seed') at the wrong line, with a hint about map paths
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(extra="sweep:\n  seed: [1, 2]\n  tiers.bf16.replicas: [0, -1]\n"))
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "o",
                                   "--no-baselines"))
    assert line == (f"Error: {path}: line 32: sweep: 'tiers.bf16.replicas': tiers[1].replicas: "
                    "must be >= 1 (got 0): a tier runs 1 replica or more; to keep a tier out "
                    "of the routed fleet, move it under baselines: (sized only as a uniform "
                    "fleet for the saving) or remove it (tiersim plan chooses every tier's "
                    "replicas, zero included, whatever count is written) (value 0)")


def test_a_multimodal_wrapper_says_its_vision_tower_is_not_counted(tmp_path):
    text = dict(LLAMA_70B, num_hidden_layers=2)
    folder = config(tmp_path, {"model_type": "llava", "vision_config": {"hidden_size": 1024},
                               "text_config": text})
    with pytest.warns(UserWarning, match="the vision tower's weights are not counted"):
        load_hf_config(folder)
    del text["model_type"]
    folder = config(tmp_path, {"model_type": "llava", "text_config": text})
    with pytest.raises(Exception, match="key 'text_config.model_type': missing"):
        load_hf_config(folder)


def test_an_interrupted_sweep_says_what_it_kept_and_how_to_resume(tmp_path, capsys,
                                                                   monkeypatch):
    # Ctrl-C printed nothing, and `report` on the folder said "no results here"
    import tiersim.sweep.run as sweep_run

    out = tmp_path / "o"

    def stopped(*args, **kwargs):
        (out / "points").mkdir(parents=True)
        (out / "sweep.json").write_text("{}")
        for name in ("a", "b"):
            (out / "points" / f"{name}.json").write_text("{}")
        kwargs["tally"].stored = 2
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run, "run_sweep", stopped)
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(extra="sweep:\n  seed: [1, 2]\n"))
    code, err = run_cli(capsys, "sweep", path, "--out", out)
    assert code != 0
    assert (f"interrupted: 2 finished points stored in {out / 'points'}; run the same command "
            "again to resume (they are kept, not rerun)") in err.splitlines()
    line = one_error_line(*run_cli(capsys, "report", out))
    assert line == (f"Error: {out}: a sweep that did not finish (2 points stored, no "
                    "sweep.parquet yet); run its `tiersim sweep` command again to resume it, and "
                    "the report is written at the end")


def test_plan_and_disagg_say_where_their_latencies_come_from(tmp_path, capsys):
    # both printed p99s and costs with no word of their source
    code, out = stdout_of(capsys, "plan", "tiny", "--out", tmp_path / "p", "--no-report")
    lines = out.splitlines()
    assert code == 0
    assert ("latencies simulated, step times from w4a16: fitted on another GPU's serving rows "
            "(1 op) + fitted on measured serving rows (1 op) + roofline (4 ops) + roofline, "
            "calibrated on H200's measured tables (1 op); bf16: fitted on measured serving rows "
            "(2 ops) + roofline (4 ops)") in lines
    assert any(line.startswith("fidelity: these step times come from tiersim's roofline model, "
                               "not measured tables (its FP8 GEMM and FP8 / 4-bit MoE kernel "
                               "efficiencies and vLLM's host time are set on NVIDIA's measured "
                               "H200 data); "
                               "replaying NVIDIA's measured vllm serving runs on H200 (")
               for line in lines)
    code, out = stdout_of(capsys, "disagg", "disagg")
    lines = out.splitlines()
    assert code == 0 and lines[0].endswith("(latencies in seconds)")
    assert any(line.startswith("latencies simulated, step times from bf16: ") for line in lines)
    assert any(line.startswith("fidelity: replaying NVIDIA's measured vllm serving runs")
               for line in lines)


def test_an_absurd_model_size_is_printed_readably(tmp_path):
    # "short by 5444517870735018006307045113856.0 GB"
    from tiersim.hardware.gpus import get_gpu
    from tiersim.perf.memory import FitError, kv_capacity_blocks

    model = load_hf_config(config(tmp_path, dict(LLAMA_70B, hidden_size=8192 * 2 ** 40,
                                                 num_attention_heads=64 * 2 ** 40)))
    with pytest.raises(FitError) as err:
        kv_capacity_blocks(model, "bf16", get_gpu("h200"))
    assert "e+" in str(err.value) and ".0 GB" not in str(err.value).split("short by ")[1]


def test_a_table_number_keeps_its_digits():
    from tiersim.cli.run import fmt

    assert [fmt(2.0018, " s"), fmt(1.003), fmt(0.418), fmt(100.0, " %"), fmt(12345.6)] == [
        "2.00 s", "1.00", "0.418", "100 %", "12,346"]


def test_a_trace_link_to_nothing_is_named_as_a_link(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.csv").symlink_to("a.csv")
    (tmp_path / "a.csv").symlink_to("b.csv")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", "b.csv"))
    assert line == ("Error: b.csv: a link that leads to no file (its target is missing, or the "
                    "links loop); point it at the trace file, or give the file itself")


@pytest.mark.parametrize(("text", "expected"), [
    (b"name: t\n---\nname: u\n", "line 2: invalid YAML: but found another document; a scenario "
     "is one YAML document: remove the '---' line and whatever follows it, or split it into two "
     "files"),
    (b"name: t\n\tseed: 1\n", "line 2: invalid YAML: found character '\\t' that cannot start "
     "any token; indent with spaces, not tabs"),
    (b"name: !foo t\n", "line 1: invalid YAML: could not determine a constructor for the tag "
     "'!foo'; remove the '!' tag: a scenario holds plain maps, lists, strings and numbers"),
    ("name: t\n".encode("utf-16"), "UTF-16 text; save the scenario as UTF-8"),
])
def test_a_yaml_problem_comes_with_its_fix(tmp_path, capsys, text, expected):
    path = tmp_path / "s.yaml"
    path.write_bytes(text)
    line = one_error_line(*run_cli(capsys, "run", path))
    assert line == f"Error: {path}: {expected}"


def test_a_null_hash_id_is_called_missing(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = tmp_path / "m.parquet"
    pq.write_table(pa.table({"timestamp": [0, 1000], "input_length": [1024, 1024],
                             "output_length": [10, 10],
                             "hash_ids": pa.array([[1, 2], [1, None]],
                                                  type=pa.list_(pa.int64()))}), trace)
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace))
    # the second id: counted from 1 since round 49 (it read 'position 1', counting from 0)
    assert line == (f"Error: {trace}: row 2, column 'hash_ids': missing hash id (a null at "
                    "position 2 of the list); every id is a whole number")


def test_a_cascade_with_a_floor_is_planned_and_rerun_on_run_s_basis(tmp_path):
    # the floor policy made plan score on expected values where run (a cascade) scores
    # realised ones; and the planned scenario.yaml, run, scored on yet another basis
    from tiersim.cli.app import main
    from tiersim.paths import bundled

    text = bundled("scenarios", "cascade.yaml").read_text()
    for name in ("azure2023_conv.parquet", "azure2023_code.parquet"):
        text = text.replace(f"path: {name}", f"path: {bundled('traces', name)}")
    scenario = tmp_path / "c.yaml"
    scenario.write_text(text + "accuracy_floor: 0.79\n")
    assert main(["plan", str(scenario), "--out", str(tmp_path / "p"), "--no-report"]) == 0
    assert main(["run", str(scenario), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    planned = tmp_path / "p" / "scenario.yaml"
    assert main(["run", str(planned), "--out", str(tmp_path / "q"), "--no-report"]) == 0
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    run = json.loads((tmp_path / "r" / "summary.json").read_text())
    rerun = json.loads((tmp_path / "q" / "summary.json").read_text())
    for fleet in plan["uniform"]:
        assert fleet["accuracy"] == pytest.approx(
            run["savings"]["uniform"][fleet["design"]]["accuracy"])
    assert rerun["accuracy"] == pytest.approx(plan["plan"]["accuracy"])


# ------------------------------------------------------------------ round 14c


@pytest.mark.parametrize(("quant", "side", "expected"), [
    ({"quant_method": "fp8", "modules_to_not_convert": [1]}, None,
     "key 'quantization_config.modules_to_not_convert[0]': must be a module name (got 1)"),
    ({"quant_method": "fp8", "modules_to_not_convert": [None]}, None,
     "key 'quantization_config.modules_to_not_convert[0]': must be a module name (got null)"),
    (None, {"quantization": []},
     "hf_quant_config.json: key 'quantization': must be an object with a quant_algo (got [])"),
    (None, {"quantization": {"quant_algo": None}},
     "hf_quant_config.json: key 'quantization.quant_algo': missing; say which format"),
    (None, {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.90.self_attn.q_proj": {"quant_algo": "NVFP4"}}}},
     "hf_quant_config.json: key 'quantization.quantized_layers': names layer 90, and the model "
     "has 80 layers (0-79); is this the quantisation config of another model?"),
])
def test_a_quantisation_block_that_says_nothing_valid_is_refused(tmp_path, quant, side,
                                                                  expected):
    # a number in an ignore list matched layer 1; a list-valued block said "AttributeError";
    # a per-layer map of another model's layers was read as all BF16
    folder = config(tmp_path, LLAMA_70B, quant, side)
    with pytest.raises(Exception) as err:
        load_hf_config(folder)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_an_empty_positional_argument_is_refused(tmp_path, capsys, monkeypatch):
    # `tiersim report ""` wrote report.html into the current folder
    monkeypatch.chdir(tmp_path)
    line = one_error_line(*run_cli(capsys, "report", ""))
    # round 48: DIRECTORY is required, so leaving it out is no fix (test_round48_fuzz14)
    assert line == ("Error: DIRECTORY is empty (an unset shell variable?): an empty path reads "
                    "as the current folder; give the value")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("argv", "name"), [
    (("run", "--no-report", ""), "SCENARIO"),  # was "--no-report is empty": it takes no value
    (("trace", "inspect", ""), "PATH"),  # was "argument 3", counting the command's words
    (("sweep", "x.yaml", "-w", " "), "--workers"),  # was "-w", not the name --help shows
    (("analytic", "--json", "--trace", ""), "--trace"),
    (("analytic", "--trace="), "--trace"),
])
def test_an_empty_word_is_named_as_the_command_reads_it(tmp_path, capsys, monkeypatch, argv,
                                                        name):
    monkeypatch.chdir(tmp_path)
    line = one_error_line(*run_cli(capsys, *argv))
    # round 48: trace inspect's PATH is required, so it is not told to leave it out
    left_out = "" if name == "PATH" else ", or leave the argument out"
    fix = ("; give its value, or leave it out" if name.startswith("-") else
           f": an empty path reads as the current folder; give the value{left_out}")
    assert line == f"Error: {name} is empty (an unset shell variable?){fix}"
    assert not list(tmp_path.iterdir())


def test_generated_tasks_cannot_start_beyond_a_trace_s_span(tmp_path, capsys):
    # a rate of 1e-300 ran, with every latency 0 at arrival times near 1e300 s
    from tiersim.paths import bundled

    text = bundled("scenarios", "agentic.yaml").read_text()
    old = "generate: {tasks: 150, task_rate_rps: 0.5,"
    assert old in text
    path = tmp_path / "a.yaml"
    path.write_text(text.replace(old, "generate: {tasks: 20, task_rate_rps: 1e-300,"))
    line = one_error_line(*run_cli(capsys, "run", path, "--no-baselines"))
    # round 50: named at task_rate_rps's own key, its value as written (was at generate's)
    assert line.endswith("workload.sessions.generate.task_rate_rps: at task_rate_rps 1e-300 "
                         "20 tasks would start over about 2e+301 s, beyond the 100,000,000 s "
                         "generated tasks may start over (times lose their precision beyond); "
                         "raise the rate or lower tasks")


def test_a_failed_sweep_point_reads_as_the_command_line_shows_it():
    from tiersim.errors import ScenarioError
    from tiersim.sweep.points import _one_line

    error = ScenarioError("s.yaml", "seed", "must be >= 0")
    assert _one_line(error) == "s.yaml: seed: must be >= 0"  # was "ScenarioError: s.yaml: ..."
    assert _one_line(KeyError("x")).startswith("KeyError: ")


# ------------------------------------------------------------------ round 14d: the harness


def test_harness_flags_given_empty_or_impossible_are_named(tmp_path, capsys):
    from tiersim.calibrate.cli import main as harness

    (tmp_path / "f").write_text("x")
    cases = [
        (["--device", "cpu", "--model", "", "--out", str(tmp_path / "p.json")],
         "Error: --model is empty (an unset shell variable?); give its value, or leave it out"),
        (["--device", "cpu", "--budget-s", "inf", "--out", str(tmp_path / "p.json")],
         "Error: --budget-s: must be a finite number of seconds > 0 (got inf)"),
        (["--device", "cpu", "--out", str(tmp_path / "f" / "p.json")],
         f"Error: --out {tmp_path / 'f' / 'p.json'}: {tmp_path / 'f'} is a file, not a folder; "
         "give a path in a folder"),
    ]
    for argv, expected in cases:
        capsys.readouterr()
        assert harness(argv) == 1
        assert capsys.readouterr().err.strip() == expected
    assert not (tmp_path / "p.json").exists()


def test_an_empty_option_value_is_refused(tmp_path, capsys):
    # `tiersim calibrate --model ''` measured the default model; `--out ''` advised `--out .`
    line = one_error_line(*run_cli(capsys, "calibrate", "--model", "", "--out",
                                   tmp_path / "p.json"))
    assert line == ("Error: --model is empty (an unset shell variable?); give its value, or "
                    "leave it out")
    line = one_error_line(*run_cli(capsys, "calibrate", "--out", ""))
    assert line == ("Error: --out is empty (an unset shell variable?); give the path of the "
                    "profile JSON to write")


def test_each_tier_s_assumptions_stay_in_its_own_clause(tmp_path):
    # two split tiers printed "nvfp4: roofline; bf16: roofline + scenario (nvfp4: link) +
    # scenario (bf16: link)": nvfp4's link read as bf16's
    import yaml

    from tiersim.cli.run import provenance_lines
    from tiersim.paths import find_bundled

    doc = yaml.safe_load(find_bundled("scenarios", "disagg.yaml").read_text())
    doc["trace"]["path"] = str(find_bundled("traces", doc["trace"]["path"]))
    fp8 = dict(doc["tiers"][0], name="fp8", precision="fp8")
    doc["tiers"] = [fp8, doc["tiers"][0]]
    doc["router"] = {"policy": "cascade"}
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(doc))
    steps = provenance_lines(path)[0].removeprefix("latencies simulated, step times from ")
    clauses = steps.split("; ")
    assert [c.split(":")[0] for c in clauses] == ["fp8", "bf16"]
    for clause in clauses:
        name = clause.split(":")[0]
        assert clause.endswith(f" + scenario ({name}: prefill-to-decode link)")


@pytest.mark.parametrize(("value", "made"), [
    ("!!set {0.8, 0.2}", "'!!set' makes an unordered set"),
    ("!!binary AQ==", "'!!binary' makes bytes from base64"),
    ("!!omap [a: 0.5, b: 0.5]", "'!!omap' makes a list of pairs"),
    ("!!pairs [a: 0.5, b: 0.5]", "'!!pairs' makes a list of pairs"),
])
def test_a_yaml_tag_no_scenario_field_reads_is_refused(tmp_path, capsys, value, made):
    """``!!set`` once gave a list's items in hash order with repeats dropped (router fractions
    swapped between tiers), ``!!binary`` a name decoded from base64, without a word."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nrouter: {{policy: static_split, fractions: {value}}}\n")
    line = one_error_line(*run_cli(capsys, "run", path))
    assert line == (f"Error: {path}: line 2: invalid YAML: {made}, which a scenario does not "
                    "read; remove the tag: a scenario holds plain maps, lists, strings and "
                    "numbers")
