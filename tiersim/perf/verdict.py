"""Does a lower-precision tier save time, or only memory? One line per tier, against BF16.

On Hopper, 4-bit formats (W4A16, NVFP4, MXFP4) have no tensor cores of their own: their weights
are dequantised and multiplied in BF16, so they save bytes (memory, and time where a kernel is
memory-bound) but not FLOPs, and measured weight-only kernels (vLLM's Marlin MoE) can be slower
than BF16 at serving batch sizes. :func:`speed_verdict` puts numbers on that for one tier: its
weight bytes and its decode and prefill step times as ratios to a BF16 tier on the same GPUs,
from the same step model (profile tables where they exist, roofline elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiersim.perf.base import StepShape


@dataclass(frozen=True)
class Verdict:
    """A tier against BF16 on the same GPUs (ratios: tier / BF16; below 1 is a saving).

    weights: weight bytes per GPU. decode_small / decode_batch: a decode step at batch 1 and
    at ``batch`` sequences of ``context`` tokens. prefill: one ``prefill_tokens``-token chunk.
    line: the one-line statement shown to users.
    """

    weights: float
    decode_small: float
    decode_batch: float
    prefill: float
    batch: int
    line: str

    @property
    def saves_time(self) -> bool:
        """True when the tier's decode step at ``batch`` is at least 5% faster than BF16's."""
        return self.decode_batch < 0.95


def _steps(step, batch: int, context: int, prefill_tokens: int) -> tuple[float, float, float]:
    small = float(step.decode_times(1, np.array([float(context)]))[0])
    big = float(step.decode_times(batch, np.array([float(batch * context)]))[0])
    pre = step.step_time(StepShape(prefill_chunks=((prefill_tokens, 0),)))
    return small, big, pre


def speed_verdict(model, precision, gpu, profile=None, tp: int = 1, kv_dtype: str = "bf16",
                  dp: int = 1, ep: int = 1, batch: int = 64, context: int = 2000,
                  prefill_tokens: int = 8192) -> Verdict:
    """``precision`` against BF16 for ``model`` on ``tp x dp`` ``gpu`` s (see module docstring)."""
    from tiersim.hardware import get_model
    from tiersim.hardware.precisions import weight_formats
    from tiersim.perf import build_step_model
    from tiersim.perf.memory import weight_bytes

    arch = get_model(model)
    formats = weight_formats(arch, precision)
    args = {"tp": tp, "kv_dtype": kv_dtype, "profile": profile, "dp": dp, "ep": ep}
    tier = _steps(build_step_model(arch, formats, gpu, **args), batch, context, prefill_tokens)
    base = _steps(build_step_model(arch, "bf16", gpu, **args), batch, context, prefill_tokens)
    weights = weight_bytes(arch, formats, tp, dp, ep) / weight_bytes(arch, "bf16", tp, dp, ep)
    ratios = [t / b for t, b in zip(tier, base, strict=True)]
    saves_memory = weights < 0.9
    saves_time = ratios[1] < 0.95
    what = ("saves memory and time" if saves_memory and saves_time
            else "saves memory, not time" if saves_memory
            else "saves time" if saves_time else "saves neither memory nor time")
    line = (
        f"{formats.label} on {tp * dp}x {gpu}: weights {weights:.2f}x BF16; decode step "
        f"{ratios[1]:.2f}x BF16 at batch {batch} ({ratios[0]:.2f}x at batch 1); prefill "
        f"{ratios[2]:.2f}x: {what} at batch {batch}"
    )
    return Verdict(weights, ratios[0], ratios[1], ratios[2], batch, line)
