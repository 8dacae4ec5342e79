"""Round 52 fuzzing (helper fuzz19) of what landed with ``tiersim plan --robust`` and the
routers' price over the served requests."""

from __future__ import annotations

import json

import pytest
from conftest import disagg_file, run_cli, tiny_doc, write_yaml


def _cache_answers_all(tmp_path):
    """The tiny scenario's two tiers behind a floor router, 30 s of the conversation trace, a
    response cache whose generated keys are one prompt: it answers every request."""
    doc = tiny_doc(trace={"path": "azure2023_conv.parquet", "window": [0, 30]},
                   router={"policy": "floor", "response_cache": {
                       "mode": "top_n", "size": 20, "lookup_s": 0.005,
                       "popularity": {"distinct": 1, "exponent": 1.0}}},
                   accuracy_floor=0.9)
    return write_yaml(tmp_path / "s.yaml", doc)


def test_robust_plan_of_a_run_no_request_reached(tmp_path):
    """No request reached the fleet at any seed: each seed's accuracy is None. The robust
    evaluator took the min over them and stopped with a TypeError traceback; it plans as the
    single-seed plan does, its per-seed records holding null."""
    path = _cache_answers_all(tmp_path)
    out = tmp_path / "o"
    done = run_cli("plan", str(path), "--robust", "--check-seeds", "1", "--out", str(out),
                   "--no-report")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert ("  expected accuracy: n/a: no request reached the fleet (a response cache answered "
            "every one); source: prior") in done.stdout.splitlines()
    robust = json.loads((out / "plan.json").read_text())["robust"]
    assert [r["accuracy"] for r in robust["per_seed"]] == [None, None]
    assert robust["worst_seed"]["accuracy"] is None


def _hand_edited_robust(tmp_path, edit) -> tuple:
    """A robust plan of the tiny scenario (two seeds) without its manifest, ``edit`` applied to
    its plan.json's ``robust``; ``tiersim report``'s status, stdout and stderr lines."""
    out = tmp_path / "p"
    done = run_cli("plan", str(write_yaml(tmp_path / "s.yaml", tiny_doc())), "--robust",
                   "--check-seeds", "1", "--out", str(out), "--no-report")
    assert done.returncode == 0, done.stderr
    (out / "manifest.json").unlink()
    data = json.loads((out / "plan.json").read_text())
    edit(data["robust"])
    (out / "plan.json").write_text(json.dumps(data))
    done = run_cli("report", str(out))
    errors = [line for line in done.stderr.splitlines() if not line.startswith("note:")]
    return done.returncode, errors, out / "plan.json"


def test_a_hand_edited_robust_per_seed_is_the_malformed_plan_line(tmp_path):
    """``robust`` was read as any map: ``per_seed`` given as text ended the report in an
    AttributeError traceback, and ``seeds: "0,1"`` or a row's ``cost_usd: "cheap"`` went
    through unread. It is read as strictly as ``seed_check``."""
    code, errors, path = _hand_edited_robust(tmp_path, lambda r: r.update(per_seed="x"))
    assert (code, errors) == (1, [
        f"Error: {path}: malformed plan ('plan.robust.per_seed': input should be a valid "
        "array, got \"x\"); rerun `tiersim plan` to rewrite it"])


def test_a_hand_edited_robust_seeds_text_is_the_malformed_plan_line(tmp_path):
    """``seeds: "0,1"`` printed "sized for seeds 0, ,, 1" in the report; now refused."""
    code, errors, path = _hand_edited_robust(tmp_path, lambda r: r.update(seeds="0,1"))
    assert (code, errors) == (1, [
        f"Error: {path}: malformed plan ('plan.robust.seeds': input should be a valid "
        "array, got \"0,1\"); rerun `tiersim plan` to rewrite it"])


def test_robust_at_the_largest_seed_is_told_to_lower_it(tmp_path):
    """At seed 2**63 - 1 there is no seed after the scenario's: ``--robust --check-seeds 1``
    was told "give at most --check-seeds 0", which ``--robust`` then refuses. Told instead to
    lower the seed or leave out --robust; without --robust the fix is as before."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(seed=2**63 - 1))
    head = (f"Error: --check-seeds 1: {path} has seed 9223372036854775807, and seed "
            "9223372036854775807 + 1 is past the largest seed, 9223372036854775807; ")
    done = run_cli("plan", str(path), "--robust", "--check-seeds", "1", "--no-report")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", head + (
        "lower its seed (--robust sizes for seeds after it too), or leave out --robust\n"))
    done = run_cli("plan", str(path), "--check-seeds", "1", "--no-report")
    assert (done.returncode, done.stderr) == (1, head + "give at most --check-seeds 0\n")


@pytest.mark.parametrize(("written", "said"), [
    ('"bf16\u00e9"', '"bf16\u00e9"'),            # the letter as the file holds it
    ('"bf16\\u00e9"', '"bf16\u00e9"'),           # the same text, escaped in the file
    ('"a\\u0007b"', '"a\\u0007b"'),              # a control character: JSON's escape
    ('"a\\u202eb"', '"a\\u202eb"'),              # a format character: still escaped
    ('["\u00e9", {"\u00e9": null}]', '["\u00e9", {"\u00e9": null}]'),
])
def test_a_config_text_value_keeps_its_letters(tmp_path, written, said):
    """``"hidden_size": "bf16é"`` was told ``(got "bf16\\u00e9")``: json.dumps's ASCII escape,
    which the file does not hold; the letters are quoted as written, control and format
    characters still escaped (a hostile value cannot reorder the line)."""
    from test_round52_fuzz18 import QWEN3_MOE, _config_error

    text = json.dumps(QWEN3_MOE).replace('"hidden_size": 2048', f'"hidden_size": {written}')
    assert _config_error(tmp_path, text) == (f"key 'hidden_size': must be a positive integer "
                                             f"(got {said})")


@pytest.fixture(scope="module")
def lagrangian_sweep(tmp_path_factory):
    """A two-point sweep of the tiny scenario's 40 s under the lagrangian router (its points
    carry ``router.fpr`` and ``router.fpr_among``); tests copy it and tamper with the copy."""
    tmp = tmp_path_factory.mktemp("sweep")
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 280]},
                   router={"policy": "lagrangian", "lambda": 0.1})
    doc["sweep"] = {"tiers.w4a16.cost_per_gpu_hour": [1.0, 3.5]}
    out = tmp / "sw"
    done = run_cli("sweep", str(write_yaml(tmp / "s.yaml", doc)), "--out", str(out), "-w", "1")
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize(("column", "value", "said"), [
    ("router.fpr_among", "x", "holds 'x' (row 0), not a number"),
    ("router.fpr", "x", "holds 'x' (row 0), not a number"),
    ("router.fpr_among", -1, "holds -1 (row 0): must be >= 0"),
])
def test_a_hand_edited_sweep_fpr_cell_is_one_line(lagrangian_sweep, tmp_path, column, value,
                                                   said):
    """The Points table's "router FPR as counts" multiplies ``router.fpr`` by
    ``router.fpr_among``: a text cell in either ended ``tiersim report`` in a TypeError
    traceback, and a negative count was shown as one ("-1 of -1" at an FPR of 1). Both are
    checked as the report's other number columns are."""
    import shutil

    import pandas as pd

    out = shutil.copytree(lagrangian_sweep, tmp_path / "sw")
    table = out / "sweep.parquet"
    frame = pd.read_parquet(table)
    assert frame["router.fpr_among"].notna().all()
    frame[column] = value
    frame.to_parquet(table)
    done = run_cli("report", str(out))
    assert (done.returncode, done.stderr) == (
        1, f"Error: {table}: column {column!r} {said}; rerun the sweep\n")


def test_robust_worst_seed_is_found_among_the_figures_written(tmp_path):
    """disagg.yaml's first 40 s, sized for seeds 0 and 1: both seeds' expected accuracy is
    0.95 in plan.json (and the plan's line says it is the same at every seed), but they
    differ in the last bits, and ``worst_seed.accuracy`` named seed 1. The worst seed is now
    found among the figures as written, so a tie names the first seed."""
    path = disagg_file(tmp_path / "s.yaml", ("window: [0, 300]", "window: [0, 40]"))
    out = tmp_path / "p"
    done = run_cli("plan", str(path), "--robust", "--check-seeds", "1", "--out", str(out),
                   "--no-report")
    assert done.returncode == 0, done.stderr
    robust = json.loads((out / "plan.json").read_text())["robust"]
    assert [(r["seed"], r["accuracy"]) for r in robust["per_seed"]] == [(0, 0.95), (1, 0.95)]
    assert robust["worst_seed"] == {"accuracy": 0, "cost_usd": 0, "dropped": 0,
                                    "tpot_p99_s": 0, "ttft_p99_s": 0}


def test_a_router_refused_at_a_later_seed_names_it(tmp_path):
    """The tiny scenario under a budget of 0.000168 USD a request: the routers price a tier
    over 256 of its requests drawn by the seed, the cheapest (bf16) at 0.000165 at seed 0
    (the run routes) and 0.0001711 at seed 3. ``--robust --check-seeds 3`` refused
    w4a16+bf16 with seed 3's price and no word of seed 3, as if the scenario's own run were
    refused. Round 53: the prices are at the load's decode batch (the budget was 8.6e-05,
    between w4a16's 8.504e-05 and 8.761e-05 at a 32-sequence batch). Round 54 (the batch
    counted on the trace's arrivals): bf16 0.0001705 at seed 3, 0.000165 at seed 0 still."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(
        router={"policy": "budget", "budget_usd_per_request": 0.000168}))
    done = run_cli("plan", str(path), "--robust", "--check-seeds", "3", "--no-report",
                   "--out", str(tmp_path / "p"))
    assert done.returncode == 0, done.stderr
    assert (f"  runner-up w4a16+bf16: router: at seed 3 (--robust sizes for it too): {path}: "
            "router.budget_usd_per_request: budget 0.000168 per request is below the cheapest "
            "tier's 0.0001705; raise it") in done.stdout.splitlines()
