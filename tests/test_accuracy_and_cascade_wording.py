"""Wording of two refusals: one accuracy number at the ceiling (1.0 was refused while the table
{easy: 1.0, hard: 1.0} was taken, with no reason given), and a cascade over one tier (it said
"from_tier must be cheaper than to_tier" though no cascade block was given)."""

from __future__ import annotations

import pytest
import yaml
from conftest import TINY

from tiersim.errors import ScenarioError
from tiersim.routing import TierInfo, build_router
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def scenario(tmp_path, **edits):
    """The tiny scenario with top-level keys replaced, written to ``tmp_path/s.yaml``."""
    doc = yaml.safe_load(TINY.read_text())
    doc.update(edits)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def with_accuracy(tmp_path, accuracy):
    """The tiny scenario with its cheap tier's accuracy set."""
    doc = yaml.safe_load(TINY.read_text())
    doc["tiers"][0]["accuracy"] = accuracy
    return scenario(tmp_path, tiers=doc["tiers"], router={"policy": "uniform"})


def test_one_accuracy_number_at_the_ceiling_says_why_and_what_to_give(tmp_path):
    path = with_accuracy(tmp_path, 1.0)
    with pytest.raises(ScenarioError, match=r"tiers\[0\].accuracy: accuracy 1 must lie in "
                       r"\(0, 1\), ends excluded: one number is fitted by a logistic curve over "
                       r"difficulty, which reaches 0 and the ceiling \(the share of requests "
                       r"that are not hopeless\) only in the limit; give a number inside, or a "
                       r"table such as \{easy: 1.0, hard: 1.0\} \(each class's accuracy as "
                       r"given, 0 and 1 allowed\)$"):
        run_scenario(load_scenario(path), scenario_path=path)


def test_the_table_the_message_offers_runs(tmp_path):
    path = with_accuracy(tmp_path, {"easy": 1.0, "hard": 1.0})
    assert run_scenario(load_scenario(path), scenario_path=path).requests > 0


def test_a_cascade_over_one_tier_says_it_needs_two():
    with pytest.raises(ScenarioError) as err:
        build_router({"policy": "cascade"}, [TierInfo("bf16")])
    assert str(err.value) == (
        "scenario: router.policy: cascade needs two tiers or more (it answers on a cheaper "
        "tier and escalates to a dearer one: the cheapest and the top tier, or those a "
        "cascade: block names as from_tier and to_tier); the scenario has one, so add a tier "
        "or use policy uniform")
