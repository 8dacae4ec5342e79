"""Round 23 of hostile input on disaggregated prefill/decode tiers and KV offload levels: each
a failure found from outside and fixed, with the exact line a user sees."""

from __future__ import annotations

from pathlib import Path

from test_round19 import error_line, run_cli
from test_round22_serving import small_disagg

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"

HOST = "- {name: host, capacity_gb: 200, read_gb_s: 50, write_gb_s: 50}"
SSD = "- {name: ssd, capacity_gb: 2000, read_gb_s: 6, write_gb_s: 3}"


def offload(tmp_path: Path, *edits: tuple[str, str]) -> Path:
    """The bundled kv_offload scenario on its first 20 s, with ``edits``."""
    text = (SCENARIOS / "kv_offload.yaml").read_text().replace(
        "path: mooncake_synthetic.parquet", "path: mooncake_synthetic.parquet\n  window: [0, 20]")
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "offload.yaml"
    path.write_text(text)
    return path


def test_a_slower_offload_level_above_a_faster_one_is_noted(tmp_path, capsys):
    """``kv_offload`` is top first: an SSD listed above host DRAM took every block the GPU
    evicted (the GPU paying the SSD's write) and left host DRAM only what the SSD evicted,
    without a word; no KV connector (LMCache: CPU, then disk) stacks them so."""
    scenario = offload(tmp_path, (HOST, "@@"), (SSD, HOST), ("@@", SSD))
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err
    assert (f"note: {scenario}: line 29: tiers[0].scheduler.kv_offload[0]: level 'ssd' reads "
            "at 6 GB/s, slower than level 'host' below it (50 GB/s), yet the GPU evicts to "
            "'ssd' first and 'host' holds only what 'ssd' evicts (kv_offload lists levels top "
            "first); list the faster level first") in err.splitlines()


def test_offload_levels_listed_fastest_first_are_not_noted(tmp_path, capsys):
    """The bundled order (host, then SSD) draws no such note."""
    code, err = run_cli(capsys, "run", offload(tmp_path), "--out", tmp_path / "out",
                        "--no-baselines")
    assert code == 0, err
    assert "slower than level" not in err


def test_the_planner_tries_the_split_counts_tiersim_disagg_tries():
    """``tiersim plan`` chooses a split "the same way" as ``tiersim disagg`` (docs/serving.md),
    which tries at most MAX_SPLITS prefill counts; the planner simulated every one of a large
    tier's splits at each size it probed (1,023 runs at 1,024 replicas)."""
    from types import SimpleNamespace

    from tiersim.disagg import MAX_SPLITS, prefill_counts
    from tiersim.plan.evaluate import SimEvaluator

    split = SimpleNamespace(disagg=object())
    for replicas in (2, 5, 64, 65, 1024):
        assert SimEvaluator._splits(split, replicas) == [0, *prefill_counts(replicas)]
    assert len(SimEvaluator._splits(split, 1024)) == MAX_SPLITS + 1  # and aggregated (0)
    assert SimEvaluator._splits(SimpleNamespace(disagg=None), 1024) == [None]


def test_splits_of_a_tier_without_a_link_say_the_link_they_assume(tmp_path, capsys):
    """A tier with no ``disaggregation`` block was split over the block's default link (50 GB/s
    per GPU, 10 us) that no output named: the split rows' TPOT rests on it."""
    block = ("    disaggregation: {prefill_replicas: 1, decode_replicas: 1, link_gb_s: 50, "
             "latency_us: 10}\n")
    scenario = small_disagg(tmp_path, (block, ""))
    code, err = run_cli(capsys, "disagg", scenario)
    assert code == 0, err
    assert ("note: tier 'bf16' has no disaggregation block, so its splits move the prompt's KV "
            "over disaggregation's default link: 50 GB/s per GPU, 10 us a transfer; add a "
            "disaggregation block (any split) with your link_gb_s and latency_us"
            ) in err.splitlines()
    code, err = run_cli(capsys, "disagg", small_disagg(tmp_path))
    assert code == 0, err
    assert "default link" not in err


def test_splitting_a_baseline_only_tier_says_what_it_is(tmp_path, capsys):
    """``--tier`` naming a ``baselines`` tier said there was no tier of that name."""
    scenario = small_disagg(tmp_path, ("router: {policy: uniform}",
                                       "baselines:\n  - {name: fp8, precision: fp8, replicas: 2, "
                                       "gpus_per_replica: 2, cost_per_gpu_hour: 3.5}\n"
                                       "router: {policy: uniform}"))
    line = error_line(*run_cli(capsys, "disagg", scenario, "--tier", "fp8"))
    assert line == (f"Error: {scenario}: --tier: 'fp8' is a baseline-only tier (baselines[0]), "
                    "which serves no request of the trace, so it has no split to compare; "
                    "tiers are bf16")


def test_a_baseline_only_tiers_empty_offload_level_is_noted_as_a_tiers_is(tmp_path, capsys):
    """A ``baselines`` tier's offload level holding no prompt block was left out of the
    uniform fleet it sizes without the note a routed tier's gets; so was a slow level above a
    fast one."""
    base = ("baselines:\n  - name: base\n    precision: bf16\n    replicas: 3\n"
            "    cost_per_gpu_hour: 3.50\n    scheduler:\n      enable_prefix_caching: true\n"
            "      kv_offload:\n        " + SSD + "\n        "
            "- {name: host, capacity_gb: 200, read_gb_s: 50, write_gb_s: 50}\n"
            "        - {name: tiny, capacity_gb: 0, read_gb_s: 50, write_gb_s: 50}\n"
            "router: {policy: uniform}")
    scenario = offload(tmp_path, ("router: {policy: uniform}", base))
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "out", "--no-baselines")
    assert code == 0, err
    lines = err.splitlines()
    assert (f"note: {scenario}: line 44: baselines[0].scheduler.kv_offload[2].capacity_gb: 0 GB "
            "holds no prompt block (one is 50.3 MB per GPU on tier 'base'), so level 'tiny' is "
            "left out, as if not listed (evicted blocks are dropped, not written)") in lines
    assert (f"note: {scenario}: line 42: baselines[0].scheduler.kv_offload[0]: level 'ssd' "
            "reads at 6 GB/s, slower than level 'host' below it (50 GB/s), yet the GPU evicts "
            "to 'ssd' first and 'host' holds only what 'ssd' evicts (kv_offload lists levels "
            "top first); list the faster level first") in lines
