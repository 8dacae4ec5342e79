"""Round 31 (the lead's own fixes): words a planner reads on long traces and big fleets."""

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
