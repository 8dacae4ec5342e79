"""Round 37, hostile input (helper fuzz10): what an earlier fuzz round left, through the CLI.
Each test names what a user saw before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

EVERY_REQUEST_CACHED = ("router:\n  policy: static_split\n  fractions: [0.5, 0.5]\n",
                        "router:\n  policy: {policy}\n  response_cache: {{mode: top_n, size: 1, "
                        "popularity: {{distinct: 1}}}}\n{extra}")
"""tiny.yaml's router replaced by ``policy`` behind a response cache that answers every
request: one distinct prompt, and the cache holds it."""

CLASSIFIER_POLICIES = {"floor": "  floor: 0.5\n", "threshold": "", "budget":
                       "  budget_relative: 0.6\n", "lagrangian": "  lambda: 0.1\n"}
"""A budget of 0.6 of the dearest tier's cost per request: on the calibrated roofline w4a16
costs 0.52 of bf16 per request (3.60e-05 against 6.89e-05 USD), so 0.5, as before, was below
the cheapest tier and refused."""


@pytest.mark.parametrize("policy", CLASSIFIER_POLICIES)
def test_a_classifier_router_behind_a_cache_that_answers_everything_runs(tmp_path, capsys,
                                                                         policy):
    """A router that trains a difficulty classifier (floor, threshold, budget, lagrangian)
    behind a response cache answering all 317 requests read "router.classifier.train_fraction:
    0.5 of 0 requests leaves none to train the classifier on; use more requests", a key the
    scenario does not set and a fix that does not help (the trace has 317 requests), where
    static_split, uniform, oracle and cascade ran and showed "-" for what no tier served. The
    classifier routers now route the empty table as they do: to no tier, with nothing
    trained."""
    old, new = EVERY_REQUEST_CACHED
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with((old, new.format(policy=policy,
                                               extra=CLASSIFIER_POLICIES[policy]))))
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "o", "--no-report")
    assert code == 0, err
    assert "Error" not in err and "Traceback" not in err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["response_cache"]["hits"] == summary["response_cache"]["requests"] == 317
    assert summary["completed"] == summary["dropped"] == 0
    assert summary["router"]["policy"] == policy


LINES_ABOVE_HEADERS = {
    "a title": ("Azure LLM inference trace 2023\n", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                "2023-11-16 18:00:00,10,10\n2023-11-16 18:00:01,10,10\n", "azure",
                "TIMESTAMP, ContextTokens, GeneratedTokens"),
    "a // comment": ("// exported by a tool\n", "arrival_s,input_tokens,output_tokens\n0,10,10\n",
                     "canonical", "arrival_s, input_tokens, output_tokens"),
    "a title with a comma": ("trace export, 2023\n", "Timestamp,Request tokens,Response tokens\n"
                             "0,10,10\n", "burstgpt", "Timestamp, Request tokens, Response tokens"),
    "a spreadsheet's empty row": (",,\n", "timestamp,input_length,output_length\n0,10,10\n",
                                  "mooncake", "timestamp, input_length, output_length"),
}
"""A line above a trace's header: (the line, the trace from its header on, its format, the
columns the error names)."""


@pytest.mark.parametrize(("above", "rest", "fmt", "columns"), LINES_ABOVE_HEADERS.values(),
                         ids=LINES_ABOVE_HEADERS)
def test_a_line_above_a_csv_header_is_named_with_the_fix(tmp_path, capsys, above, rest, fmt,
                                                         columns):
    """A CSV trace with a title or note above its header (not a ``#`` comment, which round 35
    named) read "row 1: has 3 fields where the header has 1 (file line 2); fix the separators
    or quoting", or for an empty spreadsheet row "not a trace: none of its 3 column name(s) is a
    trace column": pandas took the first line for the header, so the fix given was not the
    file's. The first line is not echoed (it may be anything); the header's line and format
    are named, and the trace reads once the line is gone."""
    path = tmp_path / "t.csv"
    path.write_text(above + rest)
    want = (f"Error: {path}: its first line is not the header: it names no trace column, and "
            f"file line 2 holds the {fmt} format's columns ({columns}); remove the line, so "
            "that the header comes first (file line 1)")
    assert one_error_line(*run_cli(capsys, "trace", "inspect", path)) == want
    scenario = tmp_path / "s.yaml"
    scenario.write_text(tiny_with(("path: azure2023_code.parquet", f"path: {path}"),
                                  ("window: [240, 360]", "window: null")))
    assert one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == want
    path.write_text(rest)
    assert run_cli(capsys, "trace", "inspect", path)[0] == 0


@pytest.mark.parametrize("trace", ["ok.csv", "missing.csv", "binary.csv"])
@pytest.mark.parametrize("value", ["CANONICAL", "xml", " auto"])
def test_a_trace_format_option_no_format_has_is_the_options_fault(tmp_path, capsys, monkeypatch,
                                                                  trace, value):
    """``tiersim trace inspect t.csv --format CANONICAL`` read "t.csv: unknown format
    'CANONICAL'; use one of ...", blaming the trace file for the option's value (round 28 moved
    --window's such line to the option), and behind a trace that is missing or not a trace
    the option was never named. It is refused before the file is read, as plan's
    --cost-model is."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,10\n")
    (tmp_path / "binary.csv").write_bytes(bytes(range(256)))
    line = one_error_line(*run_cli(capsys, "trace", "inspect", trace, "--format", value))
    assert line == (f"Error: --format {value!r}: choose one of auto, azure, burstgpt, mooncake, "
                    "canonical")
    assert run_cli(capsys, "trace", "inspect", "ok.csv", "--format", "canonical")[0] == 0


MOONCAKE_LINE = '{"timestamp": 0, "input_length": 10, "output_length": 10}\n'


@pytest.mark.parametrize(("above", "line"), [("// exported by a tool\n", 2),
                                             ("# Mooncake trace\n", 2),
                                             ("Exported trace\n\n", 3)],
                         ids=["// comment", "# comment", "title and a blank line"])
def test_a_line_above_json_lines_is_named_with_the_fix(tmp_path, capsys, above, line):
    """JSON lines under a first line that is no JSON object were read as a CSV whose header was
    that line: "row 1: has 3 fields where the header has 1 (file line 2); fix the separators or
    quoting" (a ``#`` comment: "... looks like a comment, not the header: it has 1 field where
    the next line has 3"), words about a CSV's fields for a file of JSON objects."""
    path = tmp_path / "t.jsonl"
    path.write_text(above + MOONCAKE_LINE * 2)
    want = (f"Error: {path}: its first line is not a JSON object, and file line {line} is one "
            "(JSON lines): remove the line, so that the objects come first (file line 1)")
    assert one_error_line(*run_cli(capsys, "trace", "inspect", path)) == want
    path.write_text(MOONCAKE_LINE * 2)
    assert run_cli(capsys, "trace", "inspect", path)[0] == 0


@pytest.mark.parametrize("policy", ["static_split", "floor"])
@pytest.mark.parametrize("tier", [[], ["--tier", "bf16"]], ids=["first tier", "--tier bf16"])
def test_disagg_behind_a_cache_that_answers_everything_names_the_cache(tmp_path, capsys, policy,
                                                                       tier):
    """``tiersim disagg`` of a scenario whose response cache answers every request read "tier
    'w4a16' serves no request of this trace (w4a16 0, bf16 0), so its splits have no latency to
    compare; choose a tier that serves traffic with --tier": no tier serves one, so no --tier
    helps. The line names the cache."""
    old, new = EVERY_REQUEST_CACHED
    extra = CLASSIFIER_POLICIES.get(policy, "  fractions: [0.5, 0.5]\n")
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with((old, new.format(policy=policy, extra=extra)),
                              ("replicas: 1", "replicas: 2")))
    code, err = run_cli(capsys, "disagg", path, *tier)
    # the floor router's floor is judged on the priors (tiny's tiers state no accuracy): that
    # note (round 51) comes before the error; the error is still one line
    err = "".join(line for line in err.splitlines(keepends=True)
                  if "per-precision priors" not in line)
    line = one_error_line(code, err)
    assert line == (f"Error: {path}: router.response_cache answers every request of this trace, "
                    "so no tier serves one and no split has a latency to compare; remove "
                    "router.response_cache (or give it fewer hits) to compare the splits")


@pytest.mark.parametrize("command", [["run"], ["plan"], ["disagg"], ["sweep"],
                                     ["analytic", "--scenario"]])
@pytest.mark.parametrize("given", ["/tiny.yaml", "{tmp}/gone/scenarios/tiny.yaml",
                                   "gone/scenarios/tiny.yaml"])
def test_a_missing_scenario_path_elsewhere_is_not_replaced_by_the_bundled_one(
        tmp_path, capsys, monkeypatch, command, given):
    """``tiersim run /tiny.yaml`` (or ``~/tiny.yaml`` with HOME empty, or a mistyped
    ``/data/scenarios/tiny.yaml``) ran the bundled tiny.yaml and exited 0 behind "note:
    /tiny.yaml is not in this folder; using the bundled scenarios/tiny.yaml": the fallback is
    for a bare name or ``scenarios/NAME`` (the README's), and test_hostile_inputs' "missing
    scenario elsewhere is not replaced" held only for a folder not named scenarios below one
    with a name. Now any other path is the user's own file, not found."""
    monkeypatch.chdir(tmp_path)
    path = given.format(tmp=tmp_path)
    if path == "/tiny.yaml" and Path(path).exists():
        pytest.skip("this machine has a /tiny.yaml")
    argv = [*command, path] + (["--out", tmp_path / "o"] if command[0] in ("plan", "sweep")
                               else [])
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {path}: file not found"
    assert not (tmp_path / "o").exists()
    code, err = run_cli(capsys, "analytic", "--scenario", "scenarios/tiny.yaml")
    assert code == 0 and "note: scenarios/tiny.yaml is not in this folder; using the bundled" in err
