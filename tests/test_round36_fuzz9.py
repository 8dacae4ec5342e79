"""Round 36, hostile input (helper fuzz9): a calibrate ``--out`` that is, or lies under, a
symbolic link leading to nothing."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli

CALIBRATE_OUT_LINKS = {
    "a loop of links": ("l1", "--out l1: a link that leads to no file (or the links loop); "
                        "point the link at a file, remove it, or give another file path"),
    "a link to nothing": ("gone.json", "--out gone.json: a link that leads to no file (or the "
                          "links loop); point the link at a file, remove it, or give another "
                          "file path"),
    "under a loop of links": ("l1/p.json", "--out l1/p.json: l1 is a link that leads to no "
                              "folder (or the links loop); point it at a folder, remove it, or "
                              "give another file path"),
}


@pytest.mark.parametrize("importer", [False, True], ids=["harness", "aiconfigurator"])
@pytest.mark.parametrize(("out", "expected"), CALIBRATE_OUT_LINKS.values(),
                         ids=CALIBRATE_OUT_LINKS)
def test_a_calibrate_out_link_to_nothing_is_one_line(tmp_path, capsys, monkeypatch, importer,
                                                     out, expected):
    """``tiersim calibrate --quick --out l1`` where l1 and l2 link to each other ended in a
    RuntimeError traceback ('Symlink loop from ...', from Path.resolve), and ``--from
    aiconfigurator --out l1`` replaced the link with the profile, as both did a link to a file
    that does not exist; run, sweep and plan refuse such an ``--out``. Both now refuse it,
    before anything is measured or imported, and the links are left as they were."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "l1").symlink_to("l2")
    (tmp_path / "l2").symlink_to("l1")
    (tmp_path / "gone.json").symlink_to("nowhere.json")
    argv = (["calibrate", "--from", "aiconfigurator", "--out", out] if importer
            else ["calibrate", "--quick", "--device", "cpu", "--out", out])
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == f"Error: {expected}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.json", "l1", "l2"]
    assert all(p.is_symlink() for p in tmp_path.iterdir())
