"""A number written in quotes in a scenario is refused on one line (pydantic read
``replicas: "2"`` as 2); a plain scalar YAML 1.1 reads as text (``1e1``, ``1e-3``) is still a
number as written (``010`` is refused with the number to write: tests/test_round31_yamlnum.py),
and text fields (names, tier references) keep taking quoted text."""

from __future__ import annotations

import pytest
from conftest import TINY

from tiersim.errors import ScenarioError
from tiersim.scenario import load_scenario


def edited(tmp_path, *edits: tuple[str, str]):
    """The tiny scenario with each ``(old, new)`` text edit made (each must apply)."""
    text = TINY.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def line_of(path, text: str) -> int:
    """The 1-based line of the first line of ``path`` holding ``text``."""
    return next(i for i, t in enumerate(path.read_text().splitlines(), 1) if text in t)


@pytest.mark.parametrize(("old", "new", "key", "shown"), [
    ("replicas: 1", 'replicas: "2"', "tiers[0].replicas", "'2'"),
    ("cost_per_gpu_hour: 3.50", 'cost_per_gpu_hour: "3.5"', "tiers[0].cost_per_gpu_hour",
     "'3.5'"),
    ("window: [240, 360]", "window: ['240', 360]", "trace.window[0]", "'240'"),
    ("seed: 0", "seed: '7'", "seed", "'7'"),
])
def test_a_quoted_number_is_one_line(tmp_path, old, new, key, shown):
    path = edited(tmp_path, (old, new))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (f"{path}: line {line_of(path, new)}: {key}: must be a number, "
                              f"not a string ({shown}); write it without quotes")


def test_quoted_text_that_is_no_number_says_so_without_the_quote_fix(tmp_path):
    path = edited(tmp_path, ("seed: 0", "seed: 'zero'"))
    with pytest.raises(ScenarioError, match=r"seed: must be a number, not a string \('zero'\)$"):
        load_scenario(path)


def test_plain_numbers_yaml_reads_as_text_and_quoted_names_still_load(tmp_path):
    path = edited(tmp_path, ("replicas: 1", "replicas: 1e1"), ("name: tiny", "name: '2'"))
    scenario = load_scenario(path)
    assert scenario.tiers[0].replicas == 10 and scenario.name == "2"
