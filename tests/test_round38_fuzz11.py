"""Round 38, hostile input (helper fuzz11): a path the system refuses to look up, given to
``python -m tiersim.calibrate``. Each test names what a user saw before
its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line

from tiersim.calibrate.cli import main as harness_main

LONG_NAME = "b" * 300
"""A file name over the 255 bytes a name may have."""

NAME_FIX = "use a shorter name (at most 255 bytes for each folder or file name)"


def cut(path: str) -> str:
    """``path`` as an error line names it: its first 117 characters, then ``...``."""
    return f"{path[:117]}..."


def run_harness(capsys, *argv: str) -> tuple[int, str]:
    """``python -m tiersim.calibrate ARGV`` in this process: (exit status, stderr)."""
    capsys.readouterr()
    code = harness_main(list(argv))
    return code, capsys.readouterr().err


HARNESS_PATHS = {
    "--out of a long name": (["--quick", "--out", f"{LONG_NAME}.json"], f"{LONG_NAME}.json",
                             NAME_FIX),
    "--config under a long name": (["--out", "p.json", "--config",
                                    f"{LONG_NAME}/config.json"],
                                   f"{LONG_NAME}/config.json", NAME_FIX),
}


@pytest.mark.parametrize(("args", "named", "fix"), HARNESS_PATHS.values(), ids=HARNESS_PATHS)
def test_a_path_the_system_refuses_is_one_line_from_the_harness(tmp_path, capsys, monkeypatch,
                                                                args, named, fix):
    """``python -m tiersim.calibrate --out NAME`` (or ``--config NAME/config.json``) of a name
    over 255 bytes ended in an OSError traceback ('[Errno 36] File name too long', from the
    check that --out is no link to nothing), where ``tiersim calibrate`` printed one line. The
    harness now prints that line itself, before anything is measured, and writes nothing."""
    monkeypatch.chdir(tmp_path)
    line = one_error_line(*run_harness(capsys, "--device", "cpu", *args))
    assert line == f"Error: {cut(named)}: File name too long; {fix}"
    assert list(tmp_path.iterdir()) == []
