"""Round 55, hostile-input round (fuzz22): a sweep whose page cannot be written (a full disk).

The line said "free some space or choose another folder", as a run's does; but a sweep's
points and sweep.parquet are already in its folder, and another folder holds none of them. It
now says they are kept, and that ``tiersim report DIR`` writes the page.
"""

from __future__ import annotations

import errno

from test_hostile_inputs import run_cli


def test_a_full_disk_at_a_sweeps_page_says_the_points_are_kept(tmp_path, capsys, monkeypatch):
    import tiersim.report.page as page

    def full(*_args, **_kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(page, "create_temp", full)
    out = tmp_path / "s"
    code, err = run_cli(capsys, "sweep", "tiny", "--out", out, "--workers", "1",
                        "--no-baselines")
    assert code == 1, err
    assert err.strip().splitlines()[-1] == (
        f"Error: {out}/report.html: cannot write the report (No space left on device); free "
        f"some space; the sweep's points and sweep.parquet are kept, and tiersim report {out} "
        "writes the page")
    assert (out / "sweep.parquet").is_file() and not (out / "report.html").exists()
    monkeypatch.undo()
    code, err = run_cli(capsys, "report", out)
    assert code == 0, err
    assert (out / "report.html").is_file()
