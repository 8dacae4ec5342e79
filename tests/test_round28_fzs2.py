"""Round 28, error lines last round's fuzzing found wanting (helper fzs2): each test names what
the command said before its fix."""

from __future__ import annotations

import pytest
import yaml
from conftest import REPO, TINY
from test_hostile_inputs import one_error_line, run_cli

BUNDLED_TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def tiny_with(tmp_path, **keys):
    """tiny.yaml (its trace the bundled one) with ``keys`` set at the top level, written to
    ``tmp_path``."""
    doc = yaml.safe_load(TINY.read_text())
    doc["trace"]["path"] = str(BUNDLED_TRACE)
    doc.update(keys)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


FP8_BASELINE = [{"name": "fp8", "precision": "fp8", "cost_per_gpu_hour": 3.5}]


@pytest.mark.parametrize(("router", "where"), [
    ({"policy": "uniform", "tier": "fp8"}, "router.tier"),
    ({"policy": "cascade", "cascade": {"to_tier": "fp8"}}, "router.cascade.to_tier"),
    ({"policy": "static_split", "fractions": {"fp8": 0.5, "bf16": 0.5}}, "router.fractions"),
    ({"policy": "threshold", "thresholds": {"fp8": 0.5}}, "router.thresholds"),
    ({"policy": "step_type", "step_tiers": {"planning": "fp8"}}, "router.step_tiers.planning"),
])
def test_router_naming_a_baseline_only_tier_says_so(tmp_path, capsys, router, where):
    """A router setting naming fp8, which the scenario lists under ``baselines:``, read
    "unknown tier 'fp8'; tiers are w4a16, bf16", as if the file named no such tier
    (``tiersim analytic --cheap fp8`` says what it is)."""
    path = tiny_with(tmp_path, baselines=FP8_BASELINE, router=router)
    line = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "o",
                                   "--no-baselines", "--no-report"))
    assert line.startswith(f"Error: {path}: line "), line
    assert line.endswith(f": {where}: 'fp8' is a baseline-only tier (baselines[0]), which no "
                         "request is routed to, so the router cannot send requests to it "
                         "(list it under tiers: to route to it); tiers are w4a16, bf16"), line


def test_plan_choosing_a_baseline_only_tier_says_so(tmp_path, capsys):
    """``plan --choose router.tier=fp8`` ran, and the design routed to fp8 missed with
    "router.tier: unknown tier 'fp8'" in plan.json, a tier the scenario names. Round 52
    (fuzz18): a --choose value no design can route is refused before any simulation, in one
    line that says fp8 is baseline-only."""
    path = tiny_with(tmp_path, baselines=FP8_BASELINE, router={"policy": "uniform"})
    out = tmp_path / "p"
    code, err = run_cli(capsys, "plan", path, "--out", out, "--choose", "router.tier=fp8")
    assert code == 1 and not (out / "plan.json").exists()
    assert err.strip() == ("Error: --choose router.tier='fp8': router.tier: 'fp8' is a "
                           "baseline-only tier (baselines[0]), which no request is routed to, "
                           "so the router cannot send requests to it (list it under tiers: to "
                           "route to it); tiers are w4a16, bf16")


@pytest.mark.parametrize(("sweep", "line"), [
    ("sweep:\n  zip:\n    zip:\n      seed: [1, 2]\n", 3),
    ("sweep:\n  zip:\n    seed: [1, 2]\n    zip:\n      slo.ttft_p99_s: [1, 2]\n", 4),
    ("sweep:\n  zip:\n  - seed: [1, 2]\n  - zip:\n      slo.ttft_p99_s: [1, 2]\n", 4),
])
def test_a_zip_group_inside_a_zip_group_is_refused_as_such(tmp_path, capsys, sweep, line):
    """``sweep: {zip: {zip: {seed: [1, 2]}}}`` read "sweep: 'zip': values must be a non-empty
    list (got {'seed': [1, 2]})", at the outer zip's line, as if the inner one were an axis
    whose values were badly written."""
    base = tiny_with(tmp_path)
    before = len(base.read_text().splitlines())
    base.write_text(base.read_text() + sweep)
    line_error = one_error_line(*run_cli(capsys, "sweep", base, "--out", tmp_path / "o",
                                         "--no-baselines", "--no-report"))
    assert line_error == (f"Error: {base}: line {before + line}: sweep: 'zip': zip groups "
                          "cannot nest (a group's keys are axis paths, and zip is none); move "
                          "the inner group's paths into the outer group to move them together, "
                          "or make zip a list of maps for groups that vary apart")
    assert not (tmp_path / "o").exists()


def test_plan_choose_with_too_many_values_says_so(tmp_path, capsys):
    """``--choose router.floor=0,0,...`` with 100,001 values, no alias among them, read
    "more than 100,000 values once aliases are expanded (an alias bomb?); write the values
    out", naming aliases the option does not hold."""
    path = tiny_with(tmp_path)
    line = one_error_line(*run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--choose",
                                   "router.floor=" + ",".join(["0"] * 100_001)))
    assert line == ("Error: --choose router.floor: more than 100,000 values; a plan tries at "
                    "most 1,000 combinations of router settings, each sized by simulation; "
                    "give fewer values")
    assert not (tmp_path / "p").exists()


def test_plan_choose_alias_bomb_is_still_named_one(tmp_path, capsys):
    """An option whose aliases expand past the limit is still called what it is."""
    path = tiny_with(tmp_path)
    bomb = "&a [" + ",".join(["0"] * 400) + "]," + ",".join(["*a"] * 300)
    line = one_error_line(*run_cli(capsys, "plan", path, "--out", tmp_path / "p", "--choose",
                                   f"router.thresholds={bomb}"))
    assert line.startswith("Error: --choose router.thresholds: more than 100,000 values once "
                           "aliases are expanded (an alias bomb?); write the values out"), line


def test_a_scenario_with_too_many_values_written_out_says_so(tmp_path, capsys):
    """A file whose 100,001 values are written out, no alias among them, was asked whether
    it was an alias bomb too."""
    path = tiny_with(tmp_path)
    before = len(path.read_text().splitlines())
    path.write_text(path.read_text() + "sweep:\n  seed: [" + ",".join(["0"] * 100_001) + "]\n")
    line = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "o",
                                   "--no-baselines", "--no-report"))
    assert line == f"Error: {path}: line {before + 2}: more than 100,000 values; give fewer"


@pytest.mark.parametrize(("flag", "value", "allowed"), [
    ("--precisions", ",", "bf16,fp8,fp8_block,w4a16,nvfp4"),
    ("--kv-dtypes", " , ", "bf16,fp8"),
    ("--ops", ",,", "overhead,gemm,moe,attn_decode,attn_prefill,allreduce"),
])
def test_calibrate_list_of_only_commas_says_it_is_empty(tmp_path, capsys, flag, value,
                                                        allowed):
    """``--precisions ,`` read "--precisions '': each must be one of bf16,...", echoing an
    empty name the option did not hold."""
    line = one_error_line(*run_cli(capsys, "calibrate", "--out", tmp_path / "p.json", flag,
                                   value))
    assert line == (f"Error: {flag}: names no value (only commas and spaces); give one or "
                    f"more of {allowed}, comma-separated, or leave it out to measure them all")
    assert not (tmp_path / "p.json").exists()
