"""Round 56, small56: review doubts on the seed check's reading of today's fleet, and on
``tiersim trace inspect``'s rate. Every tiersim figure here is modelled."""

from __future__ import annotations

import json
import re

import pandas as pd
from test_round54_base54 import _plan
from typer.testing import CliRunner

from tiersim.cli.app import main
from tiersim.cli.trace import trace_app
from tiersim.engine import Req, SchedulerLimits, sequences_held
from tiersim.engine.scheduler import ReplicaScheduler
from tiersim.inputs import Arrivals, arrival_rate, batch_cap
from tiersim.results import PlanResult
from tiersim.results_seeds import today_line

CHECK = {
    "planned_seed": 0,
    "seeds": [0, 1],
    "accuracy_floor": 0.9,
    "current": {"met_seeds": [1], "per_seed": [{"seed": 1, "missed": []}]},
}
TODAY = {
    "tiers": ["bf16"],
    "replicas": {"bf16": 1},
    "gpus_per_replica": {"bf16": 1},
    "meets_slos": False,
    "meets_floor": True,
}


def test_the_seed_check_reads_todays_misses_by_key_not_by_wording():
    """plan.json ``current.missed_keys`` names what today's fleet missed at the plan's seed;
    a miss worded any other way (here, a future wording that does not start with its key)
    still reads as the constraint it is, not as "a constraint"."""
    current = TODAY | {
        "missed": "p99 TTFT 0.334 s over its 0.3 s SLO",
        "missed_keys": ["ttft_p99_s"],
    }
    assert today_line(CHECK, current) == [
        "    today's fleet (bf16 1 x 1 GPU) meets the SLOs and the accuracy floor at 1 of 2 "
        "seeds (1); p99 TTFT missed at seed 0"
    ]


def test_a_plan_json_from_before_the_keys_reads_as_before():
    """A plan.json written before ``missed_keys`` (round 56): the keys are read from the words."""
    current = TODAY | {"missed": "tpot_p99_s 0.2 vs limit 0.1; dropped 3 vs limit 0"}
    assert today_line(CHECK, current) == [
        "    today's fleet (bf16 1 x 1 GPU) meets the SLOs and the accuracy floor at 1 of 2 "
        "seeds (1); p99 TPOT missed at seed 0; dropped requests missed at seed 0"
    ]


def test_plan_json_writes_the_keys_today_missed(tmp_path):
    """tests/test_round54_base54.py's today missing the p99 TTFT SLO of 0.3 s (0.334 s,
    modelled): plan.json gives the key beside the words, and its strict reader keeps it."""
    _, _, data = _plan(
        tmp_path,
        slo={"ttft_p99_s": 0.3, "tpot_p99_s": 0.1},
        plan={"current": [{"tier": "bf16", "replicas": 1}]},
    )
    current = data["current"]
    assert (current["missed"], current["missed_keys"]) == (
        "ttft_p99_s 0.334 vs limit 0.3",
        ["ttft_p99_s"],
    )
    assert PlanResult.from_json(data).current["missed_keys"] == ["ttft_p99_s"]  # read back


def test_trace_inspect_gives_the_rate_the_price_reads(tmp_path):
    """Three requests at 0, 1 and 4 s: two gaps over 4 s, 0.5 req/s, the rate a run's price
    reads (:func:`tiersim.inputs.arrival_rate`); inspect said 3 / 4 = 0.75 req/s."""
    path = tmp_path / "t.csv"
    path.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n1,100,10\n4,100,10\n")
    table = CliRunner().invoke(trace_app, ["inspect", str(path)])
    assert table.exit_code == 0, table.output
    assert re.search(r"rate \(\(requests - 1\) / span\) +│ +0\.5 req/s", table.output)
    stats = json.loads(CliRunner().invoke(trace_app, ["inspect", str(path), "--json"]).output)
    price = arrival_rate(pd.read_csv(path))
    assert (stats["rate_basis"], stats["rate_rps"], price) == ("span", 0.5, 0.5)
    assert Arrivals.of(pd.read_csv(path)["arrival_s"].to_numpy()).rate == 0.5


def _most_running(limits: SchedulerLimits, num_blocks: int, prompt: int, output: int) -> int:
    """The most requests the engine's scheduler runs at once, 20 of ``prompt`` + ``output``
    tokens all waiting at 0 s, stepped by hand to the end."""
    sched = ReplicaScheduler(limits, num_blocks)
    for i in range(20):
        sched.add(Req(i, prompt, output, 0.0))
    most, now = 0, 0.0
    while sched.running or sched.waiting or sched.backlog.size:
        plan = sched.schedule(now, 1)
        most = max(most, len(sched.running))
        sched.complete(plan, 1, now + 1.0, 1.0)
        now += 1.0
    return most


def test_the_sequences_a_cache_holds_leave_the_watermark_free():
    """100 blocks of 16 tokens, watermark 1 % (1 block); 150-token prompts with 10 output
    tokens take their 10 blocks (ceil(160 / 16)) at admission, so the engine admits a 10th
    only with 11 free: it runs 9, and the count the price caps and the KV-thrashing note
    names is 9 = (100 - 1) // 10 (it said 100 // 10 = 10)."""
    limits = SchedulerLimits(block_size=16, watermark=0.01, max_num_batched_tokens=100_000)
    assert _most_running(limits, 100, 150, 10) == 9
    assert sequences_held(limits, 100, 160) == 9
    assert batch_cap(limits, 100, 160.0) == 9
    # no watermark: the 10th fits, and so the count
    free = SchedulerLimits(block_size=16, watermark=0.0, max_num_batched_tokens=100_000)
    assert _most_running(free, 100, 150, 10) == sequences_held(free, 100, 160) == 10


def test_a_missing_task_type_is_refused_not_counted_as_nan(tmp_path, capsys):
    """Review doubt: ``trace inspect`` would list a missing ``task_type`` cell as a type
    "nan". It cannot: the loader refuses the cell first, in one line naming file, row and
    column (a guard, not a fix; it passed before round 56 too)."""
    path = tmp_path / "t.csv"
    path.write_text(
        "arrival_s,input_tokens,output_tokens,task_type\n0,100,10,code\n1,200,20,\n2,300,30,chat\n"
    )
    capsys.readouterr()
    assert main(["trace", "inspect", str(path)]) == 1
    out, err = capsys.readouterr()
    assert (out, err.strip()) == (
        "",
        f"Error: {path}: row 2, column 'task_type': missing "
        "task_type; fill it in or remove the column (file line 3)",
    )
