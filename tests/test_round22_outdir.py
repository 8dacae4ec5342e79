"""Round 22: the ``--out`` folders of ``tiersim run`` and ``tiersim plan`` (a user's own
files, a killed run's leftovers, inputs, locks, links)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tiersim" / "scenarios" / "tiny.yaml"


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("name", ["report.html", "scenario.yaml", "summary.json",
                                  "requests.parquet", "timeseries.parquet"])
def test_a_users_own_file_in_a_run_folder_is_not_overwritten(tmp_path, capsys, name):
    """``--out`` naming a folder of the user's own (no manifest.json: no run wrote it) that
    holds a file named as a run's (their report.html) replaced or removed it silently."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / name).write_text("my own file\n")
    assert error_line(*run_cli(capsys, "run", TINY, "--out", out)) == (
        f"Error: {out / name}: `tiersim run` would overwrite this file, and {out} holds no "
        "run's results (no tiersim manifest.json); move the file, or use another --out "
        "folder (nothing was written)")
    assert (out / name).read_text() == "my own file\n"
    assert _listing(out) == [name]


def test_a_users_own_file_in_a_plan_folder_is_not_overwritten(tmp_path, capsys):
    """The same for ``tiersim plan``, whose folder holds its planned run too."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.html").write_text("my own file\n")
    assert error_line(*run_cli(capsys, "plan", TINY, "--out", out)) == (
        f"Error: {out / 'report.html'}: `tiersim plan` would overwrite this file, and {out} "
        "holds no plan's results (no tiersim manifest.json or plan.json); move the file, or "
        "use another --out folder (nothing was written)")
    assert (out / "report.html").read_text() == "my own file\n"
    assert _listing(out) == ["report.html"]


def test_a_users_link_named_as_a_run_file_is_not_replaced(tmp_path, capsys):
    """A link of the user's named report.html (to their own file) is theirs too."""
    out = tmp_path / "mine"
    out.mkdir()
    target = tmp_path / "keep.html"
    target.write_text("mine\n")
    (out / "report.html").symlink_to(target)
    assert error_line(*run_cli(capsys, "run", TINY, "--out", out)).startswith(
        f"Error: {out / 'report.html'}: `tiersim run` would overwrite this file")
    assert (out / "report.html").is_symlink()


def test_a_run_reruns_into_its_own_folder(tmp_path, capsys):
    """A folder a run wrote (its manifest.json) is rerun into, its report replaced."""
    out = tmp_path / "o"
    assert run_cli(capsys, "run", TINY, "--out", out, "--report")[0] == 0
    assert run_cli(capsys, "run", TINY, "--out", out, "--no-report")[0] == 0
    assert "report.html" not in _listing(out) and "manifest.json" in _listing(out)


def test_a_plan_with_no_plan_reruns_into_its_folder(tmp_path, capsys):
    """A plan that found no plan leaves plan.json alone (no manifest.json): its folder is a
    plan's, and a plan reruns into it."""
    out = tmp_path / "o"
    out.mkdir()
    (out / "plan.json").write_text('{"constraints": {}, "plan": null}\n')
    (out / "report.html").write_text("an earlier plan's report\n")
    assert run_cli(capsys, "plan", TINY, "--out", out)[0] == 0
    assert "manifest.json" in _listing(out)


def test_a_run_killed_among_its_first_renames_is_finished(tmp_path, capsys):
    """The first run into a folder, killed among its renames, left some files in place and
    the rest (the manifest last) in its ``.ready`` folder: no user's files, so the next run
    finishes the set and reruns."""
    done = tmp_path / "done"
    assert run_cli(capsys, "run", TINY, "--out", done)[0] == 0
    out = tmp_path / "o"
    ready = out / ".tiersim-run-killed.ready"
    ready.mkdir(parents=True)
    for path in done.iterdir():
        if path.name != ".lock":
            shutil.copy(path, (out if path.name == "requests.parquet" else ready) / path.name)
    assert run_cli(capsys, "run", TINY, "--out", out)[0] == 0
    assert not ready.exists()
    assert (out / "manifest.json").read_bytes() == (done / "manifest.json").read_bytes()


@pytest.mark.parametrize("command", ["run", "plan"])
def test_an_out_under_a_file_names_the_file_in_the_way(tmp_path, capsys, command):
    """``--out notes.txt/o`` named the folder that could not be made, saying a file was in
    its way, not which file: the file in the way is named."""
    (tmp_path / "notes.txt").write_text("mine\n")
    out = tmp_path / "notes.txt" / "deeper" / "o"
    assert error_line(*run_cli(capsys, command, TINY, "--out", out)) == (
        f"Error: {out}: --out must be a folder, and the file {tmp_path / 'notes.txt'} is in "
        "the way; use another --out folder")
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


@pytest.mark.parametrize("data", [b"my lock notes\n", b"\xff\xfe\x00"])
def test_a_users_own_lock_file_is_not_overwritten(tmp_path, capsys, data):
    """A ``.lock`` of the user's (text that is no tiersim pid) in the ``--out`` folder was
    truncated and given tiersim's pid: it is refused, untouched."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / ".lock").write_bytes(data)
    assert error_line(*run_cli(capsys, "run", TINY, "--out", out)) == (
        f"Error: {out / '.lock'}: holds no tiersim lock (tiersim writes its pid there) and "
        "would be overwritten; move the file, or use another --out folder (nothing was "
        "written)")
    assert (out / ".lock").read_bytes() == data
    assert _listing(out) == [".lock"]


def test_a_lock_left_by_a_run_is_taken_again(tmp_path, capsys):
    """tiersim's own ``.lock`` (a pid, or empty after a kill) does not stop the next run."""
    out = tmp_path / "o"
    out.mkdir()
    (out / ".lock").write_text("")
    assert run_cli(capsys, "run", TINY, "--out", out, "--no-baselines")[0] == 0
    assert (out / ".lock").read_text().isdigit()
    assert run_cli(capsys, "run", TINY, "--out", out, "--no-baselines")[0] == 0


def test_another_tools_manifest_json_is_not_taken_for_a_runs(tmp_path, capsys):
    """A folder holding a manifest.json of another tool's (a web app's: a JSON object with no
    run_id) was taken for a run's folder, and that manifest overwritten."""
    out = tmp_path / "app"
    out.mkdir()
    (out / "manifest.json").write_text('{"name": "my app", "start_url": "/"}\n')
    assert error_line(*run_cli(capsys, "run", TINY, "--out", out)) == (
        f"Error: {out / 'manifest.json'}: `tiersim run` would overwrite this file, and {out} "
        "holds no run's results (no tiersim manifest.json); move the file, or use another "
        "--out folder (nothing was written)")
    assert (out / "manifest.json").read_text() == '{"name": "my app", "start_url": "/"}\n'


def test_a_run_reruns_over_its_own_garbled_manifest(tmp_path, capsys):
    """A run's manifest.json that no longer parses is still the run's: `tiersim report`
    says to rerun, and the rerun writes the folder again."""
    out = tmp_path / "o"
    assert run_cli(capsys, "run", TINY, "--out", out, "--no-baselines")[0] == 0
    (out / "manifest.json").write_text('{"run_id": "abc", "files": {')
    assert run_cli(capsys, "run", TINY, "--out", out, "--no-baselines")[0] == 0
    assert '"run_id"' in (out / "manifest.json").read_text()


def test_another_tools_plan_json_is_not_taken_for_a_plans(tmp_path, capsys):
    """The same for a plan.json of the user's own (no constraints: no tiersim plan)."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "plan.json").write_text('{"sprint": 3}\n')
    code, err = run_cli(capsys, "plan", TINY, "--out", out)
    assert error_line(code, err).startswith(
        f"Error: {out / 'plan.json'}: `tiersim plan` would overwrite this file")
    assert (out / "plan.json").read_text() == '{"sprint": 3}\n'
