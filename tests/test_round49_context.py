"""Round 49 (helper ctx49): ``trace.skip_longer_than`` leaves out at load the requests longer
(prompt + output) than a model's context, as vLLM refuses them at its API (HTTP 400) whatever
the fleet. A real trace (9 requests of a Mooncake trace beyond DeepSeek-V3's 163,840 tokens)
made every fleet drop them, so ``tiersim plan``, which allows no drop, found no plan; the run's
note told the user to rewrite the trace.

The scenario is tiny.yaml (two tiers of Qwen3-Coder-30B-A3B, context 262,144) over eight
requests a second apart, one of them 300,010 tokens long."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tiersim.cli import main

TINY = (Path(__file__).resolve().parents[1] / "tiersim" / "scenarios" / "tiny.yaml").read_text()
LONG = 300_000
"""The over-long request's prompt (its output is 10): beyond the model's 262,144."""


def _scenario(tmp_path: Path, skip: object = None, table: pd.DataFrame | None = None) -> Path:
    """tiny.yaml over eight requests (the third ``LONG`` + 10 tokens) in a canonical Parquet
    trace beside it, with ``trace.skip_longer_than: skip`` where given (written as is)."""
    if table is None:
        table = pd.DataFrame({"request_id": range(8), "arrival_s": [float(i) for i in range(8)],
                              "input_tokens": [100, 100, LONG, 100, 100, 100, 100, 100],
                              "output_tokens": [10] * 8})
    table.to_parquet(tmp_path / "t.parquet", index=False)
    text = (TINY.replace("path: azure2023_code.parquet", "path: t.parquet")
            .replace("  window: [240, 360]\n", ""))
    if skip is not None:
        text = text.replace("  path: t.parquet\n",
                            f"  path: t.parquet\n  skip_longer_than: {skip}\n")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


NOTE = ("s.yaml: trace.skip_longer_than 262,144 left out 1 of the 8 requests read (12.5%): "
        "those longer (prompt + output) than 262,144 tokens, up to 300,010, as vLLM refuses such "
        "a request at its API (HTTP 400) whatever the fleet; every figure is over the 7 left, and "
        "those left out count nowhere, not as dropped")


def test_the_key_leaves_the_request_out_with_a_note_and_the_counts_in_summary_json(tmp_path):
    path = _scenario(tmp_path, 262144)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert NOTE in summary["notes"]
    assert not any("were dropped" in n for n in summary["notes"])
    trace = summary["trace"]
    assert (trace["skip_longer_than"], trace["skipped_requests"], trace["requests_read"]) == (
        262144, 1, 8)
    assert summary["requests"] == 7 and summary["dropped"] == 0
    requests = pd.read_parquet(tmp_path / "r" / "requests.parquet")
    assert sorted(requests["request_id"]) == [0, 1, 3, 4, 5, 6, 7]


def test_the_report_shows_what_the_key_left_out(tmp_path):
    path = _scenario(tmp_path, 262144)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    assert main(["report", str(tmp_path / "r")]) == 0
    page = (tmp_path / "r" / "report.html").read_text()
    assert ("<td>trace requests left out</td><td>1 of 8 (12.5%), longer (prompt + output) than "
            "trace.skip_longer_than 262,144 tokens</td>") in page
    assert "<td>trace skip longer than (tokens)</td><td>262144</td>" in page
    assert NOTE.replace("'", "&#x27;") in page


def test_without_the_key_nothing_is_left_out_and_summary_json_says_nothing_of_it(tmp_path):
    path = _scenario(tmp_path)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["requests"] == 8 and summary["dropped"] == 1
    assert not {"skip_longer_than", "skipped_requests", "requests_read"} & set(summary["trace"])


HINT = ("; vLLM refuses such a request at its API (HTTP 400) whatever the fleet: to plan for "
        "the rest, set trace.skip_longer_than: 262144 to leave them out at load")


def test_a_drop_beyond_every_tiers_model_names_the_key(tmp_path):
    """The dropped note ends with the key, at the longest context the tiers' model takes."""
    path = _scenario(tmp_path)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    notes = json.loads((tmp_path / "r" / "summary.json").read_text())["notes"]
    dropped = next(n for n in notes if "were dropped" in n)
    assert dropped == (
        "s.yaml: 1 of 8 requests were dropped, never served (1 longer (prompt + output) than "
        "every tier's context, up to 300,010 tokens); they count as dropped in every figure; the "
        "first is request_id 2 (300,010 tokens on tier bf16, which serves at most 262,144, its "
        "model's context): shorten or remove such rows, or serve them on a model with a longer "
        f"context{HINT}")


def test_a_key_above_the_context_is_told_to_come_down(tmp_path):
    path = _scenario(tmp_path, 400000)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    notes = json.loads((tmp_path / "r" / "summary.json").read_text())["notes"]
    dropped = next(n for n in notes if "were dropped" in n)
    assert dropped.endswith("; vLLM refuses such a request at its API (HTTP 400) whatever the "
                            "fleet: to plan for the rest, lower trace.skip_longer_than to 262144 "
                            "to leave them out at load")
    trace = json.loads((tmp_path / "r" / "summary.json").read_text())["trace"]
    assert (trace["skipped_requests"], trace["requests_read"]) == (0, 8)


def test_a_drop_a_raised_max_model_len_serves_does_not_name_the_key(tmp_path):
    """A request within the model's context but beyond a tier's own max_model_len is served by
    raising it: the note does not send the user to leave it out."""
    path = _scenario(tmp_path)
    doc = yaml.safe_load(path.read_text())
    for tier in doc["tiers"]:
        tier["scheduler"] = {"max_model_len": 1000}
    doc["trace"]["path"] = "t.parquet"
    table = pd.DataFrame({"request_id": range(4), "arrival_s": [0.0, 1.0, 2.0, 3.0],
                          "input_tokens": [100, 2000, 100, 100], "output_tokens": [10] * 4})
    table.to_parquet(tmp_path / "t.parquet", index=False)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    notes = json.loads((tmp_path / "r" / "summary.json").read_text())["notes"]
    dropped = next(n for n in notes if "were dropped" in n)
    assert "skip_longer_than" not in dropped and "raise that" in dropped


def test_a_plan_impossible_for_one_request_becomes_possible_with_the_key(tmp_path, capsys):
    path = _scenario(tmp_path)
    assert main(["plan", str(path), "--out", str(tmp_path / "p0"), "--no-report"]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("no fleet meets the constraints")
    assert ("bf16: latency: 1 request is longer (prompt + output) than its tier's context (bf16's "
            "max_model_len 262,144) and is dropped at any size; it is the model's context: serve "
            "it on a model with a longer context or leave it out of the trace: "
            "trace.skip_longer_than: 262144 leaves it out at load, as vLLM refuses it at its API "
            "whatever the fleet (dropped 1 vs limit 0)") in line, line
    path = _scenario(tmp_path, 262144)
    assert main(["plan", str(path), "--out", str(tmp_path / "p1"), "--no-report"]) == 0
    out = capsys.readouterr()
    # tiny's own tier-order note (round 53: w4a16, listed first, is the dearer per request at
    # tiny's load) is left out; the skipped request's note is the other one, once
    assert out.out.startswith("plan (") and [
        line for line in out.err.splitlines()
        if "listed first, costs more per request" not in line] == [f"note: {tmp_path}/{NOTE}"]
    summary = json.loads((tmp_path / "p1" / "summary.json").read_text())  # the planned fleet's run
    assert NOTE in summary["notes"] and summary["trace"]["skipped_requests"] == 1


def test_a_sweep_takes_the_key_as_an_axis(tmp_path):
    path = _scenario(tmp_path)
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = {"trace.skip_longer_than": [262144, 100000000]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert main(["sweep", str(path), "--out", str(tmp_path / "w"), "--no-report"]) == 0


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1.5"])
def test_a_bad_value_is_refused_in_one_line_naming_the_file_line_and_fix(tmp_path, capsys,
                                                                          value):
    path = _scenario(tmp_path, value)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1)
                if "skip_longer_than:" in text)
    got = {"0": "0", "-5": "-5", "abc": "'abc'", "1.5": "1.5"}[value]
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 1
    assert capsys.readouterr().err == (
        f"Error: {path}: line {line}: trace.skip_longer_than: must be a whole number of tokens "
        "(prompt + output), from 1 to 100,000,000: the longest request to keep, e.g. the "
        "model's context (163840), or remove the key to keep every request "
        f"(got {got})\n")
    assert not (tmp_path / "r").exists()


def test_a_value_leaving_out_every_request_is_refused_at_the_key(tmp_path, capsys):
    path = _scenario(tmp_path, 50)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"Error: {path}: ")
    assert ("trace.skip_longer_than: 50 leaves out every one of the 8 requests read (the "
            "shortest is 110 tokens, prompt + output); raise it, or remove the key") in err


def test_a_session_trace_loses_the_whole_session_of_an_over_long_step(tmp_path):
    """A refused step ends its session: the steps after it never come, so the whole session is
    left out (its other steps are counted among those left out)."""
    table = pd.DataFrame({
        "request_id": range(6), "arrival_s": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        "session_id": [1, 1, 1, 2, 2, 2], "step": [0, 1, 2, 0, 1, 2],
        "input_tokens": [100, LONG, 100, 100, 100, 100], "output_tokens": [10] * 6})
    path = _scenario(tmp_path, 262144, table)
    assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert (summary["trace"]["skipped_requests"], summary["requests"]) == (3, 3)
    assert ("s.yaml: trace.skip_longer_than 262,144 left out 3 of the 6 requests read "
            "(50.0%): the 1 session holding a step longer (prompt + output) than 262,144 "
            "tokens, up to 300,010, whole, as vLLM refuses such a request at its API (HTTP 400) "
            "whatever the fleet; every figure is over the 3 left, and those left out count "
            "nowhere, not as dropped") in summary["notes"]


def test_the_key_beside_generated_sessions_is_noted_and_leaves_nothing_out(tmp_path):
    """Generated sessions replace the trace's rows, so the key shapes no request: it is named
    with the other trace keys that are not read, and nothing is counted as left out."""
    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = tiny_doc(workload={"sessions": {"source": "generate",
                                          "generate": {"tasks": 3, "task_rate_rps": 1.0}}},
                   router={"policy": "uniform"})
    doc["trace"]["skip_longer_than"] = 100
    path = write_yaml(tmp_path / "s.yaml", doc)
    run = run_scenario(load_scenario(path), scenario_path=path)
    assert any(n.startswith("s.yaml: trace.window and trace.skip_longer_than are not read: "
                            "workload.sessions.source generate replaces the trace's rows")
               for n in run.notes), run.notes
    assert run.trace.skipped_requests is None
    assert not any("left out" in n for n in run.notes)


def test_rows_after_a_skip_are_named_as_the_files(tmp_path):
    """The table's rows after the skip map to the file's data rows (errors name those)."""
    from tiersim.inputs import skip_longer
    from tiersim.trace import read_trace

    _scenario(tmp_path)
    loaded = read_trace(tmp_path / "t.parquet")
    with pytest.warns(Warning, match="left out 1 of the 8 requests read"):
        kept = skip_longer(loaded, 262144, True, "s.yaml")
    assert [kept.origin.row(i) for i in range(len(kept.table))] == [1, 2, 4, 5, 6, 7, 8]
    assert kept.origin.skipped == (262144, 1, 8)
    assert skip_longer(loaded, None, True, "s.yaml") is loaded
