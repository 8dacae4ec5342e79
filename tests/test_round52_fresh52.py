"""Round 52, fresh52 (a new user planning Qwen3-32B tiers on H200): what the "saved vs uniform"
row says when no uniform fleet is a baseline.

A run of FP8 + BF16 + W4A16 Qwen3-32B behind the floor router at an accuracy floor of 80 %
read 79.84 %, as its uniform BF16 fleet did (which met the SLOs), and the row said "no uniform
fleet meets the SLOs and this run's accuracy (or the floor): none to compare with": read as
written, false, since uniform BF16 met the SLOs and this run's accuracy. A uniform fleet is held
to the floor where the scenario sets one, else to the run's own accuracy
(:func:`tiersim.results_accuracy.baseline_floor`), so the row names the one in force.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.results import RunResult


def _words(floor: float | None, estimated: bool = False, *infeasible: str | None) -> str:
    uniform = tuple(SimpleNamespace(tier=f"t{k}", infeasible=why)
                    for k, why in enumerate(infeasible or (None,)))
    savings = SimpleNamespace(baseline_uniform_tier=None, estimated=estimated, uniform=uniform)
    run = SimpleNamespace(savings=savings, requests=100, completed=100, accuracy_floor=floor)
    return RunResult.no_baseline_words(run)


def test_the_row_names_the_floor_where_the_scenario_sets_one():
    assert _words(0.8) == ("no uniform fleet meets the SLOs and the accuracy floor: none to "
                           "compare with (uniform fleets table)")
    assert _words(0.8, False, "drops 2 requests", None) == (
        "all t0 drops 2 requests; no other meets the SLOs and the accuracy floor: none to "
        "compare with (uniform fleets table)")
    assert _words(0.8, True) == ("no uniform fleet's estimate reaches the accuracy floor: none "
                                 "to compare with (estimate; --baselines simulates)")
    assert _words(0.8, True, "drops 2 requests", None) == (
        "all t0 drops 2 requests; no other reaches the accuracy floor: none to compare with "
        "(estimate; --baselines simulates)")


def test_the_row_names_the_runs_accuracy_where_no_floor_is_set():
    assert _words(None) == ("no uniform fleet meets the SLOs and this run's accuracy: none to "
                            "compare with (uniform fleets table)")
    assert _words(None, True) == ("no uniform fleet's estimate reaches this run's accuracy: "
                                  "none to compare with (estimate; --baselines simulates)")


def test_a_run_under_an_unreachable_floor_says_the_floor_in_console_and_report(tmp_path):
    """tiny.yaml with every request on BF16 and a floor of 0.999 no fleet reaches: the console's
    row and the report's "saved vs that tier" name the floor, not the run's accuracy (which the
    uniform BF16 fleet matches)."""
    import html
    import re

    from rich.console import Console

    from tiersim.cli.run import headline_table
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(accuracy_floor=0.999, router={"policy": "uniform", "tier": "bf16"})
    out = tmp_path / "o"
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), out, baselines=True,
                       report=True)
    bf16 = next(u for u in run.savings.uniform if u.tier == "bf16")
    assert bf16.accuracy == pytest.approx(run.accuracy, rel=1e-12)  # BF16 reaches it
    console = Console(width=400, record=True)
    console.print(headline_table(run))
    row = next(line.split("│")[1:4] for line in console.export_text().splitlines()
               if "vs uniform" in line)
    assert [cell.strip() for cell in row] == [
        "saved vs uniform", "-", "no uniform fleet meets the SLOs and the accuracy floor: none "
        "to compare with (uniform fleets table)"]
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert ("|saved vs that tier||no uniform fleet meets the SLOs and the accuracy floor: none "
            "to compare with (uniform fleets table)|") in page


def test_readme_says_the_dense_4bit_roofline_is_derated_and_slower_to_prefill():
    """A plan of Qwen3-32B on H200 (Azure code trace, prompts of 1,424 tokens at the median)
    sized uniform W4A16 at 24 x 1 GPU ($84/hour) against uniform BF16's 10 x 2 ($70/hour): its
    dense GEMMs have no measured table and read the weight-only roofline at 80% of the BF16
    GEMM's rate (``dequant_factor``), which README.md named only as "BF16 maths". The README
    now states the derating and a step it gives; the figures are the shipped H200 profile's
    (BF16 measured, W4A16 roofline) and move only with it or the roofline's constants."""
    from pathlib import Path

    from tiersim.perf import build_step_model, default_profile_name, resolve_profile
    from tiersim.perf.base import StepShape
    from tiersim.perf.roofline import RooflineConstants

    readme = " ".join((Path(__file__).resolve().parent.parent / "README.md").read_text().split())
    assert ("uses a weight-only roofline (4-bit bytes, BF16 maths), never FP4 maths on Hopper, "
            "its maths at 80% of the BF16 GEMM's rate for the unpacking (`dequant_factor` in "
            "`tiersim/perf/roofline.py`, a rule of thumb: no dense 4-bit table is measured), so "
            "a dense model's W4A16 tier, and NVFP4's on Hopper, prefills slower than its BF16 "
            "one (Llama-3.1-8B on one H200, a 2,048-token prefill step: 63.1 ms against BF16's "
            "measured 48.1 ms) and on prompt-heavy traffic can need more GPUs than BF16.") in readme
    assert RooflineConstants().dequant_factor == 0.8
    profile = resolve_profile(default_profile_name())
    step = StepShape(prefill_chunks=((2048, 0),))
    ms = {p: 1e3 * build_step_model("Llama-3.1-8B", p, "h200", profile=profile).step_time(step)
          for p in ("bf16", "w4a16", "nvfp4")}
    assert f"{ms['w4a16']:.1f} {ms['nvfp4']:.1f} {ms['bf16']:.1f}" == "63.1 63.1 48.1"
