"""Weight formats of each precision and the kernel that multiplies activations by them.

Every ``make_linear`` result multiplies an activation ``x[m, k]`` by a weight ``W[n, k]`` stored in
the precision's format, with the kernel that actually runs on the device at hand; ``kernel`` says
which. Weights are random codes of the right format: a kernel's speed does not depend on the
values, and correctness is checked separately on small shapes (``check_linear``).

- bf16: ``torch.matmul`` (cuBLAS on CUDA).
- fp8: ``torch._scaled_mm`` on e4m3 operands, row-wise scales (per token x per output channel)
  where the device accepts them, else per-tensor; activations are quantised before timing.
- fp8_block: the block-FP8 checkpoint format (DeepSeek-V3, Qwen3-FP8, MiniMax-M2): e4m3
  weights with one fp32 scale per 128 x 128 block, activations quantised per token in groups of
  128 along k (vLLM's ``per_token_group_quant_fp8``, untimed here, timed alone in the table's
  parts). torch's block-scaled GEMM: cuBLASLt with VEC128 (activation) and BLK128x128 (weight)
  fp32 scales, on SM90 only, built with cuBLAS >= 12.9, without fast accumulation. It is reached
  through ``torch.nn.functional.scaled_mm`` with the (BlockWise1x128, BlockWise128x128) recipes
  (torch >= 2.10), activation scales m-major and weight scales [L4, n/128] with the k-blocks
  padded to L4, a multiple of 4, or through ``torch._scaled_mm``, whose checks want the unpadded
  strides though cuBLAS reads the padded layout (``BlockLayout``). Each candidate layout is
  tried on probes whose block scales differ widely, and the first whose result matches the
  dequantised reference is used. Where none runs: on a GPU the table is not measured (the
  reason goes to ``provenance.skipped``); on a CPU it is emulated (operands dequantised to bf16,
  then ``torch.matmul``) and labelled so.
- w4a16: torch's 4-bit weight-only kernel, asymmetric groups of 128 along k with bf16 scale and
  zero, ``w = (q - 8) * scale + zero``: ``_weight_int4pack_mm`` (tinygemm) on CUDA,
  ``_weight_int4pack_mm_for_cpu`` on a CPU.
- nvfp4: E2M1 codes (two per byte) in blocks of 16 with an e4m3 scale per block and an fp32 global
  scale. With FP4 tensor cores (compute capability >= 10) ``torch._scaled_mm`` on
  ``float4_e2m1fn_x2``; otherwise (Hopper, CPU) dequantise to bf16 by a 16-entry lookup, then bf16
  GEMM, and the dequantisation is also timed on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from tiersim.calibrate.options import PRECISIONS  # noqa: F401 -- named here; checked without torch

#: Block edge of the block-FP8 format (weights 128 x 128, activations 1 x 128).
BLOCK = 128
#: Weights per NVFP4 scale block, along k.
NVFP4_BLOCK = 16
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
FP8 = torch.float8_e4m3fn


@dataclass
class Linear:
    """A weight in one precision's format and the kernel that multiplies by it.

    ``prepare`` turns a bf16 activation into the kernel's input (untimed: e.g. FP8 quantisation);
    ``run`` is the timed call; ``dequant`` (nvfp4 off FP4 hardware only) is the weight
    dequantisation alone, timed as a separate part; ``reference`` is the dequantised weight as
    float32 [n, k] for correctness checks. ``act_quant`` names the dynamic activation
    quantisation ``prepare`` does (timed alone as a part; '' when there is none) and
    ``act_seen`` gives the float32 activation the kernel actually multiplies.
    """

    precision: str
    kernel: str
    run: Callable[[torch.Tensor], torch.Tensor]
    prepare: Callable[[torch.Tensor], torch.Tensor]
    reference: Callable[[], torch.Tensor]
    dequant: Callable[[], torch.Tensor] | None = None
    act_quant: str = ""
    act_seen: Callable[[torch.Tensor], torch.Tensor] | None = None


def generator(device: torch.device, seed: int) -> torch.Generator:
    """A seeded torch Generator on ``device`` (no global random state)."""
    return torch.Generator(device=device).manual_seed(seed)


def randn(shape: tuple[int, ...], device: torch.device, gen: torch.Generator,
          dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """Standard normal values of ``shape`` drawn from ``gen`` (never zeros: they time faster)."""
    return torch.randn(shape, device=device, generator=gen, dtype=torch.float32).to(dtype)


def make_linear(precision: str, n: int, k: int, device: torch.device, gen: torch.Generator,
                compile_dequant: bool = False) -> Linear:
    """The ``precision`` weight of shape [n, k] on ``device`` and its kernel."""
    if precision == "bf16":
        return _bf16(n, k, device, gen)
    if precision == "fp8":
        return _fp8(n, k, device, gen)
    if precision == "fp8_block":
        return _fp8_block(n, k, device, gen)
    if precision == "w4a16":
        return _w4a16(n, k, device, gen)
    if precision == "nvfp4":
        return _nvfp4(n, k, device, gen, compile_dequant)
    raise ValueError(f"unknown precision {precision!r}")


def _bf16(n: int, k: int, device: torch.device, gen: torch.Generator) -> Linear:
    """BF16 weight, torch.matmul."""
    w = randn((n, k), device, gen)
    wt = w.t()
    lib = "cuBLAS" if device.type == "cuda" else "CPU"
    return Linear("bf16", f"torch.matmul bf16 ({lib})", lambda x: torch.matmul(x, wt),
                  lambda x: x, lambda: w.float())


# ---- FP8 -----------------------------------------------------------------------------------

def fp8_quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic per-row e4m3 quantisation: (codes, float32 scale [rows, 1])."""
    amax = x.float().abs().amax(dim=1, keepdim=True).clamp(min=1e-12)
    scale = amax / torch.finfo(FP8).max
    return (x.float() / scale).to(FP8), scale


def _fp8_call(rowwise: bool, fast: bool) -> Callable:
    """A _scaled_mm call with row-wise or per-tensor scales."""
    def call(a8, sa, w8t, sb):
        if not rowwise:
            sa, sb = sa.amax().reshape(()), sb.amax().reshape(())
        return torch._scaled_mm(a8, w8t, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
    return call


def _fp8(n: int, k: int, device: torch.device, gen: torch.Generator) -> Linear:
    """E4M3 weight with per-output-channel scales, torch._scaled_mm."""
    w8, w_scale = fp8_quantize_rows(randn((n, k), device, gen))
    w8t, sb = w8.t(), w_scale.t().contiguous()  # [k, n] column-major, scale [1, n]
    fast = device.type == "cuda"
    probe_a, probe_s = fp8_quantize_rows(randn((16, k), device, gen))
    call, mode = _fp8_call(True, fast), "row-wise"
    try:
        call(probe_a, probe_s, w8t, sb)
    except RuntimeError:
        call, mode = _fp8_call(False, fast), "per-tensor"
    kernel = f"torch._scaled_mm e4m3 x e4m3 -> bf16, {mode} scales"
    kernel += ", fast accum" if fast else ""

    def prepare(x):
        return fp8_quantize_rows(x)

    def reference():
        return w8.float() * w_scale if mode == "row-wise" else w8.float() * w_scale.amax()

    return Linear("fp8", kernel, lambda a: call(a[0], a[1], w8t, sb), prepare, reference,
                  act_quant="dynamic per-token", act_seen=_rows_seen)


def _rows_seen(x: torch.Tensor) -> torch.Tensor:
    """float32 of x after per-row e4m3 quantisation."""
    a8, sa = fp8_quantize_rows(x)
    return a8.float() * sa


# ---- block FP8 ----------------------------------------------------------------------------

def fp8_quantize_groups(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic per-token-group e4m3 quantisation, groups of 128 along k: (codes [m, k],
    float32 scales [m, k / 128])."""
    m, k = x.shape
    groups = x.float().reshape(m, k // BLOCK, BLOCK)
    scale = groups.abs().amax(dim=2).clamp(min=1e-12) / torch.finfo(FP8).max
    return (groups / scale.unsqueeze(2)).to(FP8).reshape(m, k), scale


def fp8_quantize_blocks(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """128 x 128 block e4m3 quantisation of a weight [n, k]: (codes [n, k], float32 scales
    [n / 128, k / 128])."""
    n, k = w.shape
    blocks = w.float().reshape(n // BLOCK, BLOCK, k // BLOCK, BLOCK)
    scale = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-12) / torch.finfo(FP8).max
    return (blocks / scale[:, None, :, None]).to(FP8).reshape(n, k), scale


def block_dequant(codes: torch.Tensor, scale: torch.Tensor, rows: int) -> torch.Tensor:
    """float32 of block-quantised ``codes`` [r, k] whose ``scale`` covers ``rows`` x 128
    blocks (rows 1: activation groups; 128: weight blocks)."""
    r, k = codes.shape
    full = scale.repeat_interleave(rows, dim=0)[:r].repeat_interleave(BLOCK, dim=1)
    return codes.float() * full


def _groups_seen(x: torch.Tensor) -> torch.Tensor:
    """float32 of x after per-token-group e4m3 quantisation."""
    return block_dequant(*fp8_quantize_groups(x), rows=1)


@dataclass(frozen=True)
class BlockLayout:
    """One way to hand block scales to torch's block-scaled FP8 GEMM (cuBLASLt's VEC128 x
    BLK128x128 scale modes, Hopper only, cuBLAS >= 12.9, no fast accumulation).

    ``api`` "v2" is ``torch.nn.functional.scaled_mm`` with the recipes named (BlockWise1x128,
    BlockWise128x128); "v1" is ``torch._scaled_mm``, which infers them from the scale shapes.
    Activation scales are [m, k/128] m-major (stride (1, m)); their rows are padded to a multiple
    of ``pad_rows``. ``kblocks`` says how the weight scale [k/128, n/128] is laid out; cuBLAS reads
    it from its data pointer with the k-blocks padded to L4 = a multiple of 4 per 128-row block of
    the weight, whatever the tensor's strides say:

    - "padded": [L4, n/128], stride (1, L4): what the v2 entry point checks for;
    - "aliased": the padded memory viewed as [k/128, n/128], stride (1, k/128): the v1 entry
      point checks those strides but passes only the pointer on, so cuBLAS still reads L4;
    - "plain": the unpadded [k/128, n/128] (right only where k/128 is a multiple of 4).
    """

    name: str
    api: str
    pad_rows: int = 1
    kblocks: str = "padded"

    def weight_scale(self, sw: torch.Tensor) -> torch.Tensor:
        """The weight scale (``sw`` is [n/128, k/128]) in this layout."""
        nb, kb = sw.shape
        if self.kblocks == "plain":
            return sw.t()
        padded = torch.nn.functional.pad(sw, (0, -kb % 4))  # [nb, L4], zeros past k/128
        if self.kblocks == "aliased":
            return padded.as_strided((kb, nb), (1, kb))
        return padded.t()

    def activation(self, a8: torch.Tensor, sa: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Codes and scales padded to whole row groups (zero codes, unit scales), scales m-major."""
        extra = -a8.shape[0] % self.pad_rows
        if extra:
            a8 = torch.nn.functional.pad(a8.view(torch.uint8), (0, 0, 0, extra)).view(FP8)
            sa = torch.nn.functional.pad(sa, (0, 0, 0, extra), value=1.0)
        return a8, _m_major(sa)

    def mm(self, a8: torch.Tensor, w8t: torch.Tensor, sa: torch.Tensor,
           sb: torch.Tensor) -> torch.Tensor:
        """The bf16 product of prepared operands through this layout's entry point."""
        if self.api == "v1":
            return torch._scaled_mm(a8, w8t, sa, sb, out_dtype=torch.bfloat16,
                                    use_fast_accum=False)
        fn = torch.nn.functional
        if not all(hasattr(fn, a) for a in ("scaled_mm", "ScalingType", "SwizzleType")):
            raise NotImplementedError("torch.nn.functional has no scaled_mm here")
        return fn.scaled_mm(a8, w8t, sa, fn.ScalingType.BlockWise1x128, sb,
                            fn.ScalingType.BlockWise128x128,
                            swizzle_a=fn.SwizzleType.NO_SWIZZLE,
                            swizzle_b=fn.SwizzleType.NO_SWIZZLE,
                            output_dtype=torch.bfloat16, use_fast_accum=False)


def _m_major(sa: torch.Tensor) -> torch.Tensor:
    """``sa`` [m, k/128] with strides exactly (1, m): torch's v2 check wants stride(0) == 1 even
    for one row, which ``sa.t().contiguous().t()`` leaves at k/128."""
    return torch.empty_strided(sa.shape, (1, sa.shape[0]), dtype=sa.dtype,
                               device=sa.device).copy_(sa)


_V2 = "F.scaled_mm (BlockWise1x128, BlockWise128x128)"
#: Tried in order; the first whose product matches the dequantised reference is used.
BLOCK_LAYOUTS = (BlockLayout(f"{_V2}, k-blocks padded to 4", "v2"),
                 BlockLayout(f"{_V2}, rows and k-blocks padded to 4", "v2", pad_rows=4),
                 BlockLayout("torch._scaled_mm, k-blocks padded to 4 in memory", "v1",
                             kblocks="aliased"),
                 BlockLayout("torch._scaled_mm, rows padded to 4, k-blocks padded to 4 in memory",
                             "v1", pad_rows=4, kblocks="aliased"),
                 BlockLayout("torch._scaled_mm, unpadded", "v1", kblocks="plain"),
                 BlockLayout("torch._scaled_mm, rows padded to 4, k-blocks unpadded", "v1",
                             pad_rows=4, kblocks="plain"))
#: Probe row counts: 1, rows not a multiple of 4, and more than one 128-row tile.
PROBE_ROWS = (1, 5, 20, 130)


def _block_mm(layout: BlockLayout, a: tuple, w8t: torch.Tensor,
              sb: torch.Tensor) -> torch.Tensor:
    """One block-scaled FP8 GEMM of prepared activations ``(codes, scales, m)``."""
    return layout.mm(a[0], w8t, a[1], sb)[:a[2]]


def _spread(shape: tuple[int, ...], device: torch.device, gen: torch.Generator) -> torch.Tensor:
    """Random powers of two from 1/8 to 8: block scales that differ enough that a layout
    reading the wrong block's scale cannot pass the probe."""
    return 2.0 ** torch.randint(-3, 4, shape, device=device, generator=gen).float()


def _probe_activation(m: int, k: int, device: torch.device, gen: torch.Generator) -> tuple:
    """Group-quantised probe activation [m, k] whose 1 x 128 groups differ in magnitude."""
    x = randn((m, k), device, gen, torch.float32)
    x = x * _spread((m, k // BLOCK), device, gen).repeat_interleave(BLOCK, dim=1)
    return fp8_quantize_groups(x)


def _check_layout(layout: BlockLayout, w8: torch.Tensor, sw: torch.Tensor, ref_w: torch.Tensor,
                  cases: list[tuple]) -> None:
    """Raise unless ``layout`` runs and matches the dequantised product (``ref_w``: the weight
    dequantised) on every probe case."""
    sb = layout.weight_scale(sw)
    for a8, sa in cases:
        out = _block_mm(layout, (*layout.activation(a8, sa), a8.shape[0]), w8.t(), sb).float()
        ref = block_dequant(a8, sa, rows=1) @ ref_w.t()
        err = float((out - ref).norm() / ref.norm().clamp(min=1e-30))
        if not err <= 1e-2:
            raise ValueError(f"relative error {err:.2g} against the reference at "
                             f"m={a8.shape[0]}")


def _block_layout(w8: torch.Tensor, sw: torch.Tensor, device: torch.device,
                  gen: torch.Generator) -> tuple[BlockLayout | None, str]:
    """The first of BLOCK_LAYOUTS that matches the dequantised reference on probes of
    PROBE_ROWS rows (weight codes ``w8``, block scales spread from ``sw``), and, where none
    does, why the first and the last did not."""
    sw = sw * _spread(tuple(sw.shape), device, gen)
    cases = [_probe_activation(m, w8.shape[1], device, gen) for m in PROBE_ROWS]
    ref_w, why = block_dequant(w8, sw, rows=BLOCK), []
    for layout in BLOCK_LAYOUTS:
        try:
            _check_layout(layout, w8, sw, ref_w, cases)
            return layout, ""
        except (RuntimeError, ValueError, TypeError, NotImplementedError) as exc:
            why.append(f"{layout.name}: {(str(exc).splitlines() or [''])[0][:120]}")
    return None, "; ".join(dict.fromkeys((why[0], why[-1])))


def _fp8_block(n: int, k: int, device: torch.device, gen: torch.Generator) -> Linear:
    """Block-FP8 weight (128 x 128 scales), per-token-group activations; see the module
    docstring for the kernel and its fallbacks."""
    if n % BLOCK or k % BLOCK:
        raise ValueError(f"fp8_block needs n and k divisible by {BLOCK} (got n={n}, k={k})")
    w8, sw = fp8_quantize_blocks(randn((n, k), device, gen))
    layout, why = _block_layout(w8, sw, device, gen)

    def reference():
        return block_dequant(w8, sw, rows=BLOCK)

    if layout is None and device.type == "cuda":
        raise RuntimeError(f"no block-scaled FP8 GEMM in torch {torch.__version__} here "
                           f"({why})")
    if layout is None:
        wt = reference().to(torch.bfloat16).t()
        kernel = (f"emulated: per-token-group (1 x 128) e4m3 activations and 128 x 128-block "
                  f"e4m3 weights dequantised to bf16, then torch.matmul (no block-scaled "
                  f"_scaled_mm on {device.type}: {why})")
        return Linear("fp8_block", kernel,
                      lambda a: torch.matmul(block_dequant(a[0], a[1], 1).to(torch.bfloat16), wt),
                      fp8_quantize_groups, reference, act_quant="per-token-group (1 x 128)",
                      act_seen=_groups_seen)
    w8t, sb = w8.t(), layout.weight_scale(sw)

    def prepare(x):
        return (*layout.activation(*fp8_quantize_groups(x)), x.shape[0])

    kernel = (f"cuBLASLt block-scaled e4m3 x e4m3 -> bf16, scales 1 x 128 (activations) x "
              f"128 x 128 (weights), via {layout.name}")
    return Linear("fp8_block", kernel, lambda a: _block_mm(layout, a, w8t, sb), prepare,
                  reference, act_quant="per-token-group (1 x 128)", act_seen=_groups_seen)


# ---- W4A16 -----------------------------------------------------------------------------------

def int4_group_size(k: int) -> int:
    """Largest supported group size (128, 64, 32) that divides k."""
    for g in (128, 64, 32):
        if k % g == 0:
            return g
    raise ValueError(f"w4a16 needs k divisible by 32 (got k={k})")


def _inner_k_tiles(k: int) -> int:
    """tinygemm's innerKTiles: the largest of 8, 4, 2 with k divisible by 16 * tiles."""
    for t in (8, 4, 2):
        if k % (16 * t) == 0:
            return t
    raise ValueError(f"tinygemm needs k divisible by 32 (got k={k})")


def pack_int4(codes: torch.Tensor) -> tuple[torch.Tensor, str]:
    """Pack int32 codes in [0, 16) of shape [n, k] for the device's int4 kernel."""
    if codes.device.type == "cuda":
        pairs = (codes[:, ::2] << 4 | codes[:, 1::2]).to(torch.uint8)
        tiles = _inner_k_tiles(codes.shape[1])
        return torch.ops.aten._convert_weight_to_int4pack(pairs, tiles), f"innerKTiles={tiles}"
    return torch.ops.aten._convert_weight_to_int4pack_for_cpu(codes, 1), "cpu packing"


def int4_mm(x: torch.Tensor, packed: torch.Tensor, group: int, sz: torch.Tensor) -> torch.Tensor:
    """x[m, k] (bf16) times the packed 4-bit weight with the device's kernel."""
    if x.device.type == "cuda":
        return torch.ops.aten._weight_int4pack_mm(x, packed, group, sz)
    return torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, group, sz)


def random_int4(n: int, k: int, device: torch.device, gen: torch.Generator):
    """Random 4-bit codes [n, k] (int32) and bf16 scales-and-zeros [k/g, n, 2]; returns
    (codes, packed, group, sz, packing note)."""
    group = int4_group_size(k)
    codes = torch.randint(0, 16, (n, k), device=device, generator=gen, dtype=torch.int32)
    scale = torch.rand((k // group, n), device=device, generator=gen) * 0.02 + 0.01
    zero = torch.randn((k // group, n), device=device, generator=gen) * 0.01
    sz = torch.stack([scale, zero], dim=-1).to(torch.bfloat16).contiguous()
    packed, note = pack_int4(codes)
    return codes, packed, group, sz, note


def int4_dequant_reference(codes: torch.Tensor, group: int, sz: torch.Tensor) -> torch.Tensor:
    """float32 [n, k] weight of the tinygemm convention: (q - 8) * scale + zero per group."""
    scale = sz[..., 0].float().t().repeat_interleave(group, dim=1)
    zero = sz[..., 1].float().t().repeat_interleave(group, dim=1)
    return (codes.float() - 8.0) * scale + zero


def _w4a16(n: int, k: int, device: torch.device, gen: torch.Generator) -> Linear:
    """4-bit weight-only, torch's int4pack kernels."""
    codes, packed, group, sz, note = random_int4(n, k, device, gen)
    name = ("torch._weight_int4pack_mm (tinygemm)" if device.type == "cuda"
            else "torch._weight_int4pack_mm_for_cpu")
    kernel = f"{name}, int4 asymmetric groups of {group}, bf16 activations, {note}"
    return Linear("w4a16", kernel, lambda x: int4_mm(x, packed, group, sz), lambda x: x,
                  lambda: int4_dequant_reference(codes, group, sz))


# ---- NVFP4 -----------------------------------------------------------------------------------

def nvfp4_quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Quantise w [n, k] to NVFP4: (packed uint8 [n, k/2], e4m3 scales [n, k/16], fp32 global).

    Blocks of 16 along k; block scale = amax / 6 stored in e4m3 after division by the global
    scale (amax of w / (448 * 6)); values rounded to the nearest E2M1 magnitude.
    """
    n, k = nvfp4_shape(*w.shape)
    blocks = w.float().reshape(n, k // NVFP4_BLOCK, NVFP4_BLOCK)
    gscale = (w.float().abs().amax() / (448.0 * 6.0)).clamp(min=1e-12)
    bscale = (blocks.abs().amax(dim=2) / 6.0 / gscale).to(FP8)
    eff = (bscale.float() * gscale).clamp(min=1e-12).unsqueeze(2)
    mags = torch.tensor(E2M1_VALUES[:8], device=w.device)
    mids = (mags[1:] + mags[:-1]) / 2
    scaled = blocks / eff
    idx = torch.bucketize(scaled.abs().clamp(max=6.0), mids)
    codes = (idx + 8 * (scaled < 0)).to(torch.uint8).reshape(n, k)
    packed = codes[:, ::2] | (codes[:, 1::2] << 4)
    return packed, bscale, gscale


def nvfp4_shape(n: int, k: int) -> tuple[int, int]:
    """``(n, k)`` of an NVFP4 weight, checked: k must be whole blocks of 16 (a ValueError that
    says so, where torch's reshape said "shape '[n, -1, 16]' is invalid for input of size")."""
    if k % NVFP4_BLOCK:
        raise ValueError(f"nvfp4 needs k divisible by {NVFP4_BLOCK}, its block size along k "
                         f"(got k={k})")
    return n, k


def random_nvfp4(n: int, k: int, device: torch.device, gen: torch.Generator):
    """Random NVFP4 weight: (packed uint8 [n, k/2], e4m3 block scales [n, k/16], fp32 global)."""
    n, k = nvfp4_shape(n, k)
    packed = torch.randint(0, 256, (n, k // 2), device=device, generator=gen,
                           dtype=torch.int32).to(torch.uint8)
    bscale = (torch.rand((n, k // 16), device=device, generator=gen) * 1.5 + 0.5).to(FP8)
    return packed, bscale, torch.tensor(0.01, device=device)


def nvfp4_dequantize(packed: torch.Tensor, bscale: torch.Tensor, gscale: torch.Tensor,
                     lut: torch.Tensor) -> torch.Tensor:
    """bf16 [n, k] from NVFP4: a 16-entry lookup of each E2M1 code (low nibble first), times
    its block's e4m3 scale and the global scale."""
    n = packed.shape[0]
    lo = lut[(packed & 0xF).int()]
    hi = lut[(packed >> 4).int()]
    vals = torch.stack([lo, hi], dim=-1).reshape(n, -1, 16)
    scale = (bscale.float() * gscale).to(torch.bfloat16).unsqueeze(-1)
    return (vals * scale).reshape(n, -1)


def e2m1_lut(device: torch.device) -> torch.Tensor:
    """The 16 E2M1 values as bf16, indexed by code."""
    return torch.tensor(E2M1_VALUES, dtype=torch.bfloat16, device=device)


def has_native_fp4(device: torch.device) -> bool:
    """True when the GPU has FP4 tensor cores (compute capability >= 10) and torch has the dtype."""
    return (device.type == "cuda" and hasattr(torch, "float4_e2m1fn_x2")
            and torch.cuda.get_device_capability(device)[0] >= 10)


def _nvfp4_native(n: int, k: int, device: torch.device, gen: torch.Generator) -> Linear:
    """FP4 x FP4 block-scaled _scaled_mm (Blackwell); activations pre-quantised (untimed)."""
    packed, bscale, gscale = nvfp4_quantize(randn((n, k), device, gen))
    w4 = packed.view(torch.float4_e2m1fn_x2)

    def blocked_scales(rows: int) -> torch.Tensor:
        """Scale storage in the swizzled layout's size: rows to 128, k/16 to 4."""
        r, c = -(-rows // 128) * 128, -(-(k // 16) // 4) * 4
        return torch.ones(r * c, device=device).to(FP8)

    sb = blocked_scales(n)

    def prepare(x):
        a, _, _ = nvfp4_quantize(x)
        return a.view(torch.float4_e2m1fn_x2), blocked_scales(x.shape[0])

    def run(a):
        return torch._scaled_mm(a[0], w4.t(), a[1], sb, out_dtype=torch.bfloat16)

    run(prepare(randn((16, k), device, gen)))  # raises if this torch/GPU lacks the path
    lut = e2m1_lut(device)
    return Linear("nvfp4", "torch._scaled_mm float4_e2m1fn_x2 block-16 e4m3 scales (native FP4)",
                  run, prepare, lambda: nvfp4_dequantize(packed, bscale, gscale, lut).float())


def _nvfp4(n: int, k: int, device: torch.device, gen: torch.Generator,
           compile_dequant: bool) -> Linear:
    """NVFP4: native FP4 GEMM where the GPU has it, else dequantise to bf16 then GEMM."""
    fallback = ""
    if has_native_fp4(device):
        try:
            return _nvfp4_native(n, k, device, gen)
        except (RuntimeError, TypeError) as exc:
            fallback = f" (native FP4 _scaled_mm failed: {str(exc).splitlines()[0][:120]})"
    packed, bscale, gscale = random_nvfp4(n, k, device, gen)
    lut = e2m1_lut(device)
    deq = nvfp4_dequantize
    how = "eager torch ops"
    if compile_dequant:
        deq, how = torch.compile(nvfp4_dequantize, dynamic=False), "torch.compile fused"
    dequant = lambda: deq(packed, bscale, gscale, lut)  # noqa: E731

    def run(x):
        return torch.matmul(x, dequant().t())

    kernel = (f"weight-only: dequantise E2M1 (16-entry lookup) x e4m3 block-16 scales to bf16 "
              f"({how}), then torch.matmul bf16; no FP4 tensor cores used{fallback}")
    return Linear("nvfp4", kernel, run, lambda x: x,
                  lambda: nvfp4_dequantize(packed, bscale, gscale, lut).float(), dequant)


def warm_compile(device: torch.device) -> None:
    """Compile the NVFP4 dequantisation once on a 16 x 16 weight, so that the one-time costs of
    torch.compile (its imports and caches) are paid here and each table compiles only its own
    shape. A failure here is left to the tables, which record it as their skip reason."""
    if has_native_fp4(device):
        return  # the native FP4 kernel compiles nothing
    packed, bscale, gscale = random_nvfp4(16, 16, device, generator(device, 0))
    try:
        torch.compile(nvfp4_dequantize, dynamic=False)(packed, bscale, gscale,
                                                       e2m1_lut(device))
    except Exception:  # noqa: BLE001 - e.g. no C compiler: the tables say so
        return


def check_linear(lin: Linear, k: int, device: torch.device, gen: torch.Generator) -> float:
    """Relative error ||out - ref|| / ||ref|| of the kernel against float32 on its own weight."""
    x = randn((8, k), device, gen)
    out = lin.run(lin.prepare(x)).float()
    seen = lin.act_seen(x) if lin.act_seen else x.float()
    ref = seen @ lin.reference().t()
    return float((out - ref).norm() / ref.norm().clamp(min=1e-30))
