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
