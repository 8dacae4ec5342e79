"""Import NVIDIA's measured operator tables (aiconfigurator-core) into a tiersim profile.

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
import datetime
import functools
from pathlib import Path

import numpy as np

from tiersim.errors import ProfileError, TiersimError
from tiersim.hardware import get_gpu
from tiersim.hardware.precisions import get_precision
from tiersim.perf.aic_data import (  # noqa: F401 - re-exported
    _GPU_DIRS,
    _GPU_NAMES,
    AIC_PACKAGE,
    AIC_PIN,
    Source,
    _aic,
    _read,
    _version_key,
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
from tiersim.perf.aic_tables import (  # noqa: F401 - re-exported
    ATTENTION_FILES,
    GDN_KERNELS,
    GemmGrid,
    _attn_rows,
    _context_gaps_filled,
    _decode_grid,
    _dsa_arch,
    _dsa_prefill_rows,
    _full_attn_rows,
    _incremental_prefill_grid,
    _log_interp,
    _moe_medians,
    _power_law,
    _prefill_grid,
    _prompt_curve,
    _served_prompt_rows,
    allreduce_latency,
    decode_table,
    gdn_latency,
    mla_dtype,
    moe_latency,
    prefill_table,
)
from tiersim.perf.memory import dsa_bytes_per_layer
from tiersim.perf.mla_decode import (
    bmm_seconds,
    kernel_floor,
    projection_shapes,
    served_decode_grid,
)
from tiersim.perf.profile import (
    DSA_PROXY_ROWS,
    DSA_SHAPES,
    OP_AXES,
    Profile,
    ProfileOps,
    Table,
    table_name,
)

# --------------------------------------------------------------------------- building tables


def _moe_roofline(model, precision: str, tp: int, ep: int, tokens, gpu: str) -> np.ndarray:
    """The roofline's MoE layer time for ``model`` split ``tp`` x ``ep`` (experts in
    ``precision``) at each token count."""
    from tiersim.perf.roofline import RooflineOps

    ops = RooflineOps(model, precision, gpu, tp=1, dp=tp * ep, ep=ep)  # moe_tp = tp
    return ops.moe(np.asarray(tokens, np.float64))


def _table(op, dtype, key, axes, latency, source: Source, aic: str, kernel: str, notes: str = ""):
    extra = {"kernel": kernel, "origin": source.origin(aic), "engine_version": source.version}
    if notes:
        extra["notes"] = notes
    return Table(
        op=op,
        dtype=dtype,
        source="public",
        key={k: int(v) for k, v in key.items()},
        axes={k: np.asarray(v, np.float64) for k, v in axes.items()},
        latency=np.asarray(latency, np.float64),
        extra=extra,
    )


class Importer:
    """Reads one engine's tables for one GPU and turns requested shapes into profile tables."""

    def __init__(self, gpu: str = "h200", engine: str = "vllm"):
        self.gpu, self.engine = gpu.lower(), engine.lower()
        self.root = data_root(self.gpu)
        self.aic = aic_version()
        self._frames: dict = {}
        self._gemm: dict[str, GemmGrid] = {}
        self.versions: dict[str, str] = {}

    def _sources(self, family: str, filename: str, engine: str | None = None) -> list[Source]:
        found = find_sources(self.root, family, engine or self.engine, filename)
        if not found:
            raise ProfileError(
                f"{self.root}/{family}/{engine or self.engine}: no {filename}; "
                f"choose another --engine for {self.gpu}"
            )
        return found

    def _frame(self, source: Source):
        if source.path not in self._frames:
            self._frames[source.path] = _read(source)
            self.versions.setdefault(source.family, source.version)
        return self._frames[source.path]

    def _native(self, precision: str) -> bool:
        """Whether this GPU's tensor cores run ``precision`` itself (NVFP4 on Blackwell), by the
        same rule as the roofline (:meth:`~tiersim.hardware.precisions.Precision.is_native_on`)."""
        gpu = get_gpu(self.gpu)
        try:
            return get_precision(precision).is_native_on(gpu)
        except TiersimError:  # a table dtype that is no scenario precision
            return precision in gpu.native

    def _with_proxy(self, note: str, precision: str) -> str:
        """``note`` plus, for a format measured through another format's rows, why."""
        proxy = "" if self._native(precision) else MOE_PROXIES.get(precision, "")
        return f"{note}; {proxy}" if proxy else note

    def gemm_grid(self, precision: str) -> GemmGrid | None:
        """The measured GEMM grid :meth:`gemm` reads for ``precision`` (``None``: no rows)."""
        dtype = GEMM_DTYPES.get(precision)
        if self._native(precision):
            dtype = NATIVE_GEMM_DTYPES.get(precision, dtype)
        if dtype is None:
            return None
        if precision not in self._gemm:
            df = self._frame(self._sources("gemm", "gemm_perf.parquet")[0])
            kernel = GEMM_KERNELS if self.engine == "vllm" else {}
            self._gemm[precision] = GemmGrid(df, dtype, kernel.get(precision))
        return self._gemm[precision]

    def gemm(self, precision: str, n: int, k: int) -> Table | None:
        """The ``gemm`` table at ``n x k``, or ``None`` where the data has no such precision."""
        grid = self.gemm_grid(precision)
        if grid is None:
            return None
        source = self._sources("gemm", "gemm_perf.parquet")[0]
        m, lat, note = grid.latency(n, k)
        key = {"n": n, "k": k}
        table = _table("gemm", precision, key, {"m": m}, lat, source, self.aic, grid.kernel, note)
        if self.engine in EAGER_GEMMS and precision in EAGER_GEMMS[self.engine]:
            table.extra["timing"] = "eager"
        return table

    def moe(self, precision: str, model, tp: int, ep: int = 1) -> Table | None:
        """The ``moe`` table for ``model`` split ``tp`` x ``ep``, newest folder that has it.

        Where no folder has that split but one has the same shape with the same ``ep`` at a
        smaller ``tp0``, the ``tp0`` curve is scaled by ``tp0 / tp`` (the expert widths, hence
        the per-GPU work and weight bytes, split ``tp`` ways), never below the ``tp0`` curve's
        own minimum (launch floor); the table's notes say so. ``None`` when neither exists.
        """
        dtype = MOE_DTYPES.get(precision)
        if self._native(precision):
            dtype = NATIVE_MOE_DTYPES.get(self.engine, {}).get(precision, dtype)
        if dtype is None:
            return None
        shape = (model.hidden, model.expert_intermediate, model.num_experts, model.top_k)
        key = dict(zip(("hidden", "inter", "num_experts", "top_k"), shape, strict=True))
        key.update(ep=ep, tp=tp)
        sources = self._sources("moe", "moe_perf.parquet")
        for source in sources:
            found = moe_latency(self._frame(source), dtype, *shape, tp, ep)
            if found is None:
                continue
            tokens, lat, kernel = found
            note = self._with_proxy(f"{dtype}, {MOE_DISTRIBUTION} routing", precision)
            return self._moe_table(precision, dtype, key, (tokens, lat, kernel), note, source,
                                   sources)
        for source in sources:
            for tp0 in sorted((t for t in (1, 2, 4, 8, 16) if t < tp), reverse=True):
                found = moe_latency(self._frame(source), dtype, *shape, tp0, ep)
                if found is None:
                    continue
                tokens, lat, kernel = found
                scaled = np.maximum(lat * tp0 / tp, lat.min())
                note = (f"{dtype}, {MOE_DISTRIBUTION} routing; measured at moe tp={tp0}, "
                        f"scaled by {tp0}/{tp} (no tp={tp} rows)")
                note = self._with_proxy(note, precision)
                return self._moe_table(precision, dtype, key, (tokens, scaled, kernel), note,
                                       source, sources)
        return self._moe_anchored(precision, dtype, model, tp, ep, key, sources[0])

    def _moe_table(self, precision, dtype, key, curve, note, source, sources) -> Table:
        """A MoE table of ``curve`` (tokens, seconds, kernel) read from ``source``; from an
        older folder than the newest, carried to the newer kernel by :meth:`_moe_bridge`
        (notes and ``engine_version`` say so)."""
        tokens, lat, kernel = curve
        bridge = None
        if source is not sources[0]:
            note += f"; from an older {self.engine} folder (newer ones lack this shape)"
            bridge = self._moe_bridge(dtype, source, sources)
        if bridge is not None:
            newer, ratio, summary = bridge
            lat = lat * ratio(tokens)
            note += (f"; carried to {self.engine} {newer.version}'s kernel by the ratio the two "
                     f"folders measured at the shapes both timed ({summary})")
        table = _table("moe", precision, key, {"tokens": tokens}, lat, source, self.aic, kernel,
                       note)
        if bridge is not None:
            table.extra["engine_version"] = f"{source.version} bridged to {bridge[0].version}"
        return table

    def _moe_bridge(self, dtype: str, older: Source, sources: list[Source]):
        """``(newer source, ratio(tokens), summary)`` carrying ``older``'s curves of ``dtype``
        to the newest folder that timed that dtype at shapes ``older`` also timed: the median,
        token count by token count, of newer / older latency over those shapes (interpolated in
        log tokens, flat beyond). NVIDIA's folders differ by 0.15-6x for one shape where a
        kernel was replaced (4-bit Marlin, MXFP4, per-tensor FP8 MoE), so an older folder's
        curve alone would describe a kernel the newer engine no longer runs. ``None`` when no
        newer folder shares a shape with ``older``."""
        cols = ["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size",
                "num_tokens"]
        old = _moe_medians(self._frame(older), dtype, cols)
        for newer in sources[: sources.index(older)]:
            new = _moe_medians(self._frame(newer), dtype, cols)
            both = new.to_frame("new").join(old.rename("old"), how="inner")
            if both.empty:
                continue
            per_token = (both["new"] / both["old"]).groupby(level="num_tokens").median()
            x = np.log(per_token.index.to_numpy(np.float64))
            y = per_token.to_numpy(np.float64)
            common = both.reset_index()
            shapes = len(common[cols[:4]].drop_duplicates())
            splits = len(common[cols[:6]].drop_duplicates())
            summary = (f"{shapes} expert shape(s) at {splits} tp/ep splits; x{y.min():.2f}-"
                       f"{y.max():.2f} by token count, median x{np.median(y):.2f}")
            return newer, functools.partial(_log_interp, x=x, y=y), summary
        return None

    def _moe_anchored(self, precision, dtype, model, tp, ep, key, source) -> Table | None:
        """A MoE shape the data lacks: the nearest measured shape of the same kernel dtype
        (log distance in hidden, per-GPU expert width, experts per GPU and top-k), its curve
        scaled token by token by the roofline's ratio between the two shapes. The kernel's
        measured efficiency is kept; only the physics (bytes, FLOPs) is rescaled."""
        df = self._frame(source)
        rows = df[(df["moe_dtype"] == dtype) & (df["distribution"] == MOE_DISTRIBUTION)]
        if rows.empty:
            return None
        cols = ["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size"]
        shapes = rows[cols].drop_duplicates().to_numpy(np.float64)
        want = np.array([model.hidden, model.expert_intermediate / tp,
                         model.num_experts / ep, model.top_k], np.float64)
        have = np.column_stack([shapes[:, 0], shapes[:, 1] / shapes[:, 4],
                                shapes[:, 2] / shapes[:, 5], shapes[:, 3]])
        best = shapes[int(np.argmin(np.abs(np.log(have / want)).sum(axis=1)))].astype(int)
        hidden, inter, experts, top_k, tp0, ep0 = (int(x) for x in best)
        found = moe_latency(df, dtype, hidden, inter, experts, top_k, tp0, ep0)
        if found is None:
            return None
        tokens, lat, kernel = found
        near = dataclasses.replace(model, hidden=hidden, expert_intermediate=inter,
                                   num_experts=experts, top_k=top_k)
        ratio = _moe_roofline(model, precision, tp, ep, tokens, self.gpu) / _moe_roofline(
            near, precision, tp0, ep0, tokens, self.gpu)
        note = (f"{dtype}, {MOE_DISTRIBUTION} routing; shape not measured: nearest measured "
                f"(hidden={hidden} inter={inter} experts={experts} top_k={top_k} tp={tp0} "
                f"ep={ep0}) scaled by the roofline ratio of the two shapes")
        note = self._with_proxy(note, precision)
        return _table("moe", precision, key, {"tokens": tokens}, lat * ratio, source, self.aic,
                      kernel, note)

    def mla(self, op: str, kv_dtype: str, heads: int, attn_format: str) -> Table | None:
        """The MLA ``attn_prefill`` (context module) or ``attn_decode`` (generation module)
        table at ``heads`` query heads per GPU, or ``None`` where the data lacks it. Each
        module is the whole attention block: down-projection, q (and kv) up-projections or
        absorbed BMMs, attention and o projection."""
        dtype, gemm = KV_DTYPES.get(kv_dtype), MLA_GEMM_TYPES.get(attn_format)
        if dtype is None or gemm is None:
            return None
        name = "mla_context_module_perf" if op == "attn_prefill" else "mla_generation_module_perf"
        found = find_sources(self.root, "mla", self.engine, f"{name}.parquet")
        if not found:  # SGLang: its measured module where the format has one, else its parts
            return (self._sglang_mla(op, kv_dtype, heads, attn_format)
                    or self._composed_mla(op, kv_dtype, heads, attn_format))
        source = found[0]
        df = self._frame(source)
        rows = df[(df["num_heads"] == heads) & (df["kv_cache_dtype"] == dtype)
                  & (df["gemm_type"] == gemm)]
        if rows.empty:
            return None
        latent = MLA_LATENT
        key = mla_table_key(heads)
        dt = mla_dtype(kv_dtype, attn_format)
        if op == "attn_prefill":
            rows, kernel = _served_prompt_rows(rows[rows["batch_size"] == 1], rows)
            read = latent * (1 if kv_dtype == "fp8" else 2) / get_gpu(self.gpu).hbm_bw_bytes_s
            found = _prefill_grid(rows, read)
            names = ("tokens", "context")
            note = ("MLA context module (down-projection, q_b, kv_b, attention, o_proj), "
                    "DeepSeek-V3 shapes; cached context by equal-work prompt length, floored "
                    "at one latent read")
        else:
            kernel = rows["kernel_source"].value_counts().index[0]
            rows = rows[rows["kernel_source"] == kernel]
            found = _decode_grid(rows)
            names = ("batch", "context")
            note = ("MLA generation module (down-projection, q_b, absorbed BMMs, attention, "
                    "o_proj), DeepSeek-V3 shapes; beyond the measured triangle: linear in batch")
            if self.engine in SERVED_MLA_DECODE:
                found, served = self._served_mla_decode(found, heads, kv_dtype, attn_format)
                note += served
        ax0, ax1, grid = found
        axes = dict(zip(names, (ax0, ax1), strict=True))
        return _table(op, dt, key, axes, grid, source, self.aic, str(kernel), note)

    def dsa(self, op: str, kv_dtype: str, key: dict[str, int], attn_format: str,
            names: list[str]) -> Table | None:
        """The DSA ``attn_prefill`` (context module) or ``attn_decode`` (generation module)
        table at ``key`` (heads per GPU and the model's shape, :data:`~tiersim.perf.profile.
        DSA_KEYS`), read from the rows of the models ``names`` (the shape's entries of
        :data:`DSA_SHAPES`); ``None`` where the data lacks it. Each module is the whole
        attention block, the indexer included, as timed (no served-parts correction: the data
        has no table of the indexer's parts). Projections in a format NVIDIA did not time read
        another format's rows (:data:`~tiersim.perf.profile.DSA_PROXY_ROWS`), said in the
        table's notes. A prefill chunk after cached tokens is the measured prompt curve's
        increment over them (:func:`_incremental_prefill_grid`)."""
        rows_format = DSA_PROXY_ROWS.get(attn_format, attn_format)
        dtype, gemm = KV_DTYPES.get(kv_dtype), MLA_GEMM_TYPES.get(rows_format)
        found = find_sources(self.root, "sparse_attention", self.engine,
                             f"dsa_{'context' if op == 'attn_prefill' else 'generation'}"
                             "_module_perf.parquet")
        if dtype is None or gemm is None or not found:
            return None
        source, df = found[0], self._frame(found[0])
        module = "dsa_context_module" if op == "attn_prefill" else "dsa_generation_module"
        rows = df[(df["op_name"] == module) & df["model"].isin(names)
                  & (df["num_heads"] == key["heads"]) & (df["kv_cache_dtype"] == dtype)
                  & (df["gemm_type"] == gemm)]
        if rows.empty:
            return None
        shape = f"{names[0].rsplit('/', 1)[-1]} shapes"
        proxy = f"{rows_format}, " if rows_format != attn_format else ""
        if op == "attn_prefill":
            rows = rows[(rows["batch_size"] == 1) & (rows["step"] == rows["step"].min())]
            rows, kernel = _dsa_prefill_rows(rows)
            read = dsa_bytes_per_layer(_dsa_arch(DSA_SHAPES[names[0]]), kv_dtype) / get_gpu(
                self.gpu).hbm_bw_bytes_s
            ax0, ax1, grid = _incremental_prefill_grid(rows, read)
            axes = {"tokens": ax0, "context": ax1}
            note = (f"{proxy}DSA context module (MLA block and indexer), {shape}; a chunk "
                    "after cached tokens: the prompt curve's increment over them, floored at "
                    "one read of the caches")
        else:
            kernel = rows["kernel_source"].value_counts().index[0]
            rows = rows[rows["kernel_source"] == kernel]
            ax0, ax1, grid = _decode_grid(rows)
            axes = {"batch": ax0, "context": ax1}
            note = (f"{proxy}DSA generation module (MLA block and indexer, top-"
                    f"{DSA_SHAPES[names[0]]['index_topk']} sparse attention), {shape}, as "
                    "timed; beyond the measured triangle: linear in batch")
        return _table(op, f"{kv_dtype} dsa-{attn_format}", key, axes, grid, source, self.aic,
                      str(kernel), note)

    def _sglang_mla(self, op: str, kv_dtype: str, heads: int, attn_format: str):
        """The MLA block from SGLang's measured MLA modules (``wideep_context_mla_perf``,
        ``wideep_generation_mla_perf``: q up-projection, kv up-projection or the absorbed BMMs,
        attention and o projection, per layer at ``heads`` per GPU, DeepSeek-V3 shapes, as
        timed), with SGLang's default backend on this GPU (:data:`SGLANG_MLA_BACKENDS`), plus
        the fused down-projection of q and the latent, which SGLang runs outside the module,
        from its GEMM table. ``None`` where the data has no module at this format."""
        kind = "context" if op == "attn_prefill" else "generation"
        found = find_sources(self.root, "mla", self.engine, f"wideep_{kind}_mla_perf.parquet")
        dtype, fmt = KV_DTYPES.get(kv_dtype), MLA_GEMM_TYPES.get(attn_format)
        if not found or dtype is None or fmt is None:
            return None
        source, df = found[0], self._frame(found[0])
        rows = df[(df["num_heads"] == heads) & (df["kv_cache_dtype"] == dtype)
                  & (df["mla_dtype"] == fmt)]
        down = self.gemm(attn_format, *projection_shapes(MLA_SHAPE, heads)[0])
        if rows.empty or down is None:
            return None
        kernels = rows["kernel_source"].value_counts().index
        kernel = next((k for k in SGLANG_MLA_BACKENDS if k in kernels), kernels[0])
        rows = rows[rows["kernel_source"] == kernel]
        key = mla_table_key(heads)
        if op == "attn_prefill":
            read = MLA_LATENT * (1 if kv_dtype == "fp8" else 2) / get_gpu(self.gpu).hbm_bw_bytes_s
            first, second, grid = _prefill_grid(rows[rows["batch_size"] == 1], read)
            axes = {"tokens": first, "context": second}
            note = ("SGLang's MLA context module (q_b, kv_b, attention, o_proj), DeepSeek-V3 "
                    "shapes, as timed; cached context by equal-work prompt length")
        else:  # the module's rows give the cached context as ``isl`` (their ``step`` is 0)
            rows = rows.assign(step=rows["isl"] + rows["step"] - 1)
            first, second, grid = _decode_grid(rows)
            axes = {"batch": first, "context": second}
            note = ("SGLang's MLA generation module (q_b, absorbed BMMs, attention, o_proj), "
                    "DeepSeek-V3 shapes, as timed; beyond the measured triangle: linear in batch")
        grid = grid + np.asarray(down.lookup(first), np.float64)[:, None]
        note += "; plus the fused q/latent down-projection from the GEMM table"
        return _table(op, mla_dtype(kv_dtype, attn_format), key, axes, grid, source, self.aic,
                      str(kernel), note)

    def _composed_mla(self, op: str, kv_dtype: str, heads: int, attn_format: str):
        """The MLA block composed from its measured parts, for an engine NVIDIA timed no MLA
        module of (SGLang): the attention kernel (``context_mla_perf``: expanded keys and
        values; ``generation_mla_perf``: absorbed, over the latent), plus the block's projection
        GEMMs from the engine's GEMM tables (decode: the down, q up and o projections and the
        absorbed BMMs of ``mla_bmm_perf``; prefill: the down, q up and o projections of the
        chunk and the kv up-projection of its whole context). ``None`` where a part is
        missing."""
        name = "context_mla_perf" if op == "attn_prefill" else "generation_mla_perf"
        found = find_sources(self.root, "mla", self.engine, f"{name}.parquet")
        if not found:
            return None
        source, df = found[0], self._frame(found[0])
        rows = df[(df["num_heads"] == heads) & (df["kv_cache_dtype"] == KV_DTYPES[kv_dtype])]
        if rows.empty:
            return None
        kernel = str(rows["kernel_source"].value_counts().index[0])
        rows = rows[rows["kernel_source"] == kernel]
        gemms = [self.gemm(attn_format, n, k) for n, k in projection_shapes(MLA_SHAPE, heads)]
        if any(g is None for g in gemms):
            return None
        key = mla_table_key(heads)
        if op == "attn_prefill":
            composed = self._composed_mla_prefill(rows, heads, kv_dtype, attn_format, gemms)
            if composed is None:
                return None
            axes, grid = composed
            note = ("MLA block composed from its parts, DeepSeek-V3 shapes: the engine's "
                    "expanded-MHA prefill kernel (cached context by equal-work prompt length) "
                    "plus the down, q up and o projections of the chunk and the kv "
                    "up-projection of its whole context")
        else:
            batch, context, grid = _decode_grid(rows[rows["tp_size"] == rows["tp_size"].min()])
            bmm_src = find_sources(self.root, "mla_bmm", self.engine, "mla_bmm_perf.parquet")
            bmm = None if not bmm_src else bmm_seconds(self._frame(bmm_src[0]), heads, batch)
            if bmm is None:
                return None
            grid = grid + self._with_projections(bmm, batch, heads, attn_format)[:, None]
            axes = {"batch": batch, "context": context}
            note = ("MLA block composed from its parts, DeepSeek-V3 shapes: the engine's "
                    "absorbed decode kernel plus the down, q up and o projections and the "
                    "absorbed BMMs; beyond the measured triangle: linear in batch")
        return _table(op, mla_dtype(kv_dtype, attn_format), key, axes, grid, source, self.aic,
                      kernel, note)

    def _composed_mla_prefill(self, rows, heads: int, kv_dtype: str, attn_format: str, gemms):
        """``(axes, grid)`` of a composed MLA prefill: the kernel's grid plus, at each cell,
        the chunk's projections and the kv up-projection of chunk and context; ``None`` where
        the kv up-projection's GEMM is missing."""
        kv_b = self.gemm(attn_format, heads * (MLA_SHAPE["qk_nope_head_dim"]
                                               + MLA_SHAPE["v_head_dim"]),
                         MLA_SHAPE["kv_lora_rank"])
        if kv_b is None:
            return None
        read = MLA_LATENT * (1 if kv_dtype == "fp8" else 2) / get_gpu(self.gpu).hbm_bw_bytes_s
        one = rows[(rows["batch_size"] == 1) & (rows["tp_size"] == rows["tp_size"].min())]
        tokens, context, grid = _prefill_grid(one, read)
        chunk = sum(np.asarray(g.lookup(tokens), np.float64) for g in gemms)
        whole = np.asarray(kv_b.lookup((tokens[:, None] + context[None, :]).ravel()),
                           np.float64).reshape(grid.shape)
        return {"tokens": tokens, "context": context}, grid + chunk[:, None] + whole

    def _served_mla_decode(self, found, heads: int, kv_dtype: str, attn_format: str):
        """``found`` (batch, context, module grid) as the engine serves it, and a note
        (:mod:`tiersim.perf.mla_decode`); the grid unchanged where a part's data is missing."""
        batch, context, grid = found
        parts = self._mla_served_parts(batch, heads, kv_dtype, attn_format)
        if parts is None:
            return found, ("; the module as timed (no graph-timed table of every served part "
                           "at this format)")
        served, removed = served_decode_grid(grid, parts)
        note = (f"; less the module's unfused excess at its shortest context over its served "
                f"parts (projection GEMMs, latent BMMs, a decode kernel's floor), up to "
                f"{removed * 1e6:.1f} us")
        return (batch, context, served), note

    def _mla_served_parts(self, batch, heads: int, kv_dtype: str, attn_format: str):
        """Seconds per batch of the MLA block's served parts: its projection GEMMs, the latent
        BMMs and a decode kernel's floor; ``None`` where the data lacks one of them, or times
        the projections' format eagerly (block FP8 on vLLM: its small-``m`` rows are the host
        launch path, so the GEMMs' time inside the module is not known)."""
        bmm_src = find_sources(self.root, "mla_bmm", self.engine, "mla_bmm_perf.parquet")
        attn_src = find_sources(self.root, "attention", self.engine,
                                ATTENTION_FILES["attn_decode"])
        if not bmm_src or not attn_src:
            return None
        bmm = bmm_seconds(self._frame(bmm_src[0]), heads, batch)
        floor = kernel_floor(self._frame(attn_src[0]), heads, KV_DTYPES[kv_dtype], batch)
        if bmm is None or floor is None:
            return None
        return self._with_projections(bmm + floor, batch, heads, attn_format, graph_timed=True)

    def _with_projections(self, total, batch, heads: int, attn_format: str,
                          graph_timed: bool = False):
        """``total`` (seconds per batch) plus the MLA block's projection GEMMs at each batch;
        ``None`` where the data lacks one, or (``graph_timed``) times it eagerly."""
        for n, k in projection_shapes(MLA_SHAPE, heads):
            table = self.gemm(attn_format, n, k)
            if table is None or (graph_timed and table.extra.get("timing") == "eager"):
                return None
            total = total + np.asarray(table.lookup(batch), np.float64)
        return total

    def attention(self, op: str, kv_dtype: str, heads: int, kv_heads: int, head_dim: int):
        """The ``attn_prefill`` or ``attn_decode`` table, or ``None`` where the data lacks it."""
        dtype = KV_DTYPES.get(kv_dtype)
        if dtype is None:
            return None
        source = self._sources("attention", ATTENTION_FILES[op])[0]
        if op == "attn_prefill":
            kv_bytes = 2 * kv_heads * head_dim * (1 if kv_dtype == "fp8" else 2)
            read = kv_bytes / get_gpu(self.gpu).hbm_bw_bytes_s
            found = prefill_table(self._frame(source), heads, kv_heads, head_dim, dtype, read)
            names, note = ("tokens", "context"), ("cached context by equal-work prompt length, "
                                                  "floored at one read of the KV at HBM bandwidth")
        else:
            found = decode_table(self._frame(source), heads, kv_heads, head_dim, dtype)
            names, note = ("batch", "context"), "beyond the measured triangle: linear in batch"
        if found is None:
            return None
        ax0, ax1, grid, kernel = found
        key = {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}
        axes = dict(zip(names, (ax0, ax1), strict=True))
        return _table(op, kv_dtype, key, axes, grid, source, self.aic, kernel, note)

    def gdn(self, op: str, key: dict[str, int]) -> Table | None:
        """The ``gdn_decode`` or ``gdn_prefill`` table at a per-GPU delta-net shape, or
        ``None`` where the data lacks it (:func:`gdn_latency`)."""
        found = find_sources(self.root, "linear_attention", self.engine, "gdn_perf.parquet")
        if not found:
            return None
        source = found[0]
        got = gdn_latency(self._frame(source), op, key)
        if got is None:
            return None
        axis, lat, kernel, note = got
        name = OP_AXES[op][0]
        return _table(op, None, key, {name: axis}, lat, source, self.aic, kernel, note)

    def allreduce(self, tp: int) -> Table | None:
        """The ``allreduce`` table for ``tp`` GPUs, or ``None``."""
        source = self._sources("comm", "custom_allreduce_perf.parquet")[0]
        found = allreduce_latency(self._frame(source), tp)
        if found is None:
            return None
        nbytes, lat, kernel = found
        return _table(
            "allreduce",
            None,
            {"tp": tp},
            {"bytes": nbytes},
            lat,
            source,
            self.aic,
            kernel,
            "bf16 elements x 2 bytes",
        )

    def provenance(self, notes: str) -> dict[str, str]:
        """Profile-level provenance for tables read by this importer."""
        version = self.versions.get("gemm") or next(iter(self.versions.values()), "")
        return {
            "source": "public",
            "gpu_name": f"NVIDIA {_GPU_NAMES.get(self.gpu, self.gpu.upper())}",
            "date": datetime.date.today().isoformat(),
            "engine": self.engine,
            "engine_version": version,
            "tool": f"{AIC_PACKAGE} {self.aic}",
            "license": "Apache-2.0 (NVIDIA aiconfigurator); see profiles/README.md",
            "notes": notes,
        }


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
    :func:`tiersim.perf.assembly.check_moe_backend` admits it (block-FP8 experts below MoE TP
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


def build_profile(
    name: str, gpu: str, engine: str, requests, overhead: tuple[float, float], notes: str = ""
) -> tuple[Profile, list[str]]:
    """Import every requested table; returns the profile and the tables the data lacks.

    ``requests`` is an iterable of ``(op, dtype, key, model, tp)`` (see :func:`table_requests`);
    ``overhead`` is ``(seconds per iteration, seconds per layer)``, labelled ``roofline``: the
    data has no per-iteration overhead.
    """
    imp = Importer(gpu, engine)
    tables: dict[str, Table] = {}
    missing: set[str] = set()
    for op, dtype, key, model, tp in requests:
        table = _import_one(imp, op, dtype, key, model, tp)
        if table is None:
            missing.add(table_name(op, dtype, key))
        else:
            tables.setdefault(table.name, table)
    profile = Profile(
        name=name,
        gpu=_GPU_NAMES.get(gpu.lower(), gpu.upper()),
        provenance=imp.provenance(notes),
        overhead_s=overhead[0],
        overhead_source="roofline",
        tables=list(tables.values()),
        overhead_per_layer_s=overhead[1],
    )
    return profile, sorted(missing)


def _import_one(imp: Importer, op, dtype, key, model, tp):
    if op == "gemm":
        return imp.gemm(dtype, key["n"], key["k"])
    if op == "moe":
        return imp.moe(dtype, model, key["tp"], key["ep"])
    if op in ("attn_prefill", "attn_decode") and " dsa-" in str(dtype):
        kv, fmt = str(dtype).split(" dsa-")
        names = [n for n, shape in DSA_SHAPES.items()
                 if all(getattr(model, f) == v for f, v in shape.items())]
        return imp.dsa(op, kv, key, fmt, names) if names else None  # another shape: roofline
    if op in ("attn_prefill", "attn_decode") and " mla-" in str(dtype):
        kv, fmt = str(dtype).split(" mla-")
        if any(getattr(model, f) != v for f, v in MLA_SHAPE.items()):
            return None  # NVIDIA measured the modules at DeepSeek-V3's shapes only
        return imp.mla(op, kv, key["heads"], fmt)
    if op in ("attn_prefill", "attn_decode"):
        return imp.attention(op, dtype, key["heads"], key["kv_heads"], key["head_dim"])
    if op == "allreduce":
        return imp.allreduce(key["tp"])
    if op in GDN_KERNELS:
        return imp.gdn(op, key)
    raise ValueError(f"unknown op {op!r}")


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


def _kept_object(out, key: str):
    """The ``key`` object of the profile at ``out`` (``None`` where there is no readable one),
    read from that object alone: a rebuild after the table format changed must not lose a fit
    because an old table no longer parses."""
    from tiersim.jsonio import read_json

    path = Path(out) if out is not None else None
    if path is None or not path.is_file():
        return None
    try:
        raw = read_json(path, "a profile")
    except TiersimError:
        return None
    return raw.get(key) if isinstance(raw, dict) else None


def _kept_eager(out):
    """A fitted ``eager_s`` of the profile at ``out`` (kept when the profile is rebuilt); one
    :class:`ProfileError` line where it is fitted but malformed (:func:`_refused_fit`)."""
    from tiersim.perf.profile import _parse_eager

    raw = _kept_object(out, "eager_s")
    if not _fitted(raw):
        return None
    try:
        return _parse_eager(raw, str(out))
    except ProfileError as err:
        raise _refused_fit(err, "eager_s") from None


def _kept_overhead(out) -> tuple[float, float, str] | None:
    """A fitted ``overhead_s`` of the profile at ``out`` (kept when the profile is rebuilt);
    one :class:`ProfileError` line where it is fitted but malformed (a value of text, a list,
    NaN or out of range ended the import in a traceback, or named the new file's value)."""
    from tiersim.perf.profile import _parse_overhead

    raw = _kept_object(out, "overhead_s")
    if not _fitted(raw):
        return None
    try:
        return _parse_overhead(raw, str(out))
    except ProfileError as err:
        raise _refused_fit(err, "overhead_s") from None


def _fitted_elsewhere(out, gpu: str, engine: str) -> str | None:
    """Whose the fitted ``overhead_s`` or ``eager_s`` of the profile at ``out`` are (``"vllm's
    on H200"``) where that profile records another engine or GPU than the import's, else None
    (nothing fitted, or fitted for this engine and GPU: a rebuild keeps it). A fit belongs to
    the engine and GPU whose serving rows it was fitted on: an SGLang import over the vLLM
    profile kept vLLM's host costs."""
    if not any(_fitted(_kept_object(out, key)) for key in ("overhead_s", "eager_s")):
        return None
    raw = _kept_object(out, "provenance")
    their_engine = str(raw.get("engine", "")) if isinstance(raw, dict) else ""
    their_gpu = _kept_object(out, "gpu")
    their_gpu = their_gpu if isinstance(their_gpu, str) else ""
    try:
        same_gpu = not their_gpu or get_gpu(their_gpu).name == get_gpu(gpu).name
    except TiersimError:
        same_gpu = their_gpu.lower() == gpu.lower()
    if same_gpu and their_engine.lower() in ("", engine.lower()):
        return None
    return f"{their_engine or 'another engine'}'s on {their_gpu or 'another GPU'}"


def _fitted(raw) -> bool:
    """Whether ``raw`` (an ``overhead_s`` or ``eager_s`` object read from a profile) says it
    was fitted: ``source`` text starting with ``fitted``."""
    return isinstance(raw, dict) and isinstance(raw.get("source"), str) and raw[
        "source"].startswith("fitted")


def _refused_fit(err: ProfileError, key: str) -> ProfileError:
    """``err`` (a fitted ``key`` object of the profile being rebuilt that does not parse) with
    the fix: the rebuild would keep that value."""
    return ProfileError(f"{err}; a rebuild keeps the fitted {key} of the profile it replaces: "
                        f"correct it there, or remove its {key} to take the roofline's")


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
