"""Round 24, found while reviewing: what a run folder says about the tiersim that wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

import tiersim

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tiersim" / "scenarios" / "tiny.yaml"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A run folder of the tiny scenario (no baselines, no report)."""
    from tiersim.cli import main

    out = tmp_path_factory.mktemp("run") / "out"
    assert main(["run", str(TINY), "--out", str(out), "--no-baselines", "--no-report"]) == 0
    return out


def test_the_manifest_names_the_tiersim_that_wrote_the_folder(run_dir):
    """A run folder recorded no tiersim version, so nothing could tell a later release's
    folder from this one's; the manifest now names the release that wrote it."""
    info = json.loads((run_dir / "manifest.json").read_text())
    assert info["tiersim"] == tiersim.__version__


def test_a_later_release_folder_is_refused_by_report(run_dir, tmp_path, capsys):
    """``tiersim report`` on a folder a later tiersim wrote read it as its own, silently
    skipping fields it does not know; it is refused in one line, naming both releases."""
    folder = tmp_path / "later"
    folder.mkdir()
    for path in run_dir.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    manifest = folder / "manifest.json"
    info = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**info, "tiersim": "9.0.0"}))
    line = error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {manifest}: written by tiersim 9.0.0, a later release than this "
                    f"tiersim {tiersim.__version__}; report it with that tiersim or a later "
                    f"one, or rerun `tiersim run --out {folder}`")


@pytest.mark.parametrize("written", [tiersim.__version__, "0.0.1", None, 7, "dev"])
def test_this_or_an_earlier_or_unknown_release_is_reported(run_dir, tmp_path, capsys, written):
    """This release's folder, an earlier one's, and one that names no release (or names it
    in a way that is no release number) are reported as before."""
    folder = tmp_path / "f"
    folder.mkdir()
    for path in run_dir.iterdir():
        (folder / path.name).write_bytes(path.read_bytes())
    manifest = folder / "manifest.json"
    info = json.loads(manifest.read_text())
    info.pop("tiersim")
    if written is not None:
        info["tiersim"] = written
    manifest.write_text(json.dumps(info))
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize("stage", ["_refuse_foreign_lock", "_take", "remove_stale_temps"])
def test_a_signal_while_the_lock_is_taken_leaves_no_lock(tmp_path, monkeypatch, stage):
    """A signal that landed after ``.lock`` was created but before the command held it (the
    lock's checks, its wait, the stale-temp sweep) left ``.lock`` and so the folder the command
    made (CI caught a SIGHUP there): both go, as for a signal later on."""
    from tiersim import outputs

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, stage, interrupted)
    out = tmp_path / "made" / "o"
    with pytest.raises(KeyboardInterrupt), outputs.locked(out, "run"):
        pass
    assert not (tmp_path / "made").exists()


def test_a_lock_another_command_holds_is_kept_when_this_one_is_stopped(tmp_path, monkeypatch):
    """The lock file this command created is removed only while it could hold it: when
    another command took the lock in between (and this one is stopped before it took it),
    the file stays, as removing it would let a third command lock a new file beside it."""
    import fcntl

    from tiersim import outputs

    out = tmp_path / "o"
    holders = []

    def another_takes_it(handle, path, kind="run"):
        holder = open(path, "r+")  # noqa: SIM115 - held until the test ends
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        holders.append(holder)
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs, "_refuse_foreign_lock", another_takes_it)
    with pytest.raises(KeyboardInterrupt), outputs.locked(out, "run"):
        pass
    assert (out / ".lock").exists()
    holders[0].close()
