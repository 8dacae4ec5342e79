"""How far a profile's dense GEMM and attention answers are from NVIDIA's own rows at the shapes
NVIDIA measured but the profile does not carry (docs/fidelity.md, "MoE shapes NVIDIA measured,
and how far anchoring is off at the others": the same question for the other operators).

    python benchmarks/op_anchoring.py [--profile PATH] [--off-grid]

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
Another ``--profile`` is read on its own GPU and set beside NVIDIA's rows of that GPU and
engine (its ``gpu`` and provenance ``engine``: ``benchmarks/data/b200_aiconfigurator_trtllm.json``
against the B200 TensorRT-LLM rows).

Off the grid (``--off-grid``): the dense GEMMs of real models (:data:`OFF_GRID_CASES`, read from
the configs aiconfigurator ships) at an ``n x k`` NVIDIA did not measure and the profile lacks,
read the same way at 1 to 8,192 tokens: first with interpolation between the grid tables turned
off (every such GEMM anchored on its nearest table, as before round 28), then as shipped
(interpolated where grid tables bracket the shape, anchored beyond the grid), each split by
how the answer was read.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import warnings
from unittest import mock

import numpy as np
from moe_anchoring import SHIPPED, importer_of, report  # a sibling script

from tiersim.hardware import get_model
from tiersim.perf import aiconfigurator as aic
from tiersim.perf import profile as profile_mod
from tiersim.perf.profile import ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps

M = np.array([1.0, 32.0, 256.0, 2048.0, 8192.0])
GEMM_FORMATS = ("bf16", "fp8", "fp8_block")
GEMM_SIZES = (256, 16384)
DECODE_BATCH, DECODE_CONTEXT = np.array([1.0, 16.0, 128.0]), 4096.0
PREFILL_TOKENS = np.array([256.0, 2048.0, 8192.0])
#: (aiconfigurator model config, precision, TP) whose off-grid dense GEMMs ``--off-grid`` reads.
OFF_GRID_CASES = (
    ("Qwen--Qwen3-32B", "bf16", 8), ("Qwen--Qwen3-32B", "fp8", 8),
    ("Qwen--Qwen3-32B-FP8", "fp8_block", 8), ("Qwen--Qwen3-32B", "bf16", 4),
    ("meta-llama--Meta-Llama-3.1-405B", "fp8", 8), ("meta-llama--Meta-Llama-3.1-405B", "bf16", 8),
    ("meta-llama--Meta-Llama-3.1-70B", "bf16", 8), ("meta-llama--Meta-Llama-3.1-70B", "fp8", 4),
    ("Qwen--Qwen3-0.6B", "bf16", 1), ("Qwen--Qwen3-1.7B", "bf16", 2),
    ("Qwen--Qwen3-8B", "fp8", 2), ("Qwen--Qwen3-235B-A22B-FP8", "fp8_block", 8),
)


def ops_of(profile, model, precision: str, tp: int = 1, kv_dtype: str = "bf16") -> ProfileOps:
    """``profile``'s operators for ``model`` on ``tp`` of its GPUs, the roofline where a table is
    missing."""
    gpu = profile.gpu
    return ProfileOps(profile, model, precision, gpu, tp=tp, kv_dtype=kv_dtype,
                      fallback=RooflineOps(model, precision, gpu, tp=tp, kv_dtype=kv_dtype))


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


def off_grid_shapes(imp: aic.Importer, profile) -> dict[str, set[tuple[int, int]]]:
    """Per format, the dense GEMM ``(n, k)`` of :data:`OFF_GRID_CASES` off NVIDIA's grid that
    ``profile`` lacks."""
    shapes: dict[str, set[tuple[int, int]]] = {}
    for name, precision, tp in OFF_GRID_CASES:
        grid = imp.gemm_grid(precision)
        for op, dtype, key, _, _ in aic.table_requests(aic.aic_model_path(f"aic:{name}"),
                                                         precision, tp, "bf16"):
            n, k = key.get("n"), key.get("k")
            if (op != "gemm" or dtype not in GEMM_FORMATS or (n in grid.n and k in grid.k)
                    or profile.find(op, dtype, key) is not None):
                continue
            shapes.setdefault(dtype, set()).add((n, k))
    return shapes


def off_grid_pairs(imp: aic.Importer, profile, precision: str, shapes) -> dict[str, list]:
    """(answer, own) seconds at :data:`M` for each of ``shapes``, by how the answer was read
    (``anchored``, ``interpolated``)."""
    model = get_model("llama-3.1-8b")
    pairs: dict[str, list] = {"interpolated": [], "anchored": []}
    for n, k in sorted(shapes):
        ops = ops_of(profile, model, precision)
        value = ops.gemm(M, n, k)
        label = ops.sources()[f"gemm {precision} n={n} k={k}"]
        how = "interpolated" if "interpolated:" in label else "anchored"
        own = imp.gemm(precision, n, k)
        pairs[how].append((value, ops_of(with_table(profile, own), model, precision).gemm(M, n, k)))
    return pairs


def off_grid(imp: aic.Importer, profile) -> None:
    """The ``--off-grid`` report: anchoring only (before round 28's interpolation), then as
    shipped."""
    shapes = off_grid_shapes(imp, profile)
    for title, interpolate in (("anchoring only", False), ("as shipped", True)):
        print(f"off-grid GEMMs of real models, {title}:")
        for precision in GEMM_FORMATS:
            with mock.patch.object(profile_mod, "interpolated_gemm",
                                   profile_mod.interpolated_gemm if interpolate
                                   else (lambda *args: None)):
                pairs = off_grid_pairs(imp, profile, precision, shapes.get(precision, ()))
            for how, found in pairs.items():
                report(f"gemm {precision}", found, "shapes", how)


def read(ops: ProfileOps, op: str) -> np.ndarray:
    """One attention layer's seconds at this script's points (one batch at a time: the roofline
    a profile without the table falls back on takes one batch size)."""
    if op == "attn_prefill":
        return np.array([float(ops.attn_prefill(t, 0.0)) for t in PREFILL_TOKENS])
    context = np.array([DECODE_CONTEXT])
    return np.array([float(ops.attn_decode(int(b), context)[0]) for b in DECODE_BATCH])


def main(argv=None) -> int:
    """Print how far the profile's GEMM and attention answers are from NVIDIA's rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=str(SHIPPED))
    parser.add_argument("--off-grid", action="store_true",
                        help="only the dense GEMMs of real models off NVIDIA's grid")
    args = parser.parse_args(argv)
    profile = load_profile(args.profile)
    imp = importer_of(profile)
    if args.off_grid:
        off_grid(imp, profile)
        return 0
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
