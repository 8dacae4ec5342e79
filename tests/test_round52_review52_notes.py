"""Round 52 review: a sweep's notes are grouped by their text with its numbers left out, and a
tier's name is no number.

``tiersim sweep`` (:class:`tiersim.sweep.points.SweepNotes`) and the sweep's report
(:func:`tiersim.report.page.sweep_note_lines`) showed each kind of note once. The digits of a
tier's name were left out as numbers are, so w4a16's note and w8a16's were one kind ("w#a#"):
with both tiers idle at every point of a 3-point sweep, w8a16's note was never shown, and
w4a16's said "5 more points have this note with other numbers" of a sweep of 3 points."""

from __future__ import annotations

import json
import warnings

import pandas as pd

from tiersim.report.page import sweep_note_lines
from tiersim.sweep.points import SweepNotes


def _idle(tier: str, usd: str) -> str:
    """The run's note on a paid tier that ran no request (a price axis moves its figures)."""
    return (f"s.yaml: tier {tier} ran no request (router floor: the routing it fitted for the "
            f"floor sends it nothing), yet its 1 GPU is provisioned: {usd} of the run's 9 USD; "
            "remove the tier, or route to it (another accuracy_floor or router.floor)")


POINTS = [("p0", [_idle("w4a16", "1"), _idle("w8a16", "2")]),
          ("p1", [_idle("w4a16", "1.5"), _idle("w8a16", "2")]),
          ("p2", [_idle("w4a16", "2"), _idle("w8a16", "2")])]
"""Three points of a sweep over w4a16's price, each with both tiers' notes."""


def test_the_console_shows_each_tiers_note(tmp_path):
    notes = SweepNotes(tmp_path)
    for index, (point, raised) in enumerate(POINTS):
        notes.add({"point_id": point, "notes": raised}, index)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes.show()
    assert [str(w.message) for w in caught] == [
        f"{_idle('w4a16', '1')} (point p0; 2 more points have this note with other numbers, "
        f"each in its {tmp_path / 'points'}/<id>.json)",
        _idle("w8a16", "2")]


def test_the_report_shows_each_tiers_note():
    sweep = pd.DataFrame({"point_id": [p for p, _ in POINTS],
                          "notes": [json.dumps(n) for _, n in POINTS]})
    assert sweep_note_lines(sweep) == [
        f"{_idle('w4a16', '1')} (point p0; 2 more points have this note with other numbers)",
        _idle("w8a16", "2")]


def test_numbers_are_still_left_out_beside_words():
    """A price, a count, a share, an exponent, a list and a size: each a number, as before;
    a tier's, a GPU's or a percentile's name is not."""
    from tiersim.errors import note_kind

    assert note_kind("tier bf16 on H200: 1,234.5 USD, 3e-05 s, 40 % (2 of 5), [5,6,7], "
                     "2 x 1 GPUs, fp8@2, p99 TTFT 0.25 s") == (
        "tier bf16 on H200: # USD, # s, # % (# of #), [#], # x # GPUs, fp8@#, p99 TTFT # s")
