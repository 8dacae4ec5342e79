"""Round 31 (helper fuzz): hostile input through the CLI on last session's code paths (the
response cache's key column carried by ``read_trace(keep=)``, ...)."""

from __future__ import annotations

import pandas as pd
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli


def _cached_run_doc(trace, key: str = "mykey", **trace_keys) -> dict:
    """A one-tier scenario over ``trace`` whose LRU response cache reads column ``key``."""
    doc = tiny_doc(trace={"path": str(trace), **trace_keys})
    doc["tiers"] = doc["tiers"][1:]
    doc["router"] = {"policy": "uniform",
                     "response_cache": {"mode": "lru", "size": 100, "key": key}}
    return doc


def _requests(keys: list) -> pd.DataFrame:
    """A canonical trace of one 100-token request a second, with a ``mykey`` column."""
    n = len(keys)
    return pd.DataFrame({"request_id": range(n), "arrival_s": [float(i) for i in range(n)],
                         "input_tokens": 100, "output_tokens": 10, "mykey": keys})


def test_a_key_column_of_whole_numbers_with_an_empty_cell_is_refused(tmp_path, capsys):
    """A CSV key column of whole numbers with one empty cell is read as floats, so keys
    2^53 + 1 and 2^53 (two prompts) read as one: the LRU cache answered 2 of 6 requests of 5
    distinct prompts. ``prompt_hash`` refuses such a column; a column named by ``key:`` is
    now refused alike, at its file row."""
    trace = tmp_path / "t.csv"
    trace.write_text("request_id,arrival_s,input_tokens,output_tokens,mykey\n"
                     "0,0.0,100,10,9007199254740993\n1,1.0,100,10,9007199254740992\n"
                     "2,2.0,100,10,\n3,3.0,100,10,9007199254740995\n"
                     "4,4.0,100,10,9007199254740996\n5,5.0,100,10,5\n")
    scenario = write_yaml(tmp_path / "s.yaml", _cached_run_doc(trace))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line == (
        f"Error: {trace}: row 1, column 'mykey': mykey 9007199254740992 was read as a decimal "
        "number that is not exact (beyond 2^53, or infinite), so two hashes could read as one; "
        "write hashes as whole numbers (without a decimal point or exponent) or as text, and "
        "leave no cell empty (a column of whole numbers with an empty cell is read as "
        "decimals) (file line 2)")


def test_a_json_key_beyond_int64_is_refused(tmp_path, capsys):
    """JSON whole numbers beyond 2^63 are read as floats: 2^64 + 1, 2^64 + 2 and 2^64 + 3
    read as one key (the cache answered 2 of 4 requests of 4 distinct prompts)."""
    trace = tmp_path / "t.jsonl"
    _requests([2**64 + 1, 2**64 + 2, 2**64 + 3, 7]).to_json(trace, orient="records",
                                                             lines=True)
    scenario = write_yaml(tmp_path / "s.yaml", _cached_run_doc(trace))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line.startswith(f"Error: {trace}: row 1, column 'mykey': mykey "
                           "1.8446744073709552e+19 was read as a decimal number that is not "
                           "exact")


def test_a_key_column_of_lists_is_named_at_its_file_row(tmp_path, capsys):
    """A key column of lists was refused at the scenario's key as 'holds a list in request
    1', request 1 of the window (file row 101 here): the trace's row now, as prompt_hash's."""
    trace = tmp_path / "t.parquet"
    _requests([[i % 3] for i in range(200)]).to_parquet(trace)
    scenario = write_yaml(tmp_path / "s.yaml", _cached_run_doc(trace, window=[100, 150]))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line == (f"Error: {trace}: row 1, column 'mykey': mykey must be one number or text "
                    "per row (got a list of 1 item); write each prompt's hash as one value")


def test_a_key_column_with_empty_cells_still_runs(tmp_path, capsys):
    """Missing keys stay allowed (a prompt of its own, never a hit), exact keys read as they
    are: 5 distinct prompts, then the first twice more, give 2 hits."""
    trace = tmp_path / "t.csv"
    _requests([11, 12, None, 13, 14, 11, 11]).to_csv(trace, index=False)
    out = tmp_path / "o"
    scenario = write_yaml(tmp_path / "s.yaml", _cached_run_doc(trace))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines", "--no-report", "--out", out)
    assert code == 0, err
    import json
    cache = json.loads((out / "summary.json").read_text())["response_cache"]
    assert cache["hits"] == 2, cache


def test_a_tie_kept_for_fewer_tiers_without_a_floor_does_not_say_the_floor_is_met(tmp_path,
                                                                                 capsys):
    """tiny.yaml at 100 times its load, no accuracy floor: the routed runner-up ties the plan
    per hour and is more accurate; its line read 'the floor is met, fewer tiers rank first',
    of a floor no one set. On the calibrated roofline w4a16 is slower than bf16 on prefill
    (Marlin MoE /0.44), so at 3.5 USD/h all bf16 was the plan with no tie: now 50 times the
    load and bf16 at 8.75 USD/GPU-hour, where uniform w4a16 (17 x 1, 59.5 USD/h) ties the
    routed w4a16 7 + bf16@4 1."""
    from tiersim.cli import main

    doc = tiny_doc()
    doc["trace"].update(window=[240, 300], time_scale=50)
    doc["tiers"][1]["cost_per_gpu_hour"] = 8.75
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    capsys.readouterr()
    assert main(["plan", str(scenario), "--max-replicas", "63", "--no-report",
                 "--out", str(tmp_path / "p")]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "runner-up" in x)
    assert line.endswith("the plan is kept as the simpler design, 1 tier against 2 (the "
                         "plan's accuracy 93.36% against its 94.48%: no accuracy floor is set, "
                         "fewer tiers rank first)"), line


def test_a_parquet_trace_with_deeply_nested_pandas_metadata_is_one_line(tmp_path, capsys):
    """Pandas metadata of 100,000 nested JSON arrays: json.loads raised RecursionError where
    tiersim reads the index names (a traceback from trace inspect and run); the table's
    reading now names the file in one line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = tmp_path / "t.parquet"
    table = pa.Table.from_pandas(_requests([1, 2]), preserve_index=False)
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    pq.write_table(table.replace_schema_metadata({b"pandas": deep}), trace)
    expected = (f"Error: {trace}: its pandas metadata is unreadable; write the file again "
                "without that metadata (pyarrow: table.replace_schema_metadata())")
    assert one_error_line(*run_cli(capsys, "trace", "inspect", trace)) == expected
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={"path": str(trace)}))
    assert one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == expected


def test_a_logged_formats_token_column_is_no_prompt_key(tmp_path, capsys):
    """key: input_tokens is refused (same length, not the same prompt), but key: ContextTokens,
    the same column of an Azure trace (carried since logged traces carry the key column),
    answered every request of a length from the first one's: 50 of 50 requests here."""
    trace = tmp_path / "t.parquet"
    start = pd.Timestamp("2023-11-16 18:00:00")
    pd.DataFrame({"TIMESTAMP": [start + pd.Timedelta(seconds=i) for i in range(50)],
                  "ContextTokens": 100, "GeneratedTokens": 10}).to_parquet(trace)
    scenario = write_yaml(tmp_path / "s.yaml", _cached_run_doc(trace, key="ContextTokens"))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line.endswith(": router.response_cache.key: 'ContextTokens' is not a prompt key "
                         "(requests with the same value are not the same prompt); name a "
                         "column of prompt hashes, or set popularity: {distinct: N}"), line


def test_a_free_plans_tie_names_the_rule_that_kept_the_plan(tmp_path, capsys):
    """Every tier free (0 USD per GPU-hour): uniform w4a16 of 9 replicas met every constraint
    at the plan's 0 USD (uniform bf16 of 7) and read 'meets every constraint; costs 0 USD
    against the plan's 0', as if dearer; it is a tie, now named as one with its rule, as at
    any other price. On the calibrated roofline the fleets are uniform w4a16 of 19 and bf16
    of 13. Since round 55 the w4a16 line names the GPU counts it was not sized at beside its
    size (misc55)."""
    from tiersim.cli import main

    doc = tiny_doc()
    doc["trace"].update(window=[240, 300], time_scale=100)
    for tier in doc["tiers"]:
        tier["cost_per_gpu_hour"] = 0
    scenario = write_yaml(tmp_path / "s.yaml", doc)
    capsys.readouterr()
    assert main(["plan", str(scenario), "--no-report", "--out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert ("uniform w4a16 (19 x 1 GPU; not sized on 4 or 8 GPUs per replica: its W4A16 expert "
            "width 768 over 4 GPUs is 192 per GPU, not whole 128-wide quantisation groups: "
            "vLLM's Marlin MoE kernel refuses that split): meets every constraint at the plan's "
            "cost (a tie); the plan is kept as the smaller fleet, 13 replicas against 19, cost 0 "
            "USD") in out, out


def test_accuracy_values_with_no_tier_accuracy_is_noted(tmp_path, capsys):
    """accuracy_values: illustrative on tiny.yaml, whose tiers set no accuracy (each reads its
    precision's prior): the key labelled nothing, without a word."""
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(accuracy_values="illustrative"))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines", "--no-report")
    assert code == 0, err
    assert ("note: accuracy_values: illustrative says what the tiers' accuracy numbers are, "
            "and no tier sets accuracy (each reads its precision's prior), so it labels "
            "nothing; set the tiers' accuracy, or remove accuracy_values") in err, err
    doc = tiny_doc(accuracy_values="illustrative")
    doc["tiers"][0]["accuracy"] = 0.9
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "t.yaml", doc), "--no-baselines",
                        "--no-report")
    assert code == 0 and "accuracy_values:" not in err, err


def test_a_long_key_the_trace_lacks_is_named_shortly(tmp_path, capsys):
    """A key of 100,000 characters the trace has no column of: the error line quoted it whole
    (100,150 characters); it is cut to 40, as the trace notes cut a column's name."""
    trace = tmp_path / "t.csv"
    _requests([1, 2]).to_csv(trace, index=False)
    scenario = write_yaml(tmp_path / "s.yaml", _cached_run_doc(trace, key="k" * 100_000))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "--no-report"))
    assert line.endswith(f": router.response_cache.key: the trace has no '{'k' * 37}...' "
                         "column; name one it has, or drop key: to use prompt_hash / "
                         "prefix_hashes"), line[:300]
