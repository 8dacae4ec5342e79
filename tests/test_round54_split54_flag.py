"""Round 54 (split54): ``tiersim plan`` builds again. ``--hours-per-month`` was given
``number_flag(float)`` without the ``flag`` its refusals name, and every ``tiersim plan`` call
stopped on a traceback ("number_flag() missing 1 required keyword-only argument: 'flag'")
before reading its scenario."""

from __future__ import annotations

from conftest import TINY, run_cli


def test_plan_help_builds():
    """The plan command's options build; its help names the flag."""
    proc = run_cli("plan", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--hours-per-month" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_hours_per_month_unit_names_the_flag(tmp_path):
    """A unit typed after the number is refused in one line naming the flag (the ``flag``
    the option now passes)."""
    proc = run_cli("plan", str(TINY), "--out", str(tmp_path / "p"),
                   "--hours-per-month", "730h")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "--hours-per-month" in proc.stderr
