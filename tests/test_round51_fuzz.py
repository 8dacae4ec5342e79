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


SKIP_WORDS = ("must be a whole number of tokens (prompt + output), from 1 to 100,000,000: the "
              "longest request to keep, e.g. the model's context (163840), or remove the key to "
              "keep every request")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("  window: [240, 360]", "  window: [240, 360]\n  skip_longer_than: 2e9",
     f"line 12: trace.skip_longer_than: {SKIP_WORDS} (got 2e9)"),
    ("  window: [240, 360]", "  window: [240, 360]\n  skip_longer_than: 1e308",
     f"line 12: trace.skip_longer_than: {SKIP_WORDS} (got 1e308)"),
    ("    replicas: 1", "    replicas: 1\n    gpu_memory_utilization: 2e9",
     "line 17: tiers[0].gpu_memory_utilization: must be below 1 (got 2e9): it is a share of "
     "the GPU's memory, such as 0.9"),
    ("    replicas: 1", "    replicas: 1\n    gpu_memory_utilization: 1e308",
     "line 17: tiers[0].gpu_memory_utilization: must be below 1 (got 1e308): it is a share of "
     "the GPU's memory, such as 0.9"),
    ("    replicas: 1", "    replicas: 1\n    gpu_memory_utilization: 0.99999999999999999999",
     "line 17: tiers[0].gpu_memory_utilization: must be below 1 (got 0.99999999999999999999, 1 "
     "as a float): vLLM refuses to start where the GPU's free memory is less than that share "
     "of its total, and its own CUDA context is already there; use at most 0.99"),
])
def test_a_refused_number_is_quoted_as_the_file_writes_it(tmp_path, capsys, monkeypatch, old,
                                                          new, said):
    """``skip_longer_than: 2e9`` was told "(got 2000000000.0)" and ``1e308`` "(got 1e+308)",
    as Python writes the floats; so was ``gpu_memory_utilization: 2e9``. Values are spelt as
    the file writes them, as every other key's bound already was."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"
    assert not (tmp_path / "o").exists()
