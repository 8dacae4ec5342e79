"""Round 54 (speed54): under ``--robust`` the seed check reads the planned fleet and its saving's
baseline at each seed from the search's own runs (plan.json ``robust.per_seed`` and
``baseline_per_seed``) instead of simulating the planned scenario.yaml at those very seeds
again (:data:`tiersim.cli.plan_seeds.REUSE_ROBUST_RUNS`).

The figures must be the same to the byte: each test plans one scenario twice, once reusing and
once simulating again as before (``REUSE_ROBUST_RUNS = False``), and compares plan.json (less
its wall times), the seed check's printed block and the planned run's files, and counts the
engine runs each made (``tiersim.fleet.engine_simulate``, every engine run of the process).
The scenario is tests/test_round53_robust53.py's robust one (seeds 3 and 4): with FP8 at 1.00
USD/GPU-hour the plan is the routed FP8 3 + BF16 2, its saving quoted against uniform BF16;
at 3.00 it is uniform BF16 3 x 1, its own baseline (modelled, 2026-12-07).
"""

from __future__ import annotations

import json

import pytest
from conftest import write_yaml
from test_round51_seeds import block, plan
from test_round53_robust53 import robust_doc

import tiersim.cli.plan_seeds as plan_seeds
import tiersim.fleet as fleet
import tiersim.plan.evaluate as evaluate


def _planned(tmp_path, monkeypatch, name: str, doc: dict, reuse: bool, *flags: str):
    """Plan ``doc`` with ``--robust`` and ``flags`` into ``tmp_path / name``, reusing the
    search's runs in the seed check or not: (engine runs made, plan.json less its wall times,
    the seed check's printed lines, the folder)."""
    monkeypatch.setattr(plan_seeds, "REUSE_ROBUST_RUNS", reuse)
    # Round 55 (speed55): after the search, the seed check's and the planned run's evaluators
    # read back the search's runs of the same input (tiersim.plan.evaluate.RunStore), so the
    # path that simulates again would make no more engine runs than the reusing one. The store
    # is left unread here, in both paths, so the count still measures REUSE_ROBUST_RUNS alone
    # (tests/test_round55_speed55_runs.py tests the store).
    monkeypatch.setattr(evaluate, "reuse_kept_runs", lambda: None)
    runs = {"n": 0}
    engine = fleet.engine_simulate

    def counted(*args, **kwargs):
        runs["n"] += 1
        return engine(*args, **kwargs)

    monkeypatch.setattr(fleet, "engine_simulate", counted)
    path = write_yaml(tmp_path / "s.yaml", doc)  # one name: summary.json quotes it
    code, out, _ = plan(str(path), "--out", str(tmp_path / name), "--robust", *flags)
    assert code == 0
    data = json.loads((tmp_path / name / "plan.json").read_text())
    data.pop("wall_s")
    data["seed_check"].pop("wall_s")
    return runs["n"], data, block(out), tmp_path / name


@pytest.mark.parametrize(("fp8_price", "saved"), [(1.00, 3), (3.00, 1)])
def test_the_seed_check_reuses_the_robust_runs_to_the_byte(tmp_path, monkeypatch, fp8_price,
                                                          saved):
    """The same plan.json (``simulations`` included: it counts the search's runs, never the
    check's), the same printed check, the same planned run; ``saved`` engine runs fewer at the
    one seed checked: the routed plan's two tiers (each tier of a router that does not escalate
    is simulated alone, :mod:`tiersim.plan.evaluate`) and its uniform baseline (3), or the
    uniform plan that is its own baseline (1)."""
    doc = robust_doc(fp8_price)
    made, reused, lines, folder = _planned(tmp_path, monkeypatch, "reused", doc, True,
                                           "--check-seeds", "1")
    made_again, again, lines_again, folder_again = _planned(
        tmp_path, monkeypatch, "again", doc, False, "--check-seeds", "1")
    assert made == made_again - saved
    # the figures alike; the source says which way they came (casc54: it read "simulated by
    # the plan's evaluator" on both)
    assert reused["seed_check"].pop("source") == plan_seeds.REUSED_SOURCE
    assert again["seed_check"].pop("source") == plan_seeds.SOURCE
    assert json.dumps(reused, sort_keys=True) == json.dumps(again, sort_keys=True)
    assert lines[0] == ("  seed check (modelled: read from the --robust search's own runs at "
                        "each seed, the planned fleet in the scenario with only its seed "
                        "changed; seed 3 planned, seed 4 checked):")
    assert lines_again[0] == ("  seed check (modelled: simulated by the plan's evaluator, the "
                              "planned scenario with only its seed changed; seed 3 planned, "
                              "seed 4 checked):")
    assert lines[1:] == lines_again[1:]
    for name in ("scenario.yaml", "summary.json", "requests.parquet"):
        assert (folder / name).read_bytes() == (folder_again / name).read_bytes()
    assert reused["seed_check"]["seeds"] == [3, 4]


def test_a_seed_the_record_lacks_is_simulated():
    """A row the robust record lacks (no baseline row where a saving is quoted, or no row at
    the seed) is not made up: :func:`tiersim.cli.plan_seeds._reused_row` answers None and the
    check simulates that seed as before."""
    own = {"seed": 4, "ttft_p99_s": 0.5, "tpot_p99_s": 0.05, "accuracy": 0.8, "dropped": 0,
           "cost_usd": 2.0, "cost_per_hour_usd": 10.0, "missed": [], "shares": {"bf16": 1.0}}
    robust = {"per_seed": [own]}
    base = {"replicas": {"bf16": 3}}
    assert plan_seeds._reused_row(5, robust, None, "provisioned", {}) is None
    assert plan_seeds._reused_row(4, robust, base, "provisioned", {}) is None
    costs: dict = {}
    row = plan_seeds._reused_row(4, {**robust, "baseline_per_seed": [{**own, "cost_usd": 4.0,
                                                                       "cost_per_hour_usd": 20.0,
                                                                       "missed": ["accuracy"]}]},
                                 base, "provisioned", costs)
    assert list(row) == ["seed", "ttft_p99_s", "tpot_p99_s", "accuracy", "dropped", "missed",
                         "shares", "baseline_missed", "vs_uniform_frac"]
    assert row["baseline_missed"] == ["accuracy"] and row["vs_uniform_frac"] == 0.5
    assert costs == {4: (2.0, 10.0)}
