"""Round 51, hostile input (helper fuzz17). Each test names what a user saw before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"


@pytest.mark.parametrize(("old", "new", "said"), [
    ("seed: 0", "5: 7", "line 4: key 5 is a number, where the keys are names; write the name, "
     "or quote it ('5') if it is one"),
    ("  ttft_p99_s: 2.0", "  ttft_p99_s: 2.0\n  5: 3", "line 29: slo: key 5 is a number, where "
     "the keys are names; write the name, or quote it ('5') if it is one"),
    ("    replicas: 1", "    replicas: 1\n    5: 3", "line 17: tiers[0]: key 5 is a number, "
     "where the keys are names; write the name, or quote it ('5') if it is one"),
])
def test_a_whole_number_key_of_a_scenario_map_is_named_as_a_number(tmp_path, capsys, monkeypatch,
                                                                    old, new, said):
    """A whole number key (``5: 7`` among a scenario's keys, or in its ``slo:`` or a tier) was
    told "line 4: [5]: keys should be strings (got 7)": pydantic's words, the key shown as a
    list index and the *value* quoted as what was got. A float, date or true key was already
    told that YAML reads it as no name; a whole number is now told so too."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"
    assert not (tmp_path / "o").exists()
