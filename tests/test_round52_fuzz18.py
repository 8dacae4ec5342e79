"""Round 52, hostile input (helper fuzz18). Each test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from conftest import TINY, cheap_first_tiers, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli


@pytest.mark.parametrize(("value", "said"), [
    ("{w4a16: 0.6, nope: 0.4}", "router.fractions: unknown tier 'nope'; tiers are w4a16, bf16"),
    ("{nope: 0.6, bf16: 0.4}", "router.fractions: unknown tier 'nope'; tiers are w4a16, bf16"),
])
def test_a_choose_map_naming_no_tier_is_refused_before_any_simulation(tmp_path, capsys, value,
                                                                      said):
    """``--choose router.fractions={w4a16: 0.6, nope: 0.4}`` ran the whole plan and exited 0:
    the design routed with it was refused only in its "runner-up w4a16+bf16: router: ...:
    unknown tier 'nope'" line. A tier name is now checked as a run of the scenario checks it,
    before any simulation, and no output is written."""
    out = tmp_path / "p"
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", out,
                                   "--choose", f"router.fractions={value}"))
    assert line == f"Error: --choose router.fractions={value}: {said}"
    assert not out.exists()


def test_a_choose_tier_naming_no_tier_is_refused_too(tmp_path, capsys):
    """``router.tier`` (the uniform policy's tier) naming no tier is refused so too."""
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", tmp_path / "p",
                                   "--choose", "router.policy=uniform",
                                   "--choose", "router.tier=nope"))
    assert line == ("Error: --choose router.policy='uniform' router.tier='nope': router.tier: "
                    "unknown tier 'nope'; tiers are w4a16, bf16")


def test_a_choose_map_with_a_whole_number_key_is_told_as_a_scenarios_is(tmp_path, capsys):
    """``--choose router.fractions={5: 0.6, bf16: 0.4}`` read "router.fractions[5]: input
    should be a valid string (got 5)": pydantic's words, the key shown as a list index; the
    same key in a scenario file was already told it is a number where names go."""
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", tmp_path / "p",
                                   "--choose", "router.fractions={5: 0.6, bf16: 0.4}"))
    assert line == ("Error: --choose router.fractions={5: 0.6, bf16: 0.4}: router.fractions: "
                    "key 5 is a number, where the keys are names; write the name, or quote it "
                    "('5') if it is one")


# --- a model config's values as JSON writes them ----------------------------------------------

QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48,
             "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
             "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
             "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 262144}


def _config_error(tmp_path, text: str, side: str | None = None) -> str:
    """The error line of reading the config ``text`` (``side``: an hf_quant_config.json
    beside it)."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    (tmp_path / "config.json").write_text(text)
    if side is not None:
        (tmp_path / "hf_quant_config.json").write_text(side)
    with pytest.raises(TiersimError) as info:
        load_hf_config(tmp_path / "config.json")
    return str(info.value).removeprefix(f"{tmp_path / 'config.json'}: ")


@pytest.mark.parametrize(("written", "said"), [
    ("true", "true"), ('"2048"', '"2048"'), ("1e308", "1e308"), ("2.048e3", "2.048e3"),
    ("2048.0", "2048.0"), ('{"a": null}', '{"a": null}'), ('["x"]', '["x"]'),
])
def test_a_config_value_is_quoted_as_json_writes_it(tmp_path, written, said):
    """``"hidden_size": true`` was told "(got True)", ``1e308`` "(got 1e+308)", ``2.048e3``
    "(got 2048.0)", ``"2048"`` "(got '2048')" and ``{"a": null}`` "(got {'a': None})":
    Python's spelling, which no JSON file holds."""
    import json

    text = json.dumps(QWEN3_MOE).replace('"hidden_size": 2048', f'"hidden_size": {written}')
    assert _config_error(tmp_path, text) == (f"key 'hidden_size': must be a positive integer "
                                             f"(got {said})")


def test_a_quant_method_that_is_no_name_is_told_as_written(tmp_path):
    """``"quant_method": 5`` read "'5' is not supported", as if the file wrote text."""
    import json

    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": 5}})
    assert _config_error(tmp_path, text) == (
        "key 'quantization_config.quant_method': must be a name such as 'fp8' (got 5); "
        "supported: fp8, mxfp4, compressed-tensors, modelopt, awq, gptq, fbgemm_fp8 (or no "
        "quantization_config at all: BF16)")


def test_a_modelopt_quant_algo_that_is_no_name_is_told_as_written(tmp_path):
    """``"quant_algo": true`` in hf_quant_config.json read "'TRUE' is not a format tiersim
    models": the value upper-cased as if it were text."""
    import json

    side = json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": True}})
    assert _config_error(tmp_path, json.dumps(QWEN3_MOE), side).endswith(
        "hf_quant_config.json: key 'quantization.quant_algo': must be a name such as 'FP8' "
        "(got true); say which format (FP8, NVFP4, W4A16_NVFP4)")


def test_a_kv_cache_quant_algo_that_is_no_name_is_noted_as_written(tmp_path):
    """``"kv_cache_quant_algo": true`` was noted "is 'True'"."""
    import json

    from tiersim.errors import Note
    from tiersim.hardware.hf_config import load_hf_config

    (tmp_path / "config.json").write_text(json.dumps(QWEN3_MOE))
    (tmp_path / "hf_quant_config.json").write_text(json.dumps({
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": True}}))
    with pytest.warns(Note) as seen:
        load_hf_config(tmp_path / "config.json")
    assert any("key 'quantization.kv_cache_quant_algo' is true: a KV-cache format tiersim "
               "does not model" in str(w.message) for w in seen)


def test_the_harness_quotes_a_config_number_as_written_too(tmp_path):
    """``tiersim calibrate``'s reader of config.json told ``"hidden_size": 1e308`` as
    "(got 1e+308)"."""
    import json

    from tiersim.calibrate import shapes
    from tiersim.calibrate.errors import CalibrateError

    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3_MOE, "model_type": "llama"}).replace(
        '"hidden_size": 2048', '"hidden_size": 1e308'))
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == (f"{path}: hidden_size must be a whole number from 1 to 65536 "
                               "(got 1e308); fix it in the config.json")


# --- a text trace's numbers as the file writes them -------------------------------------------

AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


@pytest.mark.parametrize(("cell", "said"), [
    ("1e19", "token count must be at most 2147483647 (got 1e19); fix or remove the row"),
    ("12.50", "token count must be a whole number (got 12.50); round it"),
    ("-2.0e1", "token count must be > 0 (got -2.0e1); fix or remove the row"),
])
def test_a_refused_token_count_is_quoted_as_the_csv_writes_it(tmp_path, capsys, cell, said):
    """A CSV's ``1e19`` was told "(got 1e+19)" and ``12.50`` "(got 12.5)": the float the
    reader made of the cell, as Python writes it."""
    path = tmp_path / "a.csv"
    path.write_text(AZURE + f"2023-11-16 18:15:46,{cell},44\n2023-11-16 18:15:50,396,109\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == f"Error: {path}: row 1, column 'ContextTokens': {said} (file line 2)"


# --- plan --check-seeds -----------------------------------------------------------------------

@pytest.mark.parametrize("typed", ["1e9", "1001", "18446744073709551616"])
def test_check_seeds_beyond_a_thousand_is_refused_before_the_search(tmp_path, capsys, typed):
    """``--check-seeds 1e9`` was accepted: the plan searched, then started a billion seeds'
    simulations (a 20 s timeout stopped it "interrupted: nothing was written"). Refused
    before the search, quoted as typed."""
    out = tmp_path / "p"
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", out, "--check-seeds", typed))
    assert line == (f"Error: --check-seeds {typed}: more than the 1,000 seeds a plan checks "
                    "(each is an evaluator build and two or three simulations, after the "
                    "search); give at most 1,000")
    assert not out.exists()


def test_check_seeds_reach_the_plan_as_a_plain_int(monkeypatch):
    """Checked, the typed count loses its text (plan.json holds numbers)."""
    from tiersim.cli import plan as plan_cli
    from tiersim.numbers import WrittenWhole

    seen = {}
    monkeypatch.setattr(plan_cli, "_plan", lambda *a: seen.setdefault("count", a[9]))  # check_seeds
    plan_cli.plan_capacity(TINY, check_seeds=WrittenWhole(2, "2e0"))
    assert type(seen["count"]) is int and seen["count"] == 2


# --- a file too large for ulimit -f, and pyarrow's words for a full disk ----------------------

def _limited_run(tmp_path, *argv: str, limit: int = 8192):
    """``tiersim ARGV`` in a child process whose files may hold at most ``limit`` bytes
    (``ulimit -f``: RLIMIT_FSIZE; Python ignores SIGXFSZ, so a write past it fails EFBIG)."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def limit_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "tiersim", *argv], cwd=tmp_path, env=env,
                          capture_output=True, text=True, preexec_fn=limit_files, timeout=300)


def test_a_run_over_the_file_size_limit_says_so(tmp_path):
    """Over ``ulimit -f`` a run read "o: cannot write results (Error writing bytes to file.
    Detail: [errno 27] File too large); check the folder's permissions or choose another
    --out folder": pyarrow's words, and a fix that does not help."""
    done = _limited_run(tmp_path, "run", TINY, "--out", "o")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: o: cannot write results (File too large); raise the largest file size this "
        "shell lets a command write (ulimit -f) or choose another --out folder")
    assert not (tmp_path / "o").exists()


def test_a_report_over_the_file_size_limit_says_so(tmp_path):
    """The report (about 5 MB) over ``ulimit -f`` was told "free some space"."""
    done = _limited_run(tmp_path, "run", TINY, "--out", "o", limit=200_000)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "Error: o/report.html: cannot write the report (File too large), so nothing was "
        "written (a run's files and its page are written together, or none of them); raise the "
        "largest file size this shell lets a command write (ulimit -f) or choose another "
        "folder")  # round 53: nothing was written, said


def test_a_sweep_point_over_the_file_size_limit_says_so(tmp_path):
    """A sweep's point record over ``ulimit -f`` was told to check free space."""
    from pathlib import Path

    (tmp_path / "s.yaml").write_text(Path(TINY).read_text() + "\nsweep:\n  seed: [0, 1]\n")
    done = _limited_run(tmp_path, "sweep", "s.yaml", "--out", "o", "--no-baselines",
                        limit=1024)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: o/points/") and last.endswith(
        ".json: cannot write (File too large); raise the largest file size this shell lets a "
        "command write (ulimit -f) or write elsewhere, then rerun to resume")


def test_a_full_disk_in_pyarrows_words_is_told_to_free_space(tmp_path, capsys, monkeypatch):
    """pyarrow's OSError for a full disk ("Error writing bytes to file. Detail: [errno 28] No
    space left on device") carried its errno only in its words: the run was told to "check
    the folder's permissions"."""
    from tiersim import outputs

    def full(*args, **kwargs):
        raise OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(outputs, "write_data_files", full)
    monkeypatch.chdir(tmp_path)
    # tiny cheapest first: no tier-order note above the error (round 53's price)
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(tiers=cheap_first_tiers()))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--out", "o"))
    assert line == ("Error: o: cannot write results (No space left on device); free space or "
                    "choose another --out folder")


@pytest.mark.parametrize(("written", "said"), [("0", "0"), ("false", "false"), ('""', '""')])
def test_a_q_lora_rank_of_zero_is_refused_not_read_as_none(tmp_path, written, said):
    """A DeepSeek config's ``"q_lora_rank": 0`` (or false, or "") was read as null, a query
    projection without a bottleneck, and the model sized so without a word; transformers and
    vLLM test the key against null only, and build a rank-0 bottleneck for 0."""
    import json

    data = {"model_type": "deepseek_v3", "hidden_size": 1024, "num_hidden_layers": 4,
            "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 2048,
            "moe_intermediate_size": 256, "n_routed_experts": 8, "num_experts_per_tok": 2,
            "n_shared_experts": 1, "first_k_dense_replace": 1, "moe_layer_freq": 1,
            "q_lora_rank": 384, "kv_lora_rank": 128, "qk_nope_head_dim": 32,
            "qk_rope_head_dim": 16, "v_head_dim": 32, "vocab_size": 32000,
            "max_position_embeddings": 4096}
    text = json.dumps(data).replace('"q_lora_rank": 384', f'"q_lora_rank": {written}')
    assert _config_error(tmp_path, text) == (
        "key 'q_lora_rank': must be a positive integer, or null for a query projection without "
        f"a low-rank bottleneck (got {said})")


@pytest.mark.parametrize(("quant", "key"), [
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "ignored_layers": ["lm_head",
                                                                                 "re:[bad"]},
     "quantization_config.ignored_layers[1]"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["re:[bad"],
      "config_groups": {"g": {"targets": ["Linear"], "weights": {
          "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}}}},
     "quantization_config.ignore[0]"),
    ({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"g": {"targets": ["re:[bad"], "weights": {
          "num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True}}}},
     "quantization_config.config_groups.g.targets[0]"),
])
def test_a_bad_regex_in_a_module_list_names_its_entry(tmp_path, quant, key):
    """``"ignore": ["re:[bad"]`` read "key 'quantization_config': not in a layout tiersim
    reads (error: unterminated character set at position 0); see the quant_method's documented
    layout": the whole block named, Python's exception class ("error") as the reason, and no
    fix for the entry (GPTQ's dynamic rules already named theirs)."""
    import json

    text = json.dumps({**QWEN3_MOE, "quantization_config": quant})
    assert _config_error(tmp_path, text) == (
        f"key '{key}': \"re:[bad\" is not a regular expression (unterminated character set at "
        "position 0); fix the pattern, or name the modules plainly")


def test_a_key_longer_than_yaml_reads_says_so(tmp_path, capsys, monkeypatch):
    """A 2,000-character key (``kkk...: 1``) read "could not find expected ':'; write each key
    as 'key: value' (a colon and a space after the key)", of a key written so: PyYAML reads a
    plain key of at most 1,024 characters."""
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    text = Path(TINY).read_text().replace("seed: 0", "seed: 0\n" + "k" * 2000 + ": 1", 1)
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == ("Error: s.yaml: line 5: invalid YAML: could not find expected ':'; a key YAML "
                    "reads has at most 1,024 characters, and this one has 2,000: remove it (no "
                    "scenario key is that long)")


def test_a_quant_method_or_algo_is_quoted_as_the_file_writes_it(tmp_path):
    """``"quant_method": "BitsAndBytes"`` was told "'bitsandbytes' is not supported" (lower
    case) and ModelOpt's ``"quant_algo": "fp9"`` "'FP9' is not a format" (upper case): text the
    file does not hold."""
    import json

    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "BitsAndBytes"}})
    assert _config_error(tmp_path, text).startswith(
        "key 'quantization_config.quant_method': \"BitsAndBytes\" is not supported; supported:")
    text = json.dumps({**QWEN3_MOE, "quantization_config": {"quant_method": "modelopt",
                                                            "quant_algo": "fp9"}})
    assert _config_error(tmp_path, text).startswith(
        "key 'quantization_config.quant_algo': \"fp9\" is not a format tiersim models;")


def test_a_choose_map_value_null_is_told_as_a_scenarios_is(tmp_path, capsys):
    """``--choose router.fractions={w4a16: null, bf16: 1}`` read "input should be a valid
    number (got null)" alone; the same map in a scenario file adds what null is."""
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", tmp_path / "p", "--choose",
                                   "router.fractions={w4a16: null, bf16: 1}"))
    assert line == ("Error: --choose router.fractions={w4a16: null, bf16: 1}: "
                    "router.fractions.w4a16: input should be a valid number (got null); null is "
                    "YAML's null (no value): write the value")


@pytest.mark.parametrize(("name", "text", "said", "line"), [
    ("t.csv", "arrival_s,input_tokens,output_tokens\n0,TRUE,2\n1,FALSE,2\n", "TRUE", 2),
    ("t.jsonl", '{"arrival_s": 0, "input_tokens": false, "output_tokens": 2}\n', "false", 1),
])
def test_a_true_false_cell_is_quoted_as_the_trace_writes_it(tmp_path, capsys, name, text, said,
                                                            line):
    """A CSV's ``TRUE`` and a JSON line's ``false`` in a token column were told "(got True)"
    and "(got False)", Python's spelling."""
    path = tmp_path / name
    path.write_text(text)
    told = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert told == (f"Error: {path}: row 1, column 'input_tokens': token count is a true/false "
                    f"value (got {said}); write a whole number (file line {line})")


def test_a_wrappers_language_config_that_is_no_object_is_named(tmp_path):
    """A llava wrapper whose ``text_config`` is the text ``"llama"`` read "key 'model_type':
    'llava' is not supported": a wrapper tiersim reads when that key holds an object."""
    import json

    text = json.dumps({"model_type": "llava", "vision_config": {}, "text_config": "llama"})
    assert _config_error(tmp_path, text) == (
        "key 'text_config': must be an object, the config of the language model the wrapper "
        'holds (got "llama")')
