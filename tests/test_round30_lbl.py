"""Round 30 (helper lbl): labels a planner reads say each fact once and parse."""
import json
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"


def test_latency_source_names_each_origin_once():
    """The headline latency rows read "fitted on measured serving rows + public measured +
    public measured, points below the physical limit from the roofline": the kinds, which hold
    commas, were joined with " + ", so "public measured" read twice. Now each origin is named
    once, its readings bracketed, those only some of its tables have after "some tables:"."""
    from tiersim.summary import kinds_words

    kinds = {"fitted on measured serving rows", "public measured",
             "public measured, points below the physical limit from the roofline"}
    assert kinds_words(kinds) == [
        "fitted on measured serving rows",
        "public measured (some tables: points below the physical limit from the roofline)"]


def test_latency_source_readings_every_table_has_come_first():
    """A reading every table of an origin has is said without "some tables:"; a label none of
    the origins match keeps its own commas."""
    from tiersim.summary import kinds_words

    kinds = {"public measured, rescaled to the shape",
             "public measured, rescaled to the shape, launch floor removed in CUDA graphs",
             "profile:x (a, b)", "roofline"}
    assert kinds_words(kinds) == [
        "profile:x (a, b)",
        "public measured (rescaled to the shape; some tables: launch floor removed in CUDA "
        "graphs)",
        "roofline"]


@pytest.mark.parametrize("name", ["agentic", "cascade_models", "response_cache"])
def test_golden_latency_source_says_public_measured_once(name):
    """The bundled examples' summaries name "public measured" once in sources.latency."""
    latency = json.loads((GOLDEN / f"{name}_summary.json").read_text())["sources"]["latency"]
    assert latency.count("public measured") == 1, latency


def _logged(fmt: str):
    """Six requests of a logged ``fmt`` trace with a ``mykey`` column; the third failed (0
    output tokens, dropped by every logged format)."""
    import numpy as np
    import pandas as pd

    n, out = 6, [5, 5, 0, 5, 5, 5]
    key = [f"k{i % 2}" for i in range(n)]
    if fmt == "azure":
        t = pd.Timestamp("2023-11-16 18:00:00") + pd.to_timedelta(np.arange(n), unit="s")
        return pd.DataFrame({"TIMESTAMP": t, "ContextTokens": 100, "GeneratedTokens": out,
                             "mykey": key})
    if fmt == "burstgpt":
        return pd.DataFrame({"Timestamp": np.arange(n, dtype=float), "Model": "ChatGPT",
                             "Request tokens": 100, "Response tokens": out,
                             "Total tokens": [100 + o for o in out], "Log Type":
                             "Conversation log", "mykey": key})
    return pd.DataFrame({"timestamp": np.arange(n) * 1000, "input_length": 100,
                         "output_length": out, "mykey": key})


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
@pytest.mark.parametrize("fmt", ["azure", "burstgpt", "mooncake"])
def test_logged_trace_carries_the_kept_key_column(tmp_path, fmt, suffix):
    """An Azure, BurstGPT or Mooncake trace with a ``mykey`` column, read for a response cache
    keyed on it (``keep``), lost the column (the converters carried canonical columns only), so
    the run was refused with "the trace has no 'mykey' column". Now the column is carried, for
    the requests kept, and no note calls it unread."""
    import warnings

    from tiersim.trace.loader import read_trace

    path = tmp_path / f"t.{suffix}"
    df = _logged(fmt)
    df.to_parquet(path) if suffix == "parquet" else df.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table = read_trace(path, keep=("mykey",)).table
    assert list(table["mykey"].astype(str)) == ["k0", "k1", "k1", "k0", "k1"]
    assert not [w for w in seen if "mykey" in str(w.message)]


ACCURACY_SCENARIO = """name: t
profile: null
trace:
  path: azure2023_code.parquet
  window: [240, 300]
tiers:
  - {name: w4a16, precision: w4a16, replicas: 1, cost_per_gpu_hour: 3.5,
     accuracy: {easy: 0.99, hard: 0.5}}
  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5,
     accuracy: {easy: 1.0, hard: 0.8}}
router: {policy: static_split, fractions: [0.5, 0.5]}
"""


def test_accuracy_source_says_the_scenario_numbers_are_illustrative(tmp_path):
    """The accuracy source read only "scenario" where the bundled scenarios' per-class
    accuracies are illustrative (said only in YAML comments). A scenario's
    ``accuracy_values: illustrative`` now shows in sources.accuracy, each tier's
    accuracy_source and the router row's "scored on"."""
    import json

    from tiersim.cli.app import main
    from tiersim.results import RunResult

    path = tmp_path / "s.yaml"
    path.write_text(ACCURACY_SCENARIO + "accuracy_values: illustrative\n")
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-baselines"]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["sources"]["accuracy"] == "scenario (illustrative)"
    assert {t["accuracy_source"] for t in summary["tiers"].values()} == {
        "scenario (illustrative)"}
    run = RunResult.read(tmp_path / "o" / "summary.json")
    assert run.routing_source() == "scenario (illustrative)"  # the router row's "scored on"


def test_accuracy_values_refuses_another_word(tmp_path):
    """``accuracy_values`` takes illustrative or measured; another word is one line naming
    the key."""
    from tiersim.errors import ScenarioError
    from tiersim.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(ACCURACY_SCENARIO + "accuracy_values: guessed\n")
    with pytest.raises(ScenarioError, match="accuracy_values") as err:
        load_scenario(path)
    assert "\n" not in str(err.value) and "illustrative" in str(err.value)


@pytest.mark.parametrize("name", ["default", "agentic", "cascade", "cascade_models",
                                  "plan_default", "routing"])
def test_bundled_scenarios_with_accuracy_tables_say_illustrative(name):
    """The bundled scenarios that set tier accuracies mark them illustrative."""
    from tiersim.scenario import load_scenario

    scenario = load_scenario(Path(__file__).parents[1] / "scenarios" / f"{name}.yaml")
    assert any(t.accuracy is not None for t in scenario.tiers)
    assert scenario.accuracy_values == "illustrative"


def test_plan_accuracy_source_says_illustrative_as_the_run_does(tmp_path):
    """A plan's ``accuracy_sources.source`` (said to read as a run of the planned scenario's
    sources.accuracy) stayed "scenario" where the run now reads "scenario (illustrative)"."""
    from tiersim.plan.evaluate import Design, SimEvaluator
    from tiersim.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(ACCURACY_SCENARIO + "accuracy_values: illustrative\n")
    evaluator = SimEvaluator(load_scenario(path), str(path))
    got = evaluator.accuracy_sources(Design(("w4a16", "bf16"), (1, 1)))
    assert got["source"] == "scenario (illustrative)"
