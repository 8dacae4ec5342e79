"""summary.json's closed-form note (no trade to model) is shown in the report, which before
showed the closed form only when it had parameters and dropped the note without a word."""

from __future__ import annotations

import dataclasses

from conftest import tiny_doc, write_yaml

from tiersim.report.page import closed_form_note
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario


def test_the_closed_form_note_is_in_the_report(tmp_path):
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), baselines=True)
    note = "bf16 is not dearer than w4a16: no trade to model"
    noted = dataclasses.replace(run, analytic={"note": note})
    assert closed_form_note(noted) == (f"<h3>Against the closed form</h3><p>{note}</p>")
