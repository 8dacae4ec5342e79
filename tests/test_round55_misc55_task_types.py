"""Round 55, misc55: ``tiersim trace inspect`` gives a ``task_type`` column's types.

The router's classifier reads ``task_type`` as a feature and a response cache may key on it,
yet ``tiersim trace inspect`` said nothing of the column. Where a trace has one, the table
gives each type's requests, share and mean input / output tokens (the 10 most common, the
rest in one row) and ``--json`` its ``task_types``; a trace without one prints as before.
"""

from __future__ import annotations

import json

import pandas as pd
from conftest import run_cli

from tiersim.trace.stats import trace_stats


def _csv(tmp_path, types: list[str]):
    rows = [{"arrival_s": float(i), "input_tokens": 100 * (i % 3 + 1), "output_tokens": 10 + i,
             "task_type": t} for i, t in enumerate(types)]
    path = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_each_type_gets_its_count_share_and_mean_lengths(tmp_path):
    """Rows i = 0..5 hold 100 * (i % 3 + 1) input and 10 + i output tokens: chat (0, 2, 3)
    500 / 3 and 35 / 3, code (1, 4) 200 and 12.5, agent (5) 300 and 15."""
    path = _csv(tmp_path, ["chat", "code", "chat", "chat", "code", "agent"])
    done = run_cli("trace", "inspect", str(path))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "task_type" in line]
    assert [" ".join(r.strip("│ ").split()) for r in rows] == [
        "task_type chat │ 3 req (50.0%); mean 166.7 in / 11.7 out",
        "task_type code │ 2 req (33.3%); mean 200.0 in / 12.5 out",
        "task_type agent │ 1 req (16.7%); mean 300.0 in / 15.0 out"]
    doc = json.loads(run_cli("trace", "inspect", str(path), "--json").stdout)
    assert doc["task_types"] == [
        {"task_type": "chat", "requests": 3, "input_tokens_mean": 500 / 3,
         "output_tokens_mean": 35 / 3},
        {"task_type": "code", "requests": 2, "input_tokens_mean": 200.0,
         "output_tokens_mean": 12.5},
        {"task_type": "agent", "requests": 1, "input_tokens_mean": 300.0,
         "output_tokens_mean": 15.0}]


def test_a_window_counts_the_types_it_keeps(tmp_path):
    """``--window 0 3`` keeps the first three rows: agent (row 5) is not named."""
    path = _csv(tmp_path, ["chat", "code", "chat", "chat", "code", "agent"])
    doc = json.loads(run_cli("trace", "inspect", str(path), "--json", "--window", "0",
                             "3").stdout)
    assert [(t["task_type"], t["requests"]) for t in doc["task_types"]] == [("chat", 2),
                                                                           ("code", 1)]


def test_more_than_ten_types_end_in_one_row(tmp_path):
    types = [f"t{k:02d}" for k in range(12) for _ in range(12 - k)]  # t00 x12 ... t11 x1
    path = _csv(tmp_path, types)
    out = run_cli("trace", "inspect", str(path)).stdout
    rows = [" ".join(r.strip("│ ").split()) for r in out.splitlines() if "task_type" in r]
    assert len(rows) == 11
    assert rows[-1] == "task_type, 2 other types (--json lists them) │ 3 req (3.8%)"
    doc = json.loads(run_cli("trace", "inspect", str(path), "--json").stdout)
    assert len(doc["task_types"]) == 12


def test_a_trace_without_the_column_reads_as_before(tmp_path):
    df = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [10, 20, 30],
                       "output_tokens": [1, 2, 3]})
    assert "task_types" not in trace_stats(df)
    path = tmp_path / "plain.csv"
    df.to_csv(path, index=False)
    done = run_cli("trace", "inspect", str(path))
    assert done.returncode == 0 and "task_type" not in done.stdout
    assert "task_types" not in json.loads(run_cli("trace", "inspect", str(path),
                                                  "--json").stdout)
