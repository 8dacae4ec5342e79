"""Round 30 (speed): the exact speed-ups give the numbers the code before them gave."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.base import StepShape
from tiersim.perf.profile import load_profile


@functools.cache
def _profiled(name: str):
    """The shipped H200 profile's BF16 step model of ``name``."""
    profile = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
    return build_step_model(name, "bf16", "H200", profile=profile)


def _mixed_shapes(seed: int, count: int) -> list[StepShape]:
    """Mixed steps: one to three prefill chunks (some cached), with and without decoders; the
    first half's chunks and decoder counts come back later with other decode contexts."""
    rng = np.random.default_rng(seed)
    shapes = []
    for _ in range(count):
        chunks = tuple((int(rng.integers(1, 4096)), int(rng.choice([0, rng.integers(1, 20_000)])))
                       for _ in range(int(rng.integers(1, 4))))
        seqs = int(rng.integers(0, 64))
        shapes.append(StepShape(chunks, seqs, seqs * int(rng.integers(1, 30_000))))
    again = [StepShape(s.prefill_chunks, s.decode_seqs, s.decode_seqs * 777 + 3)
             for s in shapes[: count // 2]]
    return shapes + again


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Qwen3-Coder-30B-A3B"])
def test_mixed_step_time_is_the_same_remembered(name):
    """A mixed step's time read with its prefill part remembered equals, bit for bit, the one
    computed afresh (the memo emptied before every step), for repeated chunks and decoder
    counts with new decode contexts, several chunks (a shared launch) and MoE."""
    model = _profiled(name)
    shapes = _mixed_shapes(7, 60)
    warm = [model.step_time(s) for s in shapes]
    fresh = []
    for s in shapes:
        model._mixed_cache.clear()
        fresh.append(model.step_time(s))
    assert warm == fresh


def test_mixed_step_reads_prefill_attention_once(monkeypatch):
    """Two mixed steps with the same chunks and decoders but other decode contexts (a
    fixed-length workload's every prefill) read the chunks' attention once."""
    model = _profiled("Llama-3.1-8B")
    calls = []
    plain = model._attn_prefill
    monkeypatch.setattr(model, "_attn_prefill", lambda new, cached: calls.append(new) or plain(
        new, cached))
    model.step_time(StepShape(((1021, 0),), 5, 5 * 1500))
    model.step_time(StepShape(((1021, 0),), 5, 5 * 1501))
    assert calls == [1021]
