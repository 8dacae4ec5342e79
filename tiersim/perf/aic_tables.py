"""aiconfigurator's frames turned into latency curves and grids, operator by operator.

Part of the aiconfigurator importer (:mod:`tiersim.perf.aiconfigurator`): the rules these
transforms follow, table by table, are that module's docstring (what "the module docstring"
below refers to). GEMM: :class:`GemmGrid`; MoE: :func:`moe_latency`; GQA attention:
:func:`prefill_table`, :func:`decode_table`; the prompt and decode grids the MLA and DSA
modules are read by (:func:`_prefill_grid`, :func:`_incremental_prefill_grid`,
:func:`_decode_grid`); gated delta-net: :func:`gdn_latency`; all-reduce:
:func:`allreduce_latency`. Everything returned is in seconds; :func:`_table` writes a curve or
grid as a profile :class:`~tiersim.perf.profile.Table` with its kernel, origin and notes.
"""

from __future__ import annotations

import numpy as np

from tiersim.errors import ProfileError
from tiersim.perf.aic_data import Source
from tiersim.perf.aic_formats import (
    DECODE_BATCH_AXIS,
    FASTEST,
    MOE_DISTRIBUTION,
    OPT_IN_MOE_KERNELS,
    PREFILL_CONTEXT_AXIS,
    PREFILL_EXTRA_TOKENS,
    SGLANG_DENSE_PREFILL_MAX,
)
from tiersim.perf.profile import Table, log_blend, log_corners
from tiersim.perf.profile_json import MIN_SECONDS


class GemmGrid:
    """One dtype's measured GEMM latencies as an ``(m, n, k)`` grid, in seconds."""

    def __init__(self, df, dtype: str, kernel: str | None = None):
        rows = df[df["gemm_dtype"] == dtype]
        if kernel not in (None, FASTEST):
            rows = rows[rows["kernel_source"] == kernel]
        if rows.empty:
            raise ProfileError(f"aiconfigurator GEMM data has no {dtype!r} rows")
        if kernel == FASTEST:  # per point, the quickest of the kernels measured there
            names = sorted(rows["kernel_source"].astype(str).unique())
            self.kernel = "fastest of " + ", ".join(names)
            rows = rows.groupby(["m", "n", "k", "kernel_source"], as_index=False)["latency"]
            rows = rows.median().groupby(["m", "n", "k"], as_index=False)["latency"].min()
        else:
            self.kernel = kernel or str(rows["kernel_source"].iloc[0])
            rows = rows.groupby(["m", "n", "k"], as_index=False)["latency"].median()
        self.m = np.sort(rows["m"].unique()).astype(np.float64)
        self.n = np.sort(rows["n"].unique()).astype(np.float64)
        self.k = np.sort(rows["k"].unique()).astype(np.float64)
        cube = np.full((self.m.size, self.n.size, self.k.size), np.nan)
        cube[
            np.searchsorted(self.m, rows["m"]),
            np.searchsorted(self.n, rows["n"]),
            np.searchsorted(self.k, rows["k"]),
        ] = rows["latency"].to_numpy() / 1e3
        self.cube = cube

    def latency(self, n: int, k: int) -> tuple[np.ndarray, np.ndarray, str]:
        """(m axis, seconds per m, note) for an ``n x k`` weight; see the module docstring."""
        corners = log_corners(self.n, n, self.k, k)
        parts = [(weight, self.cube[:, jn, jk]) for (jn, jk), weight in corners
                 if np.all(np.isfinite(self.cube[:, jn, jk]))]
        if not parts:
            return self._nearest(n, k)
        out = log_blend(parts)
        scale = max(n / self.n[-1], 1.0) * max(k / self.k[-1], 1.0)
        exact = n in self.n and k in self.k
        note = "measured at this shape" if exact else "interpolated in log n, log k"
        if scale > 1:
            note += f"; scaled x{scale:.3f} linearly beyond the measured n/k"
        return self.m, out * scale, note

    def _nearest(self, n: int, k: int) -> tuple[np.ndarray, np.ndarray, str]:
        """Where the bracketing points are unmeasured: the nearest complete ``(n, k)`` column
        (in log distance), scaled by the ratio of ``n x k``."""
        complete = np.all(np.isfinite(self.cube), axis=0)
        jn, jk = np.nonzero(complete)
        if jn.size == 0:
            raise ProfileError(f"aiconfigurator GEMM data has no complete (n, k) column ({n}x{k})")
        dist = np.abs(np.log(self.n[jn] / n)) + np.abs(np.log(self.k[jk] / k))
        best = int(np.argmin(dist))
        n0, k0 = self.n[jn[best]], self.k[jk[best]]
        scale = (n * k) / (n0 * k0)
        note = f"nearest measured shape n={n0:.0f} k={k0:.0f}, scaled x{scale:.3f} by n x k"
        return self.m, self.cube[:, jn[best], jk[best]] * scale, note


def _log_interp(t, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``y`` over ``x`` (log token counts) at ``t`` tokens, flat beyond the ends."""
    return np.interp(np.log(np.asarray(t, np.float64)), x, y)


def _moe_medians(df, dtype: str, cols: list[str]):
    """Median latency of ``dtype``'s rows at the shipped routing, indexed by ``cols``."""
    rows = df[(df["moe_dtype"] == dtype) & (df["distribution"] == MOE_DISTRIBUTION)]
    return rows.groupby(cols)["latency"].median()


def moe_latency(df, dtype: str, hidden: int, inter: int, experts: int, top_k: int, tp: int,
                ep: int = 1):
    """(tokens axis, seconds) for one MoE layer at exactly that shape, or ``None`` if absent."""
    rows = df[
        (df["moe_dtype"] == dtype)
        & (df["hidden_size"] == hidden)
        & (df["inter_size"] == inter)
        & (df["num_experts"] == experts)
        & (df["topk"] == top_k)
        & (df["moe_tp_size"] == tp)
        & (df["moe_ep_size"] == ep)
        & (df["distribution"] == MOE_DISTRIBUTION)
    ]
    if rows.empty:
        return None
    kernels = sorted(rows["kernel_source"].astype(str).unique(),
                     key=lambda k: any(tag in k for tag in OPT_IN_MOE_KERNELS))
    kernel = kernels[0]  # the one measured kernel, or the engine's default of several
    rows = rows[rows["kernel_source"] == kernel]
    series = rows.groupby("num_tokens")["latency"].median().sort_index()
    return series.index.to_numpy(np.float64), series.to_numpy() / 1e3, kernel


#: NVIDIA's attention rows per attention op (in each engine's ``attention`` folder).
ATTENTION_FILES = {"attn_prefill": "context_attention_perf.parquet",
                   "attn_decode": "generation_attention_perf.parquet"}


def _full_attn_rows(df, kv_dtype: str):
    """The rows of full (no sliding window) BF16 attention over a ``kv_dtype`` cache, any
    shape: what the GQA attention tables read."""
    rows = df[(df["window_size"] == 0) & (df["kv_cache_dtype"] == kv_dtype)]
    if "attn_dtype" in rows.columns:
        rows = rows[rows["attn_dtype"] == "bfloat16"]
    return rows


def _attn_rows(df, heads: int, kv_heads: int, head_dim: int, kv_dtype: str):
    rows = _full_attn_rows(df, kv_dtype)
    return rows[
        (rows["num_heads"] == heads)
        & (rows["num_key_value_heads"] == kv_heads)
        & (rows["head_dim"] == head_dim)
    ]


def prefill_table(df, heads: int, kv_heads: int, head_dim: int, kv_dtype: str,
                  kv_read_s_per_token: float = 0.0):
    """(tokens axis, context axis, seconds grid, kernel) or ``None`` (see module docstring).

    ``kv_read_s_per_token``: seconds to read one token's K and V of one layer at HBM bandwidth.
    The equal-work mapping keeps the FLOPs of a chunk over cached context but not its memory
    traffic, so a small chunk over a long context would come out faster than reading that
    context once allows; each cell is floored at ``(tokens + context) x kv_read_s_per_token``.
    """
    rows = _attn_rows(df, heads, kv_heads, head_dim, kv_dtype)
    rows = rows[rows["batch_size"] == 1]
    if rows.empty:
        return None
    tokens, context, grid = _prefill_grid(rows, kv_read_s_per_token)
    return tokens, context, grid, str(rows["kernel_source"].iloc[0])


def mla_dtype(kv_dtype: str, attn_format: str) -> str:
    """The dtype field of an MLA attention table: KV dtype and the projections' format."""
    return f"{kv_dtype} mla-{attn_format}"


def _dsa_prefill_rows(rows):
    """The prompt rows of the kernel the engine runs at each length, and the kernels' names.
    One kernel where only one was measured; SGLang's (several) by its rule: its dense ragged
    kernel up to :data:`SGLANG_DENSE_PREFILL_MAX` tokens, its sparse backend (the most measured
    other kernel) beyond."""
    kernels = rows["kernel_source"].value_counts()
    dense = [k for k in kernels.index if "dense" in str(k)]
    sparse = [k for k in kernels.index if k not in dense]
    if not dense or not sparse:
        kernel = kernels.index[0]
        return rows[rows["kernel_source"] == kernel], str(kernel)
    short = (rows["kernel_source"] == dense[0]) & (rows["isl"] <= SGLANG_DENSE_PREFILL_MAX)
    long = (rows["kernel_source"] == sparse[0]) & (rows["isl"] > SGLANG_DENSE_PREFILL_MAX)
    return rows[short | long], f"{dense[0]} (<= {SGLANG_DENSE_PREFILL_MAX} tokens), {sparse[0]}"


def _served_prompt_rows(prompts, rows):
    """The batch-1 ``prompts`` of one backend per prompt length, and the backends' names: the
    backend most measured in ``rows`` where it was timed at that length, the next one where it
    was not. vLLM's MLA module labels its rows with the backend that ran them, which changes
    with length (H200: ``FLASH_ATTN_MLA`` up to 512 tokens, ``FLASH_ATTN`` from 1,024); keeping
    the most measured label alone had cut the prompt curve at 512 tokens and extended it, flat,
    to a 32,768-token prefill 20 times faster than measured."""
    order = {k: i for i, k in enumerate(rows["kernel_source"].value_counts().index)}
    rank = prompts["kernel_source"].map(order)
    kept = prompts[rank == rank.groupby(prompts["isl"]).transform("min")]
    spans = kept.groupby("kernel_source", sort=False)["isl"].agg(["min", "max"]).sort_values("min")
    if len(spans) == 1:
        return kept, str(spans.index[0])
    return kept, ", ".join(f"{k} ({int(lo)}-{int(hi)} tokens)"
                           for k, (lo, hi) in spans.iterrows())


def _incremental_prefill_grid(rows, kv_read_s_per_token: float):
    """(tokens, context, seconds) from batch-1 prompt rows, a chunk of ``t`` tokens after ``c``
    cached read as the prompt curve's increment ``P(c + t) - P(c)``: the work a causal prompt
    does for its positions ``c + 1 .. c + t`` (each query's attention and indexer pairs depend
    on its position only), never below a fresh ``t``-token prompt (the module's fixed time),
    nor one read of the caches; non-decreasing in both axes. Right for sparse attention, whose
    curve is near linear, where the equal-work length of :func:`_prefill_grid` (quadratic
    attention) would price a short chunk after a long context as a long prompt."""
    isl, lat, tokens, context, t, c = _prompt_curve(rows)
    cached = np.where(c <= 1, 0.0, c)
    whole = _power_law(isl, lat, t + cached)
    before = np.where(cached > 0, _power_law(isl, lat, np.maximum(cached, 1.0)), 0.0)
    grid = np.maximum(np.maximum(whole - before, _power_law(isl, lat, t)),
                      (t + c) * kv_read_s_per_token)
    grid = np.maximum.accumulate(np.maximum.accumulate(grid, axis=0), axis=1)
    return tokens, context, grid


def _prompt_curve(rows):
    """The measured prompt curve of batch-1 rows (``isl``, seconds) and the prefill grid's
    axes (tokens, cached context) with their mesh."""
    curve = rows.groupby("isl")["latency"].median().sort_index()
    isl = curve.index.to_numpy(np.float64)
    lat = curve.to_numpy() / 1e3
    tokens = np.concatenate([isl, [t for t in PREFILL_EXTRA_TOKENS if t > isl[-1]]])
    context = np.asarray(PREFILL_CONTEXT_AXIS, np.float64)
    t, c = np.meshgrid(tokens, context, indexing="ij")
    return isl, lat, tokens, context, t, c


def _dsa_arch(shape: dict[str, int]):
    """A stand-in architecture of a DSA shape (for its cache bytes per token and layer)."""
    from tiersim.hardware.arch import ModelArch

    return ModelArch("dsa", 1, shape["hidden"], 1, 1, 1, 1, **{
        f: shape[f] for f in shape if f != "hidden"})


def _prefill_grid(rows, kv_read_s_per_token: float):
    """(tokens, context, seconds) from batch-1 prompt rows (``isl``, ``latency`` in ms)."""
    isl, lat, tokens, context, t, c = _prompt_curve(rows)
    s_eq = np.sqrt(t * (t + 2.0 * np.where(c <= 1, 0.0, c)))
    grid = np.maximum(_power_law(isl, lat, s_eq), (t + c) * kv_read_s_per_token)
    return tokens, context, grid


def _power_law(x: np.ndarray, y: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Log-log interpolation of (x, y) at q; beyond the ends, the end segments' power laws."""
    lx, ly, lq = np.log(x), np.log(y), np.log(np.maximum(q, x[0]))
    inside = np.interp(lq, lx, ly)
    slope_hi = (ly[-1] - ly[-2]) / (lx[-1] - lx[-2])
    return np.exp(np.where(lq > lx[-1], ly[-1] + slope_hi * (lq - lx[-1]), inside))


def decode_table(df, heads: int, kv_heads: int, head_dim: int, kv_dtype: str):
    """(batch axis, context axis, seconds grid, kernel) or ``None``; triangle filled in batch."""
    rows = _attn_rows(df, heads, kv_heads, head_dim, kv_dtype)
    if rows.empty:
        return None
    batch, context, grid = _decode_grid(rows)
    return batch, context, grid, str(rows["kernel_source"].iloc[0])


def _decode_grid(rows):
    """(batch, context, seconds) from generation rows (``batch_size`` x ``step``).

    Per context column, batches beyond the last measured one are linear in batch from it (the
    unmeasured corner of the triangle); a batch the data skipped between two measured ones is
    log-log interpolated, and one below the first measured batch takes that batch's time (a
    smaller decode step is not slower; NVIDIA's B200 TensorRT-LLM MLA data lacks batch 1 at
    the shortest context)."""
    pivot = rows.pivot_table(index="batch_size", columns="step", values="latency", aggfunc="median")
    batch = np.asarray(DECODE_BATCH_AXIS, np.float64)
    pivot = pivot.reindex(batch)
    grid = _context_gaps_filled(pivot.to_numpy() / 1e3, pivot.columns.to_numpy(np.float64) + 1)
    for j in range(grid.shape[1]):
        measured = np.flatnonzero(np.isfinite(grid[:, j]) & (grid[:, j] > 0))
        if measured.size == 0:
            raise ProfileError(f"aiconfigurator decode attention has an empty column {j}")
        first, last = measured[0], measured[-1]
        inside = np.exp(np.interp(np.log(batch[first:last + 1]), np.log(batch[measured]),
                                  np.log(grid[measured, j])))
        grid[first:last + 1, j] = inside
        grid[:first, j] = grid[first, j]
        grid[last + 1 :, j] = grid[last, j] * batch[last + 1 :] / batch[last]
    context = pivot.columns.to_numpy(np.float64) + 1.0
    return batch, context, grid


def _context_gaps_filled(grid: np.ndarray, context: np.ndarray) -> np.ndarray:
    """``grid`` (batch x context) with each batch's unmeasured cells between two measured
    contexts log-log interpolated along context (SGLang's DSA data times some contexts at
    batch 1 only; filling those columns linearly in batch from batch 1 read a 64-sequence
    step 30x too slow). A cell beyond a batch's last measured context is left to the batch
    fill (the measured triangle's corner)."""
    grid = grid.copy()
    for i in range(grid.shape[0]):
        measured = np.flatnonzero(np.isfinite(grid[i]) & (grid[i] > 0))
        if measured.size < 2:
            continue
        lo, hi = measured[0], measured[-1]
        gap = ~np.isfinite(grid[i, lo:hi + 1])
        if gap.any():
            inside = np.exp(np.interp(np.log(context[lo:hi + 1]), np.log(context[measured]),
                                      np.log(grid[i, measured])))
            grid[i, lo:hi + 1] = np.where(gap, inside, grid[i, lo:hi + 1])
    return grid


#: The kernels one gated delta-net layer runs per phase (``gdn_perf``'s ``kernel_source``),
#: each a tuple of the names engines give it (the first the data holds is read: vLLM's
#: FlashInfer scan, SGLang's Triton one).
GDN_KERNELS = {
    "gdn_decode": ("generation", (("causal_conv1d_update",),
                                  ("fused_recurrent_gated_delta_rule_packed_decode",))),
    "gdn_prefill": ("context", (("causal_conv1d_fn",),
                                ("chunk_gated_delta_rule_flashinfer", "chunk_gated_delta_rule"))),
}


def gdn_latency(df, op: str, key: dict[str, int]):
    """``(axis, seconds, kernel, note)`` of one delta-net layer's kernels at a per-GPU shape:
    decode by sequences (both kernels' sum at each batch both measured), prefill by the tokens
    of one sequence's chunk (batch 1); the median where several models share the shape. The
    layer's width (``d_model``) only sizes its projections, so rows of another width with the
    same heads are read where the model's own width was not measured (the note says so)."""
    phase, slots = GDN_KERNELS[op]
    present = set(df["kernel_source"].unique())
    kernels = tuple(next((k for k in names if k in present), names[0]) for names in slots)
    heads = ((df["num_k_heads"] == key["k_heads"]) & (df["num_v_heads"] == key["v_heads"])
             & (df["head_k_dim"] == key["k_dim"]) & (df["head_v_dim"] == key["v_dim"])
             & (df["phase"] == phase) & df["kernel_source"].isin(kernels))
    rows = df[heads & (df["d_model"] == key["hidden"])]
    note = "sum of " + " and ".join(kernels) + " per layer"
    if rows.empty:
        rows = df[heads]
        note += "; measured at another d_model with these heads (the kernels do not read it)"
    if op == "gdn_prefill":
        rows, axis = rows[rows["batch_size"] == 1], "seq_len"
    else:
        axis = "batch_size"
    per = rows.groupby(["kernel_source", axis])["latency"].median().unstack(0)
    per = per.dropna()
    if per.empty or len(per.columns) < len(kernels):
        return None
    seconds = per.sum(axis=1).to_numpy(np.float64) / 1e3
    return per.index.to_numpy(np.float64), seconds, "+".join(kernels), note


def allreduce_latency(df, tp: int):
    """(bytes axis, seconds, kernel) of the CUDA-graph custom all-reduce on ``tp`` GPUs."""
    rows = df[(df["num_gpus"] == tp) & (df["allreduce_dtype"] == "bfloat16")]
    if "backend" in rows.columns:  # vLLM and SGLang measure eager and CUDA-graph launches
        rows = rows[rows["backend"].astype(str).str.endswith("_graph")]
    if rows.empty:
        return None
    series = rows.groupby("message_size")["latency"].median().sort_index()
    return (
        series.index.to_numpy(np.float64) * 2.0,
        series.to_numpy() / 1e3,
        str(rows["kernel_source"].iloc[0]),
    )


def fp8_scale_latency(df, k: int):
    """``(m, seconds, kernel, note)`` of NVIDIA's ``compute_scale`` rows (the time dynamic
    per-tensor FP8 quantisation of an ``m x k`` input takes beyond static quantisation) at
    ``k``, linear in ``k`` between the two measured widths around it (the nearest one outside
    the measured range), a measured zero read as the least time a profile holds; ``None``
    where the data has no rows or no difference anywhere."""
    rows = df[df["op_name"] == "compute_scale"] if "op_name" in df else df
    if rows.empty or not (rows["latency"] > 0).any():  # SGLang's: no difference at all
        return None
    by = rows.groupby(["k", "m"])["latency"].median().unstack("m").sort_index()
    by = by.interpolate(axis=1, limit_direction="both")
    widths = by.index.to_numpy(np.float64)
    m = by.columns.to_numpy(np.float64)
    grid = by.to_numpy(np.float64)
    at = np.array([np.interp(float(k), widths, grid[:, j]) for j in range(m.size)])
    kernel = str(rows["kernel_source"].iloc[0]) if "kernel_source" in rows else ""
    if float(k) in widths:
        note = f"k {k} as measured"
    else:
        near = widths[np.searchsorted(widths, k).clip(1, widths.size - 1) - 1:][:2]
        note = f"k {k} linear between measured k {int(near[0])} and {int(near[-1])}"
    return m, np.maximum(at * 1e-3, MIN_SECONDS), kernel, note


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
