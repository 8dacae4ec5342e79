"""Round 57 (speed57): a mixed step of one prefill chunk is summed without the mixed-step memo.

The memo (``AssembledStepModel._mixed_cache``, by chunks and decoder count) cleared itself
every 4,096 keys on the default job's sizing runs, whose mixed steps hold one chunk 80 % of
the time beside decode batches of every size (192,675 distinct keys in 408,211 steps on a
heavy-load run of the default scenario). A one-chunk step now reads its linear work and its
chunk's attention (remembered by ``(new, cached)``) directly, and only steps of several
chunks use the memo. Every step time must be what the memoised sum gave, to the bit.
"""

from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.base import StepShape
from tiersim.perf.profile import load_profile


@functools.cache
def _model(name: str, precision: str, profiled: bool):
    """A step model of ``name`` at ``precision`` on H200: the shipped profile's, or the
    roofline's (``profiled`` False)."""
    profile = (
        load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json")) if profiled else None
    )
    return build_step_model(name, precision, "H200", profile=profile)


MODELS = [
    ("Qwen3-Coder-30B-A3B", "fp8", True),
    ("Qwen3-Coder-30B-A3B", "bf16", True),
    ("Llama-3.1-8B", "bf16", True),
    ("Llama-3.1-70B", "bf16", False),
]


def _memoised(model, shape: StepShape) -> float:
    """``step_time`` as it read before round 57: the prefill part by :meth:`_mixed_prefill`
    (what the memo held), then the decode attention, ``lm_head`` and overhead."""
    seqs, chunks = shape.decode_seqs, shape.prefill_chunks
    t = model._mixed_prefill(chunks, seqs)
    if seqs > 0:
        t += model._attn_decode_one(seqs, shape.decode_context / seqs)
        if model._hybrid:
            t += model._gdn_decode(seqs)
    t += model._lm_head_time(seqs + len(chunks))
    return t + model.ops.overhead_s


shapes = st.builds(
    lambda chunks, seqs, per_seq: StepShape(tuple(chunks), seqs, seqs * per_seq),
    st.lists(st.tuples(st.integers(1, 8192), st.integers(0, 60_000)), min_size=1, max_size=4),
    st.integers(0, 256),
    st.integers(1, 40_000),
)


@settings(max_examples=150, deadline=None)
@given(which=st.sampled_from(MODELS), shape=shapes)
def test_a_mixed_step_reads_what_the_memoised_sum_gave(which, shape):
    """One chunk or several, with or without decoders, profiled or roofline, dense or MoE:
    the same float, asked twice (the second read from the memos)."""
    model = _model(*which)
    expected = _memoised(model, shape)
    assert model.step_time(shape) == expected
    assert model.step_time(shape) == expected


def test_one_chunk_steps_leave_the_mixed_memo_alone():
    """Steps of one chunk do not enter the mixed-step memo (they filled and cleared it);
    a step of two chunks does."""
    model = _model("Llama-3.1-8B", "bf16", True)
    model._mixed_cache.clear()
    for seqs in range(1, 50):
        model.step_time(StepShape(((1000 + seqs, 0),), seqs, seqs * 1500))
    assert model._mixed_cache == {}
    model.step_time(StepShape(((1000, 0), (500, 0)), 3, 3 * 1500))
    assert len(model._mixed_cache) == 1


def test_a_run_leaves_no_decode_table_filled(monkeypatch):
    """Once ``simulate`` returns, its decode tables are empty: the run's fleet and environment
    refer to each other and wait for the cyclic collector, and the default job's 57 runs
    one after another kept up to 19,000 blocks (53 MiB) alive; the result is the same."""
    from test_engine import make_workload
    from test_engine_speed_paths import tier

    from tiersim.engine import simulate
    from tiersim.engine.decode_table import DecodeTable

    made = []
    plain = DecodeTable.__init__

    def init(self, model):
        plain(self, model)
        made.append(self)

    monkeypatch.setattr(DecodeTable, "__init__", init)
    work = make_workload(200, rate=20.0)
    first = simulate([tier(replicas=2)], work)
    assert made and all(not table._blocks for table in made)
    again = simulate([tier(replicas=2)], work)
    assert again.finish_s.tolist() == first.finish_s.tolist()
