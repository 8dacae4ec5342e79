"""Round 22 of hostile input across tiersim's subcommands: every command that reads a scenario
(``run``, ``disagg``, ``plan``, ``sweep``, ``analytic --scenario``) refuses the same bad scenario
with the same one line, and each command's ``--help`` names what it reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from test_round19 import run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"
TRACE = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"


def bad_scenario(tmp_path: Path, edit: str) -> Path:
    """The bundled tiny scenario (one minute of its trace, two w4a16 replicas so a split
    exists) with ``edit`` applied and a ``sweep:`` map over seeds, so that every command reads
    the same file."""
    doc = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text())
    doc["trace"] = {"path": str(TRACE), "window": [240, 300]}
    doc["tiers"][0]["replicas"] = 2
    if edit == "misspelled key":
        doc["routr"] = doc.pop("router")
    elif edit == "unread router key":
        doc["router"]["thresholds"] = [0.3]
    elif edit == "unread session key":
        doc["workload"] = {"sessions": {"source": "off", "context": "logged"}}
    elif edit == "model does not fit":
        doc["model"] = "Llama-3.1-70B"
    elif edit == "trace missing":
        doc["trace"]["path"] = str(tmp_path / "gone.parquet")
    doc["sweep"] = {"seed": [0, 1]}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _argv(command: str, scenario: Path, tmp_path: Path) -> list:
    """``tiersim COMMAND`` on ``scenario``, with what the command needs beside it."""
    return {"run": ["run", scenario, "--no-baselines"],
            "disagg": ["disagg", scenario],
            "plan": ["plan", scenario, "--out", tmp_path / "plan", "--no-report"],
            "sweep": ["sweep", scenario, "--out", tmp_path / "sweep", "--workers", "1",
                      "--no-report"],
            "analytic": ["analytic", "--scenario", scenario]}[command]


def error_line(code: int, err: str) -> str:
    """The one ``Error:`` line of a failed command (exit 1, no traceback); its other lines
    may only be notes (a ``sweep:`` map read as its base point)."""
    assert code == 1, err[-500:]
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert all(line.startswith("note: ") for line in lines[:-1]), lines
    assert lines[-1].startswith("Error: "), lines
    return lines[-1]


EDITS = ("misspelled key", "unread router key", "unread session key", "model does not fit",
         "trace missing")


@pytest.mark.parametrize("edit", EDITS)
@pytest.mark.parametrize("command", ("disagg", "plan", "sweep", "analytic"))
def test_every_command_refuses_a_bad_scenario_as_run_does(tmp_path, capsys, command, edit):
    """``tiersim analytic --scenario`` priced a scenario whose router or sessions held a key
    nothing reads (``tiersim run`` refuses it); each command now gives run's one line, and
    leaves no output folder behind. ``plan`` sizes a tier onto more GPUs itself, so a model
    that does not fit the scenario's count is no error there."""
    if command == "plan" and edit == "model does not fit":
        pytest.skip("the planner fits a tier onto more GPUs per replica")
    scenario = bad_scenario(tmp_path, edit)
    expected = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert f"Error: {scenario}: line " in expected
    assert error_line(*run_cli(capsys, *_argv(command, scenario, tmp_path))) == expected
    assert not (tmp_path / command).exists()


def test_analytic_notes_a_sweep_map_as_run_does(tmp_path, capsys):
    """``tiersim analytic --scenario`` on a scenario with a ``sweep:`` map read its base point
    and said nothing of the grid; run and disagg say so."""
    scenario = bad_scenario(tmp_path, "none")
    code, err = run_cli(capsys, "analytic", "--scenario", scenario, "--c0", "1", "--dc", "1")
    assert code == 0, err
    assert err.splitlines() == [f"note: {scenario} has a sweep: map; this reads its base point "
                                "only (use `tiersim sweep` for the grid)"]


def test_disagg_simulates_each_split_once_with_a_response_cache(tmp_path, capsys, monkeypatch):
    """On a scenario with a response cache, ``tiersim disagg`` ran each split a second time
    without the cache (the run's cache comparison) and threw that run away."""
    from tiersim import runner

    doc = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text())
    doc["trace"] = {"path": str(TRACE), "window": [240, 300]}
    doc["tiers"][0]["replicas"] = 2
    doc["router"]["response_cache"] = {"mode": "top_n", "size": 20,
                                       "popularity": {"distinct": 1000, "exponent": 1.0}}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    served, serve = [], runner._serve
    monkeypatch.setattr(runner, "_serve", lambda *a, **k: served.append(1) or serve(*a, **k))
    code, err = run_cli(capsys, "disagg", scenario)
    assert code == 0, err
    assert len(served) == 2  # aggregated and 1P 1D


def priced_scenario(tmp_path: Path, cost_model: str = "provisioned", baseline: bool = False,
                    both: bool = False) -> Path:
    """The tiny scenario (one minute of its trace) with ``cost_per_request_usd`` on its w4a16
    tier (and on bf16 too where ``both``), under ``cost_model``; with ``baseline``, a
    baseline-only bf16 tier priced per request too."""
    doc = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text())
    doc["trace"] = {"path": str(TRACE), "window": [240, 300]}
    doc["cost_model"] = cost_model
    doc["tiers"][0]["cost_per_request_usd"] = 0.01
    if both:
        doc["tiers"][1]["cost_per_request_usd"] = 0.02
    if baseline:
        doc["baselines"] = [{**doc["tiers"][1], "name": "bf16b", "cost_per_request_usd": 0.02}]
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _notes(err: str) -> list[str]:
    """The notes that speak of ``cost_per_request_usd``."""
    return [line for line in err.splitlines() if "cost_per_request_usd" in line]


def test_a_price_per_request_no_figure_reads_is_noted(tmp_path, capsys):
    """Under cost_model provisioned, a ``cost_per_request_usd`` on one tier of two is read by
    nothing: the summary's fixed_per_request_cost_usd needs every tier's (it is null), and the
    headline is provisioned. The run said nothing of it."""
    scenario = priced_scenario(tmp_path)
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert _notes(err) == [
        "note: tier w4a16: cost_per_request_usd is read under cost_model fixed_per_request, "
        "and beside provisioned (summary.json's fixed_per_request_cost_usd) only when every "
        "tier sets one, which bf16 does not, so it changes nothing; price every tier, or "
        "remove it"]


def test_a_baseline_price_per_request_is_noted_under_another_cost_model(tmp_path, capsys):
    """A baseline-only tier's ``cost_per_request_usd`` is read only to cost its uniform fleet
    under fixed_per_request; under attributed nothing reads it."""
    scenario = priced_scenario(tmp_path, "attributed", baseline=True, both=True)
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert _notes(err) == [
        "note: baseline bf16b: cost_per_request_usd is read only under cost_model "
        "fixed_per_request, and this scenario's is attributed, so it changes nothing; "
        "remove it, or set cost_model: fixed_per_request"]


@pytest.mark.parametrize("cost_model", ("provisioned", "fixed_per_request"))
def test_prices_every_tier_sets_are_not_noted(tmp_path, capsys, cost_model):
    """Every routed tier priced: the figure beside the headline (or the headline) reads them."""
    scenario = priced_scenario(tmp_path, cost_model, both=True)
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    assert _notes(err) == []


def test_analytic_notes_the_tiers_as_run_does(tmp_path, capsys):
    """``tiersim analytic --scenario`` sizes each tier's uniform fleet by simulation, and gave
    none of the notes ``tiersim run`` gives on the same tiers (a scheduler key nothing reads,
    a price per request nothing reads)."""
    doc = yaml.safe_load((SCENARIOS / "tiny.yaml").read_text())
    doc["trace"] = {"path": str(TRACE), "window": [240, 300]}
    doc["tiers"][1]["scheduler"] = {"prefix_cache_fraction": 0.5}
    doc["tiers"][0]["cost_per_request_usd"] = 0.01
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = run_cli(capsys, "run", scenario, "--no-baselines")
    assert code == 0, err
    notes = [line for line in err.splitlines() if "scheduler." in line or "per_request" in line]
    assert len(notes) == 2
    code, err = run_cli(capsys, "analytic", "--scenario", scenario, "--c0", "1", "--dc", "1")
    assert code == 0, err
    assert err.splitlines() == notes


def test_analytic_notes_the_scenario_trace_keys_its_trace_option_replaces(tmp_path, capsys):
    """``tiersim analytic --trace T --scenario S`` reads the whole of T: S's ``trace.window``
    and ``trace.time_scale`` (set for S's own trace) were silently not applied (8,819 requests
    estimated on, where the scenario's window holds 187)."""
    scenario = bad_scenario(tmp_path, "none")
    doc = yaml.safe_load(scenario.read_text())
    doc["trace"]["time_scale"] = 2.0
    del doc["sweep"]
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = run_cli(capsys, "analytic", "--trace", TRACE, "--scenario", scenario,
                        "--c0", "1", "--dc", "1")
    assert code == 0, err
    assert err.splitlines() == [
        f"note: --trace replaces {scenario}'s trace, so its trace.window and "
        "trace.time_scale are not applied (set for its own trace): the whole of "
        f"{TRACE} is read as it is; give the scenario alone to estimate on its trace"]
    doc["trace"] = {"path": str(TRACE), "format": "auto", "time_scale": 1.0}
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, err = run_cli(capsys, "analytic", "--trace", TRACE, "--scenario", scenario,
                        "--c0", "1", "--dc", "1")
    assert (code, err) == (0, "")


def test_sweep_refuses_workers_beside_a_ray_address(tmp_path, capsys):
    """``--workers`` caps the points run at once on local processes, or the CPUs of a local
    Ray the sweep starts; a cluster joined at ``--address`` runs as many as it has CPUs, and
    ``--workers`` was ignored there without a word (``--address`` without ray is refused)."""
    scenario = bad_scenario(tmp_path, "none")
    line = error_line(*run_cli(capsys, "sweep", scenario, "--out", tmp_path / "sweep",
                               "--executor", "ray", "--address", "127.0.0.1:1",
                               "--workers", "2"))
    assert line == ("Error: --workers 2: a Ray cluster joined at --address runs as many points "
                    "at once as it has CPUs, so it is not read; drop it, or drop --address to "
                    "start a local Ray of that many CPUs")
    assert not (tmp_path / "sweep").exists()


@pytest.mark.parametrize(("option", "says"), [
    ("--floor", "default: the scenario's accuracy_floor"),
    ("--c0", "default 0 with --p/--eps/--delta, 1 with --trace alone"),
    ("--dc", "default 1"),
    ("--trace", "read whole"),
    ("--cheap", "default: the scenario's first tier"),
    ("--top", "default: the scenario's last tier"),
    ("--p", "without --trace/--scenario")])
def test_analytic_help_says_what_each_option_defaults_to(option, says):
    """``tiersim analytic --help`` said "accuracy floor", "cost of the cheap tier", "labelled
    trace": not that a scenario's floor is read without --floor, that --c0 is 0 or 1 by
    default depending on the other options, nor which tiers --cheap and --top default to."""
    from tiersim.cli.app import load

    command = load("analytic")
    helps = {name: param.help for param in command.params for name in param.opts}
    assert says in helps[option]


@pytest.mark.parametrize("option", ("--precisions", "--kv-dtypes", "--seed"))
def test_calibrate_help_says_what_each_option_reads(option):
    """``tiersim calibrate --help`` listed --precisions, --kv-dtypes and --seed with no word of
    what they take or default to."""
    from tiersim.calibrate.cli import parser

    helps = {name: action.help for action in parser()._actions for name in action.option_strings}
    assert helps[option] and "default" in helps[option]
