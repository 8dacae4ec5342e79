"""Round 50 leftovers (fresh50's trial): whole-number flags quoted as typed, trace inspect's
``--skip-longer-than``, the tiers table's util footnote, and uniform fleets labelled with
the serving techniques they keep."""

from __future__ import annotations

import pickle

from tiersim.cli import main


def _error_line(capsys, argv: list[str]) -> str:
    """The one stderr line of a refused command (status 1, nothing on stdout)."""
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    return captured.err.strip()


def test_a_whole_flag_keeps_its_text_until_checked_then_is_a_plain_int():
    """``--max-replicas 1e30`` quoted 10**30's 31 digits: a whole-number flag keeps its text
    as a float flag does (numbers.WrittenWhole), and is a plain int once checked."""
    from tiersim.cli.usage import read_flag_number
    from tiersim.numbers import WrittenWhole, plain_int

    number = read_flag_number(int, 1, None, "1e30")
    assert isinstance(number, WrittenWhole) and number == 10**30
    assert repr(number) == str(number) == f"{number}" == "1e30"
    assert pickle.loads(pickle.dumps(number)).text == "1e30"
    plain = plain_int(number)
    assert type(plain) is int and repr(plain) == str(10**30)
    assert plain_int(None) is None
    assert read_flag_number(int, 1, None, 5) == 5  # a default: no text to keep


def test_sweep_workers_is_quoted_as_typed(capsys, tmp_path):
    line = _error_line(capsys, ["sweep", "scenarios/tiny.yaml", "--out", str(tmp_path / "s"),
                                "--workers", "1e30"])
    assert line == "Error: --workers: must be from 1 to 1024 (got 1e30)"


def test_plan_writes_max_replicas_as_a_plain_int(tmp_path):
    """What ``--max-replicas 1e1`` writes into the planned scenario is the number 10, not
    the text (YAML could not write an int subclass)."""
    out = tmp_path / "p"
    assert main(["plan", "scenarios/tiny.yaml", "--max-replicas", "1e1", "--out",
                 str(out)]) == 0
    assert "  max_replicas: 10\n" in (out / "scenario.yaml").read_text()
