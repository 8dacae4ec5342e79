"""Round 19 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the number that was wrong."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tiersim.cli import main

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def run_cli(capsys, *argv) -> tuple[int, str]:
    """``tiersim ARGV`` in this process: (exit status, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def error_line(code: int, err: str) -> str:
    """The one ``Error:`` line of a failed command (exit 1, no traceback)."""
    assert code == 1, err[-500:]
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: ")
    return lines[0]


# ------------------------------------------------------------------ tiersim plan --choose


def test_choose_combinations_past_the_bound_are_refused_before_any_check(tmp_path, capsys):
    """Three --choose of 299 values each (a 4 kB command line) made 26.7 million router
    settings: the plan checked each in turn before any simulation and ran past a minute
    with nothing printed."""
    scenario = tmp_path / "p.yaml"
    scenario.write_text(TINY.replace("policy: static_split\n  fractions: [0.5, 0.5]",
                                     "policy: threshold\n  thresholds: 0.5"))
    values = ",".join(str(i / 1000) for i in range(1, 300))
    started = time.monotonic()
    code, err = run_cli(capsys, "plan", scenario, "-o", tmp_path / "o", "--no-report",
                        "--choose", f"router.thresholds={values}",
                        "--choose", f"router.confusion.fpr={values}",
                        "--choose", f"router.confusion.fnr={values}")
    assert time.monotonic() - started < 10
    assert error_line(code, err) == (
        "Error: --choose: 26,730,899 combinations of router settings (299 x 299 x 299 values) "
        "are more than the 1,000 a plan tries, each sized by simulation; give fewer values")
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ config.json


def _config(tmp_path, **fields) -> Path:
    """A Llama config.json in ``tmp_path/model`` with ``fields`` replaced."""
    doc = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
           "vocab_size": 128256, "max_position_embeddings": 131072, **fields}
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(doc))
    return folder / "config.json"


def test_a_head_dim_given_is_read_whatever_hidden_size_over_heads_is(tmp_path):
    """The error for more heads than hidden units says 'give head_dim'; a config that gave it
    was refused with the same line, calling it missing (the default was computed first)."""
    from tiersim.hardware.hf_config import load_hf_config

    model = load_hf_config(_config(tmp_path, hidden_size=16, num_attention_heads=32,
                                   num_key_value_heads=32, head_dim=8))
    assert model.head_dim == 8


@pytest.mark.parametrize(("fields", "key", "value"), [
    ({"max_position_embeddings": 10**30}, "max_position_embeddings", f"{10**30:,}"),
    ({"max_position_embeddings": 10**15, "rope_scaling": {"rope_type": "default"}},
     "max_position_embeddings", "1,000,000,000,000,000"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 0.5,
                       "original_max_position_embeddings": 10**12}},
     "rope_scaling.original_max_position_embeddings", "1,000,000,000,000"),
])
def test_a_context_past_the_bound_is_refused_naming_its_own_key(tmp_path, fields, key, value):
    """A max_position_embeddings of 10^30 was read as the model's context (a scheduler's
    max_model_len may not pass 100,000,000 tokens, a rope factor may not stretch past it);
    beside a rope block of factor 1 or below, the factor took the blame."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, **fields)
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key {key!r}: {value} tokens is more than the 100,000,000 a context may "
        "hold; give the value the model card states")


@pytest.mark.parametrize("block", [[128], [128, 128, 128]])
def test_an_fp8_block_size_of_other_than_two_numbers_is_refused(tmp_path, block):
    """vLLM's Fp8Config refuses a weight_block_size of other than 2 dimensions at start-up
    (vllm/model_executor/layers/quantization/fp8.py); tiersim read [128] and [128, 128, 128]
    as block FP8 and timed the model vLLM would not load."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, quantization_config={"quant_method": "fp8",
                                                  "weight_block_size": block})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config.weight_block_size': must hold 2 numbers, a block's "
        f"output and input widths (e.g. [128, 128]), as vLLM's Fp8Config requires (got "
        f"{block})")


# ------------------------------------------------------------------ scenario keys


def test_a_tiny_gpu_memory_utilization_is_shown_as_given(tmp_path, capsys):
    """gpu_memory_utilization 1e-9 (it must be above 0) was shown as 'it is 0', rounded to six
    decimals, in the line that names it."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("precision: bf16\n", "precision: bf16\n"
                                 "    gpu_memory_utilization: 1.0e-9\n"))
    line = error_line(*run_cli(capsys, "run", path, "--no-baselines"))
    assert "set gpu_memory_utilization to at least 0.419 (it is 1e-09), or" in line


# ------------------------------------------------------------------ response cache


def test_rows_without_a_prompt_are_no_response_cache_hit(tmp_path, capsys):
    """With ``key: prompt``, ten rows whose prompt cell is empty were one prompt (the reader
    keeps a missing prompt as no text, ""): the cache answered nine of them from the first."""
    rows = "".join(f"{i},{i * 10},100,10,\n" for i in range(10)) + "10,100,100,10,hi\n" \
        "11,110,100,10,hi\n"
    trace = tmp_path / "t.csv"
    trace.write_text("request_id,arrival_s,input_tokens,output_tokens,prompt\n" + rows)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "model: Qwen3-Coder-30B-A3B\ngpu: H200\nprofile: null\ntrace: {path: t.csv}\n"
        "tiers: [{name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}]\n"
        "router:\n  policy: uniform\n  response_cache: {mode: lru, size: 20, key: prompt}\n")
    code, err = run_cli(capsys, "run", scenario, "--no-baselines", "-o", tmp_path / "o",
                        "--no-report")
    assert code == 0, err
    cache = json.loads((tmp_path / "o" / "summary.json").read_text())["response_cache"]
    assert cache["hits"] == 1
    assert cache["key_source"] == "trace column prompt (10 rows without one: never a hit)"


# ------------------------------------------------------------------ sweep resume


@pytest.mark.parametrize("wall_s", [-1, "abc", float("inf")])
def test_a_stored_point_of_a_run_time_no_run_takes_is_run_again(tmp_path, capsys, wall_s):
    """A point record whose wall_s was edited to -1 or text was kept as finished; the table
    then held it, and `tiersim report` refused it saying 'rerun the sweep', which kept it
    again: the fix the line gave never fixed it."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY + "sweep:\n  slo.ttft_p99_s: [1.0, 2.0]\n")
    out = tmp_path / "o"
    argv = ("sweep", scenario, "-o", out, "-w", "1", "--no-baselines", "--no-report")
    code, err = run_cli(capsys, *argv)
    assert code == 0, err
    point = sorted((out / "points").iterdir())[0]
    record = json.loads(point.read_text())
    record["wall_s"] = wall_s
    point.write_text(json.dumps(record))
    code, err = run_cli(capsys, *argv)
    assert code == 0, err
    assert "(1 run, 1 already done, 0 failed)" in err
    code, err = run_cli(capsys, "report", out)
    assert code == 0, err


@pytest.mark.parametrize(("quant", "said"), [
    ({"activation_scheme": "foo"},
     "must be 'dynamic' or 'static', as vLLM's Fp8Config requires (got \"foo\")"),
    ({"activation_scheme": "static", "weight_block_size": [128, 128]},
     "'static' beside a weight_block_size: vLLM's Fp8Config refuses it (block FP8 scales "
     "activations dynamically); use 'dynamic'"),
])
def test_an_fp8_activation_scheme_vllm_refuses_is_refused(tmp_path, quant, said):
    """vLLM's Fp8Config refuses an activation_scheme other than static or dynamic, and static
    scales with a weight block size; both were read as FP8 checkpoints."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, quantization_config={"quant_method": "fp8", **quant})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{path}: key 'quantization_config.activation_scheme': {said}"


def test_a_choose_value_nested_too_deep_names_the_option_once(tmp_path, capsys):
    """The line read '--choose router.thresholds: --choose router.thresholds: line 1: nested
    more than 64 levels deep; ...': the option twice, and a line of a command line."""
    scenario = tmp_path / "p.yaml"
    scenario.write_text(TINY.replace("policy: static_split\n  fractions: [0.5, 0.5]",
                                     "policy: threshold\n  thresholds: 0.5"))
    code, err = run_cli(capsys, "plan", scenario, "-o", tmp_path / "o", "--no-report",
                        "--choose", "router.thresholds=" + "[" * 100 + "]" * 100)
    # round 49: no form hint after it (PATH=VALUES was written right; the value was refused)
    assert error_line(code, err) == (
        "Error: --choose router.thresholds: nested more than 64 levels deep")


W4_GROUP = {"weights": {"num_bits": 4, "type": "int", "group_size": 128},
            "targets": ["Linear"]}


@pytest.mark.parametrize(("quant", "side", "where"), [
    ({"quant_method": "compressed-tensors", "config_groups": {"g": W4_GROUP}, "ignore": 5},
     None, "key 'quantization_config.ignore': must be a list of module names (got 5)"),
    ({"quant_method": "compressed-tensors",
      "config_groups": {"g": {**W4_GROUP, "targets": [1, 2]}}}, None,
     "key 'quantization_config.config_groups.g.targets[0]': must be a module name (got 1)"),
    ({"quant_method": "compressed-tensors",
      "config_groups": {"g": {**W4_GROUP, "targets": {"a": 1}}}}, None,
     "key 'quantization_config.config_groups.g.targets': must be a list of module names "
     "(got {\"a\": 1})"),
    ({"quant_method": "fp8", "modules_to_not_convert": 7}, None,
     "key 'quantization_config.modules_to_not_convert': must be a list of module names "
     "(got 7)"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True,
     "desc_act": False, "ignore": 9}, None,
     "key 'quantization_config.ignore': must be a list of module names (got 9)"),
    (None, {"quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head", None]}},
     "key 'quantization.exclude_modules[1]': must be a module name (got null)"),
])
def test_a_module_list_of_the_wrong_kind_is_named_by_its_key(tmp_path, quant, side, where):
    """A skip or target list of the wrong kind was reported for the whole block, with Python's
    words: "key 'quantization_config' (or hf_quant_config.json beside it): not in a layout
    tiersim reads (TypeError: an ignore / exclude list must be a list of module names (got
    5))"."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    fields = {"quantization_config": quant} if quant else {}
    path = _config(tmp_path, **fields)
    if side is not None:
        (path.parent / "hf_quant_config.json").write_text(json.dumps(side))
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    named = path.parent / "hf_quant_config.json" if side is not None else path
    assert str(info.value) == f"{named}: {where}"


# ------------------------------------------------------------------ traces


@pytest.mark.parametrize("indent", [None, 2])
def test_a_json_array_of_requests_is_named_as_one_whatever_its_layout(tmp_path, capsys,
                                                                      indent):
    """A JSON array of records was named as one only when it held a single record on one line;
    two records on one line read as a CSV header naming a column twice ('columns 3 and 7
    share a name'), an indented array as a CSV row of the wrong width."""
    records = [{"request_id": i, "arrival_s": i * 0.5, "input_tokens": 100,
                "output_tokens": 10} for i in range(3)]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps(records, indent=indent))
    line = error_line(*run_cli(capsys, "trace", "inspect", trace))
    assert line == (f"Error: {trace}: is one JSON array; tiersim reads JSON lines (one object "
                    "per line, a .jsonl file): convert it, e.g. jq -c '.[]' FILE")


# ------------------------------------------------------------------ scenario YAML


@pytest.mark.parametrize(("key", "reads_as"), [
    ("yes", "true"), ("off", "false"), ("~", "null"), ("1.5", "a number"),
    ("2001-12-14", "a date"),
])
def test_a_key_yaml_reads_as_no_name_is_named_on_its_own_line(tmp_path, capsys, key, reads_as):
    """A key YAML reads as true or null (`yes:` or `~:` at the end of a file) was blamed on
    line 3, the file's first key, as '[1]: keys should be strings (got True)'."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY + f"{key}: foo\n")
    line = len(TINY.splitlines()) + 1
    assert error_line(*run_cli(capsys, "run", path, "--no-baselines")) == (
        f"Error: {path}: line {line}: {key}: YAML reads this key as {reads_as}, not a name; "
        f"quote it if it is one ('{key}'), or remove it")
