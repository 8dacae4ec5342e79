"""review55b: :func:`tiersim.engine.sequences_held` counts a sequence at its last decode step,
and a speculative tier's last step verifies ``k + 1`` new tokens: vLLM's sliding-window
manager (and the engine's :meth:`~tiersim.engine.spec_decode.SpecScheduler._make_room`)
then holds ``ceil((k + 1 + window - 1) / block_size) + 1`` pages in each window group, not
the ``ceil(window / block_size) + 1`` of a one-token step. The figure the price's KV cap and
the run's KV-thrashing note read was one page a window group a sequence short on a windowed
model decoding speculatively without a draft model (gpt-oss-20b with ``speculative: {k: 3}``:
10,862 sequences of 300 tokens where the engine holds 10,487).

By hand: block_size 16, window 128, one full group and one window group, 300 tokens and k = 3
draft slots: full group ceil(303 / 16) = 19 pages; window group min(19, ceil(131 / 16) + 1)
= 10; 29 pages a sequence, so 280 pages hold 9 (at a one-token step's 28 pages, 10)."""

from __future__ import annotations

from tiersim.engine import SchedulerLimits, sequences_held


def test_a_windowed_sequence_with_draft_slots_is_counted_at_its_verify_step():
    limits = SchedulerLimits(window=128, full_groups=1, window_groups=1)
    assert sequences_held(limits, 280, 300, 3) == 9
    # round 56: 293 blocks leave 291 above the 1 % watermark (290 left 288: 9)
    assert sequences_held(limits, 293, 300, 3) == 10


def test_without_draft_slots_or_windows_the_count_is_as_before():
    windowed = SchedulerLimits(window=128, full_groups=1, window_groups=1)
    # 300 tokens: 19 full pages + min(19, ceil(128 / 16) + 1 = 9) window pages = 28
    # round 56: 283 blocks leave 281 above the 1 % watermark (280 left 278: 9)
    assert sequences_held(windowed, 283, 300) == 10
    plain = SchedulerLimits()
    assert sequences_held(plain, 280, 300, 3) == 280 // 19  # ceil(303 / 16) = 19 blocks
