"""Round 56, small56: review doubts on the seed check's reading of today's fleet, and on
``tiersim trace inspect``'s rate. Every tiersim figure here is modelled."""

from __future__ import annotations

from test_round54_base54 import _plan

from tiersim.results_seeds import today_line

CHECK = {"planned_seed": 0, "seeds": [0, 1], "accuracy_floor": 0.9,
         "current": {"met_seeds": [1], "per_seed": [{"seed": 1, "missed": []}]}}
TODAY = {"tiers": ["bf16"], "replicas": {"bf16": 1}, "gpus_per_replica": {"bf16": 1},
         "meets_slos": False, "meets_floor": True}


def test_the_seed_check_reads_todays_misses_by_key_not_by_wording():
    """plan.json ``current.missed_keys`` names what today's fleet missed at the plan's seed;
    a miss worded any other way (here, a future wording that does not start with its key)
    still reads as the constraint it is, not as "a constraint"."""
    current = TODAY | {"missed": "p99 TTFT 0.334 s over its 0.3 s SLO",
                       "missed_keys": ["ttft_p99_s"]}
    assert today_line(CHECK, current) == [
        "    today's fleet (bf16 1 x 1 GPU) meets the SLOs and the accuracy floor at 1 of 2 "
        "seeds (1); p99 TTFT missed at seed 0"]


def test_a_plan_json_from_before_the_keys_reads_as_before():
    """A plan.json written before ``missed_keys`` (round 56): the keys are read from the words."""
    current = TODAY | {"missed": "tpot_p99_s 0.2 vs limit 0.1; dropped 3 vs limit 0"}
    assert today_line(CHECK, current) == [
        "    today's fleet (bf16 1 x 1 GPU) meets the SLOs and the accuracy floor at 1 of 2 "
        "seeds (1); p99 TPOT missed at seed 0; dropped requests missed at seed 0"]


def test_plan_json_writes_the_keys_today_missed(tmp_path):
    """tests/test_round54_base54.py's today missing the p99 TTFT SLO of 0.3 s (0.334 s,
    modelled): plan.json gives the key beside the words."""
    _, _, data = _plan(tmp_path, slo={"ttft_p99_s": 0.3, "tpot_p99_s": 0.1},
                       plan={"current": [{"tier": "bf16", "replicas": 1}]})
    current = data["current"]
    assert (current["missed"], current["missed_keys"]) == ("ttft_p99_s 0.334 vs limit 0.3",
                                                           ["ttft_p99_s"])
