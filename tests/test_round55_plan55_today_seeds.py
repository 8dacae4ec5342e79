"""Round 55, plan55: today's fleet in the seed check. The plan's fleet was checked at the seeds
after the plan's, but today's fleet (``plan.current`` / ``--current``) only at the plan's own
seed, so a saving against it could not say whether today's fleet, too, holds at other draws
(note54, "Left"). The seed check now simulates today's fleet at each checked seed, as it
re-checks the fleets the plan turned away (an evaluator of the scenario searched with only its
seed changed), into plan.json ``seed_check.current`` (read strictly), and says in one line at
how many seeds it meets the constraints and what it missed where; the report's "At other
seeds" block gives the same line. Under ``--robust`` today's figures are already the worst
over those seeds, so no line is added.

Every figure is modelled: tests/test_round51_seeds.py's routed FP8 + BF16 scenario (three
minutes of the code trace at 5x, planned at seed 1, floor 0.80), whose plan FP8 1 + BF16 2
meets the constraints at seed 1 only; tiny for the rest.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml
from test_round51_seeds import plan, routed_doc

from tiersim.errors import TiersimError
from tiersim.results import PlanResult
from tiersim.results_seeds import today_line


def _planned(tmp_path: Path, doc: dict, *args: str) -> tuple[list[str], dict, str]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, out, _ = plan(str(path), "--out", str(tmp_path / "p"), *args)
    assert code == 0, out
    page = (tmp_path / "p" / "report.html")
    return (out.splitlines(), json.loads((tmp_path / "p" / "plan.json").read_text()),
            html.unescape(page.read_text()) if page.exists() else "")


@pytest.fixture(scope="module")
def same_as_plan(tmp_path_factory):
    """The routed scenario with today's fleet the plan's own, FP8 1 + BF16 2 x 1 GPU."""
    return _planned(tmp_path_factory.mktemp("today"), routed_doc(), "--current", "fp8=1",
                    "--current", "bf16=2")


def test_today_as_the_plan_reads_as_the_plans_check(same_as_plan):
    """Two paths to the same fleet at the same seeds (the planned scenario's run, and today's
    fleet routed by the scenario's floor router at 0.80, the plan's setting) give the same
    figures and the same misses: p99 TPOT at seeds 2-4, the floor at seed 4."""
    lines, data, page = same_as_plan
    check = data["seed_check"]
    line = ("today's fleet (fp8 1 x 1 GPU + bf16 2 x 1 GPU) meets the SLOs and the accuracy floor "
            "at 1 of 4 seeds (1); p99 TPOT missed at seeds 2, 3, 4; accuracy floor missed at "
            "seed 4")
    assert "    " + line in lines
    assert lines.index("    " + line) > lines.index(next(x for x in lines if x.startswith(
        "    the saving is not robust")))
    assert check["current"]["met_seeds"] == []
    keys = ("seed", "ttft_p99_s", "tpot_p99_s", "accuracy", "dropped", "missed")
    assert ([{k: r[k] for k in keys} for r in check["current"]["per_seed"]]
            == [{k: r[k] for k in keys} for r in check["per_seed"][1:]])
    said = re.search(r"<h3>At other seeds</h3><p>(.*?)</p>", page).group(1).split("<br>")
    assert line in said


def test_a_fleet_that_holds_says_so_at_every_seed(tmp_path):
    lines, data, _ = _planned(tmp_path, tiny_doc(), "--current", "bf16=2", "--check-seeds", "2",
                              "--no-report")
    assert "    today's fleet (bf16 2 x 1 GPU) meets the SLOs at 3 of 3 seeds (0, 1, 2)" in lines
    assert data["seed_check"]["current"]["met_seeds"] == [1, 2]


def test_no_line_without_today_or_under_robust(tmp_path):
    lines, data, _ = _planned(tmp_path / "a", tiny_doc(), "--check-seeds", "1", "--no-report")
    assert "current" not in data["seed_check"]
    assert not any("today's fleet" in x for x in lines)
    lines, data, _ = _planned(tmp_path / "b", tiny_doc(), "--current", "bf16=2", "--robust",
                              "--check-seeds", "1", "--no-report")
    assert "current" not in data["seed_check"] and data["current"]["seeds"] == [0, 1]
    assert not any(x.startswith("    today's fleet") for x in lines)


def test_today_missing_at_the_plans_seed_counts_there():
    """The plan's seed is plan.json ``current``'s verdict, its misses read from its words."""
    check = {"planned_seed": 0, "seeds": [0, 1], "accuracy_floor": 0.9,
             "current": {"met_seeds": [1], "per_seed": [{"seed": 1, "missed": []}]}}
    current = {"tiers": ["bf16"], "replicas": {"bf16": 1}, "gpus_per_replica": {"bf16": 1},
               "meets_slos": False, "meets_floor": False,
               "missed": "ttft_p99_s 0.334 vs limit 0.3; accuracy 89.0% < floor 90.0%"}
    assert today_line(check, current) == [
        "    today's fleet (bf16 1 x 1 GPU) meets the SLOs and the accuracy floor at 1 of 2 seeds "
        "(1); p99 TTFT missed at seed 0; accuracy floor missed at seed 0"]


@pytest.mark.parametrize(("edit", "said"), [
    (lambda d: d.pop("current"), "'plan.seed_check.current' is today's fleet at the checked "
     "seeds, got it with no today's fleet ('plan.current')"),
    (lambda d: d["seed_check"]["current"]["per_seed"].pop(), "'plan.seed_check.current.per_seed' "
     "must hold a row for each checked seed [2, 3, 4] in order, got the seeds [2, 3]"),
    (lambda d: d["seed_check"]["current"].update(met_seeds=[2]), "'plan.seed_check.current."
     "met_seeds' must be the seeds whose row missed nothing, [], got [2]"),
])
def test_a_hand_edited_check_of_today_is_malformed(same_as_plan, edit, said):
    _, data, _ = same_as_plan
    data = json.loads(json.dumps(data))
    edit(data)
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(data, "p/plan.json")
    assert str(err.value) == (f"p/plan.json: malformed plan ({said}); rerun `tiersim plan` to "
                              "rewrite it")
