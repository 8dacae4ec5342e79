"""The importer of one engine's tables for one GPU: requested shapes in, profile tables out.

Part of the aiconfigurator importer (:mod:`tiersim.perf.aiconfigurator`, whose docstring says
what is taken from each table). :class:`Importer` reads the frames (:mod:`tiersim.perf.aic_data`)
at the rows each tiersim format stands for (:mod:`tiersim.perf.aic_formats`), turns them into
curves and grids (:mod:`tiersim.perf.aic_tables`) and writes each as a
:class:`~tiersim.perf.profile.Table` with its kernel, origin and notes; :func:`build_profile`
imports every requested table into a :class:`~tiersim.perf.profile.Profile`.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools

import numpy as np

from tiersim.errors import ProfileError, TiersimError
from tiersim.hardware import get_gpu
from tiersim.hardware.precisions import get_precision
from tiersim.perf.aic_data import (
    _GPU_NAMES,
    AIC_PACKAGE,
    Source,
    _read,
    aic_version,
    data_root,
    find_sources,
)
from tiersim.perf.aic_formats import (
    EAGER_GEMMS,
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
    SERVED_MLA_DECODE,
    SGLANG_MLA_BACKENDS,
    mla_table_key,
)
from tiersim.perf.aic_tables import (
    ATTENTION_FILES,
    GDN_KERNELS,
    GemmGrid,
    _decode_grid,
    _dsa_arch,
    _dsa_prefill_rows,
    _incremental_prefill_grid,
    _log_interp,
    _moe_medians,
    _prefill_grid,
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
    Table,
    table_name,
)


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
