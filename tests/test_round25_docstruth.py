"""Round 25, docs walk: what README.md and docs/*.md say a command does, held to what it does."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import axis_line, tiny_doc, write_yaml

from tiersim.cli import main


def _tiny_with_sweep(tmp_path: Path, sweep: dict) -> Path:
    return write_yaml(tmp_path / "s.yaml", tiny_doc(sweep=sweep))


@pytest.mark.parametrize("zip_value", [{}, [{}], [{"trace.time_scale": [1.0, 2.0]}, {}]])
def test_an_empty_zip_group_is_called_empty(tmp_path, capsys, zip_value):
    """docs/report.md: `zip: {}` is refused as a zip with no group. It read 'must be a map (or
    list of maps) of path: [values]', of a value that is a map."""
    scenario = _tiny_with_sweep(tmp_path, {"zip": zip_value})
    assert main(["sweep", str(scenario), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    line = axis_line(scenario, "zip")
    if zip_value == {}:
        assert err == (f"Error: {scenario}: line {line}: sweep: 'zip': lists no group; give a "
                       "map (or list of maps) of path: [values], or remove zip")
    else:
        n = len(zip_value) - 1
        assert err == (f"Error: {scenario}: line {line}: sweep: 'zip': group {n} names no "
                       "path; give it path: [values], or remove it")
    assert not (tmp_path / "o").exists()


def test_a_zip_group_that_is_not_a_map_is_still_refused_as_such(tmp_path, capsys):
    scenario = _tiny_with_sweep(tmp_path, {"zip": [[1, 2]]})
    assert main(["sweep", str(scenario), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.strip().endswith(
        "sweep: 'zip': must be a map (or list of maps) of path: [values]")
    assert yaml.safe_load(scenario.read_text())["sweep"] == {"zip": [[1, 2]]}


def test_a_time_scale_past_the_longest_span_names_the_inspect_flags_too(tmp_path, capsys):
    """README: `tiersim trace inspect --time-scale` is held to the run's limits. Its refusal
    named only the scenario keys (`trace.time_scale`, `trace.window`), which inspect does not
    read; the unit notes name both spellings, `(tiersim trace inspect: --time-scale X)`."""
    trace = tmp_path / "far.csv"
    trace.write_text("request_id,arrival_s,input_tokens,output_tokens\n"
                     "1,0.0,100,10\n2,900000000.0,100,10\n")
    assert main(["trace", "inspect", str(trace), "--time-scale", "0.5"]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: {trace}: time_scale 0.5 replays the last arrival, 9e+08 s, at 1.8e+09 s, more "
        "than 1e+09 s (31 years) after time 0, where the simulated clock loses its precision; "
        "set trace.time_scale to at least 0.9 (tiersim trace inspect: --time-scale 0.9), or a "
        "trace.window of at most 5e+08 s (tiersim trace inspect: --window START END)")


@pytest.mark.parametrize("key, value, said", [
    ("model", "cfgs/config.json", "cfgs/config.json: cannot read a model config (No such file or "
                                  "directory)"),
    ("profile", "myprof.json", "myprof.json: no such profile file or bundled profile; bundled: "
                               "b200_aiconfigurator_vllm, h100_aiconfigurator_vllm, "
                               "h200_aiconfigurator_vllm"),
])
def test_a_relative_file_not_found_says_where_it_was_looked_for(tmp_path, monkeypatch, capsys,
                                                                key, value, said):
    """README: 'a relative model config or profile path [is looked up] next to the scenario file,
    then from the working folder'. Not found, the line said neither, where a trace's names the
    scenario's folder and the bundled traces."""
    (tmp_path / "sc").mkdir()
    (tmp_path / "wd").mkdir()
    scenario = write_yaml(tmp_path / "sc" / "s.yaml", tiny_doc(**{key: value}))
    monkeypatch.chdir(tmp_path / "wd")
    assert main(["run", "../sc/s.yaml", "--no-baselines"]) == 1
    line = next(i for i, text in enumerate(scenario.read_text().splitlines(), 1)
                if text.startswith(f"{key}:"))
    assert capsys.readouterr().err.strip() == (
        f"Error: ../sc/s.yaml: line {line}: {key}: {said}; a relative path is read beside the "
        f"scenario (in ../sc), then from the working folder ({tmp_path / 'wd'})")


def test_a_relative_file_found_from_the_working_folder_still_runs(tmp_path, monkeypatch):
    (tmp_path / "sc").mkdir()
    (tmp_path / "wd").mkdir()
    profile = (tmp_path / "wd" / "p.json")
    profile.write_bytes((Path(__file__).resolve().parent.parent / "tiersim" / "profiles"
                         / "h200_aiconfigurator_vllm.json").read_bytes())
    write_yaml(tmp_path / "sc" / "s.yaml", tiny_doc(profile="p.json"))
    monkeypatch.chdir(tmp_path / "wd")
    assert main(["run", "../sc/s.yaml", "--no-baselines"]) == 0
