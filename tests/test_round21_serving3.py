"""Round 21 (serving techniques and routing inputs): hostile and silently-ignored settings."""

from __future__ import annotations

import pytest
from test_step_tiers_check import agentic_file, steps

from tiersim.errors import ScenarioError
from tiersim.inputs import check_step_tiers
from tiersim.scenario import load_scenario


def test_step_tiers_naming_a_middle_step_the_generator_cannot_make_is_one_line(tmp_path):
    """With ``max_steps: 2`` a generated task is its planning and final steps only, but a
    ``step_tiers`` entry for a step-mix type (tool_call) was accepted and routed nothing."""
    path = agentic_file(tmp_path, "{planning: bf16, final: bf16, tool_call: fp8}")
    path.write_text(path.read_text().replace("tool_s_median: 2.0}",
                                             "tool_s_median: 2.0, max_steps: 2}"))
    scn = load_scenario(path)
    with pytest.raises(ScenarioError) as info:
        check_step_tiers(scn, steps(["planning", "final"]), str(path))
    assert str(info.value) == (
        f"{path}: router.step_tiers.tool_call: workload.sessions.generate makes no "
        "'tool_call' step; its step types are final, planning")
