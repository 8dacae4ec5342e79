"""Golden file: the tiny scenario's summary.json, checked against a committed expected output.

When a deliberate model change moves the numbers, regenerate and review the diff:

    TIERSIM_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py

Floats are compared to 1e-6 relative (the summary keeps 10 significant digits); everything else
(keys, counts, names, sources) must match exactly.
"""

from __future__ import annotations

import json
import math
import os

from conftest import REPO, TINY

from tiersim.results import RunResult
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

GOLDEN = REPO / "tests" / "golden" / "tiny_summary.json"


def differences(expected, actual, where: str = "") -> list[str]:
    """Human-readable differences between two JSON values (floats to 1e-6 relative)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{where}.{k}: missing" for k in expected.keys() - actual.keys()]
        out += [f"{where}.{k}: unexpected" for k in actual.keys() - expected.keys()]
        for key in expected.keys() & actual.keys():
            out += differences(expected[key], actual[key], f"{where}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [d for i, (e, a) in enumerate(zip(expected, actual, strict=True))
                for d in differences(e, a, f"{where}[{i}]")]
    both_float = isinstance(expected, float) and isinstance(actual, float)
    if both_float and math.isclose(expected, actual, rel_tol=1e-6, abs_tol=1e-12):
        return []
    return [] if expected == actual else [f"{where}: expected {expected!r}, got {actual!r}"]


def test_tiny_summary_matches_golden():
    run = run_scenario(load_scenario(TINY), scenario_path=TINY)
    if os.environ.get("TIERSIM_REGEN_GOLDEN"):
        GOLDEN.write_text(run.dumps())
    expected = RunResult.read(GOLDEN)  # the golden file reads back as a typed result
    diffs = differences(expected.to_json(), run.to_json())
    assert not diffs, "tiny summary moved (regenerate if intended):\n" + "\n".join(diffs[:20])
    assert expected.to_json() == json.loads(GOLDEN.read_text())  # nothing lost reading it
    assert [t.name for t in run.tiers] == [t.name for t in expected.tiers]


def test_differences_sees_changes():
    assert differences({"a": 1.0, "b": [1, 2]}, {"a": 1.0 + 1e-9, "b": [1, 2]}) == []
    assert differences({"a": 1.0}, {"a": 1.1}) == [".a: expected 1.0, got 1.1"]
    assert differences({"a": 1}, {"b": 1}) == [".a: missing", ".b: unexpected"]
