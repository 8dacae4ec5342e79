"""Round 36, an independent check of ``tiersim sweep``: a point file copied in from another
sweep folder (two halves of a grid merged by hand) whose scenario differs from the folder's is
not kept as one of the folder's points."""

from __future__ import annotations

import json
import shutil

import pandas as pd
from test_round19 import error_line, run_cli
from test_round23_sweepkill import _scenario

ARGS = ("-w", "1", "--no-baselines", "--no-report")


def _sweep(capsys, scenario, out) -> tuple[int, str]:
    """``tiersim sweep SCENARIO --out OUT`` on one worker, no baselines, no report."""
    return run_cli(capsys, "sweep", scenario, "--out", out, *ARGS)


def _point_id(out, seed: int) -> str:
    """The id of the point of ``out``'s grid whose axis sets ``seed``."""
    points = json.loads((out / "sweep.json").read_text())["points"]
    return next(p["point_id"] for p in points if p["values"] == {"seed": seed})


def _two_folders(tmp_path, capsys):
    """Folder ``a`` swept over seeds 0 and 1 at a price of 3.50; folder ``b`` at 4.00 over seed
    0 only, then given ``a``'s seed-1 point file; ``b``'s scenario then lists both seeds."""
    first = tmp_path / "a"
    first.mkdir()
    scenario_a = _scenario(first, "  seed: [0, 1]\n")
    assert _sweep(capsys, scenario_a, first / "o")[0] == 0
    second = tmp_path / "b"
    second.mkdir()
    scenario_b = _scenario(second, "  seed: [0]\n")
    text = scenario_b.read_text()
    scenario_b.write_text(text.replace("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 4.00"))
    assert _sweep(capsys, scenario_b, second / "o")[0] == 0
    foreign = _point_id(first / "o", 1)
    shutil.copy(first / "o" / "points" / f"{foreign}.json", second / "o" / "points")
    scenario_b.write_text(scenario_b.read_text().replace("seed: [0]", "seed: [0, 1]"))
    return scenario_b, second / "o", foreign


def test_a_point_copied_in_from_another_scenarios_sweep_is_refused(tmp_path, capsys):
    """The copied point named its own scenario's digest, but a resume compared it only as the
    folder's scenario.yaml reads it (the folder's own scenario, so no change was found): the
    sweep ran nothing, kept it, and its table held a row priced at 3.50 among rows at 4.00."""
    scenario, out, foreign = _two_folders(tmp_path, capsys)
    before = sorted(p.name for p in (out / "points").iterdir())
    assert error_line(*_sweep(capsys, scenario, out)) == (
        f"Error: {out}: holds sweep point {foreign} of another scenario "
        f"({out / 'points' / f'{foreign}.json'} names a scenario no sweep into this folder "
        "ran: copied in from another sweep folder?); remove that file to run the point again, "
        "or use a new --out folder")
    assert sorted(p.name for p in (out / "points").iterdir()) == before


def test_with_the_copied_point_removed_the_sweep_runs_it_again(tmp_path, capsys):
    """Removing the file, as the refusal says, resumes: the point runs under this scenario,
    and the table is a fresh sweep's."""
    scenario, out, foreign = _two_folders(tmp_path, capsys)
    (out / "points" / f"{foreign}.json").unlink()
    code, err = _sweep(capsys, scenario, out)
    assert code == 0, err
    assert "2 points (1 run, 1 already done, 0 failed)" in err
    assert _sweep(capsys, scenario, tmp_path / "fresh")[0] == 0
    resumed, fresh = (pd.read_parquet(folder / "sweep.parquet").drop(columns=["wall_s"])
                      for folder in (out, tmp_path / "fresh"))
    pd.testing.assert_frame_equal(resumed, fresh)


def test_points_kept_over_an_edit_that_changes_none_still_resume_after_another(tmp_path,
                                                                                capsys):
    """Points run before an edit that changes none of them (a comment, a base value every
    point's axis sets) carry the old scenario's digest; the folder vouches for it, so they
    resume after a second such edit, and are not taken for copied-in points."""
    scenario, out = _scenario(tmp_path, "  seed: [0, 1]\n"), tmp_path / "o"
    assert _sweep(capsys, scenario, out)[0] == 0
    scenario.write_text("# one\n" + scenario.read_text().replace("seed: 0", "seed: 5"))
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "(0 run, 2 already done, 0 failed)" in err, err
    scenario.write_text("# two\n" + scenario.read_text().replace("seed: 5", "seed: 6")
                        .replace("seed: [0, 1]", "seed: [0, 1, 2]"))
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "3 points (1 run, 2 already done, 0 failed)" in err, err


def test_halves_of_one_scenarios_grid_merged_by_hand_still_resume(tmp_path, capsys):
    """Two halves of one scenario's grid, run into two folders and merged by copying point
    files, name one base scenario: the merged folder resumes with every point kept."""
    halves = []
    for seed in (0, 1):
        folder = tmp_path / f"half{seed}"
        folder.mkdir()
        scenario = _scenario(folder, f"  seed: [{seed}]\n")
        assert _sweep(capsys, scenario, folder / "o")[0] == 0
        halves.append((scenario, folder / "o"))
    (scenario, out), (_, other) = halves
    for path in (other / "points").glob("*.json"):
        shutil.copy(path, out / "points")
    scenario.write_text(scenario.read_text().replace("seed: [0]", "seed: [0, 1]"))
    code, err = _sweep(capsys, scenario, out)
    assert code == 0 and "2 points (0 run, 2 already done, 0 failed)" in err, err
