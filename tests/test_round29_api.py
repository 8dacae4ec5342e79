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


def _baseline(model: str) -> dict:
    """A baseline-only tier serving its own ``model`` (a config.json path)."""
    return {"name": "big", "precision": "bf16", "model": model, "cost_per_gpu_hour": 3.5,
            "accuracy": 0.9, "replicas": 1}


def _sweep_of_baselines(tmp_path, axis: str, models: list[str], base: str = "m/config.json"):
    """The tiny scenario in ``tmp_path`` with a baseline-only tier on ``base``, swept on
    ``axis`` (``baselines``: the whole list; ``baselines.big.model``) over ``models``; a
    config.json in ``tmp_path/model`` and a link ``m`` to that folder, ``link`` to ``m``."""
    from conftest import REPO, tiny_doc, write_yaml
    from test_round19 import _config

    _config(tmp_path)
    (tmp_path / "m").symlink_to("model")
    (tmp_path / "link").symlink_to("m")
    doc = tiny_doc(baselines=[_baseline(base)])
    doc["trace"]["path"] = str(REPO / "tiersim" / "traces" / "azure2023_code.parquet")
    values = models if axis.endswith("model") else [[_baseline(m)] for m in models]
    doc["sweep"] = {axis: values}
    return write_yaml(tmp_path / "s.yaml", doc)


@pytest.mark.parametrize("axis", ["baselines", "baselines.big.model"])
def test_a_baseline_model_named_two_ways_is_one_setting_listed_twice(tmp_path, axis):
    """A sweep over the whole ``baselines`` list naming one baseline model's config.json
    through two links ran two points of one scenario (names_files knew ``tiers`` and
    ``tiers.N`` as naming files, not ``baselines``)."""
    from tiersim.sweep.axes import SweepError
    from tiersim.sweep.run import prepare

    scenario = _sweep_of_baselines(tmp_path, axis, ["m/config.json", "link/config.json"])
    with pytest.raises(SweepError) as info:
        prepare(scenario)
    line = str(info.value)
    assert line.startswith(f"{scenario}: sweep: '{axis}': values ")
    assert line.endswith(" are the same setting once read; list it once")


def test_sweep_inputs_record_a_baseline_model_named_on_the_baselines_axis_once(tmp_path):
    """``sweep_inputs`` (the files ``--out`` may not overwrite) left out a config.json named
    only on a ``baselines`` axis; one file named two ways (the base's ``link/config.json``,
    the axis' ``m/config.json``) is recorded once."""
    import os

    from tiersim.sweep.run import prepare, sweep_inputs

    scenario = _sweep_of_baselines(tmp_path, "baselines", ["m/config.json", "other/config.json"],
                                   base="link/config.json")
    (tmp_path / "other").mkdir()  # a second file (of the same bytes) is a second input
    (tmp_path / "other" / "config.json").write_bytes((tmp_path / "model" / "config.json")
                                                     .read_bytes())
    found = [os.path.realpath(p) for p in sweep_inputs(prepare(scenario))]
    model = os.path.realpath(tmp_path / "model" / "config.json")
    assert found.count(model) == 1
    assert found.count(os.path.realpath(tmp_path / "other" / "config.json")) == 1


def test_every_axis_over_a_list_of_tiers_may_name_a_file():
    """The schema's lists of tiers (``tiers``, ``baselines``) name model files alike."""
    from tiersim.sweep.run import names_files

    assert [a for a in ("baselines", "baselines.0", "baselines.big", "baselines.0.model",
                        "baselines.big.speculative", "tiers.0.speculative.draft_model")
            if not names_files(a)] == []
    assert [a for a in ("baselines.0.replicas", "baselines.big.speculative.k",
                        "tiers.0.scheduler", "trace.format") if names_files(a)] == []


def _catalogue_sweep(tmp_path, where: str):
    """The tiny scenario swept over one catalogue model written in two cases: a baseline-only
    tier's ``model`` (``baselines``) or a routed tier's draft model (``draft``, on the
    Llama-3.1-70B tiers, the 8B drafting for the fp8 one); the file and the axis."""
    from conftest import REPO, tiny_doc, write_yaml

    doc = tiny_doc(baselines=[_baseline("Qwen3-Coder-30B-A3B")])
    doc["trace"]["path"] = str(REPO / "tiersim" / "traces" / "azure2023_code.parquet")
    axis, name = "baselines.big.model", "Qwen3-Coder-30B-A3B"
    if where == "draft":
        doc = tiny_doc(model="Llama-3.1-70B", trace=doc["trace"])
        doc["tiers"][1].update(precision="fp8", speculative={
            "k": 3, "acceptance": 0.7, "draft_model": "Llama-3.1-8B"})
        axis, name = "tiers.bf16.speculative.draft_model", "Llama-3.1-8B"
    doc["sweep"] = {axis: [name, name.lower()]}
    return write_yaml(tmp_path / "s.yaml", doc), axis, name


@pytest.mark.parametrize("where", ["baselines", "draft"])
def test_a_catalogue_model_in_two_cases_is_one_setting_listed_twice(tmp_path, where):
    """``baselines.big.model: [Qwen3-Coder-30B-A3B, qwen3-coder-30b-a3b]`` and a draft model
    so written each ran two points of one scenario, where the same values on a routed tier's
    model are refused: the setting wrote the routed tiers' catalogue names in one case, not a
    baseline-only tier's or a draft's."""
    from tiersim.sweep.axes import SweepError
    from tiersim.sweep.run import prepare

    scenario, axis, name = _catalogue_sweep(tmp_path, where)
    with pytest.raises(SweepError) as info:
        prepare(scenario)
    assert str(info.value) == (f"{scenario}: sweep: '{axis}': values '{name}' and "
                               f"'{name.lower()}' are the same setting once read; list it "
                               "once")
