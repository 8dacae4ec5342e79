"""``tiersim analytic`` (the routing package's typer sub-app)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from tiersim.analytic import max_saving
from tiersim.cli.analytic import analytic_app
from tiersim.errors import ScenarioError
from tiersim.routing.labels import as_trace, load_mmlu_labels

runner = CliRunner()


def test_parameters_print_dc_star_kink_and_frontiers():
    res = runner.invoke(analytic_app, ["--p", "0.5", "--eps", "0.02", "--delta", "0.3",
                                       "--dc", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["dC_star"] == pytest.approx(max_saving(0.5, 0.02, 0.3, 2.0))
    assert out["kink"]["top_share"] == 0.5
    assert len(out["oracle_frontier"]) == 3 and len(out["static_frontier"]) == 2


def test_plain_output_names_every_part():
    res = runner.invoke(analytic_app, ["--p", "0.8", "--eps", "0.01", "--delta", "0.3",
                                       "--floor", "0.97"])
    assert res.exit_code == 0
    for word in ("dC* = 0.682353", "kink:", "oracle frontier", "static split frontier",
                 "at floor 0.9700"):
        assert word in res.output


def test_missing_parameters_are_a_one_line_error():
    res = runner.invoke(analytic_app, ["--p", "0.5"])
    assert isinstance(res.exception, ScenarioError)
    assert str(res.exception) == ("tiersim analytic: --p/--eps/--delta: give all three, or "
                                  "--trace/--scenario")


def test_estimates_from_a_labelled_trace(tmp_path):
    df = as_trace(load_mmlu_labels()).drop(columns=["prompt", "subject"])
    df["arrival_s"] = np.arange(len(df)) * 0.1
    df["output_tokens"] = np.int32(20)
    path = tmp_path / "mmlu.parquet"
    df.to_parquet(path)
    res = runner.invoke(analytic_app, ["--trace", str(path), "--cheap", "weak", "--top", "strong",
                                       "--json"])
    assert res.exit_code == 0, res.output
    est = json.loads(res.output)["estimated_from"]
    only_strong = ((df["correct_weak"] < 0.5) & (df["correct_strong"] > 0.5)).mean()
    assert est["p"] == pytest.approx(1 - only_strong)
    assert est["delta"] == 1.0 and est["eps"] == est["eps_raw"] < 0
    out = json.loads(res.output)
    cheap_accuracy = df["correct_weak"].mean()
    assert est["accuracy"]["weak"] == pytest.approx(cheap_accuracy)
    assert out["oracle_frontier"][0][1] == pytest.approx(cheap_accuracy)


def test_labels_where_the_cheap_tier_is_often_right_alone_claim_no_saving(tmp_path):
    """Clipping eps to 0 printed the cheap tier at 0.38 accuracy where its labels give 0.68,
    and a saving of 0.78 per request at a floor that the cheap tier alone already meets."""
    weak = np.r_[np.ones(38), np.ones(30), np.zeros(2), np.zeros(30)]
    strong = np.r_[np.ones(38), np.zeros(30), np.ones(2), np.ones(30)]
    path = tmp_path / "labels.csv"
    pd.DataFrame({"arrival_s": np.arange(100) * 0.1, "input_tokens": 100, "output_tokens": 10,
                  "correct_weak": weak, "correct_strong": strong}).to_csv(path, index=False)
    res = runner.invoke(analytic_app, ["--trace", str(path), "--cheap", "weak", "--top",
                                       "strong", "--floor", "0.6"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert ("accuracy: weak 0.6800 (measured: the trace's labels), strong 0.7000 (measured: the "
            "trace's labels)") in lines
    assert ("oracle frontier (cost, accuracy): (1, 0.6800), (1.32, 1.0000), (2, 0.7000); source: "
            "two-type closed form of p / eps / delta, c0 / dc and the top tier's accuracy") in lines
    assert lines[-1] == ("at floor 0.6000: oracle 1, cheaper uniform of the two compared tiers "
                         "(weak) 1, static split of the two compared tiers (weak, strong) 1; "
                         "saving "
                         "vs uniform 0, vs static 0; source: two-type closed form of p / eps / "
                         "delta, c0 / dc and the top tier's accuracy")


@pytest.mark.parametrize(("weak", "strong", "floor", "dc_star"), [
    ([1] * 68 + [0] * 32, [1] * 38 + [0] * 30 + [1] * 32, 0.68, None),  # cheap meets it exactly
    ([0, 0, 0, 1, 1], [0, 1, 1, 0, 0], 0.4, 0.0),  # two tiers of equal accuracy
])
def test_a_floor_the_cheap_tier_meets_up_to_rounding_saves_nothing(tmp_path, weak, strong,
                                                                    floor, dc_star):
    """The labels' mean loss and the all-cheap accuracy come out one rounding step off: a floor
    of exactly the cheap tier's accuracy was priced at the top tier (a saving of 1 per request),
    and two equally accurate tiers gave dC* = 100% of dc."""
    path = tmp_path / "labels.csv"
    pd.DataFrame({"arrival_s": np.arange(len(weak)) * 0.1, "input_tokens": 100,
                  "output_tokens": 10, "correct_weak": weak,
                  "correct_strong": strong}).to_csv(path, index=False)
    res = runner.invoke(analytic_app, ["--trace", str(path), "--cheap", "weak", "--top",
                                       "strong", "--floor", str(floor), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["at_floor"]["uniform_cost"] == 1.0 and out["at_floor"]["vs_uniform"] == 0.0
    if dc_star is not None:
        assert out["dC_star"] == dc_star


def test_a_scenario_s_baselines_are_checked_as_run_checks_them(tmp_path, capsys):
    """analytic --scenario printed its frontier for a baseline tier run refuses."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc()
    doc["baselines"] = [{"name": "fp8", "precision": "fp8", "replicas": 1,
                         "cost_per_gpu_hour": 3.5, "accuracy": {"easy": 1.5, "hard": 0.2}}]
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "analytic", "--scenario", path)
    assert code == 1
    assert err.startswith(f"Error: {path}: line ") and err.rstrip().endswith(
        "baselines[0].accuracy.easy: an accuracy is in [0, 1] (got 1.5)")


def test_tier_names_without_data_are_refused():
    """--cheap/--top with --p/--eps/--delta were silently ignored."""
    res = runner.invoke(analytic_app, ["--p", "0.5", "--eps", "0.1", "--delta", "0.3",
                                       "--cheap", "x", "--top", "y"])
    assert isinstance(res.exception, ScenarioError)
    assert str(res.exception) == ("tiersim analytic: --cheap/--top: names a tier of "
                                  "--trace/--scenario, and neither is given; give one, or drop it")


@pytest.mark.parametrize(("flag", "tier", "message"), [
    ("--cheap", "strong", "--cheap: names 'strong', the last tier, which --top takes by "
     "default; name a cheaper tier (weak), or give --top"),
    ("--top", "weak", "--top: names 'weak', the first tier, which --cheap takes by default; "
     "name a dearer tier (strong), or give --cheap"),
])
def test_one_flag_naming_the_other_default_tier_is_refused(tmp_path, capsys, flag, tier,
                                                           message):
    """--cheap naming the last tier alone (or --top the first) compared that tier with itself:
    with --dc it printed 'strong vs strong' and a frontier, exit 0."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc()
    doc["tiers"] = [{"name": name, "precision": precision, "replicas": 1,
                     "cost_per_gpu_hour": 3.5, "cost_per_request_usd": price}
                    for name, precision, price in (("weak", "fp8", 0.001),
                                                   ("strong", "bf16", 0.002))]
    doc["cost_model"] = "fixed_per_request"
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, err = run_cli(capsys, "analytic", "--scenario", path, flag, tier, "--c0", "1",
                        "--dc", "1")
    assert code == 1
    assert err == f"Error: tiersim analytic: {message}\n"
