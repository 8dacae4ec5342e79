"""MLA decode as a compiled engine serves it, from NVIDIA's uncompiled module timings.

NVIDIA's vLLM collector (aiconfigurator's ``collect_mla_module.py``) times the whole MLA
attention block of one layer, ``DeepseekV2MLAAttention.forward``, replayed from a CUDA graph
but built outside vLLM's ``torch.compile``: every norm, rotary embedding, split, concatenation
and copy of the block runs as its own small kernel. At one query head, one sequence and the
shortest context, where almost nothing is computed, the module takes 67-90 us on an H200; its
GEMMs, its two latent BMMs and a one-KV-head decode kernel, each timed by NVIDIA on its own,
add up to about half that. A served engine fuses those elementwise kernels (and tiersim's fitted
per-layer overhead already charges what small kernels remain in every model), so charging
them again as attention made every MLA decode step too slow (Kimi-K2.5 on vLLM 0.16, TP 8:
+24% TPOT, signed median of 45 rows, where aiconfigurator, reading the same module, is +24%).

:func:`served_decode_grid` removes that excess. At each batch size it is the module's time at
its shortest measured context less the sum of what the block runs there when served: the
projection GEMMs (down-projection of q and the latent, q up-projection, o projection) from the
engine's GEMM tables, the absorbed up-projection BMMs from ``mla_bmm_perf``, and a decode
kernel's floor from the engine's own one-KV-head decode attention table at its shortest context.
The excess is floored at 0 (a module never comes out faster than its served parts), and the
module's growth with context (the attention kernel reading the latent cache) is kept whole.
"""

from __future__ import annotations

import numpy as np


def projection_shapes(shape: dict[str, int], heads: int) -> list[tuple[int, int]]:
    """The per-GPU weight shapes ``(n, k)`` of the MLA block's GEMMs: the fused down-projection
    of q and the latent (replicated across tensor-parallel ranks), the q up-projection and the
    o projection (split by heads)."""
    latent = shape["kv_lora_rank"] + shape["qk_rope_head_dim"]
    q_head = shape["qk_nope_head_dim"] + shape["qk_rope_head_dim"]
    return [
        (shape["q_lora_rank"] + latent, shape["hidden"]),
        (heads * q_head, shape["q_lora_rank"]),
        (shape["hidden"], heads * shape["v_head_dim"]),
    ]


def _per_batch(rows, axis: str, batch: np.ndarray) -> np.ndarray:
    """The median latency of ``rows`` (milliseconds) along ``axis``, in seconds at each
    ``batch``: log-log between measured points, flat below the first, proportional to the
    batch beyond the last."""
    series = rows.groupby(axis)["latency"].median().sort_index()
    have = series.index.to_numpy(np.float64)
    lat = series.to_numpy(np.float64) / 1e3
    inside = np.exp(np.interp(np.log(batch), np.log(have), np.log(lat)))
    return np.where(batch > have[-1], lat[-1] * batch / have[-1], inside)


def bmm_seconds(df, heads: int, batch: np.ndarray) -> np.ndarray | None:
    """Seconds of the two absorbed BMMs (``mla_gen_pre`` + ``mla_gen_post``) at ``heads``
    per GPU for each decode batch (a batch's tokens), or ``None`` where the data lacks either
    at ``heads``."""
    total = np.zeros(batch.size)
    for op in ("mla_gen_pre", "mla_gen_post"):
        rows = df[(df["op_name"] == op) & (df["num_heads"] == heads)]
        if rows.empty:
            return None
        total = total + _per_batch(rows, "num_tokens", batch)
    return total


def kernel_floor(df, heads: int, kv_dtype: str, batch: np.ndarray) -> np.ndarray | None:
    """Seconds of the engine's one-KV-head decode attention kernel at its shortest measured
    context, per batch: the query-head count nearest ``heads`` (log distance), head dim 128,
    full attention; ``None`` where the data has no such rows."""
    rows = df[(df["num_key_value_heads"] == 1) & (df["head_dim"] == 128)
              & (df["window_size"] == 0) & (df["kv_cache_dtype"] == kv_dtype)]
    if rows.empty:
        return None
    counts = np.sort(rows["num_heads"].unique()).astype(np.float64)
    nearest = counts[int(np.argmin(np.abs(np.log(counts / heads))))]
    rows = rows[(rows["num_heads"] == nearest) & (rows["step"] == rows["step"].min())]
    return _per_batch(rows, "batch_size", batch)


def served_decode_grid(grid: np.ndarray, served_parts: np.ndarray) -> tuple[np.ndarray, float]:
    """The module grid (batch x context, seconds) less, per batch, its excess at the shortest
    context over ``served_parts`` (seconds per batch), floored at 0; and the largest excess
    removed (seconds), for the table's note."""
    excess = np.maximum(grid[:, 0] - served_parts, 0.0)
    return grid - excess[:, None], float(excess.max(initial=0.0))
