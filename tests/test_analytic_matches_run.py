"""``tiersim analytic --scenario X`` and ``tiersim run X``'s summary.json ``analytic`` price
the two tiers with one function (the sized uniform fleets under the scenario's cost model), so
they give one answer: the command priced tiers by a reference step ("cost-weight units") and
modelled a trade between two tiers of one price that the run said had none."""

from __future__ import annotations

import json

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def _run_analytic(capsys, path, out) -> dict:
    """``tiersim run PATH``'s summary.json ``analytic`` block."""
    assert main(["run", str(path), "--out", str(out)]) == 0
    capsys.readouterr()
    return json.loads((out / "summary.json").read_text())["analytic"]


def _command(capsys, *argv) -> str:
    """``tiersim analytic ARGV``'s standard output (it must succeed)."""
    capsys.readouterr()
    assert main(["analytic", *map(str, argv)]) == 0
    return capsys.readouterr().out


def _command_note(capsys, path, note: str) -> dict:
    """The command on scenario ``path`` ends with ``note`` and prints no saving; its --json."""
    lines = _command(capsys, "--scenario", path).splitlines()
    assert lines[-1] == note
    assert not any(line.startswith("dC* =") for line in lines)
    out = json.loads(_command(capsys, "--scenario", path, "--json"))
    assert out["note"] == note
    return out


def test_tiers_of_one_price_get_the_run_s_note_in_the_run_s_words(tmp_path, capsys):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    note = ("bf16 is not dearer than w4a16 per hour (provisioned: the sized fleets' GPUs x "
            "USD per GPU-hour): no trade to model")
    assert _run_analytic(capsys, path, tmp_path / "out") == {"note": note}
    assert _command_note(capsys, path, note)["note"] == note


def test_the_command_prints_the_run_s_prices_and_saving(tmp_path, capsys):
    doc = tiny_doc(cost_model="attributed")
    doc["tiers"][1]["cost_per_gpu_hour"] = 10.0  # bf16 dearer: a trade to model
    path = write_yaml(tmp_path / "s.yaml", doc)
    params = _run_analytic(capsys, path, tmp_path / "out")["params"]
    text = _command(capsys, "--scenario", path)
    assert (f"c0 = {params['c0_usd']:.6g}   dc = {params['dc_usd']:.6g}") in text
    assert f"dC* = {params['dC_star_usd']:.6g} USD over the workload" in text
    assert ("costs in USD of all requests on uniform fleets sized by simulation (attributed "
            "cost), as tiersim run prices them") in text.splitlines()[0]


def test_a_cheap_tier_more_accurate_than_the_top_gets_the_run_s_note(tmp_path, capsys):
    """The command refused such a scenario ("the top tier 'bf16' is less accurate ...; name
    the more accurate tier with --top", exit 1) where the run writes its note and goes on."""
    doc = tiny_doc(workload={"difficulty": {"kind": "two_type", "p_easy": 0.7}})
    doc["tiers"][0]["accuracy"] = {"easy": 1.0, "hard": 0.9}
    doc["tiers"][1]["accuracy"] = {"easy": 0.9, "hard": 0.3}
    doc["tiers"][1]["cost_per_gpu_hour"] = 10.0  # dearer: of one price there is no trade at all
    path = write_yaml(tmp_path / "s.yaml", doc)
    note = ("w4a16 is more accurate than bf16 (two-type delta -0.6, mean loss -0.6): the "
            "closed form assumes the top tier is the more accurate; not modelled")
    assert _run_analytic(capsys, path, tmp_path / "out") == {"note": note}
    assert _command_note(capsys, path, note)["estimated_from"]["top"] == "bf16"


def _strict_json(text: str) -> dict:
    """``text`` parsed as JSON that a strict reader takes (a NaN or Infinity is refused)."""
    def refuse(name):
        raise AssertionError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_a_response_cache_answering_every_request_gets_the_run_s_note(tmp_path, capsys):
    """The command estimated the model on no requests: it printed accuracies of nan, said the
    cheap tier was the more accurate ("mean loss nan") and wrote NaN into its --json, where the
    run notes that no request reached the tiers."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]},
                   cost_model="provisioned")
    doc["tiers"][1]["cost_per_gpu_hour"] = 10.0
    doc["router"]["response_cache"] = {"mode": "top_n", "size": 1,
                                       "popularity": {"distinct": 1, "exponent": 1.0}}
    path = write_yaml(tmp_path / "s.yaml", doc)
    note = "no request reached the tiers (the response cache answered all): no trade to model"
    assert _run_analytic(capsys, path, tmp_path / "out") == {"note": note}
    out = _command_note(capsys, path, note)
    assert out["estimated_from"]["n"] == 0
    assert _strict_json(_command(capsys, "--scenario", path, "--json"))["note"] == note
    assert "nan" not in _command(capsys, "--scenario", path)


def test_no_uniform_fleet_meeting_the_slos_gets_one_note_in_run_and_command(tmp_path, capsys):
    """The run wrote ``analytic: {}`` (silent) and the command refused (exit 1) with its own
    words; both now say why there is no closed form, in one note."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]},
                   slo={"ttft_p99_s": 0.001, "tpot_p99_s": 0.1})
    doc["tiers"][1]["cost_per_gpu_hour"] = 10.0
    path = write_yaml(tmp_path / "s.yaml", doc)
    analytic = _run_analytic(capsys, path, tmp_path / "out")
    uniform = json.loads((tmp_path / "out" / "summary.json").read_text())["savings"]["uniform"]
    note = (f"no uniform fleet of w4a16 meets the SLOs ({uniform['w4a16']['infeasible']}), "
            f"nor of bf16 ({uniform['bf16']['infeasible']}): without their prices there is no "
            "trade to model")
    assert analytic == {"note": note}
    assert _command_note(capsys, path, note)["estimated_from"]["top"] == "bf16"


def test_one_tier_without_a_fleet_meeting_the_slos_is_named_with_why():
    from types import SimpleNamespace

    from tiersim.summary import two_tier_prices

    pair = [SimpleNamespace(name="fp8"), SimpleNamespace(name="bf16")]
    uniform = {"fp8": SimpleNamespace(cost_usd=1.0, infeasible=None),
               "bf16": SimpleNamespace(cost_usd=None, infeasible="needs more than 8 GPUs")}
    priced = two_tier_prices("attributed", uniform, pair, None)
    assert (priced.c0, priced.dc) == (None, None)
    assert priced.note == ("no uniform fleet of bf16 meets the SLOs (needs more than 8 GPUs): "
                           "without its price there is no trade to model")


@pytest.mark.parametrize("given, missing", [("--c0", "--dc"), ("--dc", "--c0")])
def test_one_price_flag_with_a_scenario_is_refused(tmp_path, capsys, given, missing):
    """``--c0`` alone took the other price from the scenario's simulation (USD of the whole
    workload) beside the given one (in the user's units): the frontier mixed units."""
    from test_hostile_inputs import one_error_line, run_cli

    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    line = one_error_line(*run_cli(capsys, "analytic", "--scenario", path, given, "1"))
    assert line == (f"Error: tiersim analytic: --c0/--dc: {given} is given without {missing}; "
                    "with --scenario give both (prices of your own, one unit) or neither (the "
                    "scenario's, in USD of its simulated fleets): one of each mixes units")
