"""Round 56, review56: summary.json's sized uniform fleet whose end-to-end or task p99 is over
the SLO its ``slo_met`` says it meets is refused, as one over the TTFT or TPOT SLO is.

The reader checked ``savings.uniform.<tier>.ttft_p99_s`` and ``tpot_p99_s`` against the run's
SLOs (round 53) but not the ``e2e_p99_s`` added in round 55: a hand-edited figure over
``slo_e2e_p99_s`` beside ``slo_met: true`` rendered a page saying the fleet meets the SLOs.
"""

from __future__ import annotations

import json

from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli


def test_a_uniform_fleets_e2e_over_the_slo_it_meets_is_refused(tmp_path, capsys):
    doc = tiny_doc(slo={"ttft_p99_s": 2.0, "tpot_p99_s": 0.1, "e2e_p99_s": 5.0})
    path = write_yaml(tmp_path / "s.yaml", doc)
    folder = tmp_path / "r"
    assert run_cli(capsys, "run", path, "--out", folder, "--no-report")[0] == 0
    (folder / "manifest.json").unlink()
    data = json.loads((folder / "summary.json").read_text())
    fleet = data["savings"]["uniform"]["bf16"]
    assert fleet["slo_met"] is True and fleet["e2e_p99_s"] <= 5.0
    fleet["e2e_p99_s"] = 5.001
    (folder / "summary.json").write_text(json.dumps(data))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (
        f"Error: {folder / 'summary.json'}: malformed summary ('savings.uniform.bf16"
        ".e2e_p99_s' is 5.001, over the run's SLO (slo_e2e_p99_s 5.0), where its "
        "slo_met says the fleet meets it); rerun `tiersim run` to rewrite it"
    )
