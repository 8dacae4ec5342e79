"""Round 56, review56d: a scenario's ``plan`` block after left56 let ``plan.hours_per_month``
stand without ``plan.current``.

``tiersim run`` and ``tiersim sweep`` leave the ``plan`` block aside (``PlanConfig``), yet
refused ``plan: {hours_per_month: 100}`` as "plan.current: required key is missing", a key
``tiersim plan`` no longer needs there: the same scenario planned but did not run. A block
that gives neither key is still refused so. And a ``plan`` block naming today's fleet without
``hours_per_month`` recorded the default 730 in plan.json as hours given (``month_hours``),
where PlanResult.hours_per_month is documented None, and not written, unless given.
"""

from __future__ import annotations

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli.plan_current import month_hours
from tiersim.errors import ScenarioError
from tiersim.scenario import load_scenario, scenario_from_dict


def test_run_reads_a_plan_block_of_hours_alone(tmp_path):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(plan={"hours_per_month": 100}))
    assert load_scenario(path).plan.hours_per_month == 100.0


def test_a_sweep_point_reads_a_plan_block_of_hours_alone():
    point = scenario_from_dict(tiny_doc(plan={"hours_per_month": 100}), "point")
    assert point.plan.hours_per_month == 100.0


def test_a_plan_block_giving_neither_key_is_still_refused(tmp_path):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(plan={}))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).endswith(
        "plan: gives neither of its keys: give current (today's fleet, e.g. [{tier: bf16, "
        "replicas: 4}]) or hours_per_month (hours a month is paid for), or leave the block out"
    )


@pytest.mark.parametrize(
    ("block", "hours"),
    [
        ({"current": [{"tier": "bf16", "replicas": 2}]}, None),
        ({"current": [{"tier": "bf16", "replicas": 2}], "hours_per_month": 730}, 730.0),
        ({"hours_per_month": 100}, 100.0),
    ],
)
def test_the_month_is_given_only_where_written(tmp_path, block, hours):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(plan=block))
    scenario = load_scenario(path, fit=False)
    assert month_hours(scenario, None) == hours
    assert month_hours(scenario, 200.0) == 200.0
