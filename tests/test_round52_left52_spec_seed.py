"""Round 52 (left52, item 3): speculative decoding's per-request seeds, one-to-one.

The draws of request key ``i`` on tier ``t`` were seeded with ``(seed x 1,000,003 + t) x
10,000,019 + i``: key ``10,000,019 + i`` on tier ``t`` drew what key ``i`` drew on tier
``t + 1``, and a negative key (a trace ``request_id`` is any int64) drew what its absolute
value did, ``random.Random`` seeding an integer by its absolute value. Keys in
``[0, 10,000,019)`` keep their integer seed (every figure pinned elsewhere is unchanged); the
others are seeded by a text of the three numbers.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

from tiersim.engine.spec_decode import KEY_SPAN, request_rng, tier_key


def _draws(rng: random.Random, n: int = 8) -> list[float]:
    return [rng.random() for _ in range(n)]


def test_keys_in_range_draw_what_they_drew_before():
    t = tier_key("bf16")
    for seed, key in ((0, 0), (0, 5), (3, KEY_SPAN - 1), (2**63 - 1, 123)):
        old = random.Random((seed * 1_000_003 + t) * 10_000_019 + key)
        assert _draws(request_rng(seed, t, key)) == _draws(old)


def test_a_key_past_the_span_no_longer_draws_another_tiers_request():
    t = tier_key("fp8")
    old_a = random.Random((0 * 1_000_003 + t) * 10_000_019 + KEY_SPAN)
    old_b = random.Random((0 * 1_000_003 + t + 1) * 10_000_019 + 0)
    assert _draws(old_a) == _draws(old_b)  # the collision the old mixing had
    assert _draws(request_rng(0, t, KEY_SPAN)) != _draws(request_rng(0, t + 1, 0))


def test_a_negative_key_no_longer_draws_its_absolute_value():
    assert _draws(random.Random(-12345)) == _draws(random.Random(12345))  # Python's rule
    seed, t = 0, 0
    base = (seed * 1_000_003 + t) * KEY_SPAN
    assert _draws(request_rng(seed, t, -(2 * base + 7))) != _draws(request_rng(seed, t, 7))


def test_distinct_keys_distinct_streams_around_the_span():
    t = tier_key("bf16")
    keys = [-2, -1, 0, 1, KEY_SPAN - 1, KEY_SPAN, KEY_SPAN + 1, 2**62, 2**63 - 1, -(2**63)]
    first = {tuple(_draws(request_rng(0, tier, k), 4)) for tier in (t, t + 1) for k in keys}
    assert len(first) == 2 * len(keys)


def test_seeds_past_the_span_are_the_same_in_every_process():
    code = ("from tiersim.engine.spec_decode import request_rng;"
            "print(request_rng(7, 99, 2**40).random(), request_rng(7, 99, -3).random())")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    seen = {subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONHASHSEED": h},
                           capture_output=True, text=True, check=True).stdout
            for h in ("1", "2")}
    assert len(seen) == 1
    here = f"{request_rng(7, 99, 2**40).random()} {request_rng(7, 99, -3).random()}\n"
    assert seen == {here}
