"""Median latency of a callable: CUDA events with an L2 flush on a GPU, perf_counter on a CPU.

Method (both devices): ``warmup`` untimed calls (module load, autotuning, allocator), one timed
call to estimate the cost, then ``repeats`` timed calls where ``repeats`` is chosen so that about
``target_s`` of work is timed, clamped to [min_repeats, max_repeats]; the result is the median.
On CUDA each repeat is preceded by writing ``flush_bytes`` (256 MB by default, over four times the
H200's 60 MB L2) so that weights come from HBM as in a real step, and each repeat is bracketed by
its own pair of events; all events are read after one final synchronise, so host-side gaps between
repeats are not timed (the flush keeps the GPU busy while the host enqueues the next call).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


class Timer:
    """Times callables on one device; see the module docstring for the method."""

    def __init__(self, device: torch.device, warmup: int = 3, min_repeats: int = 5,
                 max_repeats: int = 30, target_s: float = 0.05, flush_bytes: int = 256 << 20):
        self.device = torch.device(device)
        self.warmup, self.min_repeats, self.max_repeats = warmup, min_repeats, max_repeats
        self.target_s = target_s
        self.deadline = float("inf")  # time.monotonic() of the --budget-s end (set by the run)
        self.is_cuda = self.device.type == "cuda"
        self._flush_buf = None
        if self.is_cuda and flush_bytes > 0:
            self._flush_buf = torch.empty(flush_bytes // 4, dtype=torch.int32, device=self.device)

    def _flush(self) -> None:
        """Evict the L2 cache by writing a buffer larger than it (no-op without a buffer)."""
        if self._flush_buf is not None:
            self._flush_buf.fill_(1)

    def _repeats(self, estimate_s: float) -> int:
        """Repeats that time about ``target_s`` of work, within the configured bounds."""
        if estimate_s <= 0:
            return self.max_repeats
        want = int(self.target_s / estimate_s)
        return max(self.min_repeats, min(self.max_repeats, want))

    def _left_s(self) -> float:
        """Seconds until ``deadline`` (time.monotonic; infinite when there is none)."""
        return self.deadline - time.monotonic()

    def _fitting(self, estimate_s: float) -> int:
        """Repeats for an estimate, fewer (down to 1) when the deadline would pass first, so a
        point started just before the time budget ends costs about three calls, not nine."""
        repeats = self._repeats(estimate_s)
        left = self._left_s()
        if left == float("inf"):
            return repeats
        return max(1, min(repeats, int(left / max(estimate_s, 1e-9))))

    def measure(self, fn: Callable[[], object]) -> float:
        """Median seconds of one call of ``fn`` (which must enqueue its own work)."""
        for i in range(self.warmup):
            fn()
            if i == 0 and self._left_s() <= 0:
                break  # the time budget is spent: one warm-up call is enough
        if self.is_cuda:
            torch.cuda.synchronize(self.device)
            first = self._cuda_times(fn, 1)[0]
            return statistics.median(self._cuda_times(fn, self._fitting(first)))
        first = self._cpu_times(fn, 1)[0]
        return statistics.median(self._cpu_times(fn, self._fitting(first)))

    def _cuda_times(self, fn: Callable[[], object], repeats: int) -> list[float]:
        """Seconds of each of ``repeats`` calls, by CUDA events, each after an L2 flush."""
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(repeats)]
        for start, end in pairs:
            self._flush()
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize(self.device)
        return [start.elapsed_time(end) / 1e3 for start, end in pairs]

    def _cpu_times(self, fn: Callable[[], object], repeats: int) -> list[float]:
        """Seconds of each of ``repeats`` calls by the host clock."""
        out = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
        return out


def synchronize(device: torch.device) -> None:
    """Wait for all queued work on ``device`` (no-op on CPU)."""
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
