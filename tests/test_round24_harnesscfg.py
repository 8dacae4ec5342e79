"""Round 24 (harnesscfg): the calibration harness reads a config.json as the simulator does.

The harness (:func:`tiersim.calibrate.shapes.from_config`) and the simulator
(:func:`tiersim.hardware.hf_config.load_hf_config`) read the same ``config.json``; where they
read it differently a GPU run times the wrong shapes and the profile silently mismatches the
model it is used for. Each test here is one reader against the other.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from test_checkpoint_formats import _aic_configs

from tiersim.calibrate import shapes
from tiersim.calibrate.errors import CalibrateError
from tiersim.errors import TiersimError
from tiersim.hardware.hf_config import load_hf_config

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "num_experts",
          "expert_intermediate", "top_k")


REAL = sorted((ROOT / "benchmarks" / "data" / "configs").glob("*/config.json")) + _aic_configs()


def _both(path: Path):
    """(simulator's ModelArch or its error line, harness's ModelShapes or its error line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            sim = load_hf_config(path)
        except TiersimError as err:
            sim = str(err)
    try:
        harness = shapes.from_config(path)
    except CalibrateError as err:
        harness = str(err)
    return sim, harness


def _same(sim, harness) -> dict:
    """The fields the two readers give differently (a dense model's FFN width, an all-MoE
    model's none)."""
    got = {f: (getattr(sim, f), getattr(harness, f)) for f in FIELDS}
    inter = 0 if sim.num_experts else sim.intermediate
    got["intermediate"] = (inter, harness.intermediate)
    got["shared_intermediate"] = (sim.shared_intermediate, harness.shared_intermediate)
    return {f: v for f, v in got.items() if v[0] != v[1]}


#: The simulator's types the harness measures, read through their wrapper or alias.
HARNESS_READ = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "mixtral", "gpt_oss",
                "minimax_m2")


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name if p.name == "config.json"
                         else p.name.removesuffix("_config.json"))
def test_real_configs_read_alike(path):
    sim, harness = _both(path)
    if isinstance(harness, str):  # refused: only a model the simulator refuses too, or one
        # whose layers the harness has no kernel for (MLA, delta-net)
        assert isinstance(sim, str) or sim.kv_lora_rank or sim.linear_layers, harness
        return
    assert not isinstance(sim, str), sim
    assert _same(sim, harness) == {}


def _write(tmp_path: Path, cfg: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(cfg))
    return path


LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16,
         "num_key_value_heads": 8, "num_hidden_layers": 4, "intermediate_size": 5632,
         "vocab_size": 32000}
#: llava-1.5-7b-hf's text_config: transformers wrote only what differs from LlamaConfig's
#: defaults, and fills the rest back on load.
LLAVA = {"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
         "vision_config": {"model_type": "clip_vision_model"},
         "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "model_type": "llama",
                         "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
                         "torch_dtype": "float16", "vocab_size": 32064}}


@pytest.mark.parametrize("cfg", [
    LLAVA,
    {"model_type": "llava", "vision_config": {},
     "text_config": {"model_type": "mistral", "vocab_size": 32768}},
    {"model_type": "internvl_chat", "vision_config": {}, "llm_config": LLAMA},
    {"model_type": "deepseek_vl_v2", "vision_config": {}, "language_config": LLAMA},
    # a supported type of its own is read itself, whatever sub-config it carries
    {**LLAMA, "text_config": {**LLAMA, "hidden_size": 1024}},
], ids=["llava-diff", "mistral-diff", "llm_config", "language_config", "own-type"])
def test_wrapper_configs_read_alike(tmp_path, cfg):
    sim, harness = _both(_write(tmp_path, cfg))
    assert not isinstance(harness, str), harness
    assert not isinstance(sim, str), sim
    assert _same(sim, harness) == {}


def test_llava_diff_takes_class_defaults_and_says_so(tmp_path):
    """It was refused: "missing 'hidden_size'; add it to the config.json"."""
    got = shapes.from_config(_write(tmp_path, LLAVA))
    assert (got.hidden, got.layers, got.heads, got.kv_heads, got.intermediate, got.vocab) == (
        4096, 32, 32, 32, 11008, 32064)
    assert got.notes == (
        "key 'text_config' leaves out hidden_size, intermediate_size, num_hidden_layers, "
        "num_attention_heads: read as transformers' llama defaults (4096, 11008, 32, 32)",)


def test_harness_with_a_wrapper_config_imports_no_simulator_dependency(tmp_path):
    """The harness runs with torch and numpy alone: reading a wrapper's config must not pull
    in the simulator's reader (tiersim.hardware) or its dependencies."""
    path = _write(tmp_path, LLAVA)
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('pydantic', 'simpy', 'pandas', 'typer', 'rich',"
        " 'plotly') or name.startswith(('tiersim.hardware', 'tiersim.perf')):\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from tiersim.calibrate import shapes\n"
        f"print(shapes.from_config({str(path)!r}).hidden)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, "4096"), proc.stderr[-2000:]


def test_cli_llava_config_passes_the_option_check(tmp_path):
    """--config of a llava-1.5 config got past nothing: 'missing hidden_size'."""
    from tiersim.calibrate.cli import options_problem, parser

    args = parser().parse_args(["--device", "cpu", "--config", str(_write(tmp_path, LLAVA)),
                                      "--out", str(tmp_path / "p.json")])
    assert options_problem(args) is None


QWEN3 = {**LLAMA, "model_type": "qwen3", "head_dim": 128}


@pytest.mark.parametrize("cfg", [
    {"model_type": "qwen3_vl", "vision_config": {},
     "text_config": {**QWEN3, "model_type": "qwen3_vl_text"}},
    {**LLAMA, "model_type": "mimo", "num_nextn_predict_layers": 1},
    {**LLAMA, "model_type": "phi3"},
    {**LLAMA, "model_type": "phimoe", "num_local_experts": 16, "num_experts_per_tok": 2},
    {**LLAMA, "model_type": "qwen2_vl", "vision_config": {}},
], ids=["qwen3_vl_text", "mimo", "phi3", "phimoe", "qwen2_vl-flat"])
def test_types_the_simulator_reads_as_another_are_measured_as_that(tmp_path, cfg):
    """Qwen3-VL, MiMo, Phi-3, PhiMoE and flat Qwen2-VL configs were refused by the harness
    ("the harness measures the shapes of llama, ..."), though the simulator serves them as
    the type whose shapes they have."""
    sim, harness = _both(_write(tmp_path, cfg))
    assert not isinstance(sim, str), sim
    assert not isinstance(harness, str), harness
    assert _same(sim, harness) == {}


QWEN3_MOE = {**QWEN3, "model_type": "qwen3_moe", "num_experts": 16, "num_experts_per_tok": 2,
             "moe_intermediate_size": 768, "intermediate_size": 6144}
MIXTRAL = {**LLAMA, "model_type": "mixtral", "num_local_experts": 8, "num_experts_per_tok": 2,
           "intermediate_size": 14336}


@pytest.mark.parametrize(("cfg", "key"), [
    ({k: v for k, v in QWEN3_MOE.items() if k != "moe_intermediate_size"},
     "moe_intermediate_size"),
    ({k: v for k, v in QWEN3_MOE.items() if k != "num_experts"}, "num_experts"),
    ({**{k: v for k, v in QWEN3_MOE.items() if k != "num_experts"}, "num_local_experts": 16},
     "num_experts"),
    ({k: v for k, v in MIXTRAL.items() if k != "num_local_experts"}, "num_local_experts"),
], ids=["qwen3_moe-no-width", "qwen3_moe-no-experts", "qwen3_moe-local-experts",
        "mixtral-no-experts"])
def test_an_moe_config_without_its_types_expert_key_is_refused(tmp_path, cfg, key):
    """Qwen3-30B-A3B without moe_intermediate_size was timed with experts 6144 wide (its
    intermediate_size; transformers' default is 768), and without num_experts, or Mixtral
    without num_local_experts, as a dense model; the simulator refuses each."""
    path = _write(tmp_path, cfg)
    sim, _ = _both(path)
    assert isinstance(sim, str) and f"key {key!r}: missing" in sim
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == f"{path}: missing {key!r}; add it to the config.json"


@pytest.mark.parametrize("cfg", [
    {**MIXTRAL, "moe_intermediate_size": 1234},
    {**MIXTRAL, "num_experts": 4},
    {**LLAMA, "num_local_experts": 8},
    {**QWEN3, "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64},
], ids=["mixtral-moe-width", "mixtral-num-experts", "llama-experts", "qwen3-experts"])
def test_keys_another_type_reads_are_not_read(tmp_path, cfg):
    """Mixtral with a moe_intermediate_size was timed at that expert width, with a
    num_experts at that count (vLLM's mixtral reads num_local_experts and intermediate_size);
    a dense llama / qwen3 with expert keys was refused or timed as MoE."""
    sim, harness = _both(_write(tmp_path, cfg))
    assert not isinstance(sim, str), sim
    assert not isinstance(harness, str), harness
    assert _same(sim, harness) == {}


GPT_OSS = {"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 24,
           "vocab_size": 201088, "intermediate_size": 2880, "num_local_experts": 32,
           "num_experts_per_tok": 4, "experts_per_token": 4, "sliding_window": 128}


def test_gpt_oss_without_head_dim_is_refused_as_the_simulator_refuses_it(tmp_path):
    """gpt-oss-20b without head_dim was timed with heads of 2880 / 64 = 45 (transformers'
    GptOssConfig default is 64; the simulator asks for the key)."""
    path = _write(tmp_path, {k: v for k, v in GPT_OSS.items() if k != "head_dim"})
    assert "key 'head_dim': missing" in _both(path)[0]
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == f"{path}: missing 'head_dim'; add it to the config.json"


def test_gpt_oss_top_k_is_read_as_vllm_reads_it(tmp_path):
    """experts_per_token 2 without num_experts_per_tok was timed at top-2; vLLM's gpt_oss
    reads num_experts_per_tok (transformers' default 4 where absent), so the simulator refuses
    it. experts_per_token 4 alone still reads top-4."""
    bare = {k: v for k, v in GPT_OSS.items() if k != "num_experts_per_tok"}
    path = _write(tmp_path, {**bare, "experts_per_token": 2})
    assert "key 'num_experts_per_tok': missing" in _both(path)[0]
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == (
        f"{path}: missing 'num_experts_per_tok'; vLLM reads the experts per token from it "
        "(transformers' default 4 where absent), not from experts_per_token (2): add it to the "
        "config.json")
    sim, harness = _both(_write(tmp_path, bare))
    assert harness.top_k == sim.top_k == 4
    path = _write(tmp_path, {**GPT_OSS, "num_experts_per_tok": 2, "experts_per_token": 4})
    sim, harness = _both(path)
    assert harness.top_k == sim.top_k == 2


@pytest.mark.parametrize(("cfg", "key", "got"), [
    ({"model_type": 5, "vision_config": {}, "text_config": LLAMA}, "model_type", "5"),
    ({"model_type": ["llava"], "llm_config": LLAMA}, "model_type", '["llava"]'),
], ids=["number", "list"])
def test_a_wrapper_type_that_is_not_a_name_is_refused_as_the_simulator_refuses_it(
        tmp_path, cfg, key, got):
    """A wrapper whose model_type is 5 was measured as the llama it holds (transformers'
    AutoConfig, and so vLLM, cannot load it; the simulator refuses it)."""
    path = _write(tmp_path, cfg)
    sim, _ = _both(path)
    assert sim == f"{path}: key {key!r}: must be a name such as 'llama' (got {got})"
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == f"{path}: key {key!r}: must be a name such as 'llama' (got {got}); " \
        "fix the config.json"


@pytest.mark.parametrize("cfg", [
    {**LLAMA, "model_type": "qwen2_vl", "vision_config": {}, "text_config": None},
    {"model_type": "internvl_chat", "vision_config": {}, "text_config": "x", "llm_config": LLAMA},
], ids=["flat-null-text_config", "text_config-text-beside-llm_config"])
def test_a_sub_config_key_that_is_not_an_object_is_passed_over_as_the_simulator_does(
        tmp_path, cfg):
    """A flat Qwen2-VL config with text_config null, or an InternVL one with a stray
    text_config string beside its llm_config, was refused ('text_config must be a JSON
    object'); the simulator reads the language model it holds (null is absent, as in
    transformers)."""
    sim, harness = _both(_write(tmp_path, cfg))
    assert not isinstance(sim, str), sim
    assert not isinstance(harness, str), harness
    assert _same(sim, harness) == {}


QWEN2_MOE = {**LLAMA, "model_type": "qwen2_moe", "num_experts": 60, "num_experts_per_tok": 4,
             "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
             "num_key_value_heads": 16}


def test_qwen2_moe_is_measured_with_its_shared_expert(tmp_path):
    """Qwen1.5-MoE / Qwen2-57B-A14B configs, which the simulator serves, were refused ('the
    harness measures the shapes of llama, ...'), so their shared expert's GEMMs were never
    measured: the step model rescaled other shapes for them."""
    path = _write(tmp_path, QWEN2_MOE)
    sim, harness = _both(path)
    assert not isinstance(harness, str), harness
    assert _same(sim, harness) == {}
    assert harness.shared_intermediate == sim.shared_intermediate == 5632
    got = {g.layers: (g.n, g.k) for g in shapes.gemm_shapes(harness, tp=2)}
    assert got[("shared_gate_up",)] == (5632, 2048)
    assert got[("shared_down",)] == (2048, 2816)
    path = _write(tmp_path, {k: v for k, v in QWEN2_MOE.items()
                             if k != "shared_expert_intermediate_size"})
    with pytest.raises(CalibrateError) as info:
        shapes.from_config(path)
    assert str(info.value) == (f"{path}: missing 'shared_expert_intermediate_size'; add it to "
                               "the config.json")
    no_shared = shapes.from_config(_write(tmp_path, {**QWEN2_MOE,
                                                     "shared_expert_intermediate_size": 0}))
    assert no_shared.shared_intermediate == 0
    assert not any("shared" in g.layers[0] for g in shapes.gemm_shapes(no_shared))
