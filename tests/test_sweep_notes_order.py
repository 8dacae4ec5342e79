"""A sweep's notes are shown with the points first in the grid, however the points finish."""

from __future__ import annotations

import warnings

from tiersim.sweep.axes import Point
from tiersim.sweep.points import SweepNotes, Task, execute
from tiersim.sweep.testing import synthetic_runner


def shown(notes: SweepNotes) -> list[str]:
    """The notes ``notes.show()`` raises, as text."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes.show()
    return [str(w.message) for w in caught]


def test_notes_name_the_point_first_in_the_grid_not_the_first_to_finish(tmp_path):
    """Two workers (or Ray) finishing in another order printed 'the first' of another point,
    and a note with each point's numbers another point's numbers."""
    finished = [("c3", 2, ["tier x costs 7 USD", "KV short"]), ("a1", 0, ["tier x costs 5 USD"]),
                ("b2", 1, ["tier x costs 6 USD", "KV short"])]
    notes = SweepNotes(tmp_path)
    for point, index, raised in finished:
        notes.add({"point_id": point, "notes": raised}, index)
    assert shown(notes) == [
        f"tier x costs 5 USD (point a1; 2 more points have this note with other numbers, each "
        f"in its {tmp_path / 'points'}/<id>.json)",
        f"KV short (2 of the 3 points run, the first b2; each in its {tmp_path / 'points'}/"
        "<id>.json)"]


def test_a_record_carries_its_grid_index_to_the_driver_but_does_not_store_it(tmp_path):
    task = Task(Point("p7", 7, {}), {}, "s.yaml", synthetic_runner, str(tmp_path))
    record = execute(task)
    assert record["grid_index"] == 7
    assert "grid_index" not in (tmp_path / "points" / "p7.json").read_text()
