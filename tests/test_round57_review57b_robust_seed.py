"""Round 57, review57b: plan.json's reader refuses a round-57 robust record
(``baseline_cost_seed`` given) whose ``worst_seed.cost_usd`` is left out or null. It was read,
and the report's saving table said "the plan's costliest run (seed None) against bf16's
(seed 4)"; the reader now names the key.
"""

from __future__ import annotations

import copy

import pytest
from test_round57_plan57 import attributed  # noqa: F401  (the module's fixture)

from tiersim.errors import TiersimError
from tiersim.results import PlanResult


@pytest.mark.parametrize("how", ["left out", "null"])
def test_a_robust_plan_without_its_costliest_seed_is_refused(attributed, how):  # noqa: F811
    _, data = attributed
    data = copy.deepcopy(data)
    worst = data["robust"]["worst_seed"]
    if how == "left out":
        del worst["cost_usd"]
    else:
        worst["cost_usd"] = None
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(data)
    assert str(err.value) == (
        "plan.json: malformed plan ('plan.robust.worst_seed.cost_usd' must name a seed of "
        "'plan.robust.per_seed', got null); rerun `tiersim plan` to rewrite it"
    )


def test_the_plan_as_written_still_reads(attributed):  # noqa: F811
    _, data = attributed
    assert PlanResult.from_json(copy.deepcopy(data)).robust["baseline_cost_seed"] == 4
