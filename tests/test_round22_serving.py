"""Round 22 of hostile input on the serving techniques (disaggregation, speculative decoding,
prefix caching, sessions, replicas, cascades): each a failure found from outside and fixed,
with the exact line a user sees or the number that was wrong."""

from __future__ import annotations

from pathlib import Path

from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"


def small_disagg(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The bundled disagg scenario cut to 20 s and two replicas (one split), with ``edits``."""
    text = (SCENARIOS / "disagg.yaml").read_text()
    for old, new in (("window: [0, 300]", "window: [0, 20]"), ("replicas: 5", "replicas: 2"),
                     ("prefill_replicas: 4", "prefill_replicas: 1"), *edits):
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "disagg.yaml"
    path.write_text(text)
    return path


def line_of(path: Path, text: str) -> int:
    """The 1-based number of the first line of ``path`` holding ``text`` (so a comment added to
    the bundled scenario does not move the line an error names)."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_disagg_refuses_a_router_key_no_policy_reads(tmp_path, capsys):
    """``tiersim run`` refused ``fractions`` under ``policy: uniform``; ``tiersim disagg``
    simulated every split without it and said nothing."""
    scenario = small_disagg(tmp_path, ("router: {policy: uniform}",
                                       "router: {policy: uniform, fractions: [1]}"))
    line = error_line(*run_cli(capsys, "disagg", scenario))
    number = line_of(scenario, "fractions: [1]")
    assert line == (f"Error: {scenario}: line {number}: router.fractions: policy uniform does not "
                    "read it (only static_split does); remove it, or set policy: static_split")
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == line


def test_disagg_refuses_a_session_key_its_source_does_not_read(tmp_path, capsys):
    """The same for ``workload.sessions``: ``generate: {...}`` under ``source: off``."""
    scenario = small_disagg(tmp_path, ("router: {policy: uniform}",
                                       "router: {policy: uniform}\nworkload:\n  sessions: "
                                       "{source: 'off', generate: {tasks: 3}}"))
    line = error_line(*run_cli(capsys, "disagg", scenario))
    number = line_of(scenario, "generate: {tasks: 3}")
    assert line == (f"Error: {scenario}: line {number}: workload.sessions.generate: source "
                    "off does not read it (only generate does); remove it, or set source: generate")


def tiny_with_prefix_caching(tmp_path: Path, trace: str | None = None) -> Path:
    """The bundled tiny scenario with prefix caching on its bf16 tier (its Azure trace names
    no prompt block), or on ``trace``."""
    text = (SCENARIOS / "tiny.yaml").read_text().replace(
        "    precision: bf16\n    replicas: 1\n",
        "    precision: bf16\n    replicas: 1\n    scheduler: {enable_prefix_caching: true}\n")
    if trace is not None:
        text = text.replace("path: azure2023_code.parquet\n  window: [240, 360]",
                            f"path: {trace}\n  window: [0, 20]")
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


def test_prefix_caching_on_a_trace_without_prefix_hashes_is_noted(tmp_path, capsys):
    """The Azure traces name no prompt block: prefix caching there was accepted, found nothing
    and read 0 % as if real prompts shared nothing."""
    scenario = tiny_with_prefix_caching(tmp_path)
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err
    note = ("note: tiny.yaml: tier bf16 caches prefixes (scheduler.enable_prefix_caching), and "
            "no request names its prompt's blocks (the trace has no prefix_hashes column, as "
            "Mooncake's hash_ids, and runs no sessions), so no prompt finds another's prefix: its "
            "hit rate reads 0 whatever real prompts share (a preempted request still finds its "
            "own blocks); use a trace with prefix hashes to see sharing")
    assert f"note: {scenario}:" + note.removeprefix("note: tiny.yaml:") in err.splitlines()
    import json

    assert note.removeprefix("note: ") in json.loads(
        (tmp_path / "out" / "summary.json").read_text())["notes"]


def test_prefix_caching_on_a_trace_with_prefix_hashes_is_not_noted(tmp_path, capsys):
    """Mooncake's trace names its blocks: no such note."""
    scenario = tiny_with_prefix_caching(tmp_path, "mooncake_synthetic.parquet")
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert "caches prefixes" not in err


def test_disagg_does_not_speak_of_a_saving_it_never_prints(tmp_path, capsys):
    """A scenario with baseline-only tiers drew, under ``tiersim disagg``, run's note for
    ``--no-baselines`` (the baselines 'left out of the estimated saving'; 'run without
    --no-baselines'): disagg prints no saving and has no such option."""
    scenario = small_disagg(tmp_path, ("router: {policy: uniform}",
                                       "baselines:\n  - {name: fp8, precision: fp8, "
                                       "cost_per_gpu_hour: 3.5, gpus_per_replica: 2}\n"
                                       "router: {policy: uniform}"))
    code, err = run_cli(capsys, "disagg", scenario)
    assert code == 0, err
    assert err == ""
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert "left out of the estimated saving" in err


def test_a_baseline_split_needs_no_replicas(tmp_path, capsys):
    """A baseline needs no ``replicas`` (it is sized by simulation), yet one with a
    ``disaggregation`` block was refused as 'prefill_replicas + decode_replicas (1 + 1) must
    equal replicas (1)', a count the user never wrote."""
    scenario = small_disagg(tmp_path, ("router: {policy: uniform}",
                                       "baselines:\n  - {name: split, precision: bf16, "
                                       "cost_per_gpu_hour: 3.5, gpus_per_replica: 2, "
                                       "disaggregation: {prefill_replicas: 1, "
                                       "decode_replicas: 1}}\nrouter: {policy: uniform}"))
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out")
    assert code == 0, err
    assert "must equal replicas" not in err


def test_data_parallel_ranks_count_against_the_replica_ceiling(tmp_path, capsys):
    """``replicas: 1024`` (the default limit) of ``data_parallel: 4096`` ranks built 4.2
    million engine replicas: a MemoryError traceback after a minute and a half, the limit on
    replicas never seeing the ranks."""
    scenario = tmp_path / "dp.yaml"
    scenario.write_text((SCENARIOS / "tiny.yaml").read_text().replace(
        "model: Qwen3-Coder-30B-A3B", "model: Llama-3.1-8B").replace(
        "    precision: bf16\n    replicas: 1\n",
        "    precision: bf16\n    replicas: 1024\n    gpus_per_replica: 4096\n"
        "    data_parallel: 4096\n"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 22: tiers[1].data_parallel: 1,024 replicas x "
                    "data_parallel 4,096 make 4,194,304 engine replicas, above the 100,000 "
                    "tiersim simulates in one tier (each data-parallel rank schedules on its "
                    "own); lower replicas or data_parallel")


def tiny_with_balancer(tmp_path: Path, balancer: str, replicas: int = 1) -> Path:
    """The bundled tiny scenario whose bf16 tier sets ``balancer`` over ``replicas``."""
    path = tmp_path / "tiny.yaml"
    path.write_text((SCENARIOS / "tiny.yaml").read_text().replace(
        "    precision: bf16\n    replicas: 1\n",
        f"    precision: bf16\n    replicas: {replicas}\n    balancer: {balancer}\n"))
    return path


def test_a_balancer_with_one_replica_to_pick_is_noted(tmp_path, capsys):
    """A balancer on a one-replica tier was accepted and changed nothing, without a word."""
    scenario = tiny_with_balancer(tmp_path, "round_robin")
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert ("note: tier bf16: balancer round_robin picks one of the tier's engine replicas for "
            "each request, and it has one (replicas 1, data_parallel 1), so the key changes "
            "nothing; give the tier more replicas, or remove the key") in err.splitlines()


def test_a_lone_prefix_aware_balancer_gets_one_note(tmp_path, capsys):
    """Without prefix caching too it gets that note alone: caching would not make it pick."""
    code, err = run_cli(capsys, "run", tiny_with_balancer(tmp_path, "prefix_aware"),
                        "--no-baselines")
    assert code == 0, err
    assert [line for line in err.splitlines() if "balancer" in line] == [
        "note: tier bf16: balancer prefix_aware picks one of the tier's engine replicas for "
        "each request, and it has one (replicas 1, data_parallel 1), so the key changes "
        "nothing; give the tier more replicas, or remove the key"]


def test_a_balancer_with_replicas_to_pick_is_not_noted(tmp_path, capsys):
    code, err = run_cli(capsys, "run", tiny_with_balancer(tmp_path, "round_robin", 2),
                        "--no-baselines")
    assert code == 0, err
    assert "balancer" not in err.replace(str(tmp_path), "")  # the folder is named for the test


def test_expert_parallel_over_one_gpu_is_noted(tmp_path, capsys):
    """``expert_parallel: true`` on a one-GPU replica spreads the experts over that GPU: it
    was accepted and changed nothing, without a word."""
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text((SCENARIOS / "tiny.yaml").read_text().replace(
        "    precision: bf16\n    replicas: 1\n",
        "    precision: bf16\n    replicas: 1\n    expert_parallel: true\n"))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert ("note: tier bf16: expert_parallel spreads the experts over the replica's GPUs, and "
            "it has one (gpus_per_replica 1), so the key changes nothing; give the replica "
            "more GPUs, or remove the key") in err.splitlines()


def test_a_disaggregated_tier_names_the_key_it_cannot_have(tmp_path, capsys):
    """'tiers[0]: disaggregation needs data_parallel: 1 and no speculative block' named
    neither key the tier set, nor which of the two it was."""
    dp = small_disagg(tmp_path, ("gpus_per_replica: 2\n",
                                 "gpus_per_replica: 2\n    data_parallel: 2\n"))
    assert error_line(*run_cli(capsys, "disagg", dp)) == (
        f"Error: {dp}: line {line_of(dp, 'data_parallel: 2')}: tiers[0].data_parallel: a "
        "disaggregated tier's data-parallel ranks (data_parallel 2) are not modelled; set "
        "data_parallel: 1, or remove disaggregation")
    spec = small_disagg(tmp_path, ("latency_us: 10}\n",
                                   "latency_us: 10}\n    speculative: {k: 2, acceptance: 0.5}\n"))
    assert error_line(*run_cli(capsys, "run", spec, "--no-baselines")) == (
        f"Error: {spec}: line {line_of(spec, 'speculative: {k: 2')}: tiers[0].speculative: "
        "speculative decoding on a disaggregated tier is not modelled; remove speculative, "
        "or disaggregation")
