"""Round 52 fuzzing (helper fuzz19) of what landed with ``tiersim plan --robust`` and the
routers' price over the served requests."""

from __future__ import annotations

import json

from conftest import run_cli, tiny_doc, write_yaml


def _cache_answers_all(tmp_path):
    """The tiny scenario's two tiers behind a floor router, 30 s of the conversation trace, a
    response cache whose generated keys are one prompt: it answers every request."""
    doc = tiny_doc(trace={"path": "azure2023_conv.parquet", "window": [0, 30]},
                   router={"policy": "floor", "response_cache": {
                       "mode": "top_n", "size": 20, "lookup_s": 0.005,
                       "popularity": {"distinct": 1, "exponent": 1.0}}},
                   accuracy_floor=0.9)
    return write_yaml(tmp_path / "s.yaml", doc)


def test_robust_plan_of_a_run_no_request_reached(tmp_path):
    """No request reached the fleet at any seed: each seed's accuracy is None. The robust
    evaluator took the min over them and stopped with a TypeError traceback; it plans as the
    single-seed plan does, its per-seed records holding null."""
    path = _cache_answers_all(tmp_path)
    out = tmp_path / "o"
    done = run_cli("plan", str(path), "--robust", "--check-seeds", "1", "--out", str(out),
                   "--no-report")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert ("  expected accuracy: n/a: no request reached the fleet (a response cache answered "
            "every one); source: prior") in done.stdout.splitlines()
    robust = json.loads((out / "plan.json").read_text())["robust"]
    assert [r["accuracy"] for r in robust["per_seed"]] == [None, None]
    assert robust["worst_seed"]["accuracy"] is None
