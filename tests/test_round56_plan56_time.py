"""Round 56, plan56: the plan's head line names the prefill/decode split comparison's seconds.

Since round 55 the head line names each part the command simulated beside the search (the seed
check, today's fleet) and their sum, "in all"; the split comparison of a planned tier with a
``disaggregation`` block (every split of its replicas and aggregated serving simulated after
the search) was in none of them, though it ran: on disagg.yaml 0.6 s beside 1.9 s of search
(measured, a shared 2-core machine). Each split record in plan.json (``disaggregation``,
``other_splits``) now gives its ``wall_s``, and the line "split comparison X s", their sum.
The planned run DIR gets is still in none of them (docs/planning.md says so).
"""

from __future__ import annotations

import html
import json

import pytest

from tiersim.cli import main
from tiersim.paths import bundled
from tiersim.results_plan_lines import time_words


@pytest.mark.parametrize(
    ("splits", "said"),
    [
        (None, "4 simulations in 0.2 s of search; seed check 1.2 s; 1.4 s in all"),
        (
            [{"wall_s": 0.5}],
            "4 simulations in 0.2 s of search; split comparison 0.5 s; seed "
            "check 1.2 s; 1.9 s in all",
        ),
        (
            [{"wall_s": 0.5}, {"wall_s": 0.25}],
            "4 simulations in 0.2 s of search; split "
            "comparison 0.8 s; seed check 1.2 s; 2.2 s in all",
        ),
        ([{"tier": "bf16"}], "4 simulations in 0.2 s of search; seed check 1.2 s; 1.4 s in all"),
    ],
)
def test_the_split_comparison_is_a_part_of_its_own(splits, said):
    """Named first after the search (it runs before the seed check); a plan.json written
    before round 56 (no ``wall_s`` in its split records) reads as before."""
    assert time_words(4, 0.2, {"wall_s": 1.25}, None, splits) == said


def test_a_split_plan_names_it_in_console_and_report(tmp_path, capsys):
    out = tmp_path / "p"
    capsys.readouterr()
    path = bundled("scenarios", "disagg.yaml")
    assert main(["plan", str(path), "--check-seeds", "0", "--out", str(out)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    data = json.loads((out / "plan.json").read_text())
    split = data["disaggregation"]["wall_s"] + sum(s["wall_s"] for s in data["other_splits"])
    assert split > 0
    words = (
        f"{data['simulations']} simulations in {data['wall_s']:.1f} s of search; split "
        f"comparison {split:.1f} s; {data['wall_s'] + split:.1f} s in all"
    )
    assert head.startswith(f"plan ({words}): ")
    assert f"({words})" in html.unescape((out / "report.html").read_text())
