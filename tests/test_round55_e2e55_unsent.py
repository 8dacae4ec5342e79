"""Round 55, e2e55: a uniform fleet's reason counts the session steps a too-long step cuts off
apart, as never sent, as the run's note on drops does.

``agentic.yaml`` at 10 generated tasks with both tiers' ``max_model_len`` 8,000: task 3's
step of 8,252 tokens (prompt + output) is too long, and its next step (9,536) is never sent
because its predecessor was dropped. The run's note said "1 longer ... and 1 never sent",
while the uniform fleets' ``infeasible`` said "drops 2 requests longer (prompt + output)",
and a plan's reason "2 requests are longer". Modelled token counts (the session generator at
the scenario's seed 0); no latency is read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from conftest import run_cli

AGENTIC = Path(__file__).resolve().parent.parent / "tiersim" / "scenarios" / "agentic.yaml"
REASON = {name: (f"drops 1 request longer (prompt + output) than {name}'s max_model_len 8,000 "
                 "at any size, and 1 later step of its task, never sent")
          for name in ("fp8", "bf16")}


def _scenario(folder: Path) -> Path:
    doc = yaml.safe_load(AGENTIC.read_text())
    doc["workload"]["sessions"]["generate"]["tasks"] = 10
    for tier in doc["tiers"]:
        tier["scheduler"]["max_model_len"] = 8000
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_never_sent_follows_each_task_down():
    from tiersim.workload.sessions import never_sent

    df = pd.DataFrame({"request_id": [0, 1, 2, 3, 4], "follows_id": [-1, 0, 1, -1, 3],
                       "tool_s": [0.0] * 5})
    refused = np.array([False, True, True, False, False])
    assert never_sent(df, refused).tolist() == [False, False, True, False, False]
    assert never_sent(df, np.array([True, False, False, False, True])).tolist() == \
        [False, True, True, False, False]
    assert not never_sent(df.drop(columns="follows_id"), refused).any()  # no sessions


def test_simulated_uniform_fleets_count_the_cut_off_step_apart(tmp_path):
    out = run_cli("run", str(_scenario(tmp_path)), "--out", str(tmp_path / "o"))
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert {k: v["infeasible"] for k, v in summary["savings"]["uniform"].items()} == REASON
    text = " ".join(out.stdout.split())
    assert f"all fp8 is infeasible: {REASON['fp8']}" in text
    # the run's own note on drops, which the reason now agrees with
    assert "2 of 52 requests were dropped, never served (1 longer (prompt + output) than " \
        "every tier's context, up to 8,252 tokens, and 1 never sent" in " ".join(out.stderr.split())
    page = (tmp_path / "o" / "report.html").read_text().replace("&#x27;", "'")
    assert REASON["bf16"] in page
    # by hand: the two dropped rows are task 3's last two steps (requests.parquet gives a
    # dropped request no output tokens; their prompts 7,477 and 8,384 are the generator's)
    req = pd.read_parquet(tmp_path / "o" / "requests.parquet")
    gone = req[req["finish_s"].isna()]
    assert gone["session_id"].tolist() == [3, 3]
    assert gone["input_tokens"].tolist() == [7477, 8384]


def test_the_estimate_and_the_plan_say_the_same(tmp_path):
    path = _scenario(tmp_path)
    out = run_cli("run", str(path), "--no-baselines", "--out", str(tmp_path / "o"))
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["savings"]["method"] == "estimated"
    assert {k: v["infeasible"] for k, v in summary["savings"]["uniform"].items()} == REASON
    out = run_cli("plan", str(path), "--check-seeds", "0", "--out", str(tmp_path / "p"))
    assert ("fp8: latency: 1 request is longer (prompt + output) than its tier's context (fp8's "
            "max_model_len 8,000) and is dropped at any size, and 1 later step of its task, "
            "never sent; raise tiers[].scheduler.max_model_len (up to the model's context) or "
            "leave it out of the trace (dropped 2 vs limit 0)") in out.stdout
