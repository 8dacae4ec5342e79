"""Round 27, sweep resume: a sweep resumes after an edit of its scenario that changes no point
(a default written out, another spelling, a file named another way), is refused naming the
field after one that does, and reads a linked scenario's relative paths beside the link."""

from __future__ import annotations

import json

import pandas as pd
from test_round19 import error_line, run_cli
from test_round23_sweepkill import ROOT, _scenario

ARGS = ("-w", "1", "--no-baselines", "--no-report")
BUNDLED = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"


def _sweep(capsys, scenario, out) -> tuple[int, str]:
    """``tiersim sweep SCENARIO --out OUT`` on one worker, no baselines, no report."""
    return run_cli(capsys, "sweep", scenario, "--out", out, *ARGS)


def _started(out) -> dict[str, str]:
    """Each stored point's start time (a point run again gets another)."""
    return {p.name: json.loads(p.read_text())["started"] for p in (out / "points").glob("*.json")}


def test_an_edit_that_changes_no_point_resumes(tmp_path, capsys):
    """A default written out (``gpus_per_replica: 1``), the GPU in lower case, ``3.5`` for
    ``3.50``, a comment, and a base value every point's axis sets (``seed``) were refused as
    "a sweep of a different scenario (something outside `sweep:` changed)", though no point
    reads otherwise. The sweep now resumes, every point kept."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    before = _started(out)
    text = scenario.read_text()
    edited = ("# edited, not changed\n" + text.replace("seed: 0", "seed: 7")
              .replace("gpu: H200", "gpu: h200")
              .replace("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 3.5")
              .replace("  - name: bf16\n", "  - name: bf16\n    gpus_per_replica: 1\n"))
    assert edited.count("gpus_per_replica: 1") == 1 and "h200" in edited
    scenario.write_text(edited)
    code, err = _sweep(capsys, scenario, out)
    assert code == 0, err
    assert "2 points (0 run, 2 already done, 0 failed)" in err
    assert _started(out) == before


def test_an_edit_that_changes_a_point_is_refused_naming_the_field(tmp_path, capsys):
    """A real change was refused with "something outside `sweep:` changed", naming nothing;
    the line names the field, both values and a point they change."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    first = json.loads((out / "sweep.json").read_text())["points"][0]["point_id"]
    scenario.write_text(scenario.read_text().replace("cost_per_gpu_hour: 3.50",
                                                     "cost_per_gpu_hour: 4", 1))
    assert error_line(*_sweep(capsys, scenario, out)) == (
        f"Error: {out}: holds a sweep of a different scenario (tiers.0.cost_per_gpu_hour is "
        f"4.0 here, 3.5 when its point {first} ran); use a new --out folder, or delete "
        f"{out / 'points'} to start over")


def test_the_trace_named_another_way_resumes_and_other_content_is_refused(tmp_path, capsys):
    """The bundled trace named by a copy's relative path (``./copy.parquet``): the points read
    the same bytes, and resume; a copy with other content is refused as another input."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    (tmp_path / "copy.parquet").write_bytes(BUNDLED.read_bytes())
    text = scenario.read_text()
    scenario.write_text(text.replace("path: azure2023_code.parquet", "path: ./copy.parquet"))
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err
    frame = pd.read_parquet(BUNDLED)
    frame.iloc[::2].to_parquet(tmp_path / "copy.parquet")
    assert "holds sweep points run over other input files (trace of point" in error_line(
        *_sweep(capsys, scenario, out))

