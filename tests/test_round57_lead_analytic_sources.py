"""Round 57, lead (review57's doubt): summary.json's ``analytic.sources`` named where dC*, c0
and dc come from, but not p, eps, delta or the two frontiers the block also writes; every
figure the tool writes says where it comes from. Each figure of the block now has its source,
p's naming how the easy requests were told apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiersim.summary import estimate_sources

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", ["tiny", "agentic", "cascade_models"])
def test_every_figure_of_the_analytic_block_has_a_source(name):
    block = json.loads((GOLDEN / f"{name}_summary.json").read_text())["analytic"]
    figures = [k for k in block["params"] if k not in ("cheap", "top")]
    assert len([k for k, v in block.items() if isinstance(v, list)]) == 2  # the frontiers
    assert sorted(block["sources"]) == sorted([*figures, "oracle_frontier", "static_frontier"])


def test_p_says_how_the_easy_requests_were_told_apart():
    by_class = estimate_sources("fp8", "bf16", "expected", classes_given=True)
    by_draws = estimate_sources("fp8", "bf16", "realised", classes_given=False)
    assert by_class["p"] == (
        "the share of easy requests: the requests whose difficulty_class is not hard (set by "
        "workload.difficulty, or the trace's own where it gives correct_<tier> labels)"
    )
    assert by_draws["p"] == ("the share of easy requests: the requests fp8 answers as well as "
                             "bf16 on the realised draws")
    assert by_draws["delta"] == ("the mean loss of realised accuracy from bf16 to fp8 over the "
                                 "other requests")
