"""Round 55, hostile-input round (fuzz22): ``tiersim calibrate --from aiconfigurator`` over a
profile shipped with tiersim.

The harness already refused an ``--out`` among the shipped profiles; the import wrote there
whatever its ``--gpu`` and ``--engine``: ``--gpu h100 --out
tiersim/profiles/h200_aiconfigurator_vllm.json`` replaced the default H200 profile with H100's
tables (a note said only that its fitted overhead was dropped). It now rebuilds a shipped
file only from that file's own GPU and engine, under its own name, as
``tiersim/profiles/README.md``'s rebuild command does, which keeps working.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import run_cli

import tiersim
from tiersim.calibrate.cli import bundled_import_problem

SHIPPED = Path(tiersim.__file__).parent / "profiles"
H200 = SHIPPED / "h200_aiconfigurator_vllm.json"


def _error(capsys, *args: str) -> str:
    code, err = run_cli(capsys, "calibrate", "--from", "aiconfigurator", *args)
    assert code == 1, err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.fixture
def untouched():
    """The shipped H200 profile's bytes before and after the test."""
    before = H200.stat().st_mtime_ns, H200.stat().st_size
    yield
    assert (H200.stat().st_mtime_ns, H200.stat().st_size) == before


def test_another_gpu_or_engine_over_a_shipped_profile_is_refused(untouched, capsys):
    """The line names the file, what it was built from and the flags that rebuild it."""
    assert _error(capsys, "--gpu", "h100", "--out", str(H200)) == (
        f"Error: --out {H200}: a profile shipped with tiersim, built from h200's vllm tables, "
        "which --gpu h100 --engine vllm would replace with h100's vllm ones; to rebuild it "
        "give --gpu h200 --engine vllm, or write elsewhere and name it in a scenario's "
        "profile:")
    assert _error(capsys, "--engine", "trtllm", "--out", str(H200)).startswith(
        f"Error: --out {H200}: a profile shipped with tiersim, built from h200's vllm tables, "
        "which --gpu h200 --engine trtllm would replace")


def test_a_new_name_or_another_profile_name_among_the_shipped_ones_is_refused(untouched, capsys):
    """A new file there was added to the installed package; ``--name`` renamed the profile
    every run on H200 names as its source."""
    mine = SHIPPED / "mine.json"
    assert _error(capsys, "--out", str(mine)) == (
        f"Error: --out {mine}: among the profiles shipped with tiersim, where --from "
        "aiconfigurator only rebuilds a shipped GPU_aiconfigurator_ENGINE.json from its own "
        "GPU's and engine's tables; write it elsewhere and name it in a scenario's profile:")
    assert not mine.exists()
    assert _error(capsys, "--out", str(H200), "--name", "foo") == (
        "Error: --name 'foo': a profile shipped with tiersim keeps its name "
        "(h200_aiconfigurator_vllm), which runs name as their source; drop --name, or write "
        "elsewhere")


def test_the_readme_rebuild_commands_still_pass_the_check():
    """`tiersim calibrate --from aiconfigurator --gpu h200 --engine vllm --out
    profiles/h200_aiconfigurator_vllm.json` (through the repository's `profiles` link, in
    any case of --gpu), and a file outside the shipped folder."""
    for gpu in ("h200", "H200"):
        assert bundled_import_problem(str(H200), gpu, "vllm", None) is None
    for shipped in ("h100", "b200"):
        path = SHIPPED / f"{shipped}_aiconfigurator_vllm.json"
        assert bundled_import_problem(str(path), shipped, "vllm", path.stem) is None
    assert bundled_import_problem("elsewhere/p.json", "h100", "trtllm", "x") is None
