"""Round 28, hostile scenarios, sweeps, command lines and output folders (helper fzs): each
test names what the command did before its fix."""

from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import REPO, TINY, axis_line
from test_hostile_inputs import one_error_line, run_cli

BUNDLED_TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def tiny_sweep(tmp_path, sweep: dict):
    """tiny.yaml copied to ``tmp_path`` (its trace resolves from the bundled traces) with
    ``sweep`` as its sweep map."""
    path = tmp_path / "tiny.yaml"
    shutil.copy(TINY, path)
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = sweep
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("sweep", [{"limits.max_replicas": [4, 2000]},
                                   {"limits": [{"max_replicas": 4}, {"max_replicas": 8}]}])
def test_a_limits_axis_under_no_baselines_is_refused(tmp_path, capsys, sweep):
    """``limits.max_replicas`` caps only the simulated baselines' sizing, which --no-baselines
    skips: the sweep ran every point the same under different labels, without a word (as
    ``limits.gpus_per_replica`` once did)."""
    path = tiny_sweep(tmp_path, sweep)
    out = tmp_path / "o"
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", out, "--no-baselines",
                                   "--no-report"))
    axis = next(iter(sweep))
    assert line == (f"Error: {path}: line {axis_line(path, axis)}: sweep: {axis!r}: is read "
                    "only when the simulated baselines are sized, and --no-baselines estimates "
                    "them instead, so every point would run the same; drop --no-baselines, or "
                    "the axis")
    assert not out.exists()


@pytest.mark.parametrize(("window", "typed"), [(["5", "1"], "5 1"), (["-5", "-1"], "-5 -1"),
                                               (["3", "3"], "3 3")])
def test_trace_inspect_window_out_of_order_names_the_option(capsys, window, typed):
    """It named the trace file, as if the file were at fault ("azure2023_code.parquet: window
    must satisfy 0 <= start_s < end_s, got (5, 1)"), and not --window."""
    line = one_error_line(*run_cli(capsys, "trace", "inspect", BUNDLED_TRACE, "--window",
                                   *window))
    assert line == (f"Error: --window: START must be >= 0 and below END (got {typed}); give "
                    "the window's start and end in seconds of the trace")


@pytest.mark.parametrize("names", [["x", "x "], ["caf\u00e9", "cafe\u0301"], ["bf16", "\uff42f16"]])
def test_tier_name_values_that_read_the_same_are_refused(tmp_path, capsys, names):
    """Two points ran with tiers named 'x' and 'x ' (or é composed and decomposed, full-width
    letters), and sweep.parquet got two column groups that read the same (tiers.x.cost_usd
    and tiers.x .cost_usd): the names one scenario refuses as one name written twice."""
    path = tiny_sweep(tmp_path, {"tiers.bf16.name": names})
    out = tmp_path / "o"
    line = one_error_line(*run_cli(capsys, "sweep", path, "--out", out, "--no-baselines",
                                   "--no-report"))
    first, second = (ascii(name) for name in names)
    assert line == (f"Error: {path}: line {axis_line(path, 'tiers.bf16.name')}: sweep: "
                    f"'tiers.bf16.name': values {first} and {second} read the same as tier "
                    "names (they differ only in Unicode form, width or surrounding spaces), so "
                    "the results would show two tiers under one label; list one of them")
    assert not out.exists()


ROUTER_BLOCK = "router:\n  policy: static_split\n  fractions: [0.5, 0.5]\n"


@pytest.mark.parametrize(("block", "where"), [
    ("router:\n  policy: floor\n  floor: nan\n", "router.floor"),
    ("router:\n  policy: uniform\n  confusion: {fpr: NaN}\n", "router.confusion.fpr"),
    ("router:\n  policy: static_split\n  fractions: [nan, 0.5]\n", "router.fractions[0]"),
    (ROUTER_BLOCK + "workload: {difficulty: {kind: two_type, p_easy: nan}}\n",
     "workload.difficulty.p_easy")])
def test_nan_written_as_text_in_router_or_workload_is_not_finite(tmp_path, capsys, block,
                                                                 where):
    """YAML 1.1 reads a plain ``nan`` as text, which the router and workload models took as a
    float: 'router.floor: must be <= 1.0 (got 'nan')', as if a smaller number would do, and
    fractions [nan, 0.5] 'must be >= 0 and sum to 1 (got sum nan)'; the scenario's own keys
    (a tier's price) said 'must be a finite number (got 'nan')'."""
    text = TINY.read_text()
    assert ROUTER_BLOCK in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(ROUTER_BLOCK, block))
    line = one_error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "o",
                                   "--no-baselines", "--no-report"))
    written = "NaN" if "NaN" in block else "nan"
    assert line.endswith(f": {where}: must be a finite number (got {written!r})"), line
    assert f"{path}: line " in line


@pytest.mark.parametrize("flag", ["--cheap", "--top"])
def test_analytic_names_a_baseline_only_tier_as_such(tmp_path, capsys, flag):
    """``--cheap fp8`` of a scenario whose baselines list fp8 read "unknown tier 'fp8'", a tier
    the file names (``tiersim disagg --tier`` says what it is)."""
    doc = yaml.safe_load(TINY.read_text())
    doc["baselines"] = [{"name": "fp8", "precision": "fp8", "cost_per_gpu_hour": 3.5}]
    doc["trace"]["path"] = str(BUNDLED_TRACE)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    line = one_error_line(*run_cli(capsys, "analytic", "--scenario", path, flag, "fp8"))
    assert line == (f"Error: tiersim analytic: {flag}: 'fp8' is a baseline-only tier "
                    "(baselines[0]), which no request is routed to, so the closed form cannot "
                    "price routing to it; tiers are w4a16, bf16")
