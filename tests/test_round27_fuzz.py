"""Round 27, hostile input: hand-edited result folders and prices that the earlier fuzzing
rounds did not reach. Each test names what the command did before its fix."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import copy_folder
from test_hostile_inputs import run_cli

from tiersim.report.timeseries import grid_edges


def _summary_edited(run, folder, **fields):
    """A copy of the run folder ``run`` at ``folder`` whose summary.json has ``fields`` set."""
    copy_folder(run, folder)
    path = folder / "summary.json"
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("duration", [1e308, 9.3e18])
def test_a_hand_edited_huge_duration_gives_a_page_not_a_traceback(hand_edited_run, tmp_path,
                                                                   capsys, duration):
    """1e308 s over the 1 s load-series grid was an OverflowError traceback from the report's
    time buckets; 9.3e18 s wrapped round a 64-bit integer to a negative last edge."""
    folder = _summary_edited(hand_edited_run, tmp_path / "r", duration_s=duration)
    code, err = run_cli(capsys, "report", folder)
    assert "Traceback" not in err
    assert code == 0, err[-1000:]
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize(("interval", "end"), [(1.0, 9.3e18), (1.0, 1e300), (1e-320, 30.0)])
def test_time_buckets_beyond_a_countable_grid_are_equal_and_increasing(interval, end):
    edges = grid_edges(interval, end, 600)
    assert len(edges) == 601
    assert edges[0] == 0.0 and edges[-1] >= end
    assert np.all(np.diff(edges) > 0)


def test_time_buckets_of_a_run_stay_on_its_grid():
    """A run's own axis is untouched: whole intervals, the last edge past the end."""
    assert list(grid_edges(1.0, 2.5, 600)) == [0.0, 1.0, 2.0, 3.0]
