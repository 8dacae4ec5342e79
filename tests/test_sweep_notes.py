"""A sweep's notes: each point's notes travel with its record, and the sweep prints each
distinct one once, however many workers raised it (each worker printed its own copy, and a
spawned worker in Python's warning format)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_hostile_inputs import TINY, run_cli

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_note_every_point_raises_is_printed_once(tmp_path, capsys, workers):
    df = pd.read_parquet(ROOT / "tiersim" / "traces" / "azure2023_code.parquet")
    df["correct_foo"] = np.arange(len(df)) % 3 > 0
    df.to_parquet(tmp_path / "l.parquet")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("path: azure2023_code.parquet", "path: l.parquet")
                        + "sweep:\n  seed: [0, 1, 2]\n")
    code, err = run_cli(capsys, "sweep", scenario, "--out", tmp_path / "w", "--no-report",
                        "--workers", workers)
    assert code == 0
    note = (f"note: {scenario}: the trace's correct_foo columns name none of the fleet's tiers "
            "(correct_<tier>) and are not used; name the tiers after them to use the labels")
    assert [line for line in err.splitlines() if "correct_foo" in line] == [note]
    stored = [json.loads(p.read_text()) for p in (tmp_path / "w" / "points").iterdir()]
    # each point's notes: the labels' note, and (round 53) tiny's own tier-order note (w4a16,
    # listed first, is the dearer per request at tiny's load), which is not this test's
    assert all([n for n in r["notes"] if "listed first, costs more per request" not in n]
               == [note.removeprefix("note: ")] for r in stored)


def test_a_note_with_each_points_numbers_is_printed_once_with_a_count(tmp_path, capsys):
    """A price axis makes each point's 'costs more than the later tier' note its own text: the
    sweep prints the first point's, where it came from, and how many more have it."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("window: [240, 360]", "window: [240, 270]")
                        + "sweep:\n  tiers.w4a16.cost_per_gpu_hour: [5, 6, 7]\n")
    out = tmp_path / "w"
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "--no-report", "--workers",
                        "1", "--no-baselines")
    assert code == 0, err
    lines = [line for line in err.splitlines() if "per replica-hour" in line]
    stored = {json.loads(p.read_text())["values"]["tiers.w4a16.cost_per_gpu_hour"]:
              json.loads(p.read_text()) for p in (out / "points").iterdir()}
    first = stored[5]
    assert lines == [f"note: {first['notes'][0]} (point {first['point_id']}; 2 more points have "
                     f"this note with other numbers, each in its {out / 'points'}/<id>.json)"]
    assert "costs 5 USD per replica-hour" in lines[0]


def test_a_note_only_some_points_raise_says_which(tmp_path):
    """A tier's KV note at the H100 point of a gpu axis was printed as is, as if true of every
    point."""
    import warnings

    from tiersim.sweep.points import SweepNotes

    notes = SweepNotes(tmp_path)
    for point, raised in (("a1", []), ("b2", ["tier x: short KV"]), ("c3", []),
                          ("d4", ["in both"]), ("e5", ["in both"])):
        notes.add({"point_id": point, "notes": raised})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes.show()
    assert [str(w.message) for w in caught] == [
        "tier x: short KV (point b2 only, of the 5 run)",
        f"in both (2 of the 5 points run, the first d4; each in its {tmp_path / 'points'}/"
        "<id>.json)"]


def test_a_note_the_checks_raise_before_the_points_run_is_not_printed_unlabelled(
        tmp_path, capsys):
    """An offload level too small for one block at one point of a capacity axis: the check
    reading each point before the sweep printed its note as is, as if true of the base scenario
    (whose level holds 20 GB), and then the sweep printed it again, labelled with its point."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        TINY.replace("window: [240, 360]", "window: [240, 270]").replace(
            "  - name: bf16\n", "  - name: bf16\n    scheduler:\n"
            "      enable_prefix_caching: true\n      kv_offload:\n"
            "        - {name: host, capacity_gb: 20, read_gb_s: 50, write_gb_s: 50}\n")
        + "sweep:\n  tiers.bf16.scheduler.kv_offload.0.capacity_gb: [0, 20]\n")
    out = tmp_path / "w"
    code, err = run_cli(capsys, "sweep", scenario, "--out", out, "--no-report", "--workers",
                        "1", "--no-baselines")
    assert code == 0, err
    axis = "tiers.bf16.scheduler.kv_offload.0.capacity_gb"
    stored = {json.loads(p.read_text())["values"][axis]: json.loads(p.read_text())
              for p in (out / "points").iterdir()}
    empty = stored[0]
    assert [line for line in err.splitlines() if "holds no prompt block" in line] == [
        f"note: {empty['notes'][0]} (point {empty['point_id']} only, of the 2 run)"]


def test_one_more_point_with_other_numbers_is_said_in_the_singular(tmp_path):
    """'1 more point have this note' read as a typo of the count."""
    import warnings

    from tiersim.sweep.points import SweepNotes

    notes = SweepNotes(tmp_path)
    for point, raised in (("a1", ["level holds 0 GB"]), ("b2", ["level holds 1 GB"])):
        notes.add({"point_id": point, "notes": raised})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        notes.show()
    assert [str(w.message) for w in caught] == [
        f"level holds 0 GB (point a1; 1 more point has this note with other numbers, each in "
        f"its {tmp_path / 'points'}/<id>.json)"]
