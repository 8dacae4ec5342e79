"""Round 27, a new user from the wheel: what tiersim prints to someone who installed the wheel
and has no source tree (no docs/, tests/ or benchmarks/ beside it)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pandas as pd
import pytest

import tiersim
from tiersim.trace import load_trace
from tiersim.trace.loader import TraceWarning

PACKAGE = Path(tiersim.__file__).resolve().parent
REPO_FILE = re.compile(r"\b(?:docs|tests|benchmarks)/[\w./-]+")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that stand alone as statements (docstrings of modules,
    classes, functions and attributes): read in the source, never printed."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}


def repo_paths_without_where() -> list[str]:
    """Every text tiersim can print that names a file of the source tree (docs/, tests/,
    benchmarks/) without saying it is in tiersim's source repository."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in skip and REPO_FILE.search(node.value)
                    and "source repository" not in node.value):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_printed_text_sends_a_wheel_user_to_a_file_the_wheel_lacks():
    # A trace's session notes ended '(docs/agentic.md)' and the report's closed-form note
    # '(tests/test_plan_closed_form.py holds them within 5%)': the wheel ships neither file.
    # The fidelity line already said 'in tiersim's source repository'; now they all do.
    assert repo_paths_without_where() == []


def test_the_half_session_note_says_where_its_doc_is(tmp_path):
    trace = tmp_path / "half.parquet"
    pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [10, 20, 30],
                  "output_tokens": [5, 5, 5], "parent": [-1, 0, 1]}).to_parquet(trace)
    with pytest.warns(TraceWarning, match="describe agentic sessions") as caught:
        load_trace(trace)
    (note,) = [str(w.message) for w in caught if "describe agentic sessions" in str(w.message)]
    assert note.endswith("(docs/agentic.md in tiersim's source repository)")


@pytest.mark.parametrize("command", [["run"], ["plan"], ["sweep", "--out", "o"], ["disagg"]])
def test_a_misspelt_bundled_scenario_lists_the_bundled_ones(tmp_path, monkeypatch, capsys,
                                                             command):
    # From the wheel, `tiersim run scenarios/defualt.yaml` said only 'file not found': the user
    # who ran README's `scenarios/X.yaml` outside a checkout learnt neither that the bundled
    # scenarios are looked in nor what they are called (a missing trace lists the traces).
    from tiersim.cli.app import main

    monkeypatch.chdir(tmp_path)
    assert main([*command, "scenarios/defualt.yaml"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("Error: scenarios/defualt.yaml: file not found, in this folder or "
                          "among the bundled scenarios (agentic.yaml, cascade.yaml, ")
    assert "default.yaml" in err and err.rstrip().endswith("give a scenario YAML path or a "
                                                            "bundled name")
    assert list(tmp_path.iterdir()) == []  # nothing made, not even sweep's --out


def test_a_missing_scenario_elsewhere_is_still_plain_file_not_found(tmp_path, capsys):
    from tiersim.cli.app import main

    assert main(["run", str(tmp_path / "none.yaml")]) == 1
    assert capsys.readouterr().err == f"Error: {tmp_path / 'none.yaml'}: file not found\n"
