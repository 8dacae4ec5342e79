"""Round 55, hostile-input round (fuzz22): a finished sweep's folder, its rerun stopped while
it loads its modules.

SIGTERM 4.3 s into a rerun of a finished 4-point sweep said "interrupted: no point finished,
so this sweep stored nothing in k1/points", of a folder holding the 4 points: the line did
not know the folder yet, and read as if it held none. It now counts the point files there.
"""

from __future__ import annotations

from test_round54_fuzz21 import _stopped_while_importing

from tiersim.cli.sweep import interrupted_line


def test_a_rerun_stopped_while_it_loads_names_the_points_already_there(tmp_path, monkeypatch,
                                                                       capsys):
    out = tmp_path / "o"
    (out / "points").mkdir(parents=True)
    for name in ("a.json", "b.json", ".c.json.tmp"):  # a temporary file is no point
        (out / "points" / name).write_text("{}")
    code, err = _stopped_while_importing(monkeypatch, capsys, "tiersim.sweep.run", "sweep",
                                         "tiny", "--out", out)
    assert (code, err) == (130, f"interrupted: no point finished, so this sweep stored nothing "
                                f"in {out / 'points'} (it holds 2 point files an earlier sweep "
                                "stored, as they were); run the same command again to resume\n")


def test_the_words_once_the_folder_is_read_are_as_before(tmp_path):
    """Once the sweep has read its folder it counts the earlier points it keeps."""
    out = tmp_path / "o"
    assert interrupted_line(out, 0, 4, 4) == (
        f"interrupted: no point finished, so this sweep stored nothing in {out / 'points'} "
        "(kept with the 4 an earlier sweep stored: 4 of 4 points done); run the same command "
        "again to resume")
    assert interrupted_line(out, 0, found=1) == (
        f"interrupted: no point finished, so this sweep stored nothing in {out / 'points'} "
        "(it holds 1 point file an earlier sweep stored, as it was); run the same command "
        "again to resume")
