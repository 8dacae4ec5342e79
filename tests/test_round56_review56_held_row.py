"""Round 56, review56: the seed check's planned row gives the fleet's end-to-end p99.

The seed check's rows at the other seeds (``_seed_row``), a ``--robust`` plan's rows and the
rejected fleets' rows give the fleet's p99 end-to-end and task latency
(:func:`tiersim.plan.constraints.held_figures`), beside the fleet's p99 TTFT and TPOT; the
planned seed's row read it from the design's ``margins``, which under ``slo.scope: tier``
hold the worst of the fleet's and each tier's own. The check's range then spanned a tier's
figure at the plan's seed and the fleet's at the others. Tiny, modelled.
"""

from __future__ import annotations

from conftest import cheap_first_tiers, tiny_doc, write_yaml

from tiersim.cli.plan_seeds import _planned_row
from tiersim.plan.constraints import Constraints
from tiersim.plan.designs import DesignResult
from tiersim.plan.evaluate import Design, SimEvaluator
from tiersim.scenario import load_scenario


def test_the_planned_row_gives_the_fleets_e2e_under_tier_scope(tmp_path):
    doc = tiny_doc(
        tiers=cheap_first_tiers(),
        slo={"ttft_p99_s": 2.0, "tpot_p99_s": 0.1, "e2e_p99_s": 60.0, "scope": "tier"},
    )
    scenario = load_scenario(write_yaml(tmp_path / "s.yaml", doc))
    c = Constraints.of(scenario)
    design = Design(("w4a16", "bf16"), (1, 1))
    replicas = {"w4a16": 1, "bf16": 1}
    o = SimEvaluator(scenario, str(tmp_path / "s.yaml")).evaluate(design, replicas)
    own = max(t.e2e_p99_s for t in o.tiers.values())
    assert own > o.e2e_p99_s  # a tier's own is over the fleet's: the case at stake
    chosen = DesignResult(design, replicas, o, None, {}).as_dict(c)
    row = _planned_row(scenario.seed, chosen, None, "provisioned")
    assert row["e2e_p99_s"] == o.e2e_p99_s
    assert row["ttft_p99_s"] == o.ttft_p99_s
