"""Decode iteration times tabulated by batch size and summed context, for decode stretches.

A decode stretch of ``k`` iterations with ``n`` decoders whose contexts sum to ``c0`` lasts
``dt(n, c0), dt(n, c0 + n), ..., dt(n, c0 + (k-1) n)`` seconds, where ``dt`` is the step model's
:meth:`~tiersim.perf.base.StepTimeModel.decode_times`. Its end times are the running sum from
the stretch's start, added left to right: ``((start + dt_0) + dt_1) + ...``.

NOTE (speed): a stretch used to evaluate ``decode_times`` on its own small array (about ten
numpy calls, ~10 us, whatever ``k``). Here ``dt(n, C)`` is evaluated once per block of
:data:`BLOCK` consecutive summed contexts ``C`` at that ``n``, by the same ``decode_times`` on
the whole block, and kept as a packed ``array('d')``; a stretch then slices the block (every
``n``-th entry) and sums it with :func:`itertools.accumulate` (Python float additions, the same
IEEE operations in the same order as numpy's ``cumsum``). This is exact, not an approximation,
because every shipped step model's ``decode_times`` is elementwise: entry ``i`` of the result
depends only on ``n`` and entry ``i`` of the contexts, never on the other entries or on the array's
length (numpy's ufuncs and ``np.interp`` work element by element, and the curve/general-path
choice gives equal numbers where both apply). ``tests/test_engine_speed_paths.py`` holds every
step model kind to that, and the engine's stretches to the direct evaluation, bit for bit.
"""

from __future__ import annotations

from array import array
from itertools import accumulate

import numpy as np

from tiersim.perf.base import StepTimeModel

#: Summed contexts per block (a power of two: a block index is ``C >> BLOCK_BITS``).
BLOCK_BITS = 10
BLOCK = 1 << BLOCK_BITS
#: Blocks kept per table before it is cleared wholesale (8 KiB each: 32 MiB at most; the
#: 17-replica engine_speed fleet fills about 4,100 over its two step models, the million
#: benchmark 33).
MAX_BLOCKS = 4096


class DecodeTable:
    """``dt(n, C)`` of one step model, filled lazily a block at a time (see the module)."""

    def __init__(self, model: StepTimeModel):
        self.model = model
        self._blocks: dict[tuple[int, int], array] = {}

    def times(self, n: int, c0: int, k: int) -> array:
        """The ``k`` iteration times of a stretch of ``n`` decoders from summed context ``c0``."""
        b = c0 >> BLOCK_BITS
        off = c0 - (b << BLOCK_BITS)
        last = off + (k - 1) * n
        if last < BLOCK:  # the common case: the whole stretch inside one block
            return self._block(n, b)[off:last + 1:n]
        out = array("d")
        c, left = c0, k
        while left:
            b = c >> BLOCK_BITS
            off = c - (b << BLOCK_BITS)
            m = min(left, (BLOCK - 1 - off) // n + 1)
            out += self._block(n, b)[off:off + (m - 1) * n + 1:n]
            c += m * n
            left -= m
        return out

    def ends(self, n: int, c0: int, k: int, start: float) -> list[float]:
        """End times of the stretch's ``k`` iterations, starting at ``start``.

        NOTE (speed): once per stretch; the common case of :meth:`times` (one block, already
        filled) is written out here, the same slice of the same block.
        """
        b = c0 >> BLOCK_BITS
        off = c0 - (b << BLOCK_BITS)
        last = off + (k - 1) * n
        blk = self._blocks.get((n, b)) if last < BLOCK else None
        dts = blk[off:last + 1:n] if blk is not None else self.times(n, c0, k)
        dts[0] = start + dts[0]
        return list(accumulate(dts))

    def clear(self) -> None:
        """Forget every block (filled again, the same numbers, if asked again)."""
        self._blocks.clear()

    def _block(self, n: int, b: int) -> array:
        blk = self._blocks.get((n, b))
        if blk is None:
            if len(self._blocks) >= MAX_BLOCKS:
                self._blocks.clear()
            ctx = np.arange(b << BLOCK_BITS, (b + 1) << BLOCK_BITS, dtype=np.float64)
            values = np.asarray(self.model.decode_times(n, ctx), dtype=np.float64)
            blk = self._blocks[(n, b)] = array("d", values.tobytes())
        return blk


class DirectTimes:
    """The same end times evaluated on each stretch's own contexts, as the engine did before
    the table (the reference the table is tested against: ``simulate(fast_paths=False)``)."""

    def __init__(self, model: StepTimeModel):
        self.model = model

    def ends(self, n: int, c0: int, k: int, start: float) -> list[float]:
        """End times of the stretch's ``k`` iterations, starting at ``start``."""
        ctx = np.arange(c0, c0 + n * k, n, dtype=np.float64)
        dts = self.model.decode_times(n, ctx)
        return np.cumsum(np.concatenate(([start], dts)))[1:].tolist()
