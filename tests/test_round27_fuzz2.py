"""Round 27, hostile input (fuzz2): findings an earlier fuzz round left. Each test names what
the command did before its fix."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import TINY, copy_folder, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main
from tiersim.plan.planner import OVERSHOOT_CAP, _overshoot
from tiersim.plan.search import Verdict, size_replicas


@pytest.mark.parametrize(("values", "shown"), [
    (lambda tiers: [*tiers[:2], "bogus", *tiers[3:]], "row 3: the text 'bogus'"),
    (lambda tiers: list(range(len(tiers))), "row 1: the number 0")])
def test_a_load_series_tier_not_of_the_run_is_one_line(hand_edited_run, tmp_path, capsys,
                                                       values, shown):
    """Each tier value not of the run was drawn silently as a tier of its own (204 numeric
    names took 51 s)."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    path = folder / "timeseries.parquet"
    table = pq.read_table(path)
    tiers = values(table.column("tier").to_pylist())
    table = table.set_column(table.column_names.index("tier"), "tier", pa.array(tiers))
    pq.write_table(table.replace_schema_metadata(None), path)  # pandas' own: the new types
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {path}: column 'tier', {shown}, none of the run's tiers "
                    "(w4a16, bf16); rerun the command that wrote it")


@pytest.mark.parametrize("value", [".nan", "-.inf"])
def test_a_model_given_as_nan_is_told_what_a_model_is(tmp_path, capsys, value):
    """``model: .nan`` read "must be a finite number (got nan)" for a field that holds text."""
    text = TINY.read_text().replace("model: Qwen3-Coder-30B-A3B", f"model: {value}", 1)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    line_no = text.splitlines().index(f"model: {value}") + 1
    got = value  # as written (round 49: it read 'got nan', 'got -inf')
    line = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "o"))
    assert line == (f"Error: {path}: line {line_no}: model: must name a catalogue model or the "
                    f"path of a Hugging Face config.json (got {got}); YAML reads {value} "
                    f"unquoted as a number: write {value!r} in quotes if it is text")


@pytest.mark.parametrize(("key", "label"), [("arrival_s", "arrival time in seconds"),
                                            ("input_tokens", "token count")])
def test_a_400_digit_whole_number_in_json_lines_is_named_as_given(tmp_path, capsys, key, label):
    """Arrow reads a JSON whole number beyond a double's range as infinity: the line read
    "arrival time in seconds is not finite (got inf); write a finite number"."""
    rows = [{"request_id": i, "arrival_s": i, "input_tokens": 100, "output_tokens": 10}
            for i in range(4)]
    lines = [json.dumps(row) for row in rows]
    lines[2] = lines[2].replace(f'"{key}": {rows[2][key]}', f'"{key}": 1{"0" * 400}')
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (f"Error: {path}: row 3, column {key!r}: {label} is beyond the range of "
                    "numbers (got 100000000000... (401 digits)); fix or remove the row (file "
                    "line 3)")


def test_a_400_digit_prompt_hash_stays_refused_as_inexact(tmp_path, capsys):
    """Only the columns read as numbers get the number as written: a hash that no float
    holds is refused as before, not kept beside the float hashes of the other rows."""
    lines = [json.dumps({"request_id": i, "arrival_s": i, "input_tokens": 100,
                         "output_tokens": 10, "prompt_hash": i}) for i in range(4)]
    lines[2] = lines[2].replace('"prompt_hash": 2', f'"prompt_hash": 1{"0" * 400}')
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line.startswith(f"Error: {path}: row 3, column 'prompt_hash': prompt_hash inf was "
                           "read as a decimal number that is not exact")


def test_a_latency_limit_too_small_to_divide_by_stops_the_doubling():
    """A p99 over a 1e-320 s limit overflowed to an infinite overshoot, which never looked
    hopeless (inf - inf is NaN): the search doubled to the 1024-replica limit."""
    over = _overshoot(0.005, 1e-320)
    assert over == OVERSHOOT_CAP

    def judge(replicas):
        return Verdict(ok=False, violators=("a",), overshoot=over)

    sizing = size_replicas(["a"], judge, {"a": 1.0}, limit=1024)
    assert sizing.replicas is None
    assert [r["a"] for r in sizing.judged] == [1, 2, 4]
    assert sizing.reason.startswith("more replicas do not help at 4 a replicas")


def test_a_run_with_a_subnormal_slo_says_no_size_meets_it(tmp_path, capsys):
    """The run's sized baselines read "misses the SLOs up to the replica limit 1024"."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]},
                   slo={"ttft_p99_s": 100.0, "tpot_p99_s": 1e-320})
    capsys.readouterr()
    assert main(["run", str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                 str(tmp_path / "o"), "--no-report"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for tier in ("w4a16", "bf16"):
        assert (f"all {tier} is infeasible: misses the SLOs at any size: more replicas do not "
                "help") in out
    assert "replica limit" not in out
