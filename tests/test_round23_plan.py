"""Round 23 of hostile input for ``tiersim plan``: the plan folder it writes must rerun with
``tiersim run`` as planned, and what it prints must agree with plan.json."""

from __future__ import annotations

from pathlib import Path

import yaml
from conftest import REPO, tiny_doc
from test_round19 import run_cli

TRACE = REPO / "traces" / "azure2023_code.parquet"


def tiny(tmp_path: Path, **overrides) -> Path:
    """The tiny scenario over one minute of its trace, with top-level ``overrides``."""
    doc = tiny_doc(trace={"path": str(TRACE), "window": [240, 300]}, **overrides)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_max_replicas_below_a_dropped_tiers_own_count(tmp_path, capsys):
    """--max-replicas below the replicas a tier the plan leaves out is written with: that tier
    goes under baselines: in the planned scenario beside limits.max_replicas, which refused it
    once the whole search had run ('s.yaml: baselines[0].replicas: 4 replicas is above
    limits.max_replicas (2)', a key s.yaml does not have), and the plan was lost."""
    doc = tiny_doc()
    for tier in doc["tiers"]:  # the plan keeps one of them
        tier["replicas"] = 4
    path = tiny(tmp_path, tiers=doc["tiers"])
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", path, "--out", out, "--max-replicas", "2",
                        "--no-report")
    assert code == 0, err
    planned = yaml.safe_load((out / "scenario.yaml").read_text())
    assert planned["limits"]["max_replicas"] == 2
    assert len(planned["tiers"]) == 1 and len(planned["baselines"]) == 1
    assert all(t["replicas"] <= 2 for t in planned["baselines"])
    code, err = run_cli(capsys, "run", out / "scenario.yaml", "--out", tmp_path / "run",
                        "--no-report")
    assert code == 0, err


def test_uniform_fleet_never_sized_names_no_size(tmp_path, capsys):
    """A uniform fleet the plan could not size at all (every GPU count asked for splits its
    weights in a way vLLM refuses) was printed with empty parentheses and a cost 'at that
    size' of '-': 'uniform w4a16 (): ...; cost at that size - USD, no baseline'."""
    doc = tiny_doc()
    doc["tiers"][0]["gpus_per_replica"] = 4  # w4a16: Marlin refuses its experts over 4 or 8
    path = tiny(tmp_path, tiers=doc["tiers"])
    lines = _plan_lines(capsys, path, "--out", tmp_path / "plan", "--no-report",
                        "--gpus-per-replica", "4,8")
    line = next(line for line in lines if line.startswith("  uniform w4a16"))
    assert line.startswith("  uniform w4a16: w4a16 on 4, 8 GPUs per replica: its W4A16 expert "
                           "width 768 over 8 GPUs"), line
    assert line.endswith("; not sized, so no baseline"), line
    assert "()" not in line and " - USD" not in line


def _plan_lines(capsys, *argv) -> list[str]:
    """The stdout lines of ``tiersim plan ARGV`` run in this process (exit status 0)."""
    from tiersim.cli import main

    capsys.readouterr()
    code = main(["plan", *map(str, argv)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out.splitlines()


def test_requests_larger_than_the_kv_cache_are_named(tmp_path, capsys):
    """A tier whose replica's KV cache cannot hold the largest requests (Llama-3.1-70B in FP8
    on one H100: 7,280 tokens a sequence) drops them at any replica count; the plan blamed
    the p99 ('more replicas do not help at 32 fp8 replicas: the p99 is set by what replicas
    cannot shorten (a single request's step, ...) (dropped 9 vs limit 0)'), which was met."""
    path = tiny(tmp_path, model="llama-3.1-70b", gpu="H100",
                tiers=[{"name": "fp8", "precision": "fp8", "replicas": 1,
                        "cost_per_gpu_hour": 3.5, "gpu_memory_utilization": 0.92}],
                router={"policy": "uniform"}, limits={"gpus_per_replica": [1]})
    from tiersim.cli import main

    capsys.readouterr()
    code = main(["plan", str(path), "--out", str(tmp_path / "plan"), "--no-report"])
    out = capsys.readouterr().out
    assert code == 1
    line = out.splitlines()[0]
    assert line.startswith("no fleet meets the constraints ("), line
    assert ("fp8: latency: 9 requests are larger than one sequence may hold of a replica's KV "
            "cache (7,280 tokens on fp8 at 1 GPU per replica) and are dropped at any replica "
            "count; allow more GPUs per replica (--gpus-per-replica or "
            "limits.gpus_per_replica) or give the tier more memory (gpu_memory_utilization) "
            "(dropped 9 vs limit 0) (tried fp8 on 1 GPU per replica)") in line, line
    assert "the p99 is set by" not in line


def test_one_request_longer_than_the_context_in_the_singular(tmp_path, capsys):
    """One request longer than a tier's max_model_len read '1 request is longer (prompt +
    output) than their tier's context (...) and are dropped at any size; ... leave them out'."""
    doc = tiny_doc()
    for tier in doc["tiers"]:
        tier["scheduler"] = {"max_model_len": 1000}
    path = tiny(tmp_path, tiers=doc["tiers"])
    doc = yaml.safe_load(path.read_text())
    doc["trace"]["window"] = [0, 0.01]  # one request, of 4,818 tokens
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    from tiersim.cli import main

    capsys.readouterr()
    code = main(["plan", str(path), "--out", str(tmp_path / "plan"), "--no-report"])
    line = capsys.readouterr().out.splitlines()[0]
    assert code == 1
    assert ("w4a16: latency: 1 request is longer (prompt + output) than its tier's context "
            "(w4a16's max_model_len 1,000) and is dropped at any size; raise "
            "tiers[].scheduler.max_model_len (up to the model's context) or leave it out of "
            "the trace") in line, line
