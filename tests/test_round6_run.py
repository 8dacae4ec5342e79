"""Round 6 of `tiersim run` fixes: a response cache's run lasts to the trace's end, a ceiling
on limits.max_replicas, a cheap tier more accurate than the top, and notes for dropped
requests and for tiers not listed cheapest first."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml
from conftest import cheap_first_tiers, tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.runner import run_scenario
from tiersim.scenario import load_scenario

GPU_HOUR_USD = 3.5  # both tiers of tiny.yaml, one GPU each


def run_cli(capsys, *argv) -> tuple[int, str]:
    """``tiersim ARGV`` in this process: (exit status, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def last_arrival(tmp_path) -> float:
    """The tiny trace's last arrival, from a run without a cache."""
    run_scenario(load_scenario(write_yaml(tmp_path / "plain.yaml", tiny_doc())),
                 out_dir=tmp_path / "plain")
    return float(pd.read_parquet(tmp_path / "plain" / "requests.parquet")["arrival_s"].max())


@pytest.mark.parametrize("cache", [
    {"mode": "top_n", "size": 1, "popularity": {"distinct": 1}},  # every request a hit
    {"mode": "lru", "size": 1, "popularity": {"distinct": 1}},  # all but the first
])
def test_a_response_cache_run_pays_for_the_fleet_until_the_trace_ends(tmp_path, cache):
    """The run stopped at the fleet's last request: duration 21 s (0 s with every request a
    hit) and its provisioned cost reported as an 80% (100%) saving; the fleet is paid for until
    the last hit is answered (arrival + lookup_s), so the saving is about 0."""
    doc = tiny_doc(cost_model="provisioned")
    doc["router"]["response_cache"] = cache
    run = run_scenario(load_scenario(write_yaml(tmp_path / "s.yaml", doc)))
    end = last_arrival(tmp_path) + 0.005
    assert run.duration_s == pytest.approx(end, rel=1e-9)
    assert run.cost_usd == pytest.approx(2 * GPU_HOUR_USD * end / 3600, rel=1e-9)
    c = run.response_cache
    assert abs(c.cost_saved_usd) < 0.01 * c.cost_without_usd


def test_limits_max_replicas_has_a_ceiling(tmp_path, capsys):
    """max_replicas: 1e12 let a scenario lift its own limit (10^7 replicas: 10 GB, then a
    MemoryError traceback)."""
    doc = tiny_doc(limits={"max_replicas": 10**12})
    doc["tiers"][0]["replicas"] = 10**7
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = yaml.safe_dump(doc, sort_keys=False).splitlines().index("limits:") + 2
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "out", "--no-baselines",
                        "--no-report")
    assert (code, err.strip()) == (1, f"Error: {path}: line {line}: limits.max_replicas: must be "
                                      "<= 100000 (got 1000000000000)")


def test_a_cheap_tier_more_accurate_than_the_top_runs_without_the_closed_form(tmp_path, capsys):
    """A cheap tier more accurate than the top ended every run in a ValueError traceback from
    the two-type closed form; the run is valid, and its analytic block says why it is empty."""
    doc = tiny_doc(tiers=cheap_first_tiers())  # w4a16 the cheaper per request, as listed
    doc["tiers"][0]["accuracy"], doc["tiers"][1]["accuracy"] = 0.9, 0.1
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "out", "--no-baselines")
    assert (code, err) == (0, "")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["analytic"] == {"note": "w4a16 is more accurate than bf16 (two-type delta "
                                           "-0.542, mean loss -0.8): the closed form assumes "
                                           "the top tier is the more accurate; not modelled"}
    assert (tmp_path / "out" / "report.html").stat().st_size > 0


def _run_doc(tmp_path, capsys, doc: dict):
    """Write ``doc`` as a scenario and run it into tmp_path/out: (exit code, stderr, path)."""
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "run", path, "--out", tmp_path / "out", "--no-baselines",
                        "--no-report")
    return code, err, path


def test_requests_the_fleet_cannot_serve_get_a_note(tmp_path, capsys):
    """Every request dropped (prompt + output above the context) ended with exit 0 and no
    word; the figures stay as they were. Both tiers dropped some: each is told its fix (the
    note once told bf16's alone)."""
    doc = tiny_doc(tiers=cheap_first_tiers())  # no tier-order note beside it (round 53)
    for tier in doc["tiers"]:
        tier["scheduler"] = {"max_model_len": 1}
    code, err, path = _run_doc(tmp_path, capsys, doc)
    assert (code, err.strip()) == (0, f"note: {path}: 317 of 317 requests were dropped, never "
                                      "served (317 longer (prompt + output) than every tier's "
                                      "context, up to 7,574 tokens); they count as dropped in "
                                      "every figure; the first is request_id 594 (1,182 "
                                      "tokens on tier bf16, which serves at most 1, its "
                                      "scheduler.max_model_len); by tier and fix: 173 on "
                                      "tier bf16 (up to 7,574 tokens) exceed its "
                                      "scheduler.max_model_len (1): raise that (up to its "
                                      "model's context, 262,144 tokens); 144 on tier w4a16 "
                                      "(up to 7,469 tokens) exceed its "
                                      "scheduler.max_model_len (1): raise that (up to its "
                                      "model's context, 262,144 tokens); or shorten or "
                                      "remove such rows")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert (summary["completed"], summary["dropped"]) == (0, 317)


def test_a_dearer_tier_listed_before_a_cheaper_one_gets_a_note(tmp_path, capsys):
    """Tiers are taken as cheapest first and their prices were never checked: a cascade from a
    100 USD/h tier to a 3.5 USD/h one ran silently. Not refused (it may be on purpose)."""
    doc = tiny_doc()
    doc["tiers"][0]["cost_per_gpu_hour"] = 100
    code, err, path = _run_doc(tmp_path, capsys, doc)
    assert (code, err.strip()) == (0, f"note: {path}: tier 'w4a16' costs 100 USD per "
                                      "replica-hour (cost_per_gpu_hour x gpus_per_replica), "
                                      "more than the later tier 'bf16' (3.5 USD); tiers are "
                                      "taken as listed, cheapest first (the routers and the "
                                      "closed form assume it): list them cheapest first unless "
                                      "this is on purpose")
