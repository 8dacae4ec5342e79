"""DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): read from config.json, its caches in
memory, its step time on NVIDIA's measured DSA modules, and the roofline where none is."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiersim.hardware.hf_config import load_hf_config
from tiersim.perf import build_step_model
from tiersim.perf.aiconfigurator import _context_gaps_filled, _decode_grid
from tiersim.perf.memory import kv_bytes_per_token, params_per_gpu
from tiersim.perf.roofline import RooflineOps, sparse_pairs

#: DeepSeek-V3.2's config.json (the keys tiersim reads).
DEEPSEEK_V32 = {
    "model_type": "deepseek_v32", "hidden_size": 7168, "num_hidden_layers": 61,
    "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
    "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
    "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "moe_layer_freq": 1, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64, "v_head_dim": 128, "num_nextn_predict_layers": 1,
    "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048,
    "max_position_embeddings": 163840, "tie_word_embeddings": False,
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128],
                            "activation_scheme": "dynamic", "fmt": "e4m3"},
}
#: GLM-5-FP8's shapes (another DSA model NVIDIA measured its modules at).
GLM5 = {**DEEPSEEK_V32, "model_type": "glm_moe_dsa", "hidden_size": 6144,
        "num_hidden_layers": 78, "num_attention_heads": 64, "num_key_value_heads": 64,
        "vocab_size": 154880, "intermediate_size": 12288, "q_lora_rank": 2048,
        "qk_nope_head_dim": 192, "v_head_dim": 256, "index_n_heads": 32,
        "max_position_embeddings": 202752}


def _model(tmp_path, config: dict, name: str = "m"):
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    return load_hf_config(folder)


def test_deepseek_v32_reads_as_mla_with_its_indexer_and_its_published_size(tmp_path):
    m = _model(tmp_path, DEEPSEEK_V32)
    assert m.is_mla and m.is_dsa
    assert (m.index_heads, m.index_head_dim, m.index_topk) == (64, 128, 2048)
    # 685.4 B on the Hub: the served model (671.9 B) plus the MTP module
    assert m.total_params == pytest.approx(671.9e9, rel=0.002)
    indexer = 1536 * 64 * 128 + 7168 * 128 + 7168 * 64
    assert m.indexer_params_per_layer() == indexer
    assert {group: fmt for group, fmt, _ in m.checkpoint}["attention"] == "fp8_block"


def test_glm5_has_its_published_parameter_count(tmp_path):
    m = _model(tmp_path, GLM5)
    assert m.is_dsa and m.total_params == pytest.approx(744e9, rel=0.003)


def test_the_indexer_is_replicated_on_every_gpu(tmp_path):
    m = _model(tmp_path, DEEPSEEK_V32)
    one, eight = params_per_gpu(m, 1)["attention"], params_per_gpu(m, 8)["attention"]
    down = m.hidden * (m.q_lora_rank + m.kv_latent_dim) + m.indexer_params_per_layer()
    assert eight == pytest.approx(m.layers * down + (one - m.layers * down) / 8)


def test_a_dsa_token_caches_the_sparse_latent_layout_and_the_indexer_key(tmp_path):
    m = _model(tmp_path, DEEPSEEK_V32)
    # FP8: 512 latent bytes + 4 FP32 scales + a 64-wide BF16 rotary key = 656; the indexer's
    # key is 128 FP8 bytes + one FP32 scale whatever the KV dtype
    assert kv_bytes_per_token(m, "fp8") == 61 * (656 + 132)
    assert kv_bytes_per_token(m, "bf16") == 61 * (576 * 2 + 132)


@given(st.integers(1, 5000), st.integers(0, 5000), st.integers(1, 3000))
def test_sparse_pairs_is_the_sum_of_each_positions_kept_tokens(tokens, context, topk):
    positions = np.arange(context + 1, context + tokens + 1)
    assert sparse_pairs(tokens, context, topk) == pytest.approx(
        float(np.minimum(positions, topk).sum()))


def test_past_its_top_k_only_the_indexer_grows_with_the_context(tmp_path):
    dsa = _model(tmp_path, DEEPSEEK_V32)
    mla = _model(tmp_path, {**DEEPSEEK_V32, "model_type": "deepseek_v3"}, "mla")
    ops = {m.name: RooflineOps(m, "checkpoint", "h200", tp=8, kv_dtype="fp8")
           for m in (dsa, mla)}
    short, long = np.array([2048.0]), np.array([131072.0])
    sparse = ops[dsa.name].attn_decode(64, long)[0] / ops[dsa.name].attn_decode(64, short)[0]
    dense = ops[mla.name].attn_decode(64, long)[0] / ops[mla.name].attn_decode(64, short)[0]
    assert 1.0 < sparse < dense / 4
    assert ops[dsa.name].attn_prefill(8192, 65536) < ops[mla.name].attn_prefill(8192, 65536)


@pytest.mark.parametrize("config, name", [(DEEPSEEK_V32, "DeepSeek-V3.2"), (GLM5, "GLM-5")])
def test_the_shipped_profile_reads_nvidias_dsa_modules_at_each_models_shapes(
        tmp_path, config, name):
    m = _model(tmp_path, config)
    step = build_step_model(m, "checkpoint", "h200", tp=8, kv_dtype="fp8",
                            profile="h200_aiconfigurator_vllm")
    heads = m.heads // 8
    shape = (f"hidden={m.hidden} q_lora={m.q_lora_rank} rope=64 nope={m.qk_nope_head_dim} "
             f"v_dim={m.v_head_dim} index_heads={m.index_heads} index_dim=128 index_topk=2048")
    for op in ("attn_prefill", "attn_decode"):
        key = f"{op} fp8 dsa-fp8_block heads={heads} kv_heads=1 head_dim=576 {shape}"
        assert step.sources()[key] == "measured:aiconfigurator vllm 0.24.0"
    # another DSA shape, even at the same width and heads per GPU, is not read through this
    # one's table (its indexer, its query rank, its top-k)
    for change in ({"hidden_size": config["hidden_size"] + 512}, {"index_topk": 64},
                   {"index_n_heads": 16}, {"q_lora_rank": 1024}):
        other = _model(tmp_path, {**config, **change}, "other")
        sources = build_step_model(other, "checkpoint", "h200", tp=8, kv_dtype="fp8",
                                   profile="h200_aiconfigurator_vllm").sources()
        assert all(v == "roofline" for k, v in sources.items() if k.startswith("attn_"))
    # per-tensor FP8 projections read the block-FP8 modules, and say so
    fp8 = build_step_model(m, "fp8", "h200", tp=8, kv_dtype="fp8",
                           profile="h200_aiconfigurator_vllm").sources()
    key = f"attn_decode fp8 dsa-fp8 heads={heads} kv_heads=1 head_dim=576 {shape}"
    assert fp8[key] == "measured:aiconfigurator vllm 0.24.0 (fp8 dsa-fp8 read through its " \
        "fp8_block rows)"


def test_a_chunk_after_cached_tokens_costs_the_prompt_curves_increment(tmp_path):
    # a 512-token chunk after 65,536 cached tokens was priced as a fresh 8,192-token prompt
    m = _model(tmp_path, DEEPSEEK_V32)
    ops = build_step_model(m, "checkpoint", "h200", tp=8, kv_dtype="fp8",
                           profile="h200_aiconfigurator_vllm").ops
    fresh = ops.attn_prefill(512, 0)
    assert ops.attn_prefill(512, 65536) < 1.5 * fresh < ops.attn_prefill(8192, 0)
    # chunking a long prompt costs about what prefilling it whole does
    whole = ops.attn_prefill(131072, 0)
    chunks = sum(ops.attn_prefill(8192, c) for c in range(0, 131072, 8192))
    assert chunks == pytest.approx(whole, rel=0.2)  # the dense mapping: 3.5x
    grid = [[ops.attn_prefill(t, c) for c in (0, 1024, 8192, 65536)] for t in (1, 64, 4096)]
    assert np.all(np.diff(grid, axis=0) >= 0) and np.all(np.diff(grid, axis=1) >= 0)


def test_only_a_dsa_module_table_carries_the_dsa_key_fields(tmp_path):
    from tiersim.errors import TiersimError
    from tiersim.paths import bundled
    from tiersim.perf.profile import load_profile

    doc = json.loads(bundled("profiles", "h200_aiconfigurator_vllm").read_text())
    plain = next(i for i, t in enumerate(doc["tables"])
                 if t["op"] == "attn_decode" and " " not in t["kv_dtype"])
    doc["tables"][plain]["key"]["hidden"] = 2048
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TiersimError, match=rf"tables\[{plain}\]\.key\.hidden: only an MLA or DSA "
                       r"module's table \(kv_dtype '<kv> mla-<weight format>' or "
                       r"'<kv> dsa-<weight format>'\) carries it; remove it"):
        load_profile(path)
    del doc["tables"][plain]["key"]["hidden"]
    dsa = next(i for i, t in enumerate(doc["tables"]) if " dsa-" in str(t.get("kv_dtype")))
    del doc["tables"][dsa]["key"]["index_topk"]
    path.write_text(json.dumps(doc))
    with pytest.raises(TiersimError, match=rf"tables\[{dsa}\]\.key\.index_topk: must be a "
                       "whole number"):
        load_profile(path)


def test_a_context_measured_at_one_batch_is_filled_along_context_not_linearly_in_batch():
    # SGLang's DSA data times contexts 1536 and 3072 at batch 1 only
    import pandas as pd

    rows = [(b, s, 0.1 + 0.001 * b + 1e-5 * s) for b in (1, 64) for s in (1024, 2048, 4096)]
    rows += [(1, 1536, 0.1 + 0.001 + 1e-5 * 1536), (1, 3072, 0.1 + 0.001 + 1e-5 * 3072)]
    df = pd.DataFrame(rows, columns=["batch_size", "step", "latency"])
    batch, context, grid = _decode_grid(df)
    at64 = grid[list(batch).index(64.0)]
    assert np.all(np.diff(at64) > 0) and at64.max() < 2 * at64.min()
    filled = _context_gaps_filled(np.array([[1.0, np.nan, 4.0]]), np.array([1.0, 2.0, 4.0]))
    assert filled[0, 1] == pytest.approx(2.0)


# ------------------------------------------------------------------ SGLang: MLA from its parts


def test_an_engine_without_mla_modules_composes_the_block_from_its_measured_parts():
    """SGLang's measured MLA modules hold an FP8 cache only: a BF16 cache composes the block."""
    pytest.importorskip("aiconfigurator_core")
    from tiersim.perf.aiconfigurator import MLA_SHAPE, Importer, find_sources
    from tiersim.perf.mla_decode import bmm_seconds, projection_shapes

    imp = Importer("h200", "sglang")
    table = imp.mla("attn_decode", "bf16", 16, "fp8_block")
    assert "composed from its parts" in table.extra["notes"]
    batch = np.array([1.0, 64.0])
    kernel = imp._frame(find_sources(imp.root, "mla", "sglang", "generation_mla_perf.parquet")[0])
    rows = kernel[(kernel["num_heads"] == 16) & (kernel["kv_cache_dtype"] == "bfloat16")]
    _, context, grid = _decode_grid(rows[rows["tp_size"] == rows["tp_size"].min()])
    bmm = bmm_seconds(imp._frame(find_sources(imp.root, "mla_bmm", "sglang",
                                              "mla_bmm_perf.parquet")[0]), 16, batch)
    gemms = sum(imp.gemm("fp8_block", n, k).lookup(batch)
                for n, k in projection_shapes(MLA_SHAPE, 16))
    rows_at = [0, list(table.axes["batch"]).index(64.0)]
    want = grid[rows_at, 0] + bmm + gemms
    assert table.latency[rows_at, 0] == pytest.approx(want)
    prefill = imp.mla("attn_prefill", "bf16", 16, "fp8_block")
    assert "composed from its parts" in prefill.extra["notes"]
    assert np.all(np.diff(prefill.latency[:, 0]) >= -1e-9)


@pytest.mark.parametrize(("gpu", "backend"), [("h200", "fa3"), ("b200", "trtllm_mla")])
def test_sglang_reads_its_measured_mla_module_with_its_default_backend(gpu, backend):
    """SGLang's measured MLA module (``wideep_*_mla_perf``) with the backend SGLang picks on
    that GPU, plus the fused down-projection it runs outside the module."""
    pytest.importorskip("aiconfigurator_core")
    from tiersim.perf.aiconfigurator import MLA_SHAPE, Importer, find_sources
    from tiersim.perf.mla_decode import projection_shapes

    imp = Importer(gpu, "sglang")
    table = imp.mla("attn_decode", "fp8", 16, "fp8_block")
    assert table.extra["kernel"] == backend and "generation module" in table.extra["notes"]
    df = imp._frame(find_sources(imp.root, "mla", "sglang",
                                 "wideep_generation_mla_perf.parquet")[0])
    cell = df[(df["num_heads"] == 16) & (df["kernel_source"] == backend)
              & (df["batch_size"] == 64) & (df["isl"] == 1024)]["latency"].median() / 1e3
    down = float(imp.gemm("fp8_block", *projection_shapes(MLA_SHAPE, 16)[0]).lookup(64.0))
    assert float(table.lookup(64.0, 1024.0)) == pytest.approx(cell + down, rel=1e-6)
    prefill = imp.mla("attn_prefill", "fp8", 16, "fp8_block")
    assert prefill.extra["kernel"] == backend and "context module" in prefill.extra["notes"]
