"""fresh54 (round 54, new user, inference engineer): the plan report's "Other designs" row of a
uniform fleet names the serving techniques it was sized with, as the console's line does.

fresh54's plan (Qwen3-32B, FP8 with speculative decoding) printed "uniform fp8 (7 x 1 GPU, spec
decode k=3): accuracy 89.96% < floor 90.00%", and the report's row read "fp8 | fp8 7 | 4.11 |
accuracy ...", with nothing to say that uniform FP8 decoded speculatively; a split tier's
uniform fleet likewise lost its "(2P 2D)" there, though `plan_text._uniform_line`'s docstring
said the report shows it. The row now reads "fp8 7 (spec decode k=3)".
"""

from __future__ import annotations

import re

from tiersim.fleet_sizes import sized_words
from tiersim.report.page import plan_section
from tiersim.results_plan import PlanResult

UNIFORM_SPEC = {"design": "fp8", "replicas": {"fp8": 7}, "gpus_per_replica": {"fp8": 1},
                "feasible": False, "missed": "accuracy 89.96% < floor 90.00%",
                "cost_usd": 4.109218272, "cost_per_hour_usd": 24.5, "tiers": ["fp8"],
                "per_tier": {"fp8": {"replicas": 7, "techniques": "spec decode k=3",
                                     "prefill": None}}}
UNIFORM_SPLIT = {"design": "bf16", "replicas": {"bf16": 4}, "gpus_per_replica": {"bf16": 1},
                 "feasible": True, "missed": "meets every constraint", "cost_usd": 1.0,
                 "cost_per_hour_usd": 14.0, "tiers": ["bf16"],
                 "per_tier": {"bf16": {"replicas": 4, "prefill": 2}}}


def test_sized_words_can_name_each_tiers_split_and_techniques():
    assert sized_words(UNIFORM_SPEC) == "fp8 7"  # as before, where the words are not asked
    assert sized_words(UNIFORM_SPEC, techniques=True) == "fp8 7 (spec decode k=3)"
    assert sized_words(UNIFORM_SPLIT, techniques=True) == "bf16 4 (2P 2D)"


def _other_rows(plan: PlanResult) -> list[str]:
    page = plan_section(plan)
    other = page[page.index("<h3>Other designs</h3>"):]
    return re.findall(r"<tr><td>.*?</tr>", other)


def test_the_report_row_of_a_uniform_fleet_names_its_techniques():
    chosen = {"design": "fp8+bf16", "replicas": {"fp8": 6, "bf16": 1},
              "gpus_per_replica": {"fp8": 1, "bf16": 1}, "feasible": True,
              "cost_usd": 4.11, "cost_per_hour_usd": 24.5, "cost_model": "provisioned",
              "tiers": ["fp8", "bf16"], "margins": {}, "router": {"policy": "floor"},
              "per_tier": {"fp8": {"replicas": 6, "techniques": "spec decode k=3"},
                           "bf16": {"replicas": 1}}}
    rows = _other_rows(PlanResult(scenario="s", constraints={}, plan=chosen,
                                  uniform=(UNIFORM_SPEC, UNIFORM_SPLIT), simulations=54,
                                  wall_s=124.2, cost_model="provisioned"))
    assert any("<td>fp8 7 (spec decode k=3)</td>" in row for row in rows), rows
    assert any("<td>bf16 4 (2P 2D)</td>" in row for row in rows), rows
