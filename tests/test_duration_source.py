"""Where the duration of a run that served no request comes from: the trace's arrivals, not
"none" (before: "duration 60.0 s | none (no requests served)" on the console and in the report,
a number said to come from nowhere)."""

from __future__ import annotations


def test_duration_of_a_run_that_served_nothing_comes_from_the_arrivals(tmp_path):
    from conftest import run_nothing_answered

    done = run_nothing_answered(tmp_path)
    row = next(line for line in done.stdout.splitlines() if "│ duration" in line)
    assert "trace (the last arrival: no request was served)" in row
    page = (tmp_path / "o" / "report.html").read_text()
    assert "│ 60.0 s " in row  # the report's 3 figures are the console's (59.96 before)
    assert ("<td>simulated duration</td><td class=\"num\">60.0</td><td>s</td>"
            "<td>trace (the last arrival: no request was served)</td>") in page
