"""How far a profile's dense GEMM and attention answers are from NVIDIA's own rows at the shapes
NVIDIA measured but the profile does not carry (docs/fidelity.md, "MoE shapes NVIDIA measured,
and how far anchoring is off at the others": the same question for the other operators).

    python benchmarks/op_anchoring.py [--profile PATH]

Needs aiconfigurator-core (the ``aic`` extra). NVIDIA's H200 vLLM GEMM rows are a generic grid
(22 n x 22 k); the attention rows a grid of per-GPU (heads, KV heads, head dim). The shipped
profile holds tables at the shapes of ``SHIPPED_MODELS`` and at every measured shape of both
grids (the GEMM formats of ``SHIPPED_GEMM_FORMATS``; GQA attention with BF16 and FP8 KV), so on
it every line prints ``nothing anchored``; on an older profile (``--profile``), a model of a
shape it lacks anchors on the nearest table, rescaled by the roofline. For every grid shape the
profile lacks (GEMM:
n and k from 256 to 16,384), the profile's answer is set beside the same profile with the
importer's own table at that shape added (both read through ``ProfileOps``), and each operator
prints the anchored count, the range of answer / own and the median |error| per point.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import warnings

import numpy as np
from moe_anchoring import SHIPPED, report  # a sibling script

from tiersim.hardware import get_model
from tiersim.perf import aiconfigurator as aic
from tiersim.perf.profile import ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps

M = np.array([1.0, 32.0, 256.0, 2048.0, 8192.0])
GEMM_FORMATS = ("bf16", "fp8", "fp8_block")
GEMM_SIZES = (256, 16384)
DECODE_BATCH, DECODE_CONTEXT = np.array([1.0, 16.0, 128.0]), 4096.0
PREFILL_TOKENS = np.array([256.0, 2048.0, 8192.0])


def ops_of(profile, model, precision: str, tp: int = 1, kv_dtype: str = "bf16") -> ProfileOps:
    """``profile``'s operators for ``model`` on ``tp`` H200s, the roofline where a table is
    missing."""
    return ProfileOps(profile, model, precision, "h200", tp=tp, kv_dtype=kv_dtype,
                      fallback=RooflineOps(model, precision, "h200", tp=tp, kv_dtype=kv_dtype))


def with_table(profile, table):
    """``profile`` with ``table`` added in front (read before any other of its key)."""
    return dataclasses.replace(profile, tables=[table, *profile.tables])


def gemm_pairs(imp: aic.Importer, profile, precision: str):
    """(answer, own) seconds at :data:`M` for every grid ``n x k`` the profile lacks."""
    grid = aic.GemmGrid(imp._frame(imp._sources("gemm", "gemm_perf.parquet")[0]),
                        aic.GEMM_DTYPES[precision])
    model = get_model("llama-3.1-8b")
    lo, hi = GEMM_SIZES
    pairs = []
    for n in (int(v) for v in grid.n if lo <= v <= hi):
        for k in (int(v) for v in grid.k if lo <= v <= hi):
            if profile.find("gemm", precision, {"n": n, "k": k}) is not None:
                continue
            value = ops_of(profile, model, precision).gemm(M, n, k)
            own = imp.gemm(precision, n, k)
            pairs.append((value, ops_of(with_table(profile, own), model, precision).gemm(M, n, k)))
    return pairs


def attention_pairs(imp: aic.Importer, profile, op: str):
    """(answer, own) seconds for every measured per-GPU (heads, KV heads, head dim) with a BF16
    KV cache that the profile lacks: decode at :data:`DECODE_BATCH` x 4,096 tokens of context,
    prefill of :data:`PREFILL_TOKENS` new tokens."""
    name = "context" if op == "attn_prefill" else "generation"
    df = imp._frame(imp._sources("attention", f"{name}_attention_perf.parquet")[0])
    rows = df[df["kv_cache_dtype"] == aic.KV_DTYPES["bf16"]]
    shapes = {tuple(int(v) for v in r) for r in
              rows[["num_heads", "num_key_value_heads", "head_dim"]].to_numpy()}
    pairs = []
    for heads, kv_heads, head_dim in sorted(shapes):
        key = {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}
        if kv_heads > heads or profile.find(op, "bf16", key) is not None:
            continue
        own = imp.attention(op, "bf16", heads, kv_heads, head_dim)
        if own is None:
            continue
        model = dataclasses.replace(get_model("llama-3.1-8b"), heads=heads, kv_heads=kv_heads,
                                    head_dim=head_dim)
        pairs.append((read(ops_of(profile, model, "bf16"), op),
                      read(ops_of(with_table(profile, own), model, "bf16"), op)))
    return pairs


@functools.cache
def gdn_model():
    """A gated delta-net model to stand in for each measured shape (its language model)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the note that its vision tower is not modelled
        return get_model(aic.aic_model_path("aic:Qwen--Qwen3.5-27B"))


def gdn_pairs(imp: aic.Importer, profile, op: str):
    """(answer, own) seconds for every measured gated delta-net shape (one GPU) the profile
    lacks: decode of :data:`DECODE_BATCH` sequences, prefill of :data:`PREFILL_TOKENS`."""
    pairs = []
    for key in aic.gdn_shapes(imp):
        own = imp.gdn(op, key)
        if own is None or profile.find(op, None, key) is not None:
            continue
        model = dataclasses.replace(gdn_model(), hidden=key["hidden"],
                                    linear_k_heads=key["k_heads"], linear_v_heads=key["v_heads"],
                                    linear_k_dim=key["k_dim"], linear_v_dim=key["v_dim"])
        points = DECODE_BATCH if op == "gdn_decode" else PREFILL_TOKENS
        pairs.append((getattr(ops_of(profile, model, "bf16"), op)(points),
                      getattr(ops_of(with_table(profile, own), model, "bf16"), op)(points)))
    return pairs


def mla_pairs(imp: aic.Importer, profile, op: str):
    """(answer, own) seconds for DeepSeek-V3's MLA module (the one latent NVIDIA measured) at
    32, 64 and 128 query heads per GPU (TP 4, 2, 1, or attention data parallel), BF16 and
    block-FP8 projections, BF16 and FP8 KV caches."""
    model = get_model(aic.aic_model_path("aic:deepseek-ai--DeepSeek-V3"))
    pairs = []
    for attn_format in ("bf16", "fp8_block"):
        for kv_dtype in ("bf16", "fp8"):
            for tp in (1, 2, 4):
                own = imp.mla(op, kv_dtype, model.heads // tp, attn_format)
                if profile.find(op, own.dtype, own.key) is not None:
                    continue
                pairs.append((read(ops_of(profile, model, attn_format, tp, kv_dtype), op),
                              read(ops_of(with_table(profile, own), model, attn_format, tp,
                                          kv_dtype), op)))
    return pairs


def read(ops: ProfileOps, op: str) -> np.ndarray:
    """One attention layer's seconds at this script's points."""
    if op == "attn_prefill":
        return np.array([float(ops.attn_prefill(t, 0.0)) for t in PREFILL_TOKENS])
    return np.asarray(ops.attn_decode(DECODE_BATCH, DECODE_CONTEXT), np.float64)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=str(SHIPPED))
    args = parser.parse_args(argv)
    imp = aic.Importer("h200", "vllm")
    profile = load_profile(args.profile)
    for precision in GEMM_FORMATS:
        report(f"gemm {precision}", gemm_pairs(imp, profile, precision), "shapes")
    for op in ("attn_decode", "attn_prefill"):
        report(op, attention_pairs(imp, profile, op), "shapes")
        report(f"MLA {op}", mla_pairs(imp, profile, op), "layouts")
    for op in ("gdn_decode", "gdn_prefill"):
        report(op, gdn_pairs(imp, profile, op), "shapes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
