"""A sweep point that fails once it runs names the line of the key that made it fail, as a
plain run of its values does: the axis' key in the sweep map where the axis set that key, else
the base scenario's key. It named the key alone (``s.yaml: trace.window: ...``) where ``tiersim
run`` says ``s.yaml: line 11: trace.window: ...``."""

from __future__ import annotations

import json

import pandas as pd
from conftest import axis_line, cheap_first_tiers, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

FAR = [900000, 900010]
"""A window past the end of the bundled trace: it selects no request, which only a run finds
(it reads the trace), not the checks made before the sweep starts."""


def _sweep(tmp_path, capsys, doc: dict) -> tuple[str, dict]:
    """Sweep ``doc`` (written to tmp_path/s.yaml) into tmp_path/o: its one error line and the
    error of its one failed point's record."""
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "o",
                                   "--no-baselines", "--no-report", "--workers", "1"))
    records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "points").glob("*.json")]
    return line, next(r["error"] for r in records if r["status"] != "ok")


def _run_error(tmp_path, capsys, doc: dict) -> str:
    """``tiersim run``'s error for ``doc`` (written to tmp_path/run.yaml), less ``Error: ``."""
    path = write_yaml(tmp_path / "run.yaml", doc)
    line = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "r",
                                   "--no-baselines", "--no-report"))
    return line.removeprefix("Error: ")


def test_a_point_failing_on_its_axis_value_names_the_axis_line(tmp_path, capsys):
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 300]},
                   tiers=cheap_first_tiers())  # no tier-order note beside the error line
    plain = _run_error(tmp_path, capsys, {**doc, "trace": {**doc["trace"], "window": FAR}})
    run_line = next(i for i, t in enumerate((tmp_path / "run.yaml").read_text().splitlines(), 1)
                    if t.strip().startswith("window:"))
    assert plain.startswith(f"{tmp_path / 'run.yaml'}: line {run_line}: trace.window: ")
    line, error = _sweep(tmp_path, capsys, {**doc, "sweep": {"trace.window": [[240, 300], FAR]}})
    path = tmp_path / "s.yaml"
    assert error == (f"{path}: line {axis_line(path, 'trace.window')}: sweep: 'trace.window': "
                     + plain.removeprefix(f"{tmp_path / 'run.yaml'}: line {run_line}: "))
    assert f"first at trace.window=[900000, 900010]: {error[:60]}" in line


def test_a_point_failing_at_a_key_no_axis_set_names_the_base_line(tmp_path, capsys):
    short = tmp_path / "short.parquet"
    pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": 10,
                  "output_tokens": 5}).to_parquet(short)
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 300]},
                   tiers=cheap_first_tiers())  # no tier-order note beside the error line
    doc["sweep"] = {"trace.path": ["azure2023_code.parquet", "short.parquet"]}  # beside s.yaml
    line, error = _sweep(tmp_path, capsys, doc)
    path = tmp_path / "s.yaml"
    window = next(i for i, t in enumerate(path.read_text().splitlines(), 1)
                  if t.strip().startswith("window:"))
    assert error == (f"{path}: line {window}: trace.window: {short}: window [240, 300) s "
                     "selects no requests: the trace spans 0 to 2.0 s; choose a window inside "
                     "0 - 2.0 s")
    assert f"first at trace.path='short.parquet': {path}: line {window}: trace.window: " in line
