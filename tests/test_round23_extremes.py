"""Round 23 of hostile input at the numerical extremes of ``tiersim run``: requests longer
than a tier can hold, clocks far from 0, figures over runs that last almost no time. Each a
failure found from outside and fixed, with the exact line a user sees or the number that was
wrong."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli


def _run(tmp_path, capsys, rows, tier_extra=None, trace_extra=None, *options) -> tuple[int, str]:
    """``tiersim run`` of one bf16 tier over the trace ``rows`` (request_id, arrival_s,
    input_tokens, output_tokens): (exit status, stderr on one line)."""
    trace = tmp_path / "t.csv"
    pd.DataFrame(rows, columns=["request_id", "arrival_s", "input_tokens",
                                "output_tokens"]).to_csv(trace, index=False)
    doc = tiny_doc(router={"policy": "uniform"}, trace={"path": str(trace), **(trace_extra or {})})
    doc["tiers"] = [{"name": "bf16", "precision": "bf16", "replicas": 1,
                     "cost_per_gpu_hour": 3.5, **(tier_extra or {})}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report", *options)
    return code, " ".join(err.split())


def test_a_request_longer_than_the_context_is_named_with_the_fix(tmp_path, capsys):
    """The note on requests dropped as longer than their tier's context said how many and how
    long, but not which (no request_id to find in the trace) nor what to do about it."""
    code, err = _run(tmp_path, capsys, [(7, 0.0, 100, 10), (8, 1.0, 300_000, 10),
                                        (9, 2.0, 270_000, 10)])
    assert code == 0, err
    assert (f"note: {tmp_path / 's.yaml'}: 2 of 3 requests were dropped, never served (2 longer "
            "(prompt + output) than their tier's context, up to 300,010 tokens); they count as "
            "dropped in every figure; the first is request_id 8 (300,010 tokens on tier bf16, "
            "which serves at most 262,144, its model's context): shorten or remove such rows, "
            "or serve them on a model with a longer context") in err


def test_a_request_longer_than_a_set_max_model_len_is_told_to_raise_it(tmp_path, capsys):
    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 5_000, 10)],
                     {"scheduler": {"max_model_len": 4096}})
    assert code == 0, err
    assert ("they count as dropped in every figure; the first is request_id 1 (5,010 tokens "
            "on tier bf16, which serves at most 4,096, its scheduler.max_model_len): raise "
            "that (up to its model's context), or shorten or remove such rows") in err


def test_a_request_larger_than_the_kv_cache_is_named_with_the_fix(tmp_path, capsys):
    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 100_000, 10)],
                     {"gpu_memory_utilization": 0.45})
    assert code == 0, err
    assert ("larger than one sequence may hold of a replica's KV cache (47,888 tokens on "
            "bf16), up to 100,010 tokens); they count as dropped in every figure; the first is "
            "request_id 1 (100,010 tokens on tier bf16): give the tier more KV-cache memory "
            "(gpu_memory_utilization, gpus_per_replica), or shorten or remove such rows") in err


def test_an_estimated_uniform_fleet_that_cannot_hold_a_request_is_no_baseline(tmp_path, capsys):
    """The estimated saving scaled a uniform w4a16 fleet (max_model_len 4,096) from per-token
    costs as if it served a 10,010-token request too: "-103 % vs uniform w4a16" at 93.4 %
    accuracy, where --baselines finds that fleet infeasible at any size (68.4 %)."""
    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": [0, 1, 2, 3], "arrival_s": [0.0, 0.0, 1.0, 1.0],
                  "input_tokens": [100, 10_000, 100, 200],
                  "output_tokens": [10, 10, 10, 10]}).to_csv(trace, index=False)
    doc = tiny_doc(trace={"path": str(trace)}, accuracy_floor=0.9,
                   router={"policy": "static_split", "fractions": [0, 1]})
    doc["tiers"][0]["scheduler"] = {"max_model_len": 4096}
    out = tmp_path / "o"
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out", out,
                        "--no-baselines", "--no-report")
    assert code == 0, err
    saved = json.loads((out / "summary.json").read_text())["savings"]
    assert saved["method"] == "estimated"
    assert saved["baseline_uniform_tier"] == "bf16"
    w4 = saved["uniform"]["w4a16"]
    assert (w4["cost_usd"], w4["infeasible"]) == (
        None, "drops 1 request longer (prompt + output) than w4a16's max_model_len 4,096 at "
              "any size")
    assert w4["accuracy"] == pytest.approx(0.6836, abs=1e-4)


def test_a_time_scale_that_slows_arrivals_past_the_longest_span_is_refused(tmp_path, capsys):
    """Arrivals are held to 1e9 s after time 0 (beyond, the clock's float64 steps grow past a
    microsecond); a time_scale of 0.001 stretched a trace's 2,000,000 s to 2e9 s (its 1e9 s to
    1e12 s: a decode step of 4.406 ms read 4.395 ms) without a word."""
    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 2e6, 100, 10)], None,
                     {"time_scale": 0.001})
    assert code == 1
    assert err == (f"Error: {tmp_path / 't.csv'}: time_scale 0.001 replays the last arrival, "
                   "2e+06 s, at 2e+09 s, more than 1e+09 s (31 years) after time 0, where the "
                   "simulated clock loses its precision; set trace.time_scale to at least "
                   "0.002 (tiersim trace inspect: --time-scale 0.002), or a trace.window of at "
                   "most 1e+06 s (tiersim trace inspect: --window START END)")
    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1e6, 100, 10)], None,
                     {"time_scale": 0.001})
    assert code == 0, err


def _saving_row(tmp_path, capsys, floor: float, max_model_len: int) -> list[str]:
    """The console's saving row (label, value, source) of an estimated run (--no-baselines) of
    two tiers, every request on bf16, w4a16 held to ``max_model_len``, a 10,010-token request
    among four; the report's "saved vs that tier" gives the same reason."""
    import html
    import re

    from rich.console import Console

    from tiersim.cli.run import headline_table
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    trace = tmp_path / "t.csv"
    pd.DataFrame({"request_id": [0, 1, 2, 3], "arrival_s": [0.0, 0.0, 1.0, 1.0],
                  "input_tokens": [100, 10_000, 100, 200],
                  "output_tokens": [10, 10, 10, 10]}).to_csv(trace, index=False)
    doc = tiny_doc(trace={"path": str(trace)}, accuracy_floor=floor,
                   router={"policy": "static_split", "fractions": [0, 1]})
    doc["tiers"][0]["scheduler"] = {"max_model_len": max_model_len}
    out = tmp_path / "o"
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)), out, report=True)
    console = Console(width=400, record=True)
    console.print(headline_table(run))
    row = next(line.split("│")[1:4] for line in console.export_text().splitlines()
               if "vs uniform" in line)
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert f"|saved vs that tier||{row[2].strip()}|" in page
    return [cell.strip() for cell in row]


def test_an_estimate_with_no_baseline_gives_its_own_reason(tmp_path, capsys):
    """Without --baselines no uniform fleet is simulated, yet the row read "saved vs uniform:
    -, no uniform fleet meets the SLOs and this run's accuracy (or the floor): none to compare
    with (uniform fleets table)": SLOs no estimate is held to, a table never printed."""
    assert _saving_row(tmp_path, capsys, 0.99, 20_000) == [
        "estimated saving vs uniform", "-", "no uniform fleet's estimate reaches the accuracy "
        "floor: none to compare with (estimate; --baselines simulates)"]


def test_an_estimate_names_the_uniform_fleet_that_cannot_serve_every_request(tmp_path, capsys):
    assert _saving_row(tmp_path, capsys, 0.99, 4096) == [
        "estimated saving vs uniform", "-", "all w4a16 drops 1 request longer (prompt + output) "
        "than w4a16's max_model_len 4,096 at any size; no other reaches the accuracy floor: "
        "none to compare with (estimate; --baselines simulates)"]
