"""Round 23, serving techniques and their accounting: cascades, the response cache, prefix
caching and speculative decoding, and how they feed the run's figures."""

from __future__ import annotations

import json

import pytest
from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli


def _edited(run, folder, doc: dict):
    """A copy of ``run`` at ``folder`` whose summary.json holds ``doc``."""
    copy_folder(run, folder)
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize(("edit", "problem"), [
    # a cascade's share sent on by its first tier: was drawn as "500 %"
    (lambda d: d["router"].__setitem__("escalation_refused_rate", 5.0),
     "'router.escalation_refused_rate' must be a fraction between 0 and 1, got 5.0"),
    # fractions inside a map or a pair: were drawn as 700 % and 300 % - 500 %
    (lambda d: d["router"]["first_tier_shares"].__setitem__("bf16", 7.0),
     "'router.first_tier_shares.bf16' must be a fraction between 0 and 1, got 7.0"),
    (lambda d: d["router"].__setitem__("accuracy_ci95", [3.0, 5.0]),
     "'router.accuracy_ci95[0]' must be a fraction between 0 and 1, got 3.0"),
    (lambda d: d["tiers"]["bf16"].__setitem__("prefix_hit_by_level", {"gpu": -0.5}),
     "'tiers.bf16.prefix_hit_by_level.gpu' must be a fraction between 0 and 1, got -0.5"),
])
def test_a_fraction_no_run_writes_is_refused_wherever_it_sits(hand_edited_run, tmp_path, capsys,
                                                             edit, problem):
    """The summary reader range-checked top-level fractions only: a share or an interval bound
    nested in a map or a pair, and the cascade's escalation_refused_rate, passed at any value."""
    doc = json.loads((hand_edited_run / "summary.json").read_text())
    edit(doc)
    folder = _edited(hand_edited_run, tmp_path / "r", doc)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")


def _cascade_behind_a_cache():
    """The tiny scenario as a noisy cascade behind a top-1 response cache over near-unique
    prompts: a handful of hits, so the run with the cache and without it should route the
    other requests alike."""
    import yaml
    from conftest import TINY

    from tiersim.scenario import scenario_from_dict

    doc = yaml.safe_load(TINY.read_text())
    doc["router"] = {"policy": "cascade",
                     "cascade": {"threshold": 0.5, "signal_noise": 0.4},
                     "response_cache": {"size": 1,
                                        "popularity": {"distinct": 300, "exponent": 0}}}
    doc["cost_model"] = "attributed"
    return scenario_from_dict(doc, str(TINY))


def test_the_run_without_the_response_cache_routes_the_served_requests_alike(monkeypatch):
    """The comparison run (every request, no cache) routed the whole table afresh: a cascade's
    noise, a static split's draws fell on other requests, so 6 hits of 2,867 in
    scenarios/cascade.yaml flipped 483 escalations and the cache 'saved' -0.0049 USD."""
    import numpy as np

    from tiersim import fleet as fleet_mod
    from tiersim.runner import run_scenario

    seen = []
    real = fleet_mod.simulate

    def spy(specs, df, assignment, **options):
        seen.append((df["request_id"].to_numpy().copy(), assignment))
        return real(specs, df, assignment, **options)

    monkeypatch.setattr(fleet_mod, "simulate", spy)
    run = run_scenario(_cascade_behind_a_cache())
    (ids, served), (all_ids, without) = seen
    assert 0 < run.response_cache.hits < len(all_ids)
    rows = np.searchsorted(all_ids, ids)
    assert (all_ids[rows] == ids).all()
    np.testing.assert_array_equal(without.tier[rows], served.tier)
    np.testing.assert_array_equal(without.escalate_to[rows], served.escalate_to)


def test_speculative_draws_follow_the_request_not_its_row():
    """A speculative tier drew each request's accepted tokens from its row number: a request
    the response cache answered (or a window) moved every later request onto another's draws,
    so the run without the cache gave 283 of spec_decode.yaml's 453 unchanged requests another
    TPOT (by 2.5% at the median) beside a 3-hit cache."""
    import numpy as np
    import pandas as pd
    from conftest import REPO

    from tiersim.fleet import build_fleet, simulate
    from tiersim.routing.types import Assignment
    from tiersim.scenario import load_scenario

    fleet = build_fleet(load_scenario(REPO / "tiersim" / "scenarios" / "spec_decode.yaml"))
    n = 6  # one request at a time: 100 s apart, none shares a step with another
    df = pd.DataFrame({"request_id": np.arange(n, dtype=np.int64),
                       "arrival_s": np.arange(n) * 100.0,
                       "input_tokens": np.full(n, 500, np.int32),
                       "output_tokens": np.full(n, 300, np.int32)})

    def finish(table):
        k = len(table)
        a = Assignment(tier=np.zeros(k, np.int64), escalate_to=np.full(k, -1, np.int64))
        r = simulate(fleet.specs(), table.reset_index(drop=True), a)
        return dict(zip(table["request_id"], np.asarray(r.finish_s) - table["arrival_s"]))

    whole, later = finish(df), finish(df.iloc[1:])
    assert all(later[i] == whole[i] for i in range(1, n))


def test_a_speculative_replica_forgets_the_draws_of_finished_requests():
    """Each request's generator (about 3 kB) was kept for the whole run: a replica that served
    a million requests held 3 GB of them."""
    from tiersim.engine import SchedulerLimits, SpecDecoding
    from tiersim.engine.request import Req
    from tiersim.engine.spec_decode import SpecScheduler

    sd = SpecDecoding(3, (0.7,), seed=1)
    sched = SpecScheduler(SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=512), 10**5,
                          sd)
    for i in range(200):
        assert sched.add(Req(i, prompt=16, output=5 + i % 7, arrival=0.0))
    while not sched.idle():
        sched.complete(sched.schedule(0.0), 1, 0.0, 0.0)
    assert sched.spec_tokens > 0
    assert len(sched._rng) == 0


def test_a_top_n_cache_over_a_million_distinct_prompts_is_chosen_in_seconds():
    """The top-n keys were sorted with two pandas look-ups per key: 20 s for a million-row
    trace of distinct prompt hashes, paid again by every sweep point. The choice itself is
    unchanged: most frequent first, ties by first seen, no row without a key."""
    import time

    import numpy as np

    from tiersim.response_cache import ResponseCacheConfig, hits

    key = np.array([5, 3, 3, None, 9, 5, 9, 7, "5", "5"], dtype=object)
    got = hits(key, ResponseCacheConfig(size=3))
    # counts: 5 x2 (row 0), 3 x2 (row 1), 9 x2 (row 4), "5" x2 (row 8), 7 x1
    assert got.tolist() == [True, True, True, False, True, True, True, False, False, False]
    many = np.random.default_rng(0).integers(0, 2**40, 1_000_000)
    many[::1000] = 17  # one prompt a thousand times
    start = time.perf_counter()
    got = hits(many, ResponseCacheConfig(size=20))
    assert time.perf_counter() - start < 6.0
    assert got[::1000].all() and got.sum() == 1000 + 19


def test_a_draft_model_prefills_the_prompt_too():
    """A separate draft model needs the prompt in its own KV cache, so it runs over every
    prefill chunk (vLLM's draft proposer does); the step time counted the target's prefill
    alone, so a draft model's TTFT and prefill-heavy steps were too short by the draft's share
    (about 11% for an 8B draft of a 70B target)."""
    import pytest

    from tiersim.engine import SpecDecoding
    from tiersim.engine.spec_decode import SpecStepModel
    from tiersim.perf.base import LinearStepModel, StepShape

    target = LinearStepModel()
    draft = LinearStepModel(overhead=0.001, per_prefill_token=2e-6, per_decode_seq=1e-5)
    k = 3
    model = SpecStepModel(target, SpecDecoding(k, (0.7,), draft_model=draft))
    chunks = ((1000, 0), (200, 300))
    alone = StepShape(chunks, 0, 0)
    assert model.step_time(alone) == pytest.approx(
        target.step_time(alone) + draft.step_time(alone))
    # with decoders: the draft's first proposal step carries the chunks, k - 1 more do not
    mixed = StepShape(chunks, 4, 4000)
    verify = StepShape(chunks, 4 * (k + 1), 4000)
    assert model.step_time(mixed) == pytest.approx(
        target.step_time(verify) + draft.step_time(mixed)
        + (k - 1) * float(draft.decode_times(4, [4000])[0]))
    # decode-only steps are unchanged: the verify plus k draft steps
    assert model.step_time(StepShape((), 4, 4000)) == pytest.approx(
        float(target.decode_times(4 * (k + 1), [4000])[0])
        + k * float(draft.decode_times(4, [4000])[0]))
