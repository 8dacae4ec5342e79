"""`tiersim trace inspect`'s prefix figure is the engine's own unbounded-cache bound: prefix
matches only, in whole blocks, at most the whole KV blocks before a prompt's last token, over
prompt tokens."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
from tiersim.perf.base import LinearStepModel
from tiersim.trace.stats import prefix_reuse


def test_blocks_shared_out_of_order_are_no_hit():
    """A tester's Mooncake lines [1,2], [3,2], [4,2], [5,2] (1,024 tokens each) share block 2
    but never a prefix: inspect said 37.5% where the run's bound is 0."""
    hashes = pd.Series([[1, 2], [3, 2], [4, 2], [5, 2]])
    assert prefix_reuse(hashes, np.full(4, 1024)) == 0.0
    assert prefix_reuse(pd.Series([[7, 7], [8, 8]]), np.full(2, 1024)) == 0.0


def test_a_prefix_hit_counts_whole_blocks_and_never_the_last_token():
    hashes = pd.Series([[1, 2], [1, 2, 3], [1]])
    # 0 + 1,024 (two blocks) + 288 (a 300-token prompt wholly cached computes its last KV
    # block: vLLM keeps 299 // 16 whole blocks of 16)
    assert prefix_reuse(hashes, np.array([1024, 1500, 300])) == (1024 + 288) / 2824


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 3000), st.integers(0, 3)), min_size=1, max_size=30))
def test_it_equals_the_bound_a_one_tier_run_reports(rows):
    """Requests far apart in time, each prompt built from one of four families' blocks: the
    figure equals the engine's ``prefix_hit_bound`` for the same trace on one tier."""
    prompts = np.array([p for p, _ in rows])
    hashes = [[100 * fam + j for j in range(-(-p // 512))] for p, fam in rows]
    n = len(rows)
    work = Workload(np.arange(n) * 100.0, prompts, np.full(n, 2), np.zeros(n, dtype=np.int64),
                    prefix_hashes=hashes)
    tier = TierSpec("t", 1, 10_000, LinearStepModel(),
                    SchedulerLimits(enable_prefix_caching=True))
    bound = simulate([tier], work).prefix_stats["t"].rates()[1]
    assert prefix_reuse(pd.Series(hashes), prompts) == bound
