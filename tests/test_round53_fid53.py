"""The fidelity benchmark's ``--aiperf-client``: NVIDIA's published benchmark client of 2025-26
(``aiperf profile --request-count 10C --warmup-request-count 2C --num-dataset-entries 12C``, as
aiperf 0.1 runs it) replayed as a setting of the load generator, never fitted: a drained warm-up
phase, a measured phase whose clients start together again, prompts drawn from 12 per client."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402

from tiersim.engine import SchedulerLimits, TierSpec, simulate  # noqa: E402
from tiersim.perf.base import LinearStepModel  # noqa: E402

MODEL = LinearStepModel(
    overhead=0.005, per_prefill_token=2e-5, per_decode_seq=1e-4, per_context_token=1e-8
)


def tier() -> TierSpec:
    """One replica on the linear test model, room for every prompt in its KV cache."""
    return TierSpec("t", 1, 10**5, MODEL, SchedulerLimits(max_num_seqs=256,
                                                          enable_prefix_caching=True))


def proto_of(*argv: str) -> fs.Protocol:
    return fs.protocol_from_args(fs.build_parser().parse_args(argv))


def test_the_flag_gives_nvidias_published_client():
    proto = proto_of("--aiperf-client")
    assert (proto.per_client, proto.warmup, proto.spread) == (12, 2, 0.0)
    assert (proto.pool_per_client, proto.drained_warmup) == (12, True)
    assert proto.rounds() == slice(2, 12)  # the 10 x clients measured requests
    assert proto.pool_size(16) == 192  # --num-dataset-entries 12 x 16
    # aiperf 0.3's shuffled entries: 12C entries for 12C requests, each sent once
    fresh = proto_of("--aiperf-client", "--prompt-pool", "0")
    assert fresh.pool_size(16) == 0 and fresh.prompts(192, 16) is None
    assert proto_of("--aiperf-client", "--prompt-pool", "100").pool_size(16) == 100


def test_a_per_client_pool_draws_within_its_clients_entries():
    proto = fs.Protocol(per_client=12, warmup=2, pool_per_client=12, seed=5)
    drawn = proto.prompts(12 * 4, concurrency=4)
    assert drawn.min() >= 0 and drawn.max() < 48
    assert np.array_equal(drawn, proto.prompts(48, 4))
    with pytest.raises(ValueError, match="pool_per_client must be >= 0"):
        fs.Protocol(pool_per_client=-1)


def test_the_campaign_rule_leaves_a_per_client_pool_alone():
    proto = fs.Protocol(pool_per_client=12)
    assert fs.row_protocol(proto, {"c": "x"}, {"x": 1.5}) is proto


def test_the_measured_phase_starts_every_client_together_after_the_warmup_drains():
    proto = fs.Protocol(per_client=5, warmup=2, pool_per_client=3, drained_warmup=True)
    t = fs.warmup_drained_at(tier(), 400, 20, 4, proto)
    work = fs.closed_loop_workload(400, 20, 4, proto, 0.0, t)
    first = slice(8, 12)  # round 2: the first measured one
    assert list(work.follows[first]) == [-1] * 4 and list(work.arrival_s[first]) == [t] * 4
    assert list(work.follows[12:]) == list(range(8, 16))  # then back to back again
    res = simulate([tier()], work, sample_every=1e9)
    assert res.finish_s[:8].max() == pytest.approx(t)  # the warm-up ran as it did alone
    assert res.first_token_s[first].min() > t
    assert fs.warmup_drained_at(tier(), 400, 20, 4, fs.Protocol(per_client=5, warmup=2)) is None


def test_replay_means_the_measured_phase_alone():
    proto = fs.Protocol(per_client=4, warmup=1, pool_per_client=2, drained_warmup=True)
    out = fs.replay(tier(), 300, 10, 3, proto)
    t = fs.warmup_drained_at(tier(), 300, 10, 3, proto)
    work = fs.closed_loop_workload(300, 10, 3, proto, 0.0, t)
    res = simulate([tier()], work, sample_every=1e9)
    measured = slice(3, 12)
    ttft = np.mean(res.first_token_s[measured] - res.arrival_s[measured]) * 1e3
    assert out["sim_ttft_ms"] == pytest.approx(ttft)


@pytest.mark.parametrize("extra", [["--per-client", "5"], ["--length-spread", "0.1"],
                                   ["--warmup-rounds", "1"], ["--steady-state"], ["--fit"]])
def test_the_client_is_not_combined_with_another_load_generator(extra, capsys):
    with pytest.raises(SystemExit) as exc:
        fs.main(["--aiperf-client", *extra])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"drop {extra[0]}" in err


def test_the_report_names_the_client():
    proto = proto_of("--aiperf-client")
    assert fs.aiperf_client_text(proto) == (
        "NVIDIA's aiperf client (--aiperf-client): 2 warm-up requests per client, drained, then "
        "10 measured, all clients starting together each time, exact lengths, prompts drawn at "
        "random from 12 per client")
