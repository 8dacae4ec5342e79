"""Round 32, helper mut: tests that kill mutants of last session's code which its tests let
survive (a flipped comparison, a dropped sign or tie-break), each a change a user could see.

Numbers (:mod:`tiersim.numbers`): a negative misspelling keeps its sign in the number to write
(``-0x10``: write -16), a sign is no digit of a number too long to read, YAML's ``.inf`` is
read as infinity (and refused by the flag's range, in one line), and a refused spelling of
exactly :data:`~tiersim.numbers.LONGEST_SHOWN` characters, or a number of exactly
:data:`~tiersim.numbers.MAX_INT_BITS` bits, is still shown whole.
"""

from __future__ import annotations

import pytest
from conftest import TINY
from test_round19 import error_line, run_cli

from tiersim.numbers import LONGEST_SHOWN, MAX_INT_BITS, misspelt, read_number, shown

ANALYTIC = ("analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3")
"""``tiersim analytic`` up to its ``--dc`` flag, which takes a number."""


# ---------------------------------------------------------------- tiersim.numbers


@pytest.mark.parametrize(("written", "why"), [
    ("-1:30", "-1:30 is base 60 to YAML 1.1 (-90); write -90"),
    ("-0x10", "-0x10 is hexadecimal; write -16"),
    ("-010", "-010 has a leading zero, which YAML 1.1 reads as octal (-8); write -10"),
])
def test_a_negative_misspelling_says_the_negative_number_to_write(capsys, written, why):
    """The sign is kept in the number to write (a mutant that drops it says 'write 16')."""
    assert error_line(*run_cli(capsys, *ANALYTIC, f"--dc={written}")) == (
        f"Error: --dc: {why}; see tiersim analytic --help")


def test_the_sign_is_no_digit_of_a_number_too_long_to_read(capsys):
    """'-' and 5,000 nines are 5,000 digits, as 5,000 nines are."""
    assert error_line(*run_cli(capsys, "plan", TINY, f"--max-replicas=-{'9' * 5000}")) == (
        "Error: --max-replicas: a whole number of 5,000 digits is beyond any setting; see "
        "tiersim plan --help")


@pytest.mark.parametrize(("written", "value"), [(".inf", float("inf")), ("-.inf", float("-inf")),
                                                ("+.INF", float("inf"))])
def test_yaml_infinity_is_read_as_infinity(written, value):
    assert read_number(written) == value


def test_yaml_infinity_on_a_flag_is_refused_by_its_range_in_one_line(capsys):
    assert error_line(*run_cli(capsys, *ANALYTIC, "--dc", ".inf")) == (
        "Error: tiersim analytic: --dc: must be from 0 to 1e+12 (got inf)")


def test_a_refused_spelling_of_the_longest_shown_length_is_shown_whole():
    """:data:`LONGEST_SHOWN` characters are repeated whole; one more is cut."""
    whole = "1__" + "0" * (LONGEST_SHOWN - 3)
    assert misspelt(whole) == f"{whole} has a _ that is not between two digits; write 1{'0' * 37}"
    assert shown(whole) == whole
    longer = whole + "0"
    assert shown(longer) == f"{longer[:LONGEST_SHOWN]}... ({LONGEST_SHOWN + 1} characters)"
    assert misspelt(longer) == (f"{shown(longer)} has a _ that is not between two digits; "
                                "write it without it")


def test_a_prefixed_number_of_the_most_bits_is_written_in_decimal():
    """:data:`MAX_INT_BITS` bits are written out; one bit more is beyond any setting."""
    most = "0x" + "f" * (MAX_INT_BITS // 4)
    assert misspelt(most) == f"{most} is hexadecimal; write {2 ** MAX_INT_BITS - 1}"
    over = "0x1" + "0" * (MAX_INT_BITS // 4)
    assert misspelt(over) == (f"{shown(over)} is hexadecimal, a whole number of 3,001 bits is "
                              "beyond any setting (at most 3,000 bits, about 900 digits)")


def test_a_base_sixty_number_beyond_a_float_is_refused_in_one_line(capsys, tmp_path):
    """``1:00:00:...`` of 601 characters (60 ** 200, over 10 ** 355) ended in a traceback,
    'OverflowError: int too large to convert to float', on a flag and in a scenario alike: its
    value was printed as a float. It is beyond any setting, as a longer one was said to be."""
    from test_quoted_numbers import edited

    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    written = "1" + ":00" * 200
    why = f"{shown(written)} is base 60 to YAML 1.1, and beyond any setting"
    assert misspelt(written) == why
    assert error_line(*run_cli(capsys, *ANALYTIC, "--dc", written)) == (
        f"Error: --dc: {why}; see tiersim analytic --help")
    path = edited(tmp_path, ("seed: 0", f"seed: {written}"))
    with pytest.raises(ScenarioError, match="and beyond any setting"):
        load_scenario(path, fit=False)
    assert misspelt("1" + ":00" * 100) == (  # 60 ** 100 fits a float: written out
        f"{'1' + ':00' * 100} is base 60 to YAML 1.1 ({60 ** 100:g}); write {60 ** 100}")
