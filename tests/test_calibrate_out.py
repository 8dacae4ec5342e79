"""``tiersim calibrate --out`` checks that need no torch (they run before it is imported)."""

from __future__ import annotations

import pytest

from tiersim.cli import main


@pytest.mark.parametrize("command", [["calibrate", "--device", "cpu", "--quick"],
                                     ["calibrate", "--from", "aiconfigurator"]])
@pytest.mark.parametrize("name,tail,whole", [("x.partial.json", ".partial.json", "x.json"),
                                             ("x.partial", ".partial", "x.json")])
def test_an_out_named_as_a_cut_runs_file_is_refused(tmp_path, capsys, command, name, tail,
                                                    whole):
    """`--out x.partial.json` was taken, and a budget-cut run then wrote
    x.partial.partial.json; the harness names its cut runs' files so. The name offered ends
    in .json, the only name --out takes (round 49: x.partial offered x, itself refused)."""
    out = tmp_path / name
    assert main([*command, "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: --out {out}: a name ending in {tail} is the harness's own for what a run that "
        f"does not finish measured (P.partial.json for P.json); give another name, such as "
        f"{tmp_path / whole}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["calibrate", "--device", "cpu", "--quick"],
                                     ["calibrate", "--from", "aiconfigurator"]])
@pytest.mark.parametrize("name,text,what", [
    ("summary.json", '{"requests": 317}\n', "a JSON document with no schema"),
    ("scenario.yaml", "name: tiny\n", "not a JSON document"),
    ("other.json", '{"schema": "tiersim.sweep/1"}', "a JSON document of schema "
                                                    "'tiersim.sweep/1'"),
])
def test_an_out_that_holds_another_file_is_refused(tmp_path, capsys, command, name, text, what):
    """`--out run/summary.json` replaced a run's summary with a profile (and `--out
    scenario.yaml` the scenario): --out only ever replaces a profile."""
    out = tmp_path / name
    out.write_text(text)
    assert main([*command, "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: --out {out}: holds {what}, not a tiersim profile; the profile would replace "
        "it; give a new file name, or the path of a profile to replace")
    assert out.read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_an_out_whose_partial_name_is_a_folder_is_refused(tmp_path, capsys):
    """With P.partial.json a folder, the run measured, failed to write there after each
    table (recorded as skipped sections), and ended in a traceback, leaving
    P.partial.json.tmp behind."""
    (tmp_path / "p.partial.json").mkdir()
    assert main(["calibrate", "--device", "cpu", "--quick", "--out",
                 str(tmp_path / "p.json")]) == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: --out {tmp_path / 'p.json'}: {tmp_path / 'p.partial.json'}, where a run that "
        "does not finish writes what it measured, is not a regular file (a folder, device or "
        "pipe); move it, or give another --out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.partial.json"]


def test_an_existing_profile_may_be_replaced(tmp_path):
    """A profile (``schema: tiersim.profile/1``) at --out is what --out is for."""
    from tiersim.calibrate.cli import out_problem

    out = tmp_path / "p.json"
    out.write_text('{"schema": "tiersim.profile/1", "name": "x"}')
    assert out_problem(str(out)) is None


@pytest.mark.parametrize("argv", [["--from"], ["--out", "p.json", "--from"],
                                  ["--from", "--out", "p.json"]])
def test_from_without_a_value_says_so(tmp_path, capsys, monkeypatch, argv):
    """`tiersim calibrate --from` said "the following arguments are required: --out" (or
    "unrecognized arguments: --from"): the harness was run, as if --from were not given."""
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", *argv]) == 1
    assert capsys.readouterr().err.strip() == (
        "Error: --from needs a value; the only importer is 'aiconfigurator' (tiersim calibrate "
        "--from aiconfigurator --out P.json)")
    assert list(tmp_path.iterdir()) == []
