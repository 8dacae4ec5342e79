"""``tiersim plan --check-seeds N``: the planned fleet and the uniform fleet its saving is quoted
against, simulated at the N seeds after the scenario's, in one printed block, plan.json's
``seed_check`` and the report.

The routed scenario is plan_default.yaml's FP8 + BF16 pair on three minutes of the code trace
(240-420 s, 5x), planned at seed 1 with FP8 a little cheaper (3.00 USD/GPU-hour against 3.50),
so the floor router's FP8 1 + BF16 2 is the plan, 4.76 % an hour under uniform BF16 3: as on the
default scenario (docs/planning.md), the floor router's share to FP8 moves with the seed's
calibration sample (3.6% to 100% here), and the fleet misses at seeds 2, 3 and 4. The figures
are the roofline's and the floor router's on this trace (2026-12-07): a recalibration moves them.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def routed_doc() -> dict:
    """The small routed scenario of the module docstring."""
    doc = tiny_doc(name="seeds_small", seed=1, accuracy_floor=0.80, cost_model="provisioned",
                   accuracy_values="illustrative", router={"policy": "floor"})
    doc["trace"]["window"] = [240, 420]
    doc["trace"]["time_scale"] = 5.0
    doc["workload"] = {"difficulty": {"kind": "three_type", "p_easy": 0.7, "p_hopeless": 0.14,
                                      "hint_auroc": 0.72}}
    doc["tiers"] = [
        {"name": "fp8", "precision": "fp8", "replicas": 1, "cost_per_gpu_hour": 3.00,
         "accuracy": {"easy": 1.0, "hard": 0.76, "hopeless": 0.0}},
        {"name": "bf16", "precision": "bf16", "replicas": 1, "cost_per_gpu_hour": 3.50,
         "accuracy": {"easy": 1.0, "hard": 0.80, "hopeless": 0.0}},
    ]
    return doc


def plan(*args: str) -> tuple[int, str, str]:
    """``tiersim plan ARGS``: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", *args])
    return code, out.getvalue(), err.getvalue()


def block(text: str) -> list[str]:
    """The seed check's lines of a plan's output."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("  seed check"))
    end = start + 1
    while end < len(lines) and lines[end].startswith("    "):
        end += 1
    return lines[start:end]


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    """The routed scenario planned with the default check (3 seeds): (stdout, plan folder)."""
    tmp = tmp_path_factory.mktemp("seeds")
    path = write_yaml(tmp / "s.yaml", routed_doc())
    code, out, _ = plan(str(path), "--out", str(tmp / "p"))
    assert code == 0
    return out, tmp / "p"


def test_the_block_says_where_the_routed_saving_fails(routed):
    """On by default (3 seeds); the saving per hour is the same fleets' at every seed, and the
    block says which constraint failed at which seeds."""
    out, _ = routed
    assert "plan (" in out and ": fp8+bf16: fp8=1x1 GPU, bf16=2x1 GPU;" in out
    assert block(out) == [
        "  seed check (modelled: simulated by the plan's evaluator, the planned scenario with "
        "only its seed changed; seed 1 planned, seeds 2, 3, 4 checked):",
        "    meets the SLOs and the accuracy floor at 1 of 4 seeds (1)",
        "    p99 TTFT 0.280 s to 1.59 s, p99 TPOT 0.0963 s to 0.151 s, expected accuracy 78.64% to "
        "82.17%, fp8 share 3.6% to 100.0%, bf16 share 0.0% to 96.4%",
        "    saving per hour against uniform bf16 4.76 % at every seed, comparable at seed 1 "
        "only (the fleet misses a constraint at the others); uniform bf16 meets the "
        "SLOs and the accuracy floor at 3 of 4 seeds",
        "    the saving is not robust to the router's / classifier's draws: p99 TPOT missed at "
        "seeds 2, 3, 4; accuracy floor missed at seed 4 (`tiersim plan --robust` sizes for every "
        "seed checked)",  # round 52: the fix named
        # round 53: uniform fp8 (9.0 USD/hour against the plan's 10.0; 79.30 % < the 80 %
        # floor at seed 1, 81.25 % and 81.72 % at seeds 2 and 3) is re-checked: the choice of
        # plan hinges on seed 1
        "    uniform fp8 (3 x 1 GPU, 10.0 % cheaper per hour than the plan) was turned away at "
        "seed 1 (accuracy floor missed) but meets the SLOs and the accuracy floor at 2 of 3 seeds "
        "checked (2, 3): the choice of plan hinges on seed 1's draws (`tiersim plan --robust` "
        "sizes every fleet for every seed checked)",
    ]


def test_plan_json_and_the_report_hold_the_check(routed):
    """plan.json's ``seed_check`` holds what the block prints, each seed's figures and its
    source; the report shows the block and a table of the seeds."""
    _, folder = routed
    check = json.loads((folder / "plan.json").read_text())["seed_check"]
    assert check["source"].startswith("modelled: ")
    assert check["seeds"] == [1, 2, 3, 4] and check["planned_seed"] == 1
    assert check["met_seeds"] == [1] and check["baseline_met_seeds"] == [1, 2, 3]
    assert check["failed"] == [{"constraint": "tpot_p99_s", "seeds": [2, 3, 4]},
                               {"constraint": "accuracy", "seeds": [4]}]
    assert check["baseline_uniform_tier"] == "bf16" and check["saving_basis"] == "per_hour"
    rows = check["per_seed"]
    assert [r["seed"] for r in rows] == [1, 2, 3, 4] and rows[0]["planned"] is True
    assert rows[3]["accuracy"] < 0.80 <= rows[0]["accuracy"]
    assert check["ranges"]["tpot_p99_s"] == [rows[0]["tpot_p99_s"],
                                             max(r["tpot_p99_s"] for r in rows)]
    page = (folder / "report.html").read_text()
    assert "<h3>At other seeds</h3>" in page
    # the tiers' shares in the design's order, as printed (plan.json sorts its keys: bf16 first)
    assert "fp8 share 3.6% to 100.0%, bf16 share 0.0% to 96.4%" in page
    assert "<th>fp8 share</th><th>bf16 share</th>" in page
    assert "the saving is not robust to the router&#x27;s / classifier&#x27;s draws" in page


def test_the_check_at_the_plans_own_seed_is_the_plan(tmp_path, monkeypatch):
    """The check's path (the planned scenario, its evaluator) at the plan's own seed gives the
    plan's own figures to the bit: it re-simulates the fleet the plan chose, nothing else."""
    import tiersim.cli.plan_seeds as seeds
    from tiersim.cli.plan import plan_capacity

    own = []
    checked = seeds._seed_row

    def at_own_seed_too(scenario, doc, source, seed, *rest):
        own.append(checked(scenario, doc, source, scenario.seed, *rest))
        return checked(scenario, doc, source, seed, *rest)

    monkeypatch.setattr(seeds, "_seed_row", at_own_seed_too)
    path = write_yaml(tmp_path / "s.yaml", routed_doc())
    with pytest.warns(Warning):  # the plan's notes (floors not tried ...)
        result = plan_capacity(path, check_seeds=1)
    planned = dict(result.seed_check["per_seed"][0])
    assert planned.pop("planned") is True
    assert own[0] == planned


def test_a_fleet_that_holds_at_every_seed_says_so_in_plain_lines(tmp_path):
    """tiny.yaml's uniform plan: nothing the seed draws moves it, so no failure line; no floor,
    so the count names the SLOs alone; the plan is its own baseline, so no saving line."""
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 300]
    code, out, _ = plan(str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                        str(tmp_path / "p"), "--no-report", "--check-seeds", "2")
    assert code == 0
    lines = block(out)
    assert lines[:2] == [
        "  seed check (modelled: simulated by the plan's evaluator, the planned scenario with "
        "only its seed changed; seed 0 planned, seeds 1, 2 checked):",
        "    meets the SLOs at 3 of 3 seeds (0, 1, 2)"]
    # one figure each where every seed prints alike (the roofline's step times on 240-300 s),
    # and, as the p99s are the same to the bit, that the seeds check nothing about them
    # (round 51, test_round51_fresh_b.py: a uniform plan's "3 of 3 seeds" read as robustness)
    assert lines[2:] == ["    p99 TTFT 0.362 s, p99 TPOT 0.0860 s, expected accuracy 95.00% (the "
                         "same p99s at every seed: no draw the seed makes moves this fleet's "
                         "latency, so the other seeds check nothing about it)"]
    check = json.loads((tmp_path / "p" / "plan.json").read_text())["seed_check"]
    assert check["failed"] == [] and check["baseline_is_plan"] is True


def test_check_seeds_0_turns_it_off(tmp_path):
    """No block, and plan.json's seed_check is null (since round 53 one line says no seed
    was checked, in the block's place: tests/test_round53_fresh53b.py)."""
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    code, out, _ = plan(str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                        str(tmp_path / "p"), "--no-report", "--check-seeds", "0")
    assert code == 0 and "seed check (" not in out
    assert "  seed check: none (--check-seeds 0): " in out
    assert json.loads((tmp_path / "p" / "plan.json").read_text())["seed_check"] is None


@pytest.mark.parametrize(("value", "words"), [
    ("-1", "input should be greater than or equal to 0"),
    ("x", "input should be a valid integer, unable to parse string as an integer"),
])
def test_a_bad_count_is_one_line(tmp_path, value, words):
    """The number flags' one-line refusal, status 1, nothing planned."""
    doc = tiny_doc()
    code, out, err = plan(str(write_yaml(tmp_path / "s.yaml", doc)), "--out",
                          str(tmp_path / "p"), "--check-seeds", value)
    assert code == 1
    assert (out + err).strip().splitlines() == [
        f"Error: --check-seeds: {words}; see tiersim plan --help"]
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("edit", [
    lambda check: "x",
    lambda check: {**check, "per_seed": [{"seed": "one"}]},
    lambda check: {**check, "failed": {"accuracy": [4]}},
])
def test_a_hand_edited_seed_check_is_the_malformed_plan_line(routed, tmp_path, edit):
    """The report reads seed_check strictly: a hand-edited one is one line naming plan.json and
    the place, status 1, as any malformed plan.json field is (not a traceback)."""
    folder, code, lines = report_of_edited_plan(routed[1], tmp_path / "p", "seed_check", edit)
    assert code == 1 and len(lines) == 1
    assert lines[0].startswith(f"Error: {folder / 'plan.json'}: malformed plan ('plan.seed_check")


def report_of_edited_plan(source, folder, key: str, edit):
    """``tiersim report`` of a copy of the plan folder ``source`` at ``folder`` whose plan.json
    ``key`` is ``edit(value)``: (the folder, exit status, output lines)."""
    import shutil

    folder = shutil.copytree(source, folder)
    data = json.loads((folder / "plan.json").read_text())
    data[key] = edit(data[key])
    (folder / "plan.json").write_text(json.dumps(data))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", str(folder)])
    return folder, code, (out.getvalue() + err.getvalue()).strip().splitlines()


def test_seeds_past_the_largest_are_refused_before_the_search(tmp_path):
    """A scenario at seed 2**63 - 2 takes one seed more, not two: refused in one line before
    anything is simulated (found after the search, it stopped the plan there)."""
    doc = tiny_doc(seed=2**63 - 2)
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, out, err = plan(str(path), "--out", str(tmp_path / "p"), "--check-seeds", "2")
    assert code == 1
    assert (out + err).strip().splitlines() == [
        f"Error: --check-seeds 2: {path} has seed 9223372036854775806, and seed "
        "9223372036854775806 + 2 is past the largest seed, 9223372036854775807; give at most "
        "--check-seeds 1"]
    assert not (tmp_path / "p").exists()
