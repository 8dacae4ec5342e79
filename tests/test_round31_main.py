"""Round 31 (the lead's own fixes): words a planner reads on long traces and big fleets."""

import pytest

from tiersim.numbers import NumberError, read_number
from tiersim.results import drain_words


def test_a_long_drain_and_a_big_fleet_read_without_e_notation():
    """A 3-hour trace's drain and a fleet of tens of thousands of USD/hour read as whole numbers
    with separators; before: "1.08e+04 s against 1.081e+04 s", "2.867e+04 USD/hour"."""
    words = drain_words((28673.0, 28673.0), (10800.0, 10810.0), "provisioned")
    assert words == ("both 28,673 USD/hour: the gap is the drain after the last arrival, "
                     "10,800 s against 10,810 s, not a cheaper fleet")


def test_short_drains_read_as_before():
    """Below 10,000 the words are unchanged: no zeros added, as many figures as tell them apart."""
    assert drain_words((7.0, 7.0), (100.0, 101.0), "provisioned") == (
        "both 7 USD/hour: the gap is the drain after the last arrival, 100 s against 101 s, "
        "not a cheaper fleet")
    near = drain_words((59.5, 59.5), (9999.7, 9999.9), "provisioned")
    assert "9999.7 s against 9999.9 s" in near and "e+" not in near


@pytest.mark.parametrize(("written", "expected"), [
    ("0" + "1" * 5000, "0" + "1" * 39 + "... (5,001 characters) has a leading zero, and 5,001 "
     "digits: beyond any setting"),
    ("1__" + "2" * 5000, "1__" + "2" * 37 + "... (5,003 characters) has a _ that is not between "
     "two digits; write it without it"),
    ("1" * 5000 + ":30", "1" * 40 + "... (5,003 characters) is base 60 to YAML 1.1, and beyond "
     "any setting"),
])
def test_a_long_misspelt_number_is_refused_in_a_short_line(written, expected):
    """A misspelt number of thousands of characters is named by its first 40 and refused as
    beyond any setting; before, the line repeated it whole with its decimal (2,261 characters
    for a 1,000-digit hex seed) or Python's digit limit raised inside the reading."""
    with pytest.raises(NumberError) as caught:
        read_number(written, int)
    assert str(caught.value) == expected
