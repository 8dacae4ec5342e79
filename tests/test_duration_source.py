"""Where the duration of a run that served no request comes from: the trace's arrivals, not
"none" (before: "duration 60.0 s | none (no requests served)" on the console and in the report,
a number said to come from nowhere)."""

from __future__ import annotations


def test_duration_of_a_run_that_served_nothing_comes_from_the_arrivals(tmp_path):
    from conftest import run_cli, tiny_doc, write_yaml

    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 300]})
    for tier in doc["tiers"]:
        tier["scheduler"] = {"max_model_len": 16}
    path = write_yaml(tmp_path / "s.yaml", doc)
    done = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines")
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "│ duration" in line)
    assert "trace (the last arrival: no request was served)" in row
    page = (tmp_path / "o" / "report.html").read_text()
    assert ("<td>simulated duration</td><td class=\"num\">59.96</td><td>s</td>"
            "<td>trace (the last arrival: no request was served)</td>") in page
