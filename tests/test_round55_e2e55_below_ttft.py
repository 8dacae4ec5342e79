"""Round 55, e2e55: an end-to-end SLO below the TTFT one is noted, in one line.

A request's end-to-end time holds its time to first token, so with ``slo.e2e_p99_s`` below
``slo.ttft_p99_s`` the TTFT limit can never bind; before, neither a run nor a plan said so.
The note names the file, both keys (or the option that set one) and the fix. Equal limits are
no note: docs/planning.md sets them equal on purpose to judge turns by end-to-end time alone.
No figure is read (``agentic.yaml`` at 10 tasks; the plan's sizing is not asserted).
"""

from __future__ import annotations

import json
import warnings

from conftest import agentic_file, run_cli


def _notes(e2e, ttft, source="s.yaml"):
    from tiersim.scenario_checks import note_e2e_below_ttft

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        note_e2e_below_ttft(e2e, ttft, source)
    return [str(w.message) for w in caught]


def test_only_a_limit_below_is_noted():
    assert _notes(1.5, 2.0) == [
        "s.yaml: slo.e2e_p99_s 1.5 is below slo.ttft_p99_s 2.0, so the TTFT limit can never "
        "bind (a request's end-to-end time holds its time to first token): lower "
        "slo.ttft_p99_s to 1.5, or raise slo.e2e_p99_s above 2.0"]
    assert _notes(2.0, 2.0) == []  # docs/planning.md's way to hold turns by end-to-end alone
    assert _notes(30.0, 2.0) == []
    assert _notes(None, 2.0) == []


def test_a_run_notes_it_once_in_console_and_summary(tmp_path):
    path = agentic_file(tmp_path, 10, ttft_p99_s=40, e2e_p99_s=30)
    out = run_cli("run", str(path), "--out", str(tmp_path / "o"))
    assert out.returncode == 0, out.stderr
    line = (f"note: {path}: slo.e2e_p99_s 30.0 is below slo.ttft_p99_s 40.0, so the TTFT limit "
            "can never bind (a request's end-to-end time holds its time to first token): lower "
            "slo.ttft_p99_s to 30.0, or raise slo.e2e_p99_s above 40.0")
    assert out.stderr.splitlines().count(line) == 1
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert [n for n in summary["notes"] if "never bind" in n] == [
        line.replace(f"note: {path}", "note: s.yaml")[len("note: "):]]
    assert "TTFT limit can never bind" in (tmp_path / "o" / "report.html").read_text()


def test_a_plan_names_the_option_and_notes_it_with_no_fleet_planned(tmp_path):
    path = agentic_file(tmp_path, 10)
    out = run_cli("plan", str(path), "--slo-e2e-p99", "1.5", "--check-seeds", "0",
                  "--out", str(tmp_path / "p"))
    assert out.stdout.startswith("no fleet meets the constraints")
    assert (f"note: {path}: --slo-e2e-p99 1.5 is below slo.ttft_p99_s 2.0, so the TTFT limit "
            "can never bind (a request's end-to-end time holds its time to first token): lower "
            "slo.ttft_p99_s to 1.5, or raise --slo-e2e-p99 above 2.0") in out.stderr.splitlines()
