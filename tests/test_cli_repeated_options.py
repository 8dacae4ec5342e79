"""An option given twice is one error line: the framework (and argparse, for calibrate) kept
the last value silently, so ``tiersim run --out a --out b`` wrote to b and ``--report
--no-report`` skipped the report."""

from __future__ import annotations

import pytest

from tiersim.cli import main


@pytest.mark.parametrize(("argv", "line"), [
    (["run", "tiny", "--out", "a", "-o", "b"],
     "--out is given 2 times; give it once (only the last would count); see tiersim run --help"),
    (["run", "tiny", "--report", "--no-report"],
     "--report and --no-report are both given; give one (only the last would count); see "
     "tiersim run --help"),
    (["analytic", "--p=0.8", "--p", "0.5", "--eps", "0", "--delta", "0.1"],
     "--p is given 2 times; give it once (only the last would count); see tiersim analytic "
     "--help"),
    (["trace", "inspect", "x.csv", "--window", "0", "1", "--window", "2", "3"],
     "--window is given 2 times; give it once (only the last would count); see tiersim trace "
     "inspect --help"),
    (["calibrate", "--device", "cpu", "--quick", "--out", "a.json", "--out", "b.json"],
     "--out is given 2 times; give it once (only the last would count); see tiersim calibrate "
     "--help"),
    (["calibrate", "--dev", "cpu", "--device", "cuda", "--out", "a.json"],
     "--device is given 2 times; give it once (only the last would count); see tiersim "
     "calibrate --help"),
    (["calibrate", "--from", "aiconfigurator", "--gpu", "h200", "--gpu", "h100", "--out",
      "a.json"],
     "--gpu is given 2 times; give it once (only the last would count); see tiersim calibrate "
     "--from aiconfigurator --help"),
])
def test_an_option_given_twice_is_one_line(tmp_path, monkeypatch, capsys, argv, line):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    assert capsys.readouterr().err.strip() == f"Error: {line}"
    assert list(tmp_path.iterdir()) == []


def test_a_flag_repeated_as_itself_and_a_multiple_option_are_taken(tmp_path, monkeypatch,
                                                                   capsys):
    """Repeating a flag the same way changes nothing, and ``plan --choose`` is meant to be
    given many times: neither is refused."""
    from tiersim.cli.app import _refuse_repeated_options

    monkeypatch.chdir(tmp_path)
    _refuse_repeated_options(["run", "tiny", "--no-report", "--no-report"])
    _refuse_repeated_options(["plan", "tiny", "--choose", "router.floor=0.8", "--choose",
                              "router.floor=0.9"])
    assert main(["analytic", "--json", "--json", "--p", "0.5", "--eps", "0", "--delta",
                 "0.1"]) == 0
    assert '"dC_star"' in capsys.readouterr().out
