"""Attention as the harness times it: ``torch.nn.functional.scaled_dot_product_attention`` with GQA.

- Decode: a batch of ``batch`` sequences, one new query token each, attending to ``context``
  cached tokens: q [batch, heads, 1, d], k/v [batch, kv_heads, context, d], no mask.
- Prefill: one sequence's chunk of ``tokens`` new tokens after ``context`` cached ones:
  q [1, heads, tokens, d], k/v [1, kv_heads, context + tokens, d], causal mask aligned to the
  bottom right (``causal_lower_right``), so new token i sees the cache and new tokens <= i.

GQA is passed to SDPA as ``enable_gqa=True`` (K/V are not expanded). The backend is chosen by
trying flash, then cuDNN, then memory-efficient, then math, and recorded.

FP8 KV cache: K and V are stored as e4m3 with one scale each; the timed call dequantises them to
bf16 (cast and scale, eager torch ops) and then runs the same bf16 SDPA. SDPA has no FP8-KV
kernel, so this measures cast-then-attend, which reads the cache once in fp8, writes and reads a
bf16 copy: slower than an engine whose attention kernel dequantises in registers.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from tiersim.calibrate import quant

BACKENDS = (
    ("flash", SDPBackend.FLASH_ATTENTION),
    ("cudnn", SDPBackend.CUDNN_ATTENTION),
    ("efficient", SDPBackend.EFFICIENT_ATTENTION),
    ("math", SDPBackend.MATH),
)


def _kv(batch: int, kv_heads: int, length: int, head_dim: int, kv_dtype: str,
        device: torch.device, gen: torch.Generator) -> Callable[[], tuple]:
    """K and V of ``length`` tokens in ``kv_dtype``; returns a callable giving bf16 K, V
    (a dequantisation for fp8, which is then part of what is timed)."""
    shape = (batch, kv_heads, length, head_dim)
    if kv_dtype == "bf16":
        k, v = quant.randn(shape, device, gen), quant.randn(shape, device, gen)
        return lambda: (k, v)
    if kv_dtype != "fp8":
        raise ValueError(f"unknown kv_dtype {kv_dtype!r}")
    k8 = quant.randn(shape, device, gen, dtype=quant.FP8)
    v8 = quant.randn(shape, device, gen, dtype=quant.FP8)
    sk = torch.tensor(1.0, dtype=torch.bfloat16, device=device)
    sv = torch.tensor(1.0, dtype=torch.bfloat16, device=device)
    return lambda: (k8.to(torch.bfloat16) * sk, v8.to(torch.bfloat16) * sv)


def _with_backend(call: Callable[[], torch.Tensor],
                  device: torch.device) -> tuple[Callable[[], torch.Tensor], str]:
    """``call`` pinned to the first SDPA backend that runs it, and that backend's name.

    On CUDA the math backend is not tried: no engine runs it, and at long contexts it would
    materialise the whole score matrix (minutes, or out of memory) instead of failing fast.
    """
    errors = []
    for name, backend in BACKENDS:
        if name == "math" and device.type == "cuda":
            continue
        def pinned(backend=backend):
            with sdpa_kernel([backend]):
                return call()
        try:
            pinned()
            return pinned, name
        except RuntimeError as exc:
            errors.append(f"{name}: {str(exc).splitlines()[0][:80]}")
    raise RuntimeError("no SDPA backend ran: " + "; ".join(errors))


def make_decode(batch: int, context: int, heads: int, kv_heads: int, head_dim: int,
                kv_dtype: str, device: torch.device, gen: torch.Generator):
    """Timed decode attention call and its SDPA backend name."""
    q = quant.randn((batch, heads, 1, head_dim), device, gen)
    kv = _kv(batch, kv_heads, context, head_dim, kv_dtype, device, gen)

    def call():
        k, v = kv()
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=heads != kv_heads)

    return _with_backend(call, device)


def preload() -> None:
    """Import the chunked-prefill mask (``causal_lower_right``) now. Its module imports
    ``torch._dynamo``, seconds on a CPU; imported inside the first prefill grid point, after
    the time budget was checked, it overran ``--budget-s`` by those seconds."""
    from torch.nn.attention.bias import causal_lower_right  # noqa: F401


def make_prefill(tokens: int, context: int, heads: int, kv_heads: int, head_dim: int,
                 kv_dtype: str, device: torch.device, gen: torch.Generator):
    """Timed chunked-prefill attention call and its SDPA backend name."""
    from torch.nn.attention.bias import causal_lower_right  # see preload()

    q = quant.randn((1, heads, tokens, head_dim), device, gen)
    kv = _kv(1, kv_heads, context + tokens, head_dim, kv_dtype, device, gen)
    mask = causal_lower_right(tokens, context + tokens)

    def call():
        k, v = kv()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              enable_gqa=heads != kv_heads)

    return _with_backend(call, device)


def reference_prefill(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """float32 chunked-prefill attention with explicit GQA expansion, for checks."""
    tokens, length = q.shape[2], k.shape[2]
    group = q.shape[1] // k.shape[1]
    k = k.float().repeat_interleave(group, dim=1)
    v = v.float().repeat_interleave(group, dim=1)
    scores = q.float() @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    allowed = torch.ones(tokens, length, dtype=torch.bool).tril(diagonal=length - tokens)
    scores = scores.masked_fill(~allowed.to(q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
