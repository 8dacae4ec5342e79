"""One MoE layer as the harness times it: route, permute, two expert GEMMs, combine.

``make_moe(...).run(x, logits)`` takes the layer's input ``x[T, hidden]`` (bf16) and the router
logits ``layer.router(x)`` and does, on one GPU: softmax top-k with renormalised weights
(Qwen3-MoE style); a sort of the
T*top_k (token, expert) pairs by expert into a buffer where each expert's rows start at a multiple
of 16 (grouped-GEMM alignment); the gate_up GEMM [2*inter, hidden] and the down GEMM
[hidden, inter] of every expert on its rows, with SiLU-and-multiply between; and the weighted sum
back into token order. The router GEMM is not part of the timed layer: tiersim's step assembly
adds it from the bf16 ``gemm`` table at n = num_experts. Routing is by random router weights, so
tokens spread about uniformly over experts (real routers are less even: a lower bound on
imbalance).

Expert GEMM kernels per precision (``kernel`` records which ran):
- bf16: ``torch._grouped_mm`` (one launch for all experts), else a loop of ``torch.matmul``.
- fp8: dynamic per-row e4m3 quantisation of the activations inside the layer, then
  ``torch._scaled_grouped_mm`` with row-wise scales, else a loop of ``torch._scaled_mm``.
- w4a16: a loop over experts with tokens of the int4 weight-only kernel (see quant.py).
- nvfp4: dequantise the weights of the experts that received tokens (E2M1 lookup x e4m3 block
  scales) into a bf16 buffer, then the bf16 grouped GEMM: weight-only, no FP4 tensor cores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tiersim.calibrate import quant

ALIGN = 16
#: Expert formats the harness times as a whole layer (block FP8 only as dense GEMMs: a
#: per-expert loop of block-scaled GEMMs would time the host's launches, not the layer).
PRECISIONS = tuple(p for p in quant.PRECISIONS if p != "fp8_block")


@dataclass
class MoeLayer:
    """A runnable MoE layer; ``kernel`` names the expert-GEMM path that runs."""

    precision: str
    kernel: str
    run: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x, router logits) -> out
    router: Callable[[torch.Tensor], torch.Tensor]  # x -> router logits (untimed)


@dataclass
class Packed:
    """Token rows sorted by expert into groups that start at multiples of 16 rows."""

    xs: torch.Tensor  # [rows, hidden], zero padding rows
    dest: torch.Tensor  # row in xs of each sorted (token, expert) pair
    offs: torch.Tensor  # int32 cumulative group ends, for grouped GEMMs
    pstart: torch.Tensor  # first row of each expert's group
    counts: torch.Tensor  # tokens per expert
    token_of: torch.Tensor  # token index of each sorted pair
    weight: torch.Tensor  # routing weight of each sorted pair


def route_and_pack(x: torch.Tensor, logits: torch.Tensor, top_k: int,
                   exact_rows: bool = False) -> Packed:
    """Top-k of the router logits, and the expert-sorted, 16-aligned token buffer.

    The buffer has a fixed upper bound of rows (no host sync) unless ``exact_rows``, where it ends
    at the last group (one host sync) for grouped kernels that reject trailing rows.
    """
    num_experts = logits.shape[1]
    probs = torch.softmax(logits.float(), dim=-1)
    wts, idx = torch.topk(probs, top_k, dim=-1)
    wts = wts / wts.sum(dim=-1, keepdim=True)
    flat = idx.flatten()
    order = torch.argsort(flat, stable=True)
    counts = torch.bincount(flat, minlength=num_experts)
    padded = (counts + ALIGN - 1) // ALIGN * ALIGN
    pend = torch.cumsum(padded, 0)
    pstart = pend - padded
    start = torch.cumsum(counts, 0) - counts
    e_sorted = flat[order]
    dest = pstart[e_sorted] + torch.arange(flat.numel(), device=x.device) - start[e_sorted]
    rows = int(pend[-1]) if exact_rows else flat.numel() + num_experts * (ALIGN - 1)
    xs = torch.zeros((rows, x.shape[1]), dtype=x.dtype, device=x.device)
    token_of = order // top_k
    xs[dest] = x[token_of]
    return Packed(xs, dest, pend.to(torch.int32), pstart, counts, token_of,
                  wts.flatten()[order].to(x.dtype))


def combine(p: Packed, y: torch.Tensor, tokens: int) -> torch.Tensor:
    """Weighted sum of each token's expert outputs, back in token order."""
    out = torch.zeros((tokens, y.shape[1]), dtype=y.dtype, device=y.device)
    return out.index_add_(0, p.token_of, y[p.dest] * p.weight[:, None])


def segments(p: Packed) -> list[tuple[int, int, int]]:
    """(expert, first row, rows) of each expert that received tokens (one host sync)."""
    counts, starts = p.counts.tolist(), p.pstart.tolist()
    return [(e, starts[e], c) for e, c in enumerate(counts) if c > 0]


def _loop(xs: torch.Tensor, p: Packed, n: int, mm: Callable) -> torch.Tensor:
    """Per-expert loop: out rows of expert e = mm(e, its rows); padding rows stay zero."""
    out = torch.zeros((xs.shape[0], n), dtype=torch.bfloat16, device=xs.device)
    for e, s, c in segments(p):
        out[s:s + c] = mm(e, xs[s:s + c])
    return out


def _bf16_experts(w: torch.Tensor, grouped: bool) -> Callable:
    """Expert GEMM xs @ w[e].T over all experts, grouped or looped (w is [E, n, k] bf16)."""
    wt = w.transpose(-2, -1)
    if grouped:
        return lambda xs, p: torch._grouped_mm(xs, wt, offs=p.offs, out_dtype=torch.bfloat16)
    return lambda xs, p: _loop(xs, p, w.shape[1], lambda e, rows: rows @ wt[e])


def _fp8_experts(w: torch.Tensor, grouped: bool) -> Callable:
    """FP8 expert GEMM with dynamic row-wise activation scales and per-channel weight scales."""
    e, n, k = w.shape
    w8, sw = quant.fp8_quantize_rows(w.reshape(e * n, k))
    w8t, sw = w8.reshape(e, n, k).transpose(-2, -1), sw.reshape(e, n)

    def grouped_call(xs, p):
        a8, sa = quant.fp8_quantize_rows(xs)
        return torch._scaled_grouped_mm(a8, w8t, sa.reshape(-1), sw, offs=p.offs,
                                        out_dtype=torch.bfloat16)

    def loop_call(xs, p):
        a8, sa = quant.fp8_quantize_rows(xs)
        out = torch.zeros((xs.shape[0], n), dtype=torch.bfloat16, device=xs.device)
        for i, s, c in segments(p):
            out[s:s + c] = torch._scaled_mm(a8[s:s + c], w8t[i], sa[s:s + c], sw[i:i + 1],
                                            out_dtype=torch.bfloat16)
        return out

    return grouped_call if grouped else loop_call


def _w4a16_experts(e: int, n: int, k: int, device: torch.device, gen: torch.Generator) -> Callable:
    """Per-expert loop of the int4 weight-only kernel."""
    packs = [quant.random_int4(n, k, device, gen)[1:4] for _ in range(e)]
    return lambda xs, p: _loop(xs, p, n, lambda i, rows: quant.int4_mm(rows, *packs[i]))


def _nvfp4_experts(e: int, n: int, k: int, device: torch.device, gen: torch.Generator,
                   grouped: bool) -> Callable:
    """Dequantise touched experts' NVFP4 weights to bf16, then the bf16 expert GEMM."""
    packed, bscale, gscale = quant.random_nvfp4(e * n, k, device, gen)
    packed, bscale = packed.reshape(e, n, k // 2), bscale.reshape(e, n, k // 16)
    lut = quant.e2m1_lut(device)
    w = torch.empty((e, n, k), dtype=torch.bfloat16, device=device)
    gemm = _bf16_experts(w, grouped)

    def call(xs, p):
        touched = torch.nonzero(p.counts).flatten()
        t = touched.numel()  # NOTE: host sync, as a kernel that skips idle experts needs
        deq = quant.nvfp4_dequantize(packed[touched].reshape(t * n, k // 2),
                                     bscale[touched].reshape(t * n, k // 16), gscale, lut)
        w.index_copy_(0, touched, deq.reshape(t, n, k))
        return gemm(xs, p)

    return call


def _grouped_ok(device: torch.device, fp8: bool, tail_rows: int) -> tuple[bool, str]:
    """Whether torch's grouped GEMM (bf16 or scaled fp8) runs here with ``tail_rows`` rows after
    the last group, and why not."""
    gen = quant.generator(device, 1)
    w = quant.randn((2, 32, 64), device, gen)
    x = quant.randn((32 + tail_rows, 64), device, gen)
    offs = torch.tensor([16, 32], dtype=torch.int32, device=device)
    p = Packed(x, None, offs, None, None, None, None)
    try:
        out = (_fp8_experts if fp8 else _bf16_experts)(w, True)(x, p)
        ref = x[:16].float() @ w[0].float().t()
        ok = bool(torch.allclose(out[:16].float(), ref, rtol=0.1, atol=0.5 if fp8 else 0.1))
        return ok, "" if ok else "wrong result in a probe"
    except (RuntimeError, NotImplementedError, AttributeError, TypeError) as exc:
        return False, str(exc).splitlines()[0][:120]


def grouped_support(device: torch.device, fp8: bool) -> tuple[bool, bool, str]:
    """(grouped GEMM runs, it needs exact rows, why not) for this device and dtype."""
    ok, why = _grouped_ok(device, fp8, tail_rows=16)
    if ok:
        return True, False, ""
    ok_exact, _ = _grouped_ok(device, fp8, tail_rows=0)
    return ok_exact, ok_exact, why


def make_moe(precision: str, hidden: int, inter: int, num_experts: int, top_k: int,
             device: torch.device, gen: torch.Generator) -> MoeLayer:
    """One MoE layer (``inter`` per GPU) in ``precision`` with random router and expert weights."""
    w_router = quant.randn((num_experts, hidden), device, gen)
    shapes = ((num_experts, 2 * inter, hidden), (num_experts, hidden, inter))
    grouped, exact, why = grouped_support(device, fp8=precision == "fp8")
    how = "torch._scaled_grouped_mm" if precision == "fp8" else "torch._grouped_mm"
    path = how if grouped else f"per-expert loop ({how} unavailable: {why})"
    if exact:
        path += " (exact row count: one host sync per layer)"
    if precision == "bf16":
        gemms = [_bf16_experts(quant.randn(s, device, gen), grouped) for s in shapes]
        kernel = f"bf16 experts: {path}"
    elif precision == "fp8":
        gemms = [_fp8_experts(quant.randn(s, device, gen), grouped) for s in shapes]
        kernel = f"fp8 experts, dynamic row-wise activation quantisation in the layer: {path}"
    elif precision == "w4a16":
        gemms = [_w4a16_experts(*s, device, gen) for s in shapes]
        kernel = "w4a16 experts: per-expert loop of the int4 weight-only kernel " + (
            "torch._weight_int4pack_mm" if device.type == "cuda" else "_weight_int4pack_mm_for_cpu")
    elif precision == "nvfp4":
        grouped, exact, why = grouped_support(device, fp8=False)
        path = "torch._grouped_mm" if grouped else f"per-expert loop ({why})"
        gemms = [_nvfp4_experts(*s, device, gen, grouped) for s in shapes]
        kernel = (f"nvfp4 weight-only: dequantise touched experts (E2M1 lookup x e4m3 block-16 "
                  f"scales) to bf16, then {path}; no FP4 tensor cores used")
    else:
        raise ValueError(f"unknown precision {precision!r}")
    kernel += ("; top-k, permutation and combine included; router GEMM excluded (the bf16 gemm "
               "table at n=num_experts)")
    return MoeLayer(precision, kernel, layer_forward(top_k, inter, gemms, exact),
                    lambda x: x @ w_router.t())


def layer_forward(top_k: int, inter: int, gemms: list[Callable],
                  exact_rows: bool = False) -> Callable:
    """The layer's forward from router logits: route and pack, gate_up, SiLU-and-mul, down,
    combine."""
    gate_up, down = gemms

    def run(x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        p = route_and_pack(x, logits, top_k, exact_rows)
        h = gate_up(p.xs, p)
        a = (F.silu(h[:, :inter].float()) * h[:, inter:].float()).to(torch.bfloat16)
        return combine(p, down(a, p), x.shape[0])

    return run


def reference_moe(layer_weights: tuple, x: torch.Tensor, top_k: int) -> torch.Tensor:
    """float32 MoE of bf16 weights (w_router, w13 [E, 2I, H], w2 [E, H, I]) for checks."""
    w_router, w13, w2 = (w.float() for w in layer_weights)
    inter = w2.shape[2]
    probs = torch.softmax(x.float() @ w_router.t(), dim=-1)
    wts, idx = torch.topk(probs, top_k, dim=-1)
    wts = wts / wts.sum(dim=-1, keepdim=True)
    out = torch.zeros_like(x, dtype=torch.float32)
    for t in range(x.shape[0]):
        for j in range(top_k):
            e = int(idx[t, j])
            h = w13[e] @ x[t].float()
            out[t] += wts[t, j] * (w2[e] @ (F.silu(h[:inter]) * h[inter:]))
    return out
