"""Round 36, hostile input (helper fuzz9): a calibrate ``--out`` that is, or lies under, a
symbolic link leading to nothing; a long command-line value quoted whole in its error line;
YAML syntax errors told with no fix; a file tiersim sniffs as JSON that is nested too deep or
is a named pipe."""

from __future__ import annotations

import json
import os

import pytest
from conftest import run_cli as run_process
from test_hostile_inputs import one_error_line, run_cli, tiny_with

CALIBRATE_OUT_LINKS = {
    "a loop of links": ("l1", "--out l1: a link that leads to no file (or the links loop); "
                        "point the link at a file, remove it, or give another file path"),
    "a link to nothing": ("gone.json", "--out gone.json: a link that leads to no file (or the "
                          "links loop); point the link at a file, remove it, or give another "
                          "file path"),
    "under a loop of links": ("l1/p.json", "--out l1/p.json: l1 is a link that leads to no "
                              "folder (or the links loop); point it at a folder, remove it, or "
                              "give another file path"),
}


@pytest.mark.parametrize("importer", [False, True], ids=["harness", "aiconfigurator"])
@pytest.mark.parametrize(("out", "expected"), CALIBRATE_OUT_LINKS.values(),
                         ids=CALIBRATE_OUT_LINKS)
def test_a_calibrate_out_link_to_nothing_is_one_line(tmp_path, capsys, monkeypatch, importer,
                                                     out, expected):
    """``tiersim calibrate --quick --out l1`` where l1 and l2 link to each other ended in a
    RuntimeError traceback ('Symlink loop from ...', from Path.resolve), and ``--from
    aiconfigurator --out l1`` replaced the link with the profile, as both did a link to a file
    that does not exist; run, sweep and plan refuse such an ``--out``. Both now refuse it,
    before anything is measured or imported, and the links are left as they were."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "l1").symlink_to("l2")
    (tmp_path / "l2").symlink_to("l1")
    (tmp_path / "gone.json").symlink_to("nowhere.json")
    argv = (["calibrate", "--from", "aiconfigurator", "--out", out] if importer
            else ["calibrate", "--quick", "--device", "cpu", "--out", out])
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == f"Error: {expected}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.json", "l1", "l2"]
    assert all(p.is_symlink() for p in tmp_path.iterdir())


LONG = "x" * 5000
CUT = f"'{'x' * 60}..."
"""A 5,000-character value, and how an error line quotes it: its first 60 characters."""

LONG_VALUES = {
    "plan --choose": (["plan", "{s}", "--choose", LONG], f"--choose {CUT}: write PATH=VALUE1,"
                      "VALUE2, a list value in brackets (e.g. router.lambda=0.1,0.2 or "
                      "router.thresholds=[0.2,0.5],[0.3,0.6])"),
    "plan --choose values": (["plan", "{s}", "--choose", f"router.floor=[{LONG}"],
                             f"--choose router.floor: cannot read '[{'x' * 59}... as YAML "
                             "values; quote a text value that holds brackets, braces, commas or "
                             "a colon ('a[1]'); write PATH=VALUE1,VALUE2, a list value in "
                             "brackets (e.g. router.lambda=0.1,0.2 or router.thresholds="
                             "[0.2,0.5],[0.3,0.6])"),
    "plan --cost-model": (["plan", "{s}", "--cost-model", LONG], f"--cost-model {CUT}: choose "
                          "one of attributed, provisioned, fixed_per_request"),
    "sweep --executor": (["sweep", "{s}", "--out", "{o}", "--executor", LONG], "--executor: "
                         f"must be 'local' or 'ray' (got {CUT})"),
    "trace inspect --format": (["trace", "inspect", "{t}", "--format", LONG], f"--format {CUT}: "
                               "choose one of auto, azure, burstgpt, mooncake, canonical"),
    "calibrate --device": (["calibrate", "--device", LONG, "--out", "{p}"], f"--device {CUT}: "
                           "must be cuda or cpu"),
    "calibrate --ops": (["calibrate", "--quick", "--device", "cpu", "--ops", LONG, "--out",
                         "{p}"], f"--ops {CUT}: each must be one of overhead,gemm,moe,"
                        "attn_decode,attn_prefill,allreduce"),
    "calibrate --from": (["calibrate", "--from", LONG, "--out", "{p}"], f"--from {CUT}: the "
                         "only importer is 'aiconfigurator'"),
}


@pytest.mark.parametrize(("argv", "expected"), LONG_VALUES.values(), ids=LONG_VALUES)
def test_a_long_command_line_value_is_quoted_cut(tmp_path, capsys, argv, expected):
    """A 5,000-character value given to ``--choose``, ``--cost-model``, ``--executor``,
    ``trace inspect --format`` or calibrate's ``--device``, ``--ops``, ``--from`` (and
    ``--precisions``, ``--kv-dtypes``, ``--model``, ``--gpu``, ``--engine``) was quoted whole:
    an error line of 5,000 characters and more. Round 34 cut the tier flags' names; each of
    these now quotes the value's first 60 characters too, as a scenario's values are cut."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(extra="sweep:\n  seed: [0, 1]\n"))
    trace = tmp_path / "t.csv"
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,10,2\n")
    names = {"s": scenario, "o": tmp_path / "o", "t": trace, "p": tmp_path / "p.json"}
    line = one_error_line(*run_cli(capsys, *[a.format(**names) for a in argv]))
    assert line == "Error: " + expected.format(**names)
    assert len(line) < 400
    assert not (tmp_path / "o").exists() and not (tmp_path / "p.json").exists()


YAML_NO_FIX = {
    "a Windows path in double quotes": (
        ("path: azure2023_code.parquet", 'path: "C:\\xtraces\\a.parquet"'),
        "line 10: invalid YAML: expected escape sequence of 2 hexadecimal numbers, but found "
        "'t'; in double quotes a backslash starts an escape (\\xHH, \\uHHHH): write a backslash "
        "as \\\\, or use single quotes"),
    "a list item on its key's line": (
        ("tiers:\n  - name: w4a16", "tiers: - name: w4a16"),
        "line 13: invalid YAML: sequence entries are not allowed here; put each list item "
        "('- ') on its own line, indented under its key, or quote the value if the '- ' is "
        "text"),
    "a key after the document's end": (
        ("seed: 0", "seed: 0\n...\nx: 1"),
        "line 6: invalid YAML: expected '<document start>', but found '<block mapping start>'; "
        "a scenario is one YAML document: remove the '...' or '%' line above this one (a "
        "document end or a directive)"),
    "an anchor with no name": (
        ("seed: 0", "seed: & 0"),
        "line 4: invalid YAML: expected alphabetic or numeric character, but found ' '; write "
        "a name right after an anchor's & (&name), an alias's * (*name) or a directive's %, or "
        "quote the value if the mark is text"),
    "a merge of a scalar": (
        ("seed: 0", "seed: 0\nslo2:\n  <<: abc"),
        "line 6: invalid YAML: expected a mapping or list of mappings for merging, but found "
        "scalar; '<<' merges maps (<<: *anchor): give it a map or a list of maps, or quote the "
        "key ('<<') if it is text"),
    "a list with an empty item": (
        ("window: [240, 360]", "window: [240, , 360]"),
        "line 11: invalid YAML: expected the node content, but found ','; remove the extra "
        "comma, or write the value that is missing"),
    "text after a block's |": (
        ("name: tiny", "name: | tiny"),
        "line 3: invalid YAML: expected a comment or a line break, but found 't'; end the line "
        "after its | or > (or its %YAML directive), or put a space and # before a comment"),
    "a tag of an undefined handle": (
        ("name: tiny", "name: !e!x tiny"),
        "line 3: invalid YAML: found undefined tag handle '!e!'; remove the tag, or quote the "
        "value if its '!' is text"),
}


@pytest.mark.parametrize(("edit", "expected"), YAML_NO_FIX.values(), ids=YAML_NO_FIX)
def test_a_yaml_syntax_error_round_34_left_without_a_fix_names_one(tmp_path, capsys, edit,
                                                                   expected):
    """Round 34 gave the commonest YAML syntax errors a fix; PyYAML's other words still came
    alone ('line 10: invalid YAML: expected escape sequence of 2 hexadecimal numbers, but found
    't'', the line a Windows path in double quotes gets; 'sequence entries are not allowed
    here'; 'expected the node content, but found ','' ...). Each now names its fix too, from
    the same table (scenario_yaml.YAML_FIXES)."""
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(edit))
    line = one_error_line(*run_cli(capsys, "run", path, "--no-baselines"))
    assert line == f"Error: {path}: {expected}"


DEEP_JSON = "[" * 100_000 + "]" * 100_000
"""JSON nested 100,000 deep: Python's json module raises RecursionError on it."""


@pytest.mark.parametrize("importer", [False, True], ids=["harness", "aiconfigurator"])
def test_a_calibrate_out_of_json_nested_too_deep_is_one_line(tmp_path, capsys, monkeypatch,
                                                              importer):
    """``tiersim calibrate --out deep.json`` where deep.json holds JSON nested 100,000 deep
    ended in a RecursionError traceback: the check that an existing --out is a profile read it
    with json.loads and caught only ValueError. It is now told as what it holds, and left as
    it was."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text(DEEP_JSON)
    argv = (["calibrate", "--from", "aiconfigurator", "--out", "deep.json"] if importer
            else ["calibrate", "--quick", "--device", "cpu", "--out", "deep.json"])
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == ("Error: --out deep.json: holds JSON nested too deeply to read, not a tiersim "
                    "profile; the profile would replace it; give a new file name, or the path "
                    "of a profile to replace")
    assert (tmp_path / "deep.json").read_text() == DEEP_JSON


def test_a_run_folders_manifest_nested_too_deep_is_taken_as_a_runs(tmp_path, capsys):
    """``tiersim run --out o`` where o/manifest.json (the mark of a run's folder) holds JSON
    nested too deep ended in a RecursionError traceback, where one that does not parse is
    taken for a run's, which the rerun replaces. It is now taken for a run's too."""
    out = tmp_path / "o"
    out.mkdir()
    (out / "manifest.json").write_text(DEEP_JSON)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    code, err = run_cli(capsys, "run", scenario, "--out", out, "--no-baselines", "--no-report")
    assert code == 0, err[-500:]
    assert "Traceback" not in err
    assert "run_id" in json.loads((out / "manifest.json").read_text())


def test_a_run_folders_manifest_that_is_a_named_pipe_does_not_hang_the_rerun(tmp_path):
    """``tiersim run --out o`` where o/manifest.json is a named pipe hung for ever: the check
    of whose folder it is opened the pipe and waited for a writer. A mark that is no regular
    file is now taken for a run's, unread, and the run replaces it with its manifest."""
    out = tmp_path / "o"
    out.mkdir()
    os.mkfifo(out / "manifest.json")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    done = run_process("run", str(scenario), "--out", str(out), "--no-baselines", "--no-report")
    assert done.returncode == 0, done.stderr[-500:]
    assert "Traceback" not in done.stderr
    assert (out / "manifest.json").is_file()


def test_a_sweep_table_that_is_a_named_pipe_does_not_hang_the_resume(tmp_path):
    """``tiersim sweep s.yaml --out o`` over a finished sweep whose o/sweep.parquet had become
    a named pipe hung for ever: the resume opened it (arrowfile.arrow_file) to see which rows
    it holds, and opening a pipe waits for a writer. arrow_file now refuses a pipe or a device
    before opening it, so the table reads as none a sweep wrote, and the sweep writes it anew
    from its stored points."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(extra="sweep:\n  tiers.0.replicas: [1, 2]\n"))
    out = tmp_path / "o"
    argv = ("sweep", str(scenario), "--out", str(out), "--no-baselines", "--no-report")
    assert run_process(*argv).returncode == 0
    (out / "sweep.parquet").unlink()
    os.mkfifo(out / "sweep.parquet")
    done = run_process(*argv)
    assert done.returncode == 0, done.stderr[-500:]
    assert "(0 run, 2 already done, 0 failed)" in done.stderr
    assert (out / "sweep.parquet").is_file()


@pytest.mark.parametrize("command", ["inspect", "run"])
def test_a_parquet_trace_pyarrow_cannot_read_names_the_fix(tmp_path, capsys, command):
    """A Parquet trace cut short read 'not a readable Parquet file (Parquet magic bytes not
    found in footer. Either the file is corrupted or this is not a parquet file.)': pyarrow's
    words, and no fix. Every such line (the footer, the schema, the row groups) now ends
    with one."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"arrival_s": [0.0, 1.0], "input_tokens": [5, 5],
                             "output_tokens": [5, 5]}), buffer)
    trace = tmp_path / "cut.parquet"
    trace.write_bytes(buffer.getvalue()[:200])
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("path: azure2023_code.parquet", f"path: {trace}"),
                                  ("  window: [240, 360]\n", "")))
    argv = ["trace", "inspect", trace] if command == "inspect" else ["run", scenario,
                                                                     "--no-baselines"]
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == (f"Error: {trace}: not a readable Parquet file (Parquet magic bytes not found "
                    "in footer. Either the file is corrupted or this is not a parquet file.); "
                    "write it again (pyarrow, or pandas' to_parquet), or give a whole copy if it "
                    "was cut short")


@pytest.mark.parametrize("written", ["null", "[]"])
def test_a_plan_json_of_null_is_refused_as_a_list_is(tmp_path, capsys, written):
    """``tiersim report`` of a plan folder whose plan.json holds JSON's ``null`` wrote a
    report without a word of the plan: null read as no plan.json at all, where ``[]`` is
    refused as a malformed plan. Both are now the same one line."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with())
    out = tmp_path / "plan"
    code, err = run_cli(capsys, "plan", scenario, "--max-replicas", "1", "--out", out)
    assert (out / "plan.json").is_file(), err[-500:]
    (out / "plan.json").write_text(written)
    (out / "report.html").unlink(missing_ok=True)
    line = one_error_line(*run_cli(capsys, "report", out))
    assert line == (f"Error: {out / 'plan.json'}: malformed plan (the top level must be a JSON "
                    "object); rerun `tiersim plan` to rewrite it")
    assert not (out / "report.html").exists()
