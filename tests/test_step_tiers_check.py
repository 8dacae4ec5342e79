"""A ``router.step_tiers`` step type the workload never has is refused (or, under a trace
window, noted): a typo would route nothing and leave those steps to the fallback router."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from conftest import REPO, run_cli

from tiersim.errors import Note, ScenarioError
from tiersim.inputs import check_step_tiers
from tiersim.scenario import load_scenario


def agentic_file(tmp_path, step_tiers: str, trace: bool = False, name: str = "st.yaml"):
    """The bundled agentic scenario (10 generated tasks, or with ``trace`` the trace's
    sessions) with ``step_tiers`` as its router's map."""
    text = (REPO / "tiersim" / "scenarios" / "agentic.yaml").read_text()
    text = text.replace("tasks: 150", "tasks: 10")
    text = text.replace("{planning: bf16, recovery: bf16, final: bf16, tool_call: fp8}",
                        step_tiers)
    if trace:  # the trace's sessions: the generator's keys would be refused as unread
        text = text.replace("source: generate", "source: trace")
        text = re.sub(r"\n *generate: \{[^}]*\}", "", text)
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_misspelt_step_type_of_the_generator_is_one_line(tmp_path):
    path = agentic_file(tmp_path, "{planning: bf16, tool_cal: bf16}")
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "step_tiers" in t)
    out = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines",
                  "--no-report")
    assert out.returncode == 1
    assert out.stderr == (f"Error: {path}: line {line}: router.step_tiers.tool_cal: "
                          "workload.sessions.generate makes no 'tool_cal' step (did you mean "
                          "'tool_call'?); its step types are code, final, planning, recovery, "
                          "tool_call, verify\n")


def steps(kinds):
    """A session table with one step of each type in ``kinds``."""
    return pd.DataFrame({"step_type": kinds})


def test_a_step_type_the_whole_trace_lacks_is_refused(tmp_path):
    scn = load_scenario(agentic_file(tmp_path, "{planning: bf16, fromat: fp8}", trace=True))
    with pytest.raises(ScenarioError, match=r"router.step_tiers.fromat: the trace has no "
                       r"'fromat' step \(did you mean 'format'\?\); its step types are "
                       r"format, planning$"):
        check_step_tiers(scn, steps(["planning", "format"]), "st.yaml")


def test_under_a_window_a_missing_step_type_is_a_note(tmp_path):
    path = agentic_file(tmp_path, "{planning: bf16, recovery: fp8}", trace=True)
    scn = load_scenario(path)
    scn = scn.model_copy(update={"trace": scn.trace.model_copy(update={"window": (0.0, 60.0)})})
    with pytest.warns(Note, match=r"router.step_tiers.recovery: no step in trace.window "
                      r"\[0, 60\) has type 'recovery', so the entry routes nothing"):
        check_step_tiers(scn, steps(["planning", "final"]), str(path))


def test_a_type_the_generator_can_make_but_did_not_draw_is_fine(tmp_path):
    scn = load_scenario(agentic_file(tmp_path, "{planning: bf16, recovery: fp8}"))
    check_step_tiers(scn, steps(["planning", "final"]), "st.yaml")  # no error, no note


def test_under_a_window_a_step_type_the_whole_file_lacks_is_refused(tmp_path):
    """A window keeps part of the trace, but a type the file holds in no row (a typo) would
    route nothing at any window: it is refused, naming the file's step types; a type outside
    the window only stays a note."""
    trace = tmp_path / "steps.csv"
    trace.write_text("request_id,arrival_s,input_tokens,output_tokens,session_id,step,step_type\n"
                     "0,0,100,10,1,0,planning\n1,0,100,10,1,1,final\n"
                     "2,50,100,10,2,0,planning\n3,50,100,10,2,1,recovery\n")
    text = agentic_file(tmp_path, "{planning: bf16, recovery: bf16, fnal: bf16}",
                        trace=True).read_text()
    text = text.replace("path: azure2023_code.parquet", f"path: {trace}\n  window: [0, 30]\n")
    path = tmp_path / "st.yaml"
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "step_tiers" in t)
    out = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines",
                  "--no-report")
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1] == (
        f"Error: {path}: line {line}: router.step_tiers.fnal: the trace has no 'fnal' step "
        "(did you mean 'final'?); its step types are final, planning, recovery")
