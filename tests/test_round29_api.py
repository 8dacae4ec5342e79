"""Round 29 (api): the Python API claims its output folder as the command line does (the root
or home folder, a folder of other files, a folder another command is writing: the same one
line), and a sweep axis naming one file two ways is one value listed twice on every axis that
can name a file."""

from __future__ import annotations

import pytest
from test_round29_harden import _listing, _refused, _scenarios

from tiersim.errors import TiersimError


def _api(kind: str, plain, swept, out) -> None:
    """The Python API's call of ``tiersim kind`` into ``out`` (run, plan, sweep, report)."""
    if kind == "run":
        from tiersim.runner import run_scenario
        from tiersim.scenario import load_scenario

        run_scenario(load_scenario(plain), out_dir=out, scenario_path=plain)
    elif kind == "plan":
        from tiersim.cli.plan import plan_capacity

        plan_capacity(plain, out_dir=out, report=False)
    elif kind == "sweep":
        from tiersim.sweep.run import run_sweep

        run_sweep(swept, out)
    else:
        from tiersim.report import write_report

        write_report(out)


def _cli(kind: str, plain, swept, out) -> list[str]:
    """The argv of the same command (no simulation is reached when refused)."""
    if kind == "report":
        return ["report", str(out)]
    extra = ["--no-baselines"] if kind == "run" else []
    return [kind, str(swept if kind == "sweep" else plain), "--out", str(out), "--no-report",
            *extra]


def _api_refusal(kind: str, plain, swept, out) -> str:
    """The line the API's refusal reads, as the command line prints it."""
    with pytest.raises(TiersimError) as info:
        _api(kind, plain, swept, out)
    return f"Error: {info.value}"


@pytest.mark.parametrize("kind", ["run", "plan", "sweep"])
def test_the_api_refuses_a_folder_of_other_files_as_the_command_does(tmp_path, capsys, kind):
    """``runner.run_scenario(out_dir=...)`` wrote a run's six files (and a .lock) among a
    project's notes.txt, where ``tiersim run --out`` refuses the folder."""
    plain, swept = _scenarios(tmp_path / "in")
    out = tmp_path / "project"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    before = _listing(out)
    line = _api_refusal(kind, plain, swept, out)
    assert line == _refused(capsys, _cli(kind, plain, swept, out))
    assert "holds what no tiersim command wrote (notes.txt)" in line
    assert _listing(out) == before


@pytest.mark.parametrize("kind", ["run", "plan", "sweep", "report"])
def test_the_api_refuses_the_home_folder_as_the_command_does(tmp_path, monkeypatch, capsys,
                                                             kind):
    """``write_report(HOME)`` wrote report.html into a home folder holding a run's files, and
    ``run_scenario(out_dir=HOME)`` a run among its files; the commands refuse both."""
    from test_report import make_run_dir

    plain, swept = _scenarios(tmp_path / "in")
    home = tmp_path / "home"
    if kind == "report":  # a run's files, which a report would read
        make_run_dir(home)
    home.mkdir(exist_ok=True)
    (home / ".bashrc").write_text("export X=1\n")
    monkeypatch.setenv("HOME", str(home))
    before = _listing(home)
    line = _api_refusal(kind, plain, swept, home)
    assert line == _refused(capsys, _cli(kind, plain, swept, home))
    assert "your home folder" in line
    assert _listing(home) == before


@pytest.mark.parametrize("kind", ["run", "report"])
def test_the_api_waits_for_no_folder_another_command_is_writing(tmp_path, kind):
    """Under another command's lock, ``run_scenario`` replaced the run's files and
    ``write_report`` wrote a page of the half-written folder; both are refused, as the
    commands are."""
    from test_report import make_run_dir

    from tiersim.outputs import locked

    plain, swept = _scenarios(tmp_path / "in")
    out = make_run_dir(tmp_path / "run")
    with locked(out, "sweep"):
        before = _listing(out)
        line = _api_refusal(kind, plain, swept, out)
        assert _listing(out) == before
    assert "another tiersim command is writing to this folder" in line

