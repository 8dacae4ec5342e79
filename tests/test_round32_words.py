"""What the command line prints and exits with, word for word (round 32, helper ``words``)."""

from __future__ import annotations

import pytest
from conftest import run_cli

from tiersim.cli import main


@pytest.mark.parametrize("argv", [[], ["trace"]])
def test_no_command_shows_the_help_and_exits_1_as_every_usage_mistake(capsys, argv):
    """``tiersim`` (or ``tiersim trace``) without its command runs nothing: the help, status 1,
    as an unknown command or option is (README: command-line mistakes exit 1)."""
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert f"Usage: {' '.join(['tiersim', *argv])} [OPTIONS] COMMAND [ARGS]..." in out


def test_bare_tiersim_exits_1_through_the_console_entry_point():
    result = run_cli()
    assert result.returncode == 1 and "Usage: tiersim [OPTIONS] COMMAND" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
