"""Round 54, review54b: bugs found reviewing the round's changes, each with the exact text or
figure the user sees."""

from __future__ import annotations

from test_hostile_inputs import run_cli


def _flag_line(capsys, *args) -> str:
    code, err = run_cli(capsys, *args)
    assert code == 1, err
    return err.splitlines()[-1]


def test_hours_per_month_with_a_unit_is_told_the_flag_and_what_to_type(tmp_path, capsys):
    """`tiersim plan --hours-per-month 730h` was told the scenario's words, "write the number
    alone (a scenario key's unit is in its name: GB for _gb, seconds for _s and for
    trace.window)": no flag has a key's name, and the flag, new this round, was the one number
    flag left out of tiersim.numbers.FLAG_KINDS (it was given no ``flag=``, so the check that
    every number flag is listed there did not see it). Worse, ``number_flag``'s ``flag`` had
    become a required keyword, so the option's ``number_flag(float)`` raised a TypeError as
    typer read ``tiersim plan``'s signature: every ``tiersim plan`` (``--help`` too) ended in a
    traceback."""
    code, _ = run_cli(capsys, "plan", "--help")
    assert code == 0
    out = str(tmp_path / "p")
    assert _flag_line(capsys, "plan", "tiny", "--hours-per-month", "730h", "--out", out) == (
        "Error: --hours-per-month: 730h has a unit, which tiersim does not read; "
        "--hours-per-month is in hours (730 for 24/7): type --hours-per-month 730; "
        "see tiersim plan --help")
    assert _flag_line(capsys, "plan", "tiny", "--hours-per-month", "30d", "--out", out) == (
        "Error: --hours-per-month: 30d has a unit, which tiersim does not read; "
        "--hours-per-month is in hours (730 for 24/7): type the number of hours alone, such "
        "as --hours-per-month 30; see tiersim plan --help")
