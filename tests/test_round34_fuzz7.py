"""Round 34, hostile input (helper fuzz7): a profile beside the scenario that is no file, YAML
syntax errors that named no fix or the wrong line."""

from __future__ import annotations

import os

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli, tiny_with


@pytest.mark.parametrize("kind", ["folder", "pipe"])
def test_a_profile_beside_the_scenario_that_is_no_file_is_named_so(tmp_path, capsys, kind):
    """``profile: pdir`` where pdir is a folder (or a named pipe) beside the scenario read
    'profile: pdir: no such profile file or bundled profile; bundled: ...', though it is there:
    only a file beside the scenario was taken as found there. It is now refused as what it is,
    as the same path given in full and a model config beside the scenario are."""
    if kind == "folder":
        (tmp_path / "pdir").mkdir()
    else:
        os.mkfifo(tmp_path / "pdir")
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(profile="pdir"))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 5: profile: {tmp_path / 'pdir'}: not a regular "
                    "file (a folder, device or pipe); give a profile JSON file or a bundled "
                    "profile's name")


YAML_SYNTAX = {
    "a colon in a value": (("name: tiny", "name: a: b"), "line 3: invalid YAML: mapping values "
                           "are not allowed here; quote a value that holds ': ', or line the key "
                           "up with the keys beside it"),
    "a quote never closed": (("name: tiny", "name: 'tiny"), "line 3: invalid YAML: a quote that "
                             "starts on this line is never closed (the file ends first); close "
                             "the quote"),
    "a list never closed": (("window: [240, 360]", "window: [240, 360"), "line 13: invalid "
                            "YAML: expected ',' or ']', but got ':' (in the [ list that starts "
                            "on line 11); close the list with ']', or put a comma between its "
                            "items"),
    "an alias to no anchor": (("seed: 0", "seed: *nope"), "line 4: invalid YAML: found "
                              "undefined alias 'nope'; define the anchor (&name) above the first "
                              "alias to it (*name), or write the value out"),
    "an anchor defined twice": (("seed: 0", "seed: &a 0\nx: &a 1"), "line 5: invalid YAML: "
                                "anchor 'a' is defined twice (first on line 4); give each anchor "
                                "its own name"),
    "a value starting with @": (("name: tiny", "name: @tiny"), "line 3: invalid YAML: found "
                                "character '@' that cannot start any token; quote the value: "
                                "YAML keeps @, ` and % at the start of a value for itself"),
    "a list item among keys": (("seed: 0", "seed: 0\n- x"), "line 5: invalid YAML: expected "
                               "<block end>, but found '-'; line the key or list item up with "
                               "the ones beside it, or indent it under its key"),
    "a control character": (("name: tiny", "name: ti\x07ny"), "line 3: invalid YAML: "
                            "unacceptable character #x0007: special characters are not allowed; "
                            "remove that control character: a scenario is plain text"),
    "a file cut short": (("tpot_p99_s: 0.1\n", "tpot_p99_s: ["), "line 29: invalid YAML: "
                         "expected the node content, but found '<stream end>'; the file ends "
                         "where a value is due (cut short?): finish it, or give the whole file"),
}


@pytest.mark.parametrize(("edit", "expected"), YAML_SYNTAX.values(), ids=YAML_SYNTAX)
def test_a_yaml_syntax_error_names_its_line_and_a_fix(tmp_path, capsys, edit, expected):
    """The YAML syntax errors people make most read PyYAML's words alone, with no fix ('line 3:
    invalid YAML: mapping values are not allowed here'); a quote left open named the file's last
    line, not the quote's; an anchor defined twice read 'invalid YAML: second occurrence'; and a
    control character named no line at all ('invalid YAML: unacceptable character #x0007: ...').
    Each now names the line to look at and the fix."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(edit))
    line = one_error_line(*run_cli(capsys, "run", path, "--no-baselines"))
    assert line == f"Error: {path}: {expected}"


@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
def test_an_out_under_a_link_to_nothing_names_the_link(tmp_path, capsys, command):
    """``--out gone/o`` where gone is a symbolic link to a folder that does not exist read
    'gone/o: --out must be a folder, and a file is in the way' (no file is there, and no fix
    given); ``--out gone`` itself names the link. It now names the link it lies under."""
    (tmp_path / "gone").symlink_to("nowhere")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    out = tmp_path / "gone" / "o"
    extra = ["--no-baselines"] if command != "plan" else []
    line = one_error_line(*run_cli(capsys, command, scenario, "--out", out, *extra))
    assert line == (f"Error: {out}: --out lies under {tmp_path / 'gone'}, a symbolic link to "
                    "nowhere, which does not exist; create that folder, remove the link, or use "
                    "another --out folder")
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("option", ["router=1", " router =1", "router={policy: oracle}"])
def test_choose_naming_the_router_block_says_to_name_a_setting(tmp_path, capsys, option):
    """``tiersim plan --choose router=1`` read "--choose router=1: router.router: unknown key
    (did you mean 'tier'?)": a leading ``router.`` may be left out, so ``router`` was taken for
    a setting of the router named router. It now says to name one of its settings."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    line = one_error_line(*run_cli(capsys, "plan", scenario, "--out", tmp_path / "p",
                                   "--choose", option))
    assert line == ("Error: --choose router: names the router block, not one of its settings; "
                    "name a setting (router.<key>, e.g. router.lambda=0.05,0.1)")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("link", ["to nothing", "loop"])
@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
def test_a_scenario_given_as_a_link_to_no_file_says_so(tmp_path, capsys, link, command):
    """A scenario path that is a link to a missing file read 's.yaml: file not found', and one
    of a loop of links 's.yaml: cannot read file (Too many levels of symbolic links)', neither
    with a fix; a model config's or profile's such link reads 'a link that leads to no file (or
    the links loop)'. The scenario's now reads so too, with its fix, and nothing is written."""
    scenario = tmp_path / "s.yaml"
    if link == "loop":
        (tmp_path / "t.yaml").symlink_to(scenario)
        scenario.symlink_to(tmp_path / "t.yaml")
    else:
        scenario.symlink_to(tmp_path / "gone.yaml")
    line = one_error_line(*run_cli(capsys, command, scenario, "--out", tmp_path / "o"))
    assert line == (f"Error: {scenario}: a link that leads to no file (or the links loop); "
                    "point it at a scenario YAML file")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("link", ["to nothing", "loop"])
def test_report_of_a_link_to_no_folder_says_so(tmp_path, capsys, link):
    """``tiersim report gone`` where gone is a link to a missing folder (or one of a loop of
    links) read 'gone: no such folder', as if nothing were there; it now names the link."""
    folder = tmp_path / "gone"
    if link == "loop":
        (tmp_path / "other").symlink_to(folder)
        folder.symlink_to(tmp_path / "other")
    else:
        folder.symlink_to(tmp_path / "nowhere")
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder}: a link that leads to no folder (or the links loop); give "
                    "the --out folder of a run, sweep or plan")


@pytest.mark.parametrize("argv", [("disagg", "{s}", "--tier"), ("analytic", "--scenario", "{s}",
                                                                 "--cheap")])
def test_an_unknown_tier_flag_value_is_named_shortly(tmp_path, capsys, argv):
    """``tiersim disagg s.yaml --tier NAME`` (and ``analytic --cheap NAME``) of a name that no
    tier has quoted it whole: a name of 5,000 characters made a line of 5,100. A tier name holds
    at most 64 characters, and the line now cuts it there, as a scenario's values are cut."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    code, err = run_cli(capsys, *[a.format(s=scenario) for a in argv], "x" * 5000)
    line = one_error_line(code, err)
    assert f"'{'x' * 61}...'; tiers are w4a16, bf16" in line
    assert len(line) < 250
