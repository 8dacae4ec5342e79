"""Which of aiconfigurator's rows stand for each tiersim format and kernel, and the shapes and
axes the imported tables keep.

Part of the aiconfigurator importer (:mod:`tiersim.perf.aiconfigurator`, whose docstring says
what is taken from each table): the dtype names of the GEMM, MoE, KV-cache and MLA-projection
rows per tiersim precision, formats read through another format's rows
(:data:`MOE_PROXIES`) or natively (:data:`NATIVE_GEMM_DTYPES`, :data:`NATIVE_MOE_DTYPES`),
each engine's kernel where the data holds several, the MLA shape NVIDIA measured
(:data:`MLA_SHAPE`, :func:`mla_table_key`), the MoE routing read, and the prefill and decode
axes of the imported attention tables.
"""

from __future__ import annotations

from tiersim.perf.profile import DEEPSEEK_V3_MLA, MLA_DEFAULT_KEY

#: aiconfigurator dtype names for tiersim precisions, per table family.
GEMM_DTYPES = {"bf16": "bfloat16", "fp8": "fp8", "fp8_block": "fp8_block"}
#: Marks "the fastest kernel measured at each point" in :data:`GEMM_KERNELS`.
FASTEST = "fastest"
#: vLLM's kernel per GEMM dtype where the data holds several: the per-tensor FP8 CUTLASS
#: kernel; for block FP8 the data measured DeepGEMM, FlashInfer and CUTLASS on different
#: (m, n, k) ranges (vLLM dispatches by platform and shape), so each point takes the fastest.
#: GEMM tables NVIDIA timed eagerly, per engine (``timing: eager``; aiconfigurator's vLLM
#: collector replays every GEMM in a CUDA graph except block-FP8: ``collect_gemm.py``,
#: ``use_cuda_graph=gemm_type != "fp8_block"``). See :mod:`tiersim.perf.profile`.
EAGER_GEMMS = {"vllm": ("fp8_block",)}
GEMM_KERNELS = {"fp8": "CutlassFP8ScaledMMLinearKernel", "fp8_block": FASTEST}
#: ``fp8`` MoE reads the block-FP8 rows (vLLM's Triton FP8 MoE, what FP8 checkpoints of MoE
#: models run); the data's per-tensor ``fp8`` MoE rows are ModelOpt's FlashInfer-CUTLASS path,
#: measured 2-3x slower than BF16 on H200, which vLLM does not pick for such checkpoints.
MOE_DTYPES = {"bf16": "bfloat16", "fp8": "fp8_block", "fp8_block": "fp8_block",
              "w4a16": "int4_wo", "mxfp4": "w4a16_mxfp4", "nvfp4": "int4_wo"}
#: Formats measured through another format's rows, and why (written into the table's notes).
#: On Hopper vLLM runs NVFP4 MoE weight-only through the same fused Marlin MoE kernel as INT4
#: (FP4 values, FP8 scales per 16 instead of INT4 with BF16 scales per group), so the INT4
#: Marlin measurement is the closest measured kernel; no Hopper table measures NVFP4 itself.
MOE_PROXIES = {"nvfp4": "NVFP4 on Hopper runs as vLLM's weight-only Marlin MoE; measured here "
                        "through the INT4 Marlin rows (same kernel, 4.125 vs 4.5 bits)"}
#: Formats a GPU's tensor cores run natively (``GPU.native``: NVFP4 and MXFP4 on Blackwell) read
#: the rows of what each engine runs there instead: NVFP4 GEMMs and MoE their own rows, no proxy;
#: MXFP4 MoE (gpt-oss) under TensorRT-LLM its default Blackwell kernel, MXFP4 weights with MXFP8
#: activations (TRTLLM-gen); vLLM's default there, FlashInfer MXFP4 x BF16, is ``w4a16_mxfp4``.
NATIVE_GEMM_DTYPES = {"nvfp4": "nvfp4"}
NATIVE_MOE_DTYPES = {"vllm": {"nvfp4": "nvfp4"},
                     "trtllm": {"nvfp4": "nvfp4", "mxfp4": "w4a8_mxfp4_mxfp8"},
                     "sglang": {"nvfp4": "nvfp4"}}
#: MoE kernels an engine runs only when asked (TensorRT-LLM's min-latency mode): read only where
#: a shape has no other kernel measured.
OPT_IN_MOE_KERNELS = ("min_latency",)
KV_DTYPES = {"bf16": "bfloat16", "fp8": "fp8"}
#: MLA shapes NVIDIA measured the MLA modules at (DeepSeek-V3; Kimi-K2 shares them).
MLA_SHAPE = DEEPSEEK_V3_MLA
#: The cached latent's width at :data:`MLA_SHAPE` (the MLA tables' ``head_dim`` key).
MLA_LATENT = MLA_SHAPE["kv_lora_rank"] + MLA_SHAPE["qk_rope_head_dim"]


def mla_table_key(heads: int) -> dict[str, int]:
    """The key of an MLA module table at :data:`MLA_SHAPE` with ``heads`` query heads per GPU
    (its shape fields, :data:`tiersim.perf.profile.MLA_KEYS`, written out)."""
    return {"heads": heads, "kv_heads": 1, "head_dim": MLA_LATENT, **MLA_DEFAULT_KEY}

MLA_GEMM_TYPES = {"bf16": "bfloat16", "fp8_block": "fp8_block"}
#: SGLang prefills a DSA prompt of at most this many tokens with its dense ragged kernel (no
#: indexer: every token is kept), longer ones with its sparse backend.
SGLANG_DENSE_PREFILL_MAX = 2048
#: Engines whose MLA generation module NVIDIA timed outside the engine's compiled graph, read
#: as the engine serves it: less the unfused elementwise kernels (:mod:`tiersim.perf.mla_decode`).
SERVED_MLA_DECODE = ("vllm",)
#: SGLang's default MLA attention backends (its docs: FlashAttention 3 on Hopper, TRT-LLM MLA on
#: Blackwell): the kernel read from its measured MLA modules (``wideep_*_mla_perf``), which
#: time each backend it supports on that GPU.
SGLANG_MLA_BACKENDS = ("fa3", "trtllm_mla")
MOE_DISTRIBUTION = "power_law_1.01"
#: Context axis (tokens already cached) of the imported prefill-attention tables.
PREFILL_CONTEXT_AXIS = (1, 512, 2048, 8192, 32768, 131072)
#: Extra prompt lengths beyond the measured ones, reached by power-law extrapolation.
PREFILL_EXTRA_TOKENS = (32768,)
#: Decode batch sizes kept (the measured grid; larger ones extrapolate linearly in batch).
DECODE_BATCH_AXIS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
