"""Import NVIDIA's measured operator tables (aiconfigurator-core) into a tiersim profile.

This module holds the import itself (:func:`import_aiconfigurator`, what ``tiersim calibrate
--from aiconfigurator`` calls) and what it asks for: the tables one replica's step looks up
(:func:`table_requests`, :func:`moe_backends`) and what the shipped profile covers
(:data:`SHIPPED_MODELS` and the measured sets, :func:`measured_moe_requests` and its kin). The
rest of the importer is in seven modules, and every public name they define is importable from
here as well:

- :mod:`tiersim.perf.aic_data`: where the package's tables are and how they are read
  (:func:`data_root`, :func:`find_sources`, :class:`Source`, :func:`aic_model_path`);
- :mod:`tiersim.perf.aic_formats`: which rows stand for each tiersim format and kernel
  (:data:`GEMM_DTYPES`, :data:`MOE_DTYPES`, :data:`MOE_PROXIES` ...), the MLA shape measured
  and the axes of the imported attention tables;
- :mod:`tiersim.perf.aic_tables`: the frames turned into curves and grids, operator by operator
  (:class:`GemmGrid`, :func:`moe_latency`, :func:`prefill_table`, :func:`decode_table` ...);
- :mod:`tiersim.perf.aic_importer`: :class:`Importer` (one engine's tables for one GPU:
  requested shapes in, profile tables out) and :func:`build_profile`;
- :mod:`tiersim.perf.aic_moe` and :mod:`tiersim.perf.aic_mla`: the importer's MoE tables
  (:class:`MoeTables`) and its MLA and DSA attention tables (:class:`MlaTables`);
- :mod:`tiersim.perf.aic_rebuild`: the fitted costs a rebuild keeps of the profile it replaces.

The rules below, table by table, are what those modules implement.

``aiconfigurator-core`` (Apache-2.0, PyPI; tiersim pins 0.12.0 in the ``aic`` extra) ships
per-GPU parquet tables measured with real serving-engine kernels under
``aiconfigurator_core/systems/data/<gpu>/<family>/<engine>/<version>/``. Units there: ``latency``
in milliseconds per call; GEMM ``m, n, k``; attention ``batch_size`` sequences, ``isl`` prompt
length (context attention) or ``step`` tokens already decoded (generation attention: context =
step + 1); all-reduce ``message_size`` in bf16 elements (bytes = 2 x elements).

What is taken, per table of the profile (every choice is written into the table's ``kernel``,
``origin`` and ``notes``):

- ``gemm``: ``gemm_perf``; ``bf16`` from the bfloat16 rows, ``fp8`` from the per-tensor FP8 rows
  (vLLM: ``CutlassFP8ScaledMMLinearKernel``), ``fp8_block`` from the block-FP8 rows, where the
  data measured DeepGEMM, FlashInfer and CUTLASS over different shape ranges, so each point is
  the fastest kernel measured there. The measured grid is every ``n, k`` in {32 ... 65536}
  (22 values) x 74 token counts ``m``; a shape between grid values is interpolated bilinearly
  in log n, log k, log latency; beyond the grid (an LM head's ``n = vocab``) latency is scaled
  linearly in n (or k) from the edge. There are no weight-only 4-bit GEMM rows (W4A16, NVFP4,
  MXFP4 on Hopper): those GEMMs stay on the roofline's weight-only path (B200's NVFP4 GEMMs
  are measured: FP4 tensor cores).
- ``moe``: ``moe_perf`` at the model's exact (hidden, inter, experts, top-k) and MoE split
  (``tp``, ``ep``) with the ``power_law_1.01`` token distribution (aiconfigurator's default).
  ``bf16`` uses the bfloat16 rows; ``fp8`` and ``fp8_block`` the block-FP8 rows (vLLM's Triton
  FP8 MoE; the per-tensor rows are ModelOpt's FlashInfer path, which vLLM does not pick for
  such checkpoints); ``w4a16`` the INT4 weight-only Marlin rows; ``mxfp4`` the
  ``w4a16_mxfp4`` rows (gpt-oss: weight-only on Hopper). ``nvfp4`` has no Hopper rows of its
  own: vLLM runs it there through the same weight-only fused Marlin MoE kernel as INT4, so it
  reads the INT4 Marlin rows, and the table's notes say so (:data:`MOE_PROXIES`). On a GPU
  whose tensor cores run NVFP4 (B200: ``GPU.native``), NVFP4 MoE and dense GEMMs read their own
  rows instead (FlashInfer's TRT-LLM MoE and CuTe-DSL GEMM), with no proxy. Folders are
  tried newest
  first; a split the data lacks at the same shape and ``ep`` is the nearest smaller measured
  ``tp`` scaled by ``tp0 / tp`` (floored at that curve's minimum), noted in the table. A shape
  the data lacks altogether (a model NVIDIA did not measure) is the nearest measured shape of
  the same kernel (log distance in hidden, per-GPU expert width, experts per GPU, top-k), its
  curve multiplied token by token by the roofline's ratio between the two shapes: the measured
  kernel efficiency is kept, the bytes and FLOPs rescaled. Leave-one-shape-out over the
  0.24.0 folder, this is within a median factor of 1.11 of the measured curve (BF16 and block
  FP8; MXFP4 1.40), against 1.28 for the roofline alone.
- MLA attention (DeepSeek-V3 / Kimi-K2 shapes only: the data was measured at DeepSeek-V3's):
  ``mla_context_module_perf`` as ``attn_prefill`` and ``mla_generation_module_perf`` as
  ``attn_decode``: each module is the whole attention block (aiconfigurator's ``MLAModule``
  replaces the down-projection, q_b (and kv_b or the absorbed BMMs), attention and o_proj), so
  the step assembly adds no attention GEMMs of its own for MLA models;
  keyed ``heads`` per GPU, ``kv_heads`` 1 and ``head_dim`` = the cached latent width (576),
  dtype ``"<kv dtype> mla-<projection format>"``; prefill and decode axes as below. vLLM's
  generation module was timed uncompiled: it is read less its unfused excess at the shortest
  context over the block's served parts (:mod:`tiersim.perf.mla_decode`). SGLang has no such
  tables; its measured modules ``wideep_context_mla_perf`` / ``wideep_generation_mla_perf``
  (the block without its fused down-projection, FP8 cache, block-FP8 projections) are read with
  its default backend on the GPU, the down-projection added from the GEMM table; a format they
  lack composes the block from SGLang's kernel, GEMM and BMM tables.
- ``attn_prefill``: ``context_attention_perf`` (batch 1, fresh prompts, no cached prefix). The
  data has no cached-prefix axis, so a chunk of ``t`` new tokens over ``c`` cached ones is read
  at the fresh-prompt length with the same attention work, ``s = sqrt(t (t + 2c))``; lengths
  beyond the measured 16,384 follow the power law of the last two points. That keeps the FLOPs
  but not the memory traffic, so each cell is floored at reading the chunk's whole KV
  (``t + c`` tokens) once at HBM bandwidth (a small chunk over a long context is memory-bound).
- ``attn_decode``: ``generation_attention_perf`` (batch x context). The measured grid is a
  triangle (batch x context <= about 1M tokens); cells beyond it are filled linearly in batch
  from the largest measured batch at that context (decode attention is bandwidth-bound there).
- ``allreduce``: ``custom_allreduce_perf`` (the engine's custom all-reduce, bf16; the CUDA-graph
  rows where eager and graph launches were both measured), keyed by the number of GPUs. It also
  times the MoE exchange across attention data-parallel ranks (vLLM's default
  all-gather + reduce-scatter, the same traffic as an all-reduce over the ``tp x dp`` GPUs).
  ``moe_a2a_perf`` (DeepEP all-to-all, 8 GPUs only) is not used: vLLM's default all-to-all
  backend on one node is all-gather + reduce-scatter, not DeepEP.
- ``overhead_s``: not in the data (aiconfigurator models CPU overhead outside its tables); the
  importer writes the roofline's assumption, labelled ``roofline``, unless the profile it
  rewrites holds a fitted one (``source`` starting ``fitted``), which it keeps.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import numpy as np

from tiersim.perf.aic_data import (  # noqa: F401 - re-exported
    _GPU_NAMES,
    AIC_PACKAGE,
    AIC_PIN,
    Source,
    aic_model_path,
    aic_version,
    data_engine,
    data_root,
    find_sources,
)
from tiersim.perf.aic_formats import (  # noqa: F401 - re-exported
    DECODE_BATCH_AXIS,
    EAGER_GEMMS,
    FASTEST,
    GEMM_DTYPES,
    GEMM_KERNELS,
    KV_DTYPES,
    MLA_GEMM_TYPES,
    MLA_LATENT,
    MLA_SHAPE,
    MOE_DISTRIBUTION,
    MOE_DTYPES,
    MOE_PROXIES,
    NATIVE_GEMM_DTYPES,
    NATIVE_MOE_DTYPES,
    OPT_IN_MOE_KERNELS,
    PREFILL_CONTEXT_AXIS,
    PREFILL_EXTRA_TOKENS,
    SERVED_MLA_DECODE,
    SGLANG_DENSE_PREFILL_MAX,
    SGLANG_MLA_BACKENDS,
    mla_table_key,
)
from tiersim.perf.aic_importer import (  # noqa: F401 - re-exported
    Importer,
    _import_one,
    _moe_roofline,
    _table,
    build_profile,
)
from tiersim.perf.aic_mla import MlaTables  # noqa: F401 - re-exported
from tiersim.perf.aic_moe import MoeTables  # noqa: F401 - re-exported
from tiersim.perf.aic_rebuild import (  # noqa: F401 - re-exported
    _fitted_elsewhere,
    _kept_eager,
    _kept_overhead,
)
from tiersim.perf.aic_tables import (  # noqa: F401 - re-exported
    ATTENTION_FILES,
    GDN_KERNELS,
    GemmGrid,
    _context_gaps_filled,
    _decode_grid,
    _full_attn_rows,
    allreduce_latency,
    decode_table,
    gdn_latency,
    mla_dtype,
    moe_latency,
    prefill_table,
)
from tiersim.perf.profile import Profile, ProfileOps


def table_requests(model, precision: str, tp: int, kv_dtype: str, gpu: str = "h200",
                   dp: int = 1, ep: int = 1, moe_backend: str = "auto"):
    """The ``(op, dtype, key, model, tp)`` tables one replica's step assembly looks up.

    Learned from the assembly itself: a step model is built over an empty profile (every
    operator falls back to the roofline) and the lookups it made are returned. ``dp`` / ``ep``:
    the replica's attention data parallelism and expert-parallel size; ``moe_backend``: its
    MoE kernel (``deepgemm`` reads the experts from block-FP8 GEMM tables, not a MoE table).
    """
    from tiersim.hardware import get_gpu, get_model
    from tiersim.perf.assembly import AssembledStepModel
    from tiersim.perf.roofline import RooflineOps

    arch, device = get_model(model), get_gpu(gpu)
    empty = Profile("probe", gpu, {}, 0.0, "roofline", [])
    fallback = RooflineOps(arch, precision, device, tp=tp, kv_dtype=kv_dtype, dp=dp, ep=ep)
    ops = ProfileOps(empty, arch, precision, device, tp=tp, kv_dtype=kv_dtype,
                     fallback=fallback, dp=dp, ep=ep)
    AssembledStepModel(arch, precision, tp, ops, "probe", dp=dp, ep=ep, moe_backend=moe_backend)
    return [(op, dtype, key, arch, tp) for op, dtype, key in ops.requested()]


def moe_backends(model, precision: str, tp: int, dp: int = 1, ep: int = 1) -> tuple[str, ...]:
    """The MoE kernels (``moe_backend``) a ``tp`` x ``dp`` replica of ``model`` with expert
    parallel size ``ep`` can run: ``auto``, and ``deepgemm`` where
    :func:`tiersim.perf.memory.check_moe_backend` admits it (block-FP8 experts below MoE TP
    8). An import probes each, so a ``deepgemm`` tier reads its expert GEMMs measured."""
    from tiersim.hardware import get_model
    from tiersim.hardware.precisions import weight_formats
    from tiersim.perf.memory import MOE_BACKENDS, check_moe_backend

    arch = get_model(model)
    formats = weight_formats(arch, precision)
    runs = []
    for backend in MOE_BACKENDS:
        try:
            runs.append(check_moe_backend(arch, formats, backend, tp, dp, ep))
        except ValueError:
            continue
    return tuple(runs)


#: What the shipped profile covers: model -> (precisions, layouts). A layout is a tensor-parallel
#: size or ``(tp, dp, ep)`` (attention data parallelism, expert-parallel size). ``aic:NAME`` is
#: the ``NAME_config.json`` that aiconfigurator-core ships (its ``model_configs/``); those
#: models are served as their checkpoints ship (``precision: checkpoint``).
SHIPPED_MODELS: dict[str, tuple[tuple[str, ...], tuple]] = {
    "qwen3-coder-30b-a3b": (("bf16", "fp8", "w4a16", "nvfp4"), (1, 2, 4)),
    "llama-3.1-8b": (("bf16", "fp8"), (1, 2, 4, 8)),
    "llama-3.1-70b": (("bf16", "fp8"), (1, 2, 4, 8)),
    "aic:MiniMaxAI--MiniMax-M2.5": (("checkpoint",), (4, 8)),
    "aic:Qwen--Qwen3-235B-A22B-FP8": (
        ("checkpoint",), (1, 2, 4, (1, 2, 1), (1, 4, 1), (2, 2, 1), (2, 1, 2), (4, 1, 4))
    ),
    "aic:moonshotai--Kimi-K2.5": (("checkpoint",), (8,)),
    "aic:deepseek-ai--DeepSeek-V3": (("checkpoint",), (8,)),
    "aic:openai--gpt-oss-120b": (("checkpoint",), (1, 2, 4, 8)),
    # Checkpoints NVIDIA did not run end to end, imported at their own shapes so that a user's
    # model reads measured tables rather than anchored ones (an MoE of another expert count or
    # width anchors badly: gpt-oss-20b's decode at batch 128 came out 0.67x its own tables).
    "aic:openai--gpt-oss-20b": (("checkpoint",), (1, 2, 4)),
    "aic:Qwen--Qwen3-235B-A22B": (("checkpoint",), (4, 8)),
    "aic:Qwen--Qwen3-Coder-480B-A35B-Instruct": (("checkpoint",), (8,)),
    "aic:Qwen--Qwen3-30B-A3B-FP8": (("checkpoint",), (1, 2)),
    "aic:Qwen--Qwen3-32B": (("bf16", "fp8"), (1, 2, 4)),
    "aic:Qwen--Qwen3-32B-FP8": (("checkpoint",), (1, 2, 4)),
    "aic:Qwen--Qwen3-8B": (("bf16", "fp8"), (1, 2)),
    "aic:mistralai--Mixtral-8x7B-v0.1": (("checkpoint",), (1, 2, 4)),
    "aic:mistralai--Mixtral-8x22B-v0.1": (("checkpoint",), (4, 8)),
    "aic:moonshotai--Kimi-K2-Instruct": (("checkpoint",), (8,)),
    "aic:MiniMaxAI--MiniMax-M2.7": (("checkpoint",), (4, 8)),
    "aic:nvidia--DeepSeek-V3.1-NVFP4": (("checkpoint",), (8,)),
    # Gated delta-net hybrids: their attention, MLP and expert shapes (the delta-net kernels
    # themselves have no table format here yet and run on the roofline, labelled so).
    "aic:Qwen--Qwen3.5-27B": (("bf16", "fp8"), (1, 2)),
    "aic:Qwen--Qwen3.5-35B-A3B": (("checkpoint",), (1, 2)),
    "aic:Qwen--Qwen3.5-122B-A10B": (("checkpoint",), (2, 4)),
    "aic:Qwen--Qwen3.5-397B-A17B": (("checkpoint",), (4, 8)),
    "aic:nvidia--Qwen3-235B-A22B-NVFP4": (("checkpoint",), (4, 8)),
    "aic:nvidia--MiniMax-M2.5-NVFP4": (("checkpoint",), (4, 8)),
    "aic:nvidia--Kimi-K2.5-NVFP4": (("checkpoint",), (8,)),
    # DeepSeek sparse attention: NVIDIA's DSA modules at DeepSeek-V3.2's and GLM-5's shapes.
    # TP 8 and attention DP 8 with experts over the 8 GPUs, as served and as shipped (their
    # NVFP4 checkpoints also at TP 4), and per-tensor FP8 (read through block-FP8 modules).
    "aic:deepseek-ai--DeepSeek-V3.2": (("checkpoint", "fp8"), (8, (1, 8, 8))),
    "aic:zai-org--GLM-5-FP8": (("checkpoint", "fp8"), (8, (1, 8, 8))),
    "aic:nvidia--DeepSeek-V3.2-NVFP4": (("checkpoint",), (4, 8)),
    "aic:nvidia--GLM-5-NVFP4": (("checkpoint",), (4, 8)),
}
#: KV cache dtypes the shipped profile's attention tables cover: the shipped models' layouts,
#: the MLA modules at :data:`SHIPPED_MLA_HEADS` and GQA attention, prefill and decode, at every
#: per-GPU ``(heads, kv_heads, head_dim)`` NVIDIA's rows measured
#: (:func:`measured_attention_requests`; anchored on the nearest shipped shape, a prefill came
#: out 0.27-1.38x its own rows, a decode 0.57-1.34x).
SHIPPED_KV_DTYPES = ("bf16", "fp8")
#: The ``(moe tp, moe ep)`` splits :data:`SHIPPED_MOE_SHAPES` imports where measured: tensor
#: parallel experts on up to 8 GPUs, and vLLM's ``--enable-expert-parallel`` on up to 8.
SHIPPED_MOE_SPLITS = ((1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (1, 4), (1, 8))
#: MoE formats the shipped profile also carries at every expert shape NVIDIA measured for their
#: rows (any of the engine's folders), at each split the data holds for that shape: a model of
#: such a shape reads its own table rather than another shape's rescaled. NVIDIA's INT4 Marlin
#: rows cover 11 shapes (Mixtral, Qwen3, MiniMax, DeepSeek-V3, Kimi-K2, GLM-5 ...), its block-FP8
#: rows 17; the shipped models asked for W4A16 at two of them, and every other W4A16 MoE
#: anchored on Kimi-K2.5's table: 0.26-2.16x its own (block FP8: 0.36-3.35x; ``docs/fidelity.md``).
#: ``nvfp4`` and ``fp8`` read the INT4 and block-FP8 rows but key tables of their own. BF16's
#: rows cover 20 shapes; a BF16 MoE of another shipped shape anchored at 0.22-2.28x its own;
#: MXFP4's 3 (gpt-oss's two, Kimi-K3's with a Marlin kernel) at 0.34-1.43x.
SHIPPED_MOE_SHAPES: dict[str, tuple[tuple[int, int], ...]] = {
    "w4a16": SHIPPED_MOE_SPLITS,
    "nvfp4": SHIPPED_MOE_SPLITS,
    "fp8_block": SHIPPED_MOE_SPLITS,
    "fp8": SHIPPED_MOE_SPLITS,
    "bf16": SHIPPED_MOE_SPLITS,
    "mxfp4": SHIPPED_MOE_SPLITS,
}


def measured_moe_requests(imp: Importer,
                          formats: dict[str, tuple[tuple[int, int], ...]] = SHIPPED_MOE_SHAPES):
    """The ``(op, dtype, key, model, tp)`` MoE requests of :data:`SHIPPED_MOE_SHAPES`: each
    format at every expert shape ``imp``'s folders measured for its rows, at the listed splits
    measured there (a model of that shape stands in: a MoE table reads only its expert
    shape)."""
    from tiersim.hardware import get_model

    stand_in = get_model("qwen3-coder-30b-a3b")
    cols = ["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size"]
    requests = []
    for precision, splits in formats.items():
        measured = set()
        for source in imp._sources("moe", "moe_perf.parquet"):
            df = imp._frame(source)
            rows = df[(df["moe_dtype"] == MOE_DTYPES[precision])
                      & (df["distribution"] == MOE_DISTRIBUTION)]
            measured |= {tuple(int(v) for v in row) for row in rows[cols].to_numpy()}
        for hidden, inter, experts, top_k, tp, ep in sorted(measured):
            if (tp, ep) not in splits:
                continue
            model = dataclasses.replace(stand_in, hidden=hidden, expert_intermediate=inter,
                                        num_experts=experts, top_k=top_k)
            key = {"hidden": hidden, "inter": inter, "num_experts": experts, "top_k": top_k,
                   "ep": ep, "tp": tp}
            requests.append(("moe", precision, key, model, tp))
    return requests


#: Query heads per GPU at which the shipped profile carries NVIDIA's MLA modules (DeepSeek-V3's
#: latent, the only one measured), both projection formats and KV dtypes: DeepSeek-V3's 128
#: heads at TP 1 (or attention data parallel) to 16, Kimi-K2's 64 to 8. Anchored on another
#: head count, a prefill came out 0.75-1.74x its own module (``docs/fidelity.md``).
SHIPPED_MLA_HEADS = (8, 16, 32, 64, 128)


def gdn_shapes(imp: Importer) -> list[dict[str, int]]:
    """Every per-GPU gated delta-net shape ``imp``'s rows measured, as table keys."""
    found = find_sources(imp.root, "linear_attention", imp.engine, "gdn_perf.parquet")
    if not found:
        return []
    cols = ["d_model", "num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim"]
    rows = {tuple(int(v) for v in r) for r in imp._frame(found[0])[cols].to_numpy()}
    return [dict(zip(("hidden", "k_heads", "v_heads", "k_dim", "v_dim"), r, strict=True))
            for r in sorted(rows)]


def attention_shapes(imp: Importer, op: str, kv_dtype: str) -> list[tuple[int, int, int]]:
    """Every per-GPU ``(heads, kv_heads, head_dim)`` at which ``imp``'s rows for ``op``
    (``attn_prefill`` or ``attn_decode``) measured full BF16 attention over a ``kv_dtype``
    cache (prefill: at batch 1, what :func:`prefill_table` reads)."""
    dtype = KV_DTYPES.get(kv_dtype)
    if dtype is None:
        return []
    rows = _full_attn_rows(imp._frame(imp._sources("attention", ATTENTION_FILES[op])[0]), dtype)
    if op == "attn_prefill":
        rows = rows[rows["batch_size"] == 1]
    cols = ["num_heads", "num_key_value_heads", "head_dim"]
    return sorted({tuple(int(v) for v in r) for r in rows[cols].to_numpy()})


def measured_attention_requests(imp: Importer,
                                kv_dtypes: tuple[str, ...] = SHIPPED_KV_DTYPES):
    """The ``(op, dtype, key, model, tp)`` GQA attention requests, prefill and decode, at every
    shape of :func:`attention_shapes` for each of ``kv_dtypes``: an unseen model of such a
    per-GPU shape reads NVIDIA's own rows rather than another shape's table rescaled (prefill:
    0.27-1.38x its own, decode 0.57-1.34x; ``docs/fidelity.md``). A table reads only its key
    (any model stands in)."""
    from tiersim.hardware import get_model

    stand_in = get_model("llama-3.1-8b")
    return [(op, kv, {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}, stand_in, 1)
            for op in ATTENTION_FILES for kv in kv_dtypes
            for heads, kv_heads, head_dim in attention_shapes(imp, op, kv)]


def measured_module_requests(imp: Importer, kv_dtypes: tuple[str, ...] = SHIPPED_KV_DTYPES):
    """The ``(op, dtype, key, model, tp)`` requests of the MLA modules at
    :data:`SHIPPED_MLA_HEADS` and of the delta-net kernels at every shape ``imp``'s rows
    measured (:func:`gdn_shapes`), prefill and decode: an unseen model of such a shape reads
    its own table rather than another's rescaled (GDN decode: 0.88-2.33x its own)."""
    from tiersim.hardware import get_model

    deepseek = get_model(aic_model_path("aic:deepseek-ai--DeepSeek-V3"))
    requests = []
    for op in ("attn_prefill", "attn_decode"):
        for attn_format in MLA_GEMM_TYPES:
            for kv in kv_dtypes:
                requests += [(op, mla_dtype(kv, attn_format), mla_table_key(heads),
                              deepseek, deepseek.heads // heads)
                             for heads in SHIPPED_MLA_HEADS]
    for op in GDN_KERNELS:
        requests += [(op, None, key, deepseek, 1) for key in gdn_shapes(imp)]
    return requests


#: Dense GEMM formats the shipped profile also carries at every ``(n, k)`` of NVIDIA's grid
#: (sides of 32 to 65,536), so that a model the shipped list does not hold reads NVIDIA's own
#: rows at its grid shapes: small sides too, as TP-split small models, MLA's ``kv_a`` (576) and
#: MoE routers (``n`` = experts) have them. Anchored on the shipped models' shapes, a block-FP8
#: GEMM came out 0.39-4.08x its own rows (21% median at 2,048 tokens, where those tables are
#: timed eagerly), FP8 0.33-1.74x, BF16 0.52-2.00x; with only sides from 1,024 up shipped,
#: those below still anchored at 0.45-2.00x (``docs/fidelity.md``). 483 shapes a format, about
#: 1.6 KB a table.
SHIPPED_GEMM_FORMATS = ("fp8_block", "fp8", "bf16")


def gemm_shapes(imp: Importer, precision: str, smallest: int = 0) -> list[tuple[int, int]]:
    """Every ``(n, k)`` with both sides at least ``smallest`` (default: every one) at which
    ``imp``'s GEMM rows for ``precision`` measured any ``m``."""
    grid = imp.gemm_grid(precision)
    if grid is None:
        return []
    jn, jk = np.nonzero(np.any(np.isfinite(grid.cube), axis=0))
    return sorted((int(grid.n[a]), int(grid.k[b])) for a, b in zip(jn, jk, strict=True)
                  if grid.n[a] >= smallest and grid.k[b] >= smallest)


def measured_gemm_requests(imp: Importer, formats: tuple[str, ...] = SHIPPED_GEMM_FORMATS):
    """The ``(op, dtype, key, model, tp)`` GEMM requests of :data:`SHIPPED_GEMM_FORMATS` at
    every shape of :func:`gemm_shapes` (a GEMM table reads only its ``n x k``; any model
    stands in)."""
    from tiersim.hardware import get_model

    stand_in = get_model("llama-3.1-8b")
    return [("gemm", precision, {"n": n, "k": k}, stand_in, 1)
            for precision in formats for n, k in gemm_shapes(imp, precision)]


def measured_deepgemm_requests(imp: Importer):
    """The ``(op, dtype, key, model, tp)`` block-FP8 GEMM requests of DeepGEMM's two expert
    GEMMs (``moe_backend: deepgemm``: :func:`tiersim.perf.assembly.expert_gemm_shapes`) at
    every block-FP8 expert shape and split of :data:`SHIPPED_MOE_SHAPES` it runs at (MoE TP
    below 8, :func:`moe_backends`). A deepgemm tier of such a shape reads NVIDIA's rows at its
    expert GEMMs (interpolated in log n, log k off the grid) rather than a grid shape's table
    rescaled (MiniMax-M2.5 at TP 4: ``3072 x 384`` anchored on ``6144 x 256``)."""
    from tiersim.perf.assembly import expert_gemm_shapes

    formats = {"fp8_block": SHIPPED_MOE_SHAPES["fp8_block"]}
    requests = []
    for _, precision, key, model, _ in measured_moe_requests(imp, formats):
        # a replica whose experts split key["tp"] x key["ep"]
        if "deepgemm" in moe_backends(model, precision, key["tp"] * key["ep"], 1, key["ep"]):
            requests += [("gemm", precision, {"n": n, "k": k}, model, 1)
                         for n, k in expert_gemm_shapes(model, key["tp"])]
    return requests


def layout(entry) -> tuple[int, int, int]:
    """``(tp, dp, ep)`` of a :data:`SHIPPED_MODELS` layout entry."""
    return (int(entry), 1, 1) if isinstance(entry, int) else tuple(int(x) for x in entry)


@contextlib.contextmanager
def _bundled_notes_folded(bundled: bool):
    """Where the import reads :data:`SHIPPED_MODELS` (``bundled``: configs aiconfigurator-core
    ships, which the user did not name), its notes that a multimodal config is served as its
    language model (:class:`tiersim.errors.VisionNote`, one per config) become one line saying
    how many; every other note passes on as raised. Elsewhere nothing changes."""
    import warnings

    from tiersim.errors import VisionNote

    if not bundled:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    vision = {str(w.message).split(": ", 1)[0] for w in caught
              if issubclass(w.category, VisionNote)}
    for w in caught:
        if not issubclass(w.category, VisionNote):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if vision:
        warnings.warn(VisionNote(
            f"{len(vision)} of {AIC_PACKAGE}'s bundled model configs are multimodal: the "
            "profile covers their language models (a vision tower is not timed)"), stacklevel=3)


def import_aiconfigurator(
    gpu: str = "h200",
    engine: str = "vllm",
    out: str | Path | None = None,
    models: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] | None = None,
    kv_dtypes: tuple[str, ...] = SHIPPED_KV_DTYPES,
    name: str | None = None,
    measured: bool | None = None,
) -> tuple[Profile, list[str]]:
    """Build (and with ``out``, write) a profile from aiconfigurator's ``gpu``/``engine`` tables.

    ``models`` maps a model name (or config.json path) to the precisions and tensor-parallel
    sizes to cover, each layout with every MoE kernel it can run (:func:`moe_backends`)
    (default :data:`SHIPPED_MODELS`). ``measured`` (default: where ``models`` is not given)
    adds the measured sets: the MoE tables of
    :data:`SHIPPED_MOE_SHAPES` at every shape the data measured, the MLA modules at
    :data:`SHIPPED_MLA_HEADS`, GQA attention and the delta-net kernels at every measured shape
    and the dense GEMMs
    of :data:`SHIPPED_GEMM_FORMATS` at every measured ``n x k``, and the expert GEMMs of
    :func:`measured_deepgemm_requests`. Returns the
    profile and the names of the tables the data lacks (those run on the roofline and are
    reported as such).
    The overhead is the roofline's (:class:`tiersim.perf.roofline.RooflineConstants`),
    labelled ``roofline``.
    This is what ``tiersim calibrate --from aiconfigurator`` calls.
    """
    from tiersim.perf.profile import save_profile
    from tiersim.perf.roofline import RooflineConstants

    kept = eager = None
    elsewhere = _fitted_elsewhere(out, gpu, engine)
    if elsewhere is None:
        kept, eager = _kept_overhead(out), _kept_eager(out)  # a malformed fit: before any work
    else:
        import warnings

        from tiersim.errors import Note

        warnings.warn(Note(
            f"{out}: its fitted overhead_s and eager_s are {elsewhere}, not kept in this "
            f"{engine.lower()} profile of {_GPU_NAMES.get(gpu.lower(), gpu.upper())} (the "
            "roofline's overhead and no eager cost); refit them with "
            "benchmarks/fidelity_silicon.py --fit in tiersim's source repository"),
            stacklevel=2)
    data_engine(gpu, engine)  # the data exist, before the models are read
    bundled = not models
    models = models or SHIPPED_MODELS
    requests = []
    with _bundled_notes_folded(bundled):
        for model, (precisions, layouts) in models.items():
            path = aic_model_path(model)
            for precision in precisions:
                for entry in layouts:
                    tp, dp, ep = layout(entry)
                    for backend in moe_backends(path, precision, tp, dp, ep):
                        for kv in kv_dtypes:
                            requests += table_requests(path, precision, tp, kv, gpu, dp, ep,
                                                       backend)
    if bundled if measured is None else measured:
        imp = Importer(gpu, engine)
        requests += (measured_moe_requests(imp) + measured_module_requests(imp, kv_dtypes)
                     + measured_attention_requests(imp, kv_dtypes) + measured_gemm_requests(imp)
                     + measured_deepgemm_requests(imp))
    c = RooflineConstants()
    notes = (
        f"Operator tables measured by NVIDIA on {gpu.upper()} with {engine} kernels, imported "
        f"from {AIC_PACKAGE}; models: {', '.join(models)}; per-table choices in each table's "
        "kernel/origin/notes; overhead_s is the roofline's assumption unless its source says fitted"
    )
    profile, missing = build_profile(
        name or f"{gpu.lower()}_aiconfigurator_{engine.lower()}",
        gpu,
        engine,
        requests,
        (c.base_overhead_s, c.per_layer_overhead_s),
        notes,
    )
    if kept is not None:  # a fitted overhead survives a rebuild of the tables
        profile.overhead_s, profile.overhead_per_layer_s, profile.overhead_source = kept
    if eager is not None:  # so does a fitted eager-iteration cost
        profile.eager = eager
    if out is not None:
        save_profile(profile, out)
    return profile, missing
