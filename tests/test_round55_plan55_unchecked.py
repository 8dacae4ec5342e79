"""Round 55, plan55: `tiersim plan --check-seeds 0` printed "seed check: none (--check-seeds 0):
..." in the seed check's place, but plan.json held only ``seed_check: null``, so the report,
read from plan.json, could not say why no seed was checked and said nothing (report54 left the
line out for that). plan.json now writes ``seed_check_none`` (why), read strictly, and the
report's "At other seeds" block gives the console's line. A scenario at the largest seed, with
``--check-seeds`` left at its default, has no seed to check: it said "(--check-seeds 0) ...
leave --check-seeds out", a flag its user never typed, and now says why.

Figures are modelled (tiny's two minutes of Azure code traffic, roofline step times).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.errors import TiersimError
from tiersim.results import PlanResult

NONE_LINE = ("seed check: none (--check-seeds 0): every figure above is at the scenario's seed "
             "alone, whose draws (the router's fit, each request's correctness) can decide the "
             "plan; leave --check-seeds out to check the fleet at 3 more seeds")


def _plan(tmp_path: Path, capsys, *args: str, **doc) -> tuple[str, dict, str]:
    """``tiersim plan`` of tiny with ``doc``'s keys: its console, plan.json and report.html."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(**doc))
    out = tmp_path / "p"
    capsys.readouterr()
    code = main(["plan", str(path), "--out", str(out), *args])
    said = capsys.readouterr()
    assert code == 0, said.out + said.err
    page = (out / "report.html").read_text() if (out / "report.html").exists() else ""
    return said.out, json.loads((out / "plan.json").read_text()), page


def _other_seeds(page: str) -> list[str]:
    """The report's "At other seeds" block's lines, as text."""
    found = re.findall(r"<h3>At other seeds</h3><p>(.*?)</p>", page)
    return [html.unescape(x) for block in found for x in block.split("<br>")]


@pytest.fixture(scope="module")
def unchecked(tmp_path_factory, pytestconfig):
    """One plan of tiny at --check-seeds 0, with its report (the module's other tests read it)."""
    folder = tmp_path_factory.mktemp("none")
    path = write_yaml(folder / "s.yaml", tiny_doc())
    from tiersim.cli.plan import format_plan, plan_capacity

    result = plan_capacity(path, out_dir=folder / "p", report=True, check_seeds=0)
    return (result, format_plan(result), json.loads((folder / "p" / "plan.json").read_text()),
            (folder / "p" / "report.html").read_text())


def test_the_console_plan_json_and_report_say_why_none_was_checked(tmp_path, capsys):
    out, data, page = _plan(tmp_path, capsys, "--check-seeds", "0")
    assert "  " + NONE_LINE in out.splitlines()
    assert (data["seed_check"], data["seed_check_none"]) == (None, "--check-seeds 0")
    assert _other_seeds(page) == [NONE_LINE]


def test_a_checked_plan_writes_no_reason(tmp_path, capsys):
    out, data, page = _plan(tmp_path, capsys, "--check-seeds", "1")
    assert "seed_check_none" not in data and data["seed_check"]["seeds"] == [0, 1]
    assert "seed check: none" not in out and "seed check: none" not in page


def test_a_scenario_at_the_largest_seed_says_no_seed_follows_it(tmp_path, capsys):
    """--check-seeds left at its default (3) on a scenario at seed 2**63 - 1: no seed to check
    (a note says so before the plan), and the line no longer names a flag not typed."""
    out, data, page = _plan(tmp_path, capsys, seed=2**63 - 1)
    line = ("seed check: none (no seed follows the scenario's): every figure above is at the "
            "scenario's seed alone, whose draws (the router's fit, each request's correctness) "
            "can decide the plan; lower its seed to check the fleet at 3 more seeds")
    assert "  " + line in out.splitlines() and "--check-seeds 0" not in out
    assert data["seed_check_none"] == "no seed follows the scenario's"
    assert _other_seeds(page) == [line]


def test_no_fleet_planned_writes_no_reason(tmp_path, capsys):
    """Where no fleet meets the constraints nothing was planned to check: no line, no key."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    capsys.readouterr()
    code = main(["plan", str(path), "--check-seeds", "0", "--slo-ttft-p99", "0.001",
                 "--no-report", "--out", str(tmp_path / "p")])
    out = capsys.readouterr().out
    data = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert (code, data["plan"], "seed_check_none" in data) == (1, None, False)
    assert "seed check: none" not in out


def test_plan_json_reads_back_with_the_reason(unchecked):
    result, _, data, _ = unchecked
    assert result.seed_check_none == "--check-seeds 0"
    read = PlanResult.from_json(data)
    assert read.seed_check_none == "--check-seeds 0" and read.to_json() == data


@pytest.mark.parametrize(("edit", "said"), [
    ({"seed_check_none": "why not"}, "'plan.seed_check_none' must be one of \"--check-seeds 0\", "
                                     "\"no seed follows the scenario's\", got \"why not\""),
    ({"seed_check_none": 0}, "'plan.seed_check_none' must be str, got 0"),
    ({"plan": None}, "'plan.seed_check_none' says why a planned fleet was checked at no other "
                     "seed, got it with no fleet planned"),
    ({"seed_check": "SEED_CHECK"}, "'plan.seed_check_none' says why a planned fleet was checked "
                                   "at no other seed, got it beside a seed_check"),
])
def test_a_hand_edited_reason_is_the_one_malformed_line(unchecked, tmp_path, capsys, edit,
                                                       said):
    """The strict reader refuses a reason no plan writes, and one that contradicts the rest
    of the file (beside a seed check, or with no fleet planned)."""
    _, _, data, _ = unchecked
    if edit.get("seed_check") == "SEED_CHECK":  # a real check's record, from a checked plan
        checked = _plan(tmp_path, capsys, "--check-seeds", "1", "--no-report")[1]
        edit = {"seed_check": checked["seed_check"]}
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json({**data, **edit}, "p/plan.json")
    assert str(err.value) == (f"p/plan.json: malformed plan ({said}); rerun `tiersim plan` to "
                              "rewrite it")


def test_a_plan_json_before_round_55_reads_as_before(unchecked):
    """No ``seed_check_none``: read, and the report has no "At other seeds" block."""
    from tiersim.report.page import seed_check_section

    _, _, data, _ = unchecked
    old = {k: v for k, v in data.items() if k != "seed_check_none"}
    result = PlanResult.from_json(old)
    assert result.seed_check_none is None
    assert seed_check_section(result.seed_check, result.seed_check_none) == ""
