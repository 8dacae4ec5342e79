"""Round 52, hostile input (helper fuzz18). Each test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from conftest import TINY
from test_hostile_inputs import one_error_line, run_cli


@pytest.mark.parametrize(("value", "said"), [
    ("{w4a16: 0.6, nope: 0.4}", "router.fractions: unknown tier 'nope'; tiers are w4a16, bf16"),
    ("{nope: 0.6, bf16: 0.4}", "router.fractions: unknown tier 'nope'; tiers are w4a16, bf16"),
])
def test_a_choose_map_naming_no_tier_is_refused_before_any_simulation(tmp_path, capsys, value,
                                                                      said):
    """``--choose router.fractions={w4a16: 0.6, nope: 0.4}`` ran the whole plan and exited 0:
    the design routed with it was refused only in its "runner-up w4a16+bf16: router: ...:
    unknown tier 'nope'" line. A tier name is now checked as a run of the scenario checks it,
    before any simulation, and no output is written."""
    out = tmp_path / "p"
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", out,
                                   "--choose", f"router.fractions={value}"))
    assert line == f"Error: --choose router.fractions={value}: {said}"
    assert not out.exists()


def test_a_choose_tier_naming_no_tier_is_refused_too(tmp_path, capsys):
    """``router.tier`` (the uniform policy's tier) naming no tier is refused so too."""
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", tmp_path / "p",
                                   "--choose", "router.policy=uniform",
                                   "--choose", "router.tier=nope"))
    assert line == ("Error: --choose router.policy='uniform' router.tier='nope': router.tier: "
                    "unknown tier 'nope'; tiers are w4a16, bf16")


def test_a_choose_map_with_a_whole_number_key_is_told_as_a_scenarios_is(tmp_path, capsys):
    """``--choose router.fractions={5: 0.6, bf16: 0.4}`` read "router.fractions[5]: input
    should be a valid string (got 5)": pydantic's words, the key shown as a list index; the
    same key in a scenario file was already told it is a number where names go."""
    line = one_error_line(*run_cli(capsys, "plan", TINY, "--out", tmp_path / "p",
                                   "--choose", "router.fractions={5: 0.6, bf16: 0.4}"))
    assert line == ("Error: --choose router.fractions={5: 0.6, bf16: 0.4}: router.fractions: "
                    "key 5 is a number, where the keys are names; write the name, or quote it "
                    "('5') if it is one")
