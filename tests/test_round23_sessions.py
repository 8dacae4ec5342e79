"""Round 23 of hostile input, agentic sessions: each a failure found from outside and fixed,
with the exact line a user sees, or the number that was wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tiersim.workload import sessions
from tiersim.workload.sessions import HASH_BLOCK_TOKENS, SessionsConfig

# ------------------------------------------------------------------ logged prompts that shrink


def _logged(prompts: list[int], outputs: list[int] | None = None) -> pd.DataFrame:
    """One session's chain with logged (whole) prompts, hashed by tiersim."""
    n = len(prompts)
    df = pd.DataFrame({"request_id": range(n), "arrival_s": [0.0] * n, "input_tokens": prompts,
                       "output_tokens": outputs or [1] * n, "session_id": [0] * n,
                       "step": range(n)})
    return sessions.prepare_sessions(df, SessionsConfig(context="logged"),
                                     np.random.default_rng(0))


def _expected_owner(prompts, outputs, k: int, i: int) -> int:
    """Who owns full block ``i`` of step ``k`` of a chain: the earliest step from which every
    stream (prompt plus output) down to step k's parent holds the block; else step k."""
    end, owner = (i + 1) * HASH_BLOCK_TOKENS, k
    for j in range(k - 1, -1, -1):
        if prompts[j] + outputs[j] < end:
            break
        owner = j
    return owner


def test_a_step_after_a_shorter_logged_prompt_shares_no_block_it_lost():
    """Under context: logged a step whose prompt is shorter than its parent's (a compacted
    context) cuts the chain: its follower holds none of the blocks it dropped. The owner of a
    block was found by a binary search over the ancestors' stream ends, which are not sorted
    then: after three 2,048-token prompts and a 100-token one, step 4 was given step 0's four
    blocks (a full prefix-cache hit on context the session no longer had)."""
    table = _logged([2048, 2048, 2048, 100, 2048])
    hashes = table["prefix_hashes"]
    assert not set(hashes[4].tolist()) & set(hashes[0].tolist())


@pytest.mark.parametrize("seed", range(6))
def test_logged_prompt_blocks_belong_to_the_unbroken_chain_that_holds_them(seed):
    """Every full block of a logged chain with prompts that grow and shrink has the hash of its
    owner (:func:`_expected_owner`)."""
    rng = np.random.default_rng(seed)
    prompts = rng.integers(1, 6 * HASH_BLOCK_TOKENS, 14).tolist()
    outputs = rng.integers(1, 700, 14).tolist()
    hashes = _logged(prompts, outputs)["prefix_hashes"]
    for k, prompt in enumerate(prompts):
        for i in range(prompt // HASH_BLOCK_TOKENS):
            owner = _expected_owner(prompts, outputs, k, i)
            assert hashes[k][i] == sessions._hash(0, owner, i), (k, i, owner)


def test_a_logged_chain_hashes_each_block_once(monkeypatch):
    """Under context: logged each step's prompt was hashed again from its start, as the reuse
    of the parent's hashes was kept to context: accumulate: a 4,000-step logged chain growing
    one block a step made 8 million hashes (14 s of CPU; the 5e7-hash budget, 90 s). A step
    now reuses its parent's full blocks under both contexts (their owners agree), hashing only
    the blocks past them."""
    made = []
    real = sessions._hash
    monkeypatch.setattr(sessions, "_hash", lambda *parts: made.append(1) or real(*parts))
    n = 200
    table = _logged([HASH_BLOCK_TOKENS * (k + 1) for k in range(n)])
    assert len(made) == n
    assert [len(h) for h in table["prefix_hashes"]] == [k + 1 for k in range(n)]
