"""What one sequence may hold of a replica's KV cache: the engine drops a request larger than
that, and the run's notes quote the same figure (watermark, delta-net state and draft tokens
counted), so following their advice gives a tier that drops nothing within its context."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli

from tiersim.engine import ReplicaScheduler, SchedulerLimits, SpecDecoding, longest_sequence
from tiersim.engine.spec_decode import SpecScheduler


@pytest.mark.parametrize("watermark, state, k", [(0.0, 0, 0), (0.05, 0, 0), (0.05, 2, 0),
                                                 (0.01, 0, 3)])
def test_fits_is_longest_sequence(watermark, state, k):
    """A request fits exactly when its prompt + output is at most ``longest_sequence``."""
    lim = SchedulerLimits(max_num_seqs=4, max_num_batched_tokens=64, block_size=16,
                          watermark=watermark, state_blocks=state)
    if k:
        sched = SpecScheduler(lim, 100, SpecDecoding(k=k, acceptance=(0.5,)))
    else:
        sched = ReplicaScheduler(lim, 100)
    room = longest_sequence(lim, 100, k)
    assert room == (100 - int(watermark * 100) - state) * 16 - k
    assert sched.fits(room - 10, 10)
    assert not sched.fits(room - 9, 10)


def _short_kv_run(tmp_path, capsys, max_model_len: int) -> str:
    """A one-tier run whose KV cache holds 2,064 blocks of 16 tokens (20 for the watermark),
    serving a 33,000-token request; its stderr, on one line."""
    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 0.0],
                  "input_tokens": [32_990, 100], "output_tokens": [10, 100]}).to_csv(
        trace, index=False)
    doc = tiny_doc(router={"policy": "uniform"}, trace={"path": str(trace)})
    doc["tiers"] = [{"name": "bf16", "precision": "bf16", "replicas": 1,
                     "cost_per_gpu_hour": 3.5, "gpu_memory_utilization": 0.44,
                     "scheduler": {"max_model_len": max_model_len}}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    return " ".join(err.split())


def test_short_kv_note_counts_the_watermark(tmp_path, capsys):
    """The cache's 33,024 tokens hold one sequence of 32,704 above the watermark: a
    max_model_len of 33,024 (what the note advised before) still drops a 33,000-token request,
    so the note fires and advises 32,704."""
    err = _short_kv_run(tmp_path, capsys, 33_024)
    assert ("note: tier bf16: one sequence may hold at most 32,704 tokens of its KV cache per "
            "replica (2,064 blocks of 16 tokens, less 20 blocks for the watermark), less than "
            "max_model_len 33,024: a longer request is dropped here (vLLM refuses to start "
            "when max_model_len exceeds the cache's 33,024 tokens); set "
            "scheduler.max_model_len to at most 32,704, or give the tier more memory") in err
    assert (f"note: {tmp_path / 's.yaml'}: 1 of 2 requests were dropped, never served (1 "
            "larger than one sequence may hold of a replica's KV cache (32,704 tokens on bf16), "
            "up to 33,000 tokens); they count as dropped in every figure") in err


def test_following_the_note_leaves_no_short_kv(tmp_path, capsys):
    """At the advised max_model_len the note is gone and the request is too long for the
    context, not for the cache."""
    err = _short_kv_run(tmp_path, capsys, 32_704)
    assert "one sequence may hold" not in err
    assert "1 longer (prompt + output) than their tier's context, up to 33,000 tokens" in err
