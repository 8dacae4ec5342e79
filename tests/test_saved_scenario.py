"""The scenario.yaml a run or a plan writes reruns from anywhere: a relative path to a user file
(the trace beside the scenario) is written absolute; a bundled name stays a name. Before, the
copy kept ``sub/t.parquet``, which `tiersim run OUT/scenario.yaml` then looked for in OUT."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tiersim.cli import main
from tiersim.errors import TiersimError

TRACE = Path(__file__).resolve().parents[1] / "tiersim" / "traces" / "azure2023_code.parquet"


def _scenario(folder: Path) -> Path:
    """A one-tier scenario whose trace is a relative path to a file beside it."""
    (folder / "sub").mkdir()
    shutil.copy(TRACE, folder / "sub" / "t.parquet")
    path = folder / "s.yaml"
    path.write_text("name: s\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\n"
                    "trace: {path: sub/t.parquet, window: [0, 120]}\n"
                    "tiers:\n  - {name: bf16, precision: bf16, replicas: 1, "
                    "cost_per_gpu_hour: 3.5}\n"
                    "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n")
    return path


def _summary(folder: Path) -> dict:
    """A run's summary.json."""
    return json.loads((folder / "summary.json").read_text())


def test_a_runs_scenario_yaml_reruns_from_its_folder(tmp_path, monkeypatch):
    path = _scenario(tmp_path)
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-report",
                 "--no-baselines"]) == 0
    saved = yaml.safe_load((tmp_path / "o" / "scenario.yaml").read_text())
    assert saved["trace"]["path"] == str((tmp_path / "sub" / "t.parquet").resolve())
    monkeypatch.chdir(tmp_path / "o")
    assert main(["run", "scenario.yaml", "--out", "again", "--no-report", "--no-baselines"]) == 0
    first, again = _summary(tmp_path / "o"), _summary(tmp_path / "o" / "again")
    assert (again["requests"], again["cost_usd"]) == (first["requests"], first["cost_usd"])


def test_a_plans_scenario_yaml_reruns_and_bundled_names_stay_names(tmp_path, monkeypatch):
    path = _scenario(tmp_path)
    assert main(["plan", str(path), "--out", str(tmp_path / "p"), "--no-report"]) == 0
    monkeypatch.chdir(tmp_path / "p")
    assert main(["run", "scenario.yaml", "--out", "r", "--no-report", "--no-baselines"]) == 0
    assert main(["run", "tiny", "--out", "t", "--no-report", "--no-baselines"]) == 0
    saved = yaml.safe_load((tmp_path / "p" / "t" / "scenario.yaml").read_text())
    assert saved["trace"]["path"] == "azure2023_code.parquet"


def test_a_model_path_under_a_user_that_does_not_exist_is_one_scenario_line():
    import pytest

    from tiersim.errors import ScenarioError
    from tiersim.scenario import scenario_from_dict

    doc = {"name": "x", "model": "~0", "trace": {"path": "azure2023_code.parquet"},
           "tiers": [{"name": "bf16", "precision": "bf16", "replicas": 1,
                      "cost_per_gpu_hour": 1.0}]}
    with pytest.raises(ScenarioError, match=r"model: ~0: model config not found \(a path starts "
                                            r"with ~ and a user that does not exist\)"):
        scenario_from_dict(doc, "x.yaml")


def test_draft_and_working_folder_model_paths_are_written_absolute(tmp_path, monkeypatch):
    from tiersim.runner import portable_paths

    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "draft").mkdir()
    (tmp_path / "s" / "draft" / "config.json").write_text("{}")
    (tmp_path / "cwdmodel").mkdir()
    (tmp_path / "cwdmodel" / "config.json").write_text("{}")
    source = tmp_path / "s" / "spec.yaml"
    source.write_text("name: s\n")
    monkeypatch.chdir(tmp_path)
    doc = {"model": "cwdmodel/config.json",
           "tiers": [{"name": "a", "model": "Llama-3.1-8B",
                      "speculative": {"k": 3, "draft_model": "draft/config.json"}}]}
    out = portable_paths(doc, str(source))
    assert out["model"] == str(tmp_path / "cwdmodel" / "config.json")
    assert out["tiers"][0]["speculative"]["draft_model"] == str(
        tmp_path / "s" / "draft" / "config.json")
    assert out["tiers"][0]["model"] == "Llama-3.1-8B"  # a catalogue name stays a name


def test_a_sweeps_scenario_yaml_reruns_from_its_folder_and_resumes_from_the_original(
        tmp_path, monkeypatch):
    """The sweep's copy named ``sub/t.parquet`` (the base and a swept trace), which a rerun
    from the sweep folder looked for there; now both are absolute. The digests stay those of
    the scenario as read: rerunning the original into the same folder runs no point again."""
    path = _scenario(tmp_path)
    shutil.copy(TRACE, tmp_path / "sub" / "u.parquet")
    path.write_text(path.read_text() + "sweep:\n  tiers.bf16.replicas: [1, 2]\n"
                    "  zip:\n    trace.path: [sub/t.parquet, sub/u.parquet]\n"
                    "    seed: [0, 1]\n")
    out = tmp_path / "w"
    assert main(["sweep", str(path), "--out", str(out), "--no-report"]) == 0
    saved = yaml.safe_load((out / "scenario.yaml").read_text())
    sub = (tmp_path / "sub").resolve()
    assert saved["trace"]["path"] == str(sub / "t.parquet")
    assert saved["sweep"]["zip"]["trace.path"] == [str(sub / "t.parquet"), str(sub / "u.parquet")]
    assert saved["sweep"]["tiers.bf16.replicas"] == [1, 2]
    stored = sorted(p.name for p in (out / "points").iterdir())
    monkeypatch.chdir(out)
    assert main(["sweep", "scenario.yaml", "--out", "again", "--no-report"]) == 0
    assert len(list((out / "again" / "points").iterdir())) == 4
    before = {p.name: p.stat().st_mtime_ns for p in (out / "points").iterdir()}
    assert main(["sweep", str(path), "--out", str(out), "--no-report"]) == 0
    assert sorted(before) == stored
    assert {p.name: p.stat().st_mtime_ns for p in (out / "points").iterdir()} == before


def _sweep_plan(tmp_path: Path, sweep: str):
    """The sweep plan of the one-tier scenario with ``sweep`` (YAML) appended."""
    from tiersim.sweep.run import prepare

    path = _scenario(tmp_path)
    shutil.copy(TRACE, tmp_path / "sub" / "u.parquet")
    path.write_text(path.read_text() + sweep)
    return prepare(path)


def test_portable_sweep_rewrites_file_values_whatever_the_axis(tmp_path):
    from tiersim.sweep.portable import portable_sweep

    plan = _sweep_plan(tmp_path, "sweep:\n"
                       "  trace: [{path: sub/t.parquet, window: [0, 60]},\n"
                       "          {path: sub/u.parquet, window: [0, 60]}]\n"
                       "  zip:\n"
                       "    - {model: [Qwen3-Coder-30B-A3B], seed: [1]}\n"
                       "    - {tiers.bf16.replicas: [1]}\n")
    out = portable_sweep(plan)
    sub = (tmp_path / "sub").absolute()
    assert out["trace"] == [{"path": str(sub / "t.parquet"), "window": [0, 60]},
                            {"path": str(sub / "u.parquet"), "window": [0, 60]}]
    assert out["zip"] == plan.base["sweep"]["zip"]  # catalogue names and numbers as given
    assert plan.base["sweep"]["trace"][0]["path"] == "sub/t.parquet"  # the plan is not changed


def test_values_that_name_one_file_twice_are_refused(tmp_path):
    """Two spellings of one file ran as two points with the same numbers; the sweep now
    refuses them before any point runs (the copy could not name both anyway)."""
    with pytest.raises(TiersimError) as err:
        _sweep_plan(tmp_path, "sweep:\n  trace.path: [sub/t.parquet, ./sub/t.parquet]\n")
    assert str(err.value).endswith("sweep: 'trace.path': values 'sub/t.parquet' and "
                                   "'./sub/t.parquet' are the same setting once read; list it "
                                   "once")


def test_dot_dot_after_a_link_keeps_leading_where_the_link_points(tmp_path, monkeypatch):
    """``sub/lnk/../t.parquet`` reads ``real/../t.parquet`` through the link; collapsing the
    text to ``sub/t.parquet`` named another file."""
    from tiersim.runner import portable_paths

    (tmp_path / "real" / "in").mkdir(parents=True)
    (tmp_path / "sub").mkdir()
    shutil.copy(TRACE, tmp_path / "real" / "t.parquet")
    (tmp_path / "sub" / "lnk").symlink_to(tmp_path / "real" / "in")
    source = tmp_path / "s.yaml"
    source.write_text("name: s\n")
    doc = portable_paths({"trace": {"path": "sub/lnk/../t.parquet"}}, str(source))
    assert Path(doc["trace"]["path"]).resolve() == (tmp_path / "real" / "t.parquet").resolve()


def test_resuming_from_the_folders_own_copy_keeps_its_points(tmp_path, monkeypatch, capsys):
    """The copy names the user files by absolute path; it was refused ("its points do not
    match it; resume with ORIGINAL"). Its points read the same under it, so since round 27
    it resumes them (:mod:`tiersim.sweep.equivalent`)."""
    path = _scenario(tmp_path)
    path.write_text(path.read_text() + "sweep:\n  tiers.bf16.replicas: [1, 2]\n")
    out = tmp_path / "w"
    assert main(["sweep", str(path), "--out", str(out), "--no-report"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(out / "scenario.yaml"), "--out", str(out), "--no-report"]) == 0
    assert "2 points (0 run, 2 already done, 0 failed)" in capsys.readouterr().err
