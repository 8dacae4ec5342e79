"""The MLA and DSA attention tables of the aiconfigurator importer (:class:`MlaTables`, mixed into
:class:`tiersim.perf.aic_importer.Importer`): the measured attention modules, SGLang's modules
plus the down-projection, the block composed from its parts where no module was timed, and a
decode module as the engine serves it (:mod:`tiersim.perf.mla_decode`)."""

from __future__ import annotations

import numpy as np

from tiersim.hardware import get_gpu
from tiersim.perf.aic_data import find_sources
from tiersim.perf.aic_formats import (
    KV_DTYPES,
    MLA_GEMM_TYPES,
    MLA_LATENT,
    MLA_SHAPE,
    SERVED_MLA_DECODE,
    SGLANG_MLA_BACKENDS,
    mla_table_key,
)
from tiersim.perf.aic_tables import (
    ATTENTION_FILES,
    _decode_grid,
    _dsa_arch,
    _dsa_prefill_rows,
    _incremental_prefill_grid,
    _prefill_grid,
    _served_prompt_rows,
    _table,
    mla_dtype,
)
from tiersim.perf.memory import dsa_bytes_per_layer
from tiersim.perf.mla_decode import (
    bmm_seconds,
    kernel_floor,
    projection_shapes,
    served_decode_grid,
)
from tiersim.perf.profile import DSA_PROXY_ROWS, DSA_SHAPES, Table


class MlaTables:
    """The importer's MLA and DSA ``attn_prefill`` and ``attn_decode`` tables. A mixin of
    :class:`tiersim.perf.aic_importer.Importer`: it reads the importer's ``root``, ``engine``,
    ``gpu`` and ``aic`` and calls its ``_frame`` and ``gemm``."""

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
