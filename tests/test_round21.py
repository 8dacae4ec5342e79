"""Hostile and odd inputs, round 21: checkpoint configs read as vLLM reads them."""

from __future__ import annotations

import pytest
from test_round19 import _config

AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True,
       "version": "gemm"}


@pytest.mark.parametrize(("value", "lm_head"), [(True, "w4a16"), (False, "bf16"),
                                                (None, "bf16")])
def test_an_awq_lm_head_is_read_as_vllm_awq_marlin_reads_it(tmp_path, value, lm_head):
    """vLLM serves AWQ on Hopper with AWQMarlinConfig, which reads `lm_head` and quantises
    ParallelLMHead when it is true; tiersim read it for GPTQ only, so an AWQ lm_head stayed
    BF16 (its weights and its GEMM at 16 bits)."""
    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.hardware.precisions import weight_formats

    model = load_hf_config(_config(tmp_path, quantization_config={**AWQ, "lm_head": value}))
    assert weight_formats(model, "checkpoint").lm_head.name == lm_head


def test_an_awq_lm_head_that_is_not_a_bool_is_one_line(tmp_path):
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, quantization_config={**AWQ, "lm_head": "yes"})
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config.lm_head': must be true or false (got \"yes\"); vLLM "
        "quantises lm_head for any value but false, 0, null or an empty one, so say which")


def _ct(group: dict) -> dict:
    """A compressed-tensors W4A16 block with one group ``group`` adds to."""
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
               "group_size": 128}
    return {"quant_method": "compressed-tensors", "format": "pack-quantized",
            "config_groups": {"group_0": {"weights": weights, **group}}}


@pytest.mark.parametrize("group", [{}, {"targets": None}])
def test_a_compressed_tensors_group_without_targets_is_one_line(tmp_path, group):
    """vLLM loops over each group's targets and fails to load a group without them; tiersim
    read such a group as targeting every linear layer."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, quantization_config=_ct(group))
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config.config_groups.group_0.targets': missing; vLLM "
        "quantises the modules a group's targets name and fails to load a group without them: "
        "name its modules (or 'Linear' for every linear layer)")


def test_a_compressed_tensors_target_written_as_a_string_is_one_line(tmp_path):
    """vLLM iterates a string target letter by letter (it quantises nothing); tiersim read it
    as a list of one."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, quantization_config=_ct({"targets": "Linear"}))
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config.config_groups.group_0.targets': must be a list of "
        "module names (got \"Linear\"); vLLM reads a string letter by letter and matches no "
        'module: write ["Linear"]')


def test_a_compressed_tensors_group_targeting_linear_still_reads(tmp_path):
    from tiersim.hardware.hf_config import load_hf_config
    from tiersim.hardware.precisions import weight_formats

    model = load_hf_config(_config(tmp_path, quantization_config=_ct({"targets": ["Linear"]})))
    assert weight_formats(model, "checkpoint").attention.name == "w4a16"


def test_a_linear_module_neither_targeted_nor_ignored_is_one_line(tmp_path):
    """vLLM's find_matched_target raises for a linear layer that no group targets and ignore
    does not name ("Unable to find matching target"); tiersim read it as BF16."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    quant = _ct({"targets": ["re:.*mlp.*"]})
    path = _config(tmp_path, quantization_config=quant)
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value).startswith(f"{path}: key 'quantization_config.config_groups': no "
                                      "group targets model.layers.0.self_attn.")
    assert str(info.value).endswith(
        "and 'quantization_config.ignore' does not name it; vLLM refuses to load a linear "
        "layer that is neither (\"Unable to find matching target\"): add it to ignore (BF16) "
        "or to a group's targets")
    read = load_hf_config(_config(tmp_path, quantization_config={
        **quant, "ignore": ["re:.*self_attn.*", "lm_head"]}))
    assert dict((g, f) for g, f, _ in read.checkpoint).get("attention") is None


@pytest.mark.parametrize(("key", "value", "line"), [
    ("seed", "2024-01-01", "seed: input should be a valid integer (got 2024-01-01, which YAML "
                           "reads unquoted as a date or time)"),
    ("gpu", "2024-01-01 10:00:00", "gpu: input should be a valid string (got "
                                   "2024-01-01T10:00:00, which YAML reads unquoted as a date or "
                                   "time)")])
def test_a_yaml_date_is_quoted_as_written_not_as_python(tmp_path, capsys, key, value, line):
    """An unquoted date was quoted as datetime.date(2024, 1, 1), which names no YAML the user
    wrote."""
    from conftest import TINY
    from test_round19 import error_line, run_cli

    lines = [f"{key}: {value}" if ln.startswith(f"{key}:") else ln
             for ln in TINY.read_text().splitlines()]
    path = tmp_path / "s.yaml"
    path.write_text("\n".join(lines) + "\n")
    number = next(i for i, ln in enumerate(lines, 1) if ln.startswith(f"{key}:"))
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == f"Error: {path}: line {number}: {line}"


def test_one_dropped_request_is_singular():
    """"1 requests dropped" and "drops 1 requests" read wrong; the plural stays for more."""
    from tiersim.plan.planner import _drops_words

    assert _drops_words([("fp8", 1, 1500)]).startswith("drops 1 request longer")
    assert _drops_words([("fp8", 2, 1500)]).startswith("drops 2 requests longer")


def test_a_split_whose_only_whole_count_is_one_says_one_gpu():
    from tiersim.perf.memory import _split_note

    assert _split_note("expert width", 100, 2, "w4a16", 128).endswith("split it over 1 GPU")
    assert _split_note("expert width", 1024, 2, "w4a16", 128).endswith("split it over 1 or 2 "
                                                                         "or 4 or 8 GPUs")


@pytest.mark.parametrize("key", ["group_size", "sym", "desc_act"])
def test_a_gptq_block_missing_a_marlin_key_is_one_line(tmp_path, key):
    """vLLM's is_gptq_marlin_compatible needs bits, group_size, sym and desc_act all given, else
    it serves the older GPTQ kernel (or fails to load); tiersim timed such a checkpoint as
    Marlin W4A16 (group_size absent read as 128, sym absent as true)."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    quant = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True,
             "desc_act": False}
    del quant[key]
    path = _config(tmp_path, quantization_config=quant)
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == (
        f"{path}: key 'quantization_config.{key}': missing; vLLM serves a GPTQ checkpoint with "
        "its Marlin kernel only when bits, group_size, sym and desc_act are all given (else its "
        "older GPTQ kernel, which tiersim does not time, or no load): write it as the checkpoint "
        "was made")


def test_sweep_axes_metadata_nested_too_deep_is_one_line(tmp_path):
    """A sweep.parquet whose tiersim.sweep.axes metadata nests 10**5 deep crashed `tiersim
    report` with a RecursionError traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tiersim.errors import TiersimError
    from tiersim.report.load import read_axes

    path = tmp_path / "sweep.parquet"
    deep = "[" * 100_000 + "]" * 100_000
    table = pa.table({"x": [1]}).replace_schema_metadata({"tiersim.sweep.axes": deep})
    pq.write_table(table, path)
    with pytest.raises(TiersimError) as info:
        read_axes(path)
    assert str(info.value) == f"{path}: cannot read its axes (nested too deep); rerun the sweep"
