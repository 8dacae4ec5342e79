"""Round 56, left56: ``--hours-per-month`` (or a scenario's ``plan.hours_per_month``) without
today's fleet was refused ("names no fleet run today, so there is no month to price"), though
``tiersim plan`` now prices a month of its saving against its baseline without one. The hours
now stand alone: they set that line's month, and plan.json records them (``hours_per_month``)
so ``tiersim report DIR`` gives the same line; a plan.json without the field reads as before
(730 hours).

Figures are modelled (tiny at 6x its load, roofline step times): the plan fp8 3 + bf16 1 is
1.00 USD/hour cheaper than its baseline, uniform bf16.
"""

from __future__ import annotations

import html
import json
import re
import warnings
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml
from test_round56_fresh56_plan_accuracy import CHOSEN, ROUTED, UNIFORM

from tiersim.cli import main
from tiersim.errors import Note, TiersimError
from tiersim.results_plan import PlanResult
from tiersim.results_plan_lines import baseline_line

LINE = (
    "  against the saving's baseline (uniform bf16): 1.00 USD/hour less, {usd} USD less a "
    "month of {hours} hours ({always}both fleets provisioned for the trace's load; "
    "modelled); expected accuracy "
)


def _routed(folder: Path, **extra) -> Path:
    doc = tiny_doc(**ROUTED, **extra)
    doc["trace"] = {**doc["trace"], "time_scale": 6.0}
    return write_yaml(folder / "routed.yaml", doc)


def _plan(capsys, path: Path, out: Path, *args: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Note)
        code = main(["plan", str(path), "--check-seeds", "0", "--out", str(out), *args])
    text = capsys.readouterr()
    assert code == 0, text.out + text.err
    return text.out


def _the_line(text: str) -> str:
    return next(line for line in text.splitlines() if "against the saving's baseline" in line)


def _page_has(out: Path, line: str) -> bool:
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    return f"|{line.strip()}|" in page


def test_the_typed_hours_set_the_month_and_the_report_rereads_them(tmp_path, capsys):
    out = tmp_path / "p"
    text = _plan(capsys, _routed(tmp_path), out, "--hours-per-month", "200")
    line = _the_line(text)
    assert line.startswith(LINE.format(usd="200", hours="200", always=""))
    assert json.loads((out / "plan.json").read_text())["hours_per_month"] == 200.0
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0
    capsys.readouterr()
    assert _page_has(out, line)


def test_the_scenarios_hours_stand_without_its_current(tmp_path, capsys):
    out = tmp_path / "p"
    text = _plan(capsys, _routed(tmp_path, plan={"hours_per_month": 100}), out, "--no-report")
    assert _the_line(text).startswith(LINE.format(usd="100", hours="100", always=""))
    assert json.loads((out / "plan.json").read_text())["hours_per_month"] == 100.0


def test_no_hours_given_write_no_field_and_an_older_plan_reads_730(tmp_path, capsys):
    out = tmp_path / "p"
    text = _plan(capsys, _routed(tmp_path), out, "--no-report")
    assert _the_line(text).startswith(LINE.format(usd="730", hours="730", always="24/7, "))
    data = json.loads((out / "plan.json").read_text())
    assert "hours_per_month" not in data
    plan = PlanResult.from_json(data)
    assert plan.hours_per_month is None
    assert " a month of 730 hours " in baseline_line(plan.plan, plan.uniform, plan.current)


def test_the_hours_beat_todays_default_month_and_stand_alone():
    line = baseline_line(CHOSEN, UNIFORM, None, 200.0)
    assert "3.50 USD/hour less, 700 USD less a month of 200 hours (both fleets" in line


@pytest.mark.parametrize("hours", [0, 745])
def test_hours_out_of_range_in_plan_json_are_a_malformed_plan(hours):
    data = {"scenario": "s", "constraints": {}, "plan": None, "hours_per_month": hours}
    with pytest.raises(TiersimError) as err:
        PlanResult.from_json(data)
    assert str(err.value) == (
        f"plan.json: malformed plan ('plan.hours_per_month' must be above 0 "
        f"and at most 744, got {hours}); rerun `tiersim plan` to rewrite "
        "it"
    )
