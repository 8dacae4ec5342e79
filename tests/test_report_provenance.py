"""The report names the profile the results were computed with, not just the scenario key."""

from __future__ import annotations

import dataclasses
import html
from pathlib import Path

import pandas as pd

from tiersim.report.load import ReportData
from tiersim.report.page import provenance
from tiersim.results import ProfileUsed, RunResult

GOLDEN = Path(__file__).parent / "golden" / "tiny_summary.json"


def _run(profile: str | None) -> RunResult:
    """The tiny run's summary with the profile it names replaced."""
    run = RunResult.read(GOLDEN)
    return dataclasses.replace(run, profile=ProfileUsed(name=profile, sources={}))


def _profile_cell(data: ReportData) -> str:
    html = provenance(data)
    return html.split("calibration profile</td><td>")[1].split("<")[0]


def test_sweep_without_profile_key_shows_the_profile_its_points_used():
    data = ReportData(Path("."), sweep=pd.DataFrame({"profile.name": ["h200_x", "h200_x"]}),
                      scenario={"name": "s", "gpu": "H200"})
    assert _profile_cell(data) == "h200_x"


def test_run_summary_profile_wins_and_null_profile_reads_roofline():
    run = ReportData(Path("."), run=_run("h200_x"), scenario={"name": "s"})
    assert _profile_cell(run) == "h200_x"
    roofline = ReportData(Path("."), run=_run(None), scenario={"name": "s", "profile": None})
    assert _profile_cell(roofline) == "none (roofline)"


def test_the_page_says_how_far_the_profiles_predictions_were_from_measured_serving():
    """The run's profile.checked, as the terminal's fidelity line; unchecked step times say so."""
    from tiersim import fidelity

    checked = RunResult.read(GOLDEN.with_name("cascade_models_summary.json"))
    page = provenance(ReportData(Path("."), run=checked, scenario={"name": "s"}))
    cell = page.split("fidelity of these step times</td><td>")[1].split("</td>")[0]
    assert cell.startswith("replaying NVIDIA&#x27;s measured vllm serving runs on H200 (")
    assert "; tier small (Llama-3.1-8B, bf16): Llama-3.1-8B (rows of " in cell
    assert "; tier large (Llama-3.1-70B, bf16): Llama-3.1-70B (rows of " in cell
    roofline = RunResult.read(GOLDEN)  # tiny: profile null, an H200's roofline record
    line = fidelity.describe(roofline.profile.checked).removeprefix("fidelity: ")
    assert line.startswith("these step times come from tiersim's roofline model")
    page = provenance(ReportData(Path("."), run=roofline, scenario={"name": "s"}))
    assert f"fidelity of these step times</td><td>{html.escape(line)}</td>" in page
    unchecked = dataclasses.replace(roofline, profile=dataclasses.replace(roofline.profile,
                                                                          checked=None))
    line = fidelity.describe(None).removeprefix("fidelity: ")
    page = provenance(ReportData(Path("."), run=unchecked, scenario={"name": "s"}))
    assert f"fidelity of these step times</td><td>{html.escape(line)}</td>" in page
