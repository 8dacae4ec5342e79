"""Round 55, plan55: the plan's head line, "plan (4 simulations in 0.2 s): ...", gave the
search's simulations and time alone (plan.json ``simulations``, ``wall_s``), and read as the
whole command's, though ``tiersim plan`` also simulates the seed check and today's fleet
(fresh54b). Where it did, the line now names each part with its seconds and their sum:
"plan (4 simulations in 0.2 s of search; seed check 0.4 s; today's fleet 0.0 s; 0.7 s in
all)". plan.json ``current`` records today's fleet's ``wall_s`` (``seed_check.wall_s`` was
already there). The report's head gives the same words.

Times are measured (this machine, shared); every other figure is modelled (tiny).
"""

from __future__ import annotations

import html
import json
import re

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.errors import TiersimError
from tiersim.results import PlanResult
from tiersim.results_plan_lines import time_words


@pytest.mark.parametrize(("check", "current", "said"), [
    (None, None, "4 simulations in 0.2 s"),
    ({"wall_s": 1.25}, None, "4 simulations in 0.2 s of search; seed check 1.2 s; 1.4 s in all"),
    (None, {"wall_s": 0.5}, "4 simulations in 0.2 s of search; today's fleet 0.5 s; 0.7 s "
                            "in all"),
    ({"wall_s": 1.25}, {"wall_s": 0.5}, "4 simulations in 0.2 s of search; seed check 1.2 s; "
                                        "today's fleet 0.5 s; 1.9 s in all"),
    (None, {"cost_usd": 1.0}, "4 simulations in 0.2 s"),  # a plan.json from before round 55
])
def test_the_head_names_what_its_time_covers(check, current, said):
    assert time_words(4, 0.2, check, current) == said


def test_the_console_and_the_report_give_every_part(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "p"
    capsys.readouterr()
    assert main(["plan", str(path), "--current", "bf16=2", "--check-seeds", "1", "--out",
                 str(out)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    data = json.loads((out / "plan.json").read_text())
    parts = (data["simulations"], data["wall_s"], data["seed_check"]["wall_s"],
             data["current"]["wall_s"])
    assert all(w >= 0 for w in parts[1:])
    words = (f"{parts[0]} simulations in {parts[1]:.1f} s of search; seed check {parts[2]:.1f} s; "
             f"today's fleet {parts[3]:.1f} s; {sum(parts[1:]):.1f} s in all")
    assert head.startswith(f"plan ({words}): bf16: bf16=1x1 GPU; ")
    page = html.unescape((out / "report.html").read_text())
    assert re.search(re.escape(f"({words})"), page)


def test_a_negative_time_for_today_is_malformed(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    out = tmp_path / "p"
    assert main(["plan", str(path), "--current", "bf16=2", "--check-seeds", "0", "--no-report",
                 "--out", str(out)]) == 0
    data = json.loads((out / "plan.json").read_text())
    data["current"]["wall_s"] = -1.5
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(data, "p/plan.json")
    assert str(err.value) == ("p/plan.json: malformed plan ('plan.current.wall_s' must be >= 0, "
                              "got -1.5); rerun `tiersim plan` to rewrite it")
    data["current"].pop("wall_s")  # as written before round 55: read, and no part named
    assert PlanResult.from_json(data).current.get("wall_s") is None
