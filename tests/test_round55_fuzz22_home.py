"""Round 55, hostile-input round (fuzz22): a path typed with ``~`` where the home folder is none.

``HOME=`` (set empty) made ``--out ~/runs`` the root folder's ``/runs``, and ``HOME=/nonexistent``
(some service accounts' home) had it create ``/nonexistent/runs``; both were written without a
word. A ``~`` path is now refused where ``HOME`` is empty or names no folder, naming the path,
the home folder and the fix, before anything is written.
"""

from __future__ import annotations

import pytest
from test_hostile_inputs import run_cli


def _line(capsys, *args) -> str:
    code, err = run_cli(capsys, *args)
    assert code == 1, err
    return err.strip().splitlines()[-1]


def test_an_empty_home_is_not_read_as_the_root_folder(monkeypatch, capsys):
    monkeypatch.setenv("HOME", "")
    assert _line(capsys, "run", "tiny", "--out", "~/fuzz22_runs") == (
        "Error: --out: ~/fuzz22_runs starts with ~, and HOME is empty, so ~ would be the root "
        "folder /; set HOME to your home folder, or write the path in full; see tiersim run "
        "--help")


def test_a_home_of_no_folder_is_not_created(tmp_path, monkeypatch, capsys):
    home = tmp_path / "nonexistent"
    monkeypatch.setenv("HOME", str(home))
    for args, usage in ((("run", "tiny", "--out", "~/r"), "run"),
                        (("plan", "tiny", "--out", "~/p"), "plan"),
                        (("sweep", "~/s.yaml", "--out", str(tmp_path / "s")), "sweep")):
        option = "SCENARIO" if usage == "sweep" else "--out"
        typed = "~/s.yaml" if usage == "sweep" else args[-1]
        assert _line(capsys, *args) == (
            f"Error: {option}: {typed} starts with ~, the home folder {home} (HOME), which is "
            "not an existing folder; set HOME to your home folder, or write the path in full; "
            f"see tiersim {usage} --help")
    assert not home.exists()


def test_the_harness_out_under_an_empty_home(tmp_path, monkeypatch, capsys):
    """``python -m tiersim.calibrate --out ~/p.json`` would have written /p.json."""
    from tiersim.calibrate import main

    monkeypatch.setenv("HOME", "")
    with pytest.raises(SystemExit) as exit_:
        main(["--quick", "--device", "cpu", "--out", "~/fuzz22_p.json"])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "Error: argument --out: ~/fuzz22_p.json starts with ~, and HOME is empty, so ~ would "
        "be the root folder /; set HOME to your home folder, or write the path in full; see "
        "tiersim calibrate --help")
