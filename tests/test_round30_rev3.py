"""Round 30 (helper rev3): review of the session's changes; each test failed before its fix."""
import json

from test_round30_lbl import ACCURACY_SCENARIO

ILLUSTRATIVE = ACCURACY_SCENARIO + "accuracy_values: illustrative\n"


def test_analytic_says_the_scenario_accuracies_are_illustrative(tmp_path, capsys):
    """``tiersim analytic --scenario`` of a scenario with ``accuracy_values: illustrative``
    read "(the scenario's table)" and wrote accuracy_source "scenario", where ``tiersim run``
    of it says "scenario (illustrative)" (add3ab1 labelled run, summary and plan only)."""
    from tiersim.cli.app import main

    path = tmp_path / "s.yaml"
    path.write_text(ILLUSTRATIVE)
    assert main(["analytic", "--scenario", str(path)]) == 0
    out = capsys.readouterr().out
    assert "w4a16 0.8904 (the scenario's table, illustrative)" in out
    assert main(["analytic", "--scenario", str(path), "--json"]) == 0
    sources = json.loads(capsys.readouterr().out)["estimated_from"]["accuracy_source"]
    assert sources == {"w4a16": "scenario (illustrative)", "bf16": "scenario (illustrative)"}


def test_analytic_words_for_each_accuracy_source():
    """Each label a run writes has its words; an illustrative table is not called the
    trace's labels (an unknown label fell back to "measured: the trace's labels")."""
    from tiersim.cli.analytic import accuracy_words

    assert accuracy_words("labels") == "measured: the trace's labels"
    assert accuracy_words("scenario") == "the scenario's table"
    assert accuracy_words("scenario (measured)") == "the scenario's table, measured"
    assert accuracy_words("prior") == "prior"


def test_a_tie_kept_for_fewer_replicas_names_that_rule():
    """A tie kept as the smaller fleet (as many tiers, fewer replicas) where the other design
    is the more accurate read "the floor is met, fewer tiers rank first", a rule that did not
    decide it (both have the same tiers); it now names the rule that did."""
    from tiersim.plan.planner import _tie

    fleet = _tie(0.90, 0.83, "kept as the smaller fleet, 17 replicas against 18")
    assert fleet.endswith("the floor is met, fewer replicas rank first)")
    assert "fewer tiers" not in fleet
    design = _tie(0.90, 0.83, "kept as the simpler design, 1 tier against 2")
    assert design.endswith("the floor is met, fewer tiers rank first)")


def test_an_unsorted_azure_parquet_time_is_one_line(tmp_path):
    """An Azure Parquet trace whose TIMESTAMP column (date-times) goes back in time ended
    ``tiersim trace inspect`` in TypeError: float() argument must be ... not 'Timestamp' (the
    message showed each time as a number); it is now one line naming the row and both
    times."""
    import pandas as pd

    from tiersim.cli.app import main

    path = tmp_path / "az.parquet"
    t = pd.Timestamp("2023-11-16 18:00:00") + pd.to_timedelta([0, 1, 5, 3, 6], unit="s")
    pd.DataFrame({"TIMESTAMP": t, "ContextTokens": 100, "GeneratedTokens": 5}).to_parquet(path)
    from tiersim.errors import TraceError
    from tiersim.trace.loader import read_trace

    try:
        read_trace(path)
    except TraceError as err:
        message = str(err)
    assert "row 4" in message
    assert "timestamp 2023-11-16 18:00:03 is earlier than the row before (2023-11-16 18:00:05)" \
        in message
    assert main(["trace", "inspect", str(path)]) == 1


def test_a_parquet_file_of_lengths_names_the_columns_it_drops(tmp_path):
    """load_lengths notes the session and prefix columns a file of token lengths drops
    (502c1e0), but since it reads a Parquet file's token columns alone (b40a76a) the others
    were never in the table it looked at: a Parquet file gave no note where the same CSV
    did."""
    import warnings

    import pandas as pd

    from tiersim.trace.loader import load_lengths

    df = pd.DataFrame({"input_tokens": [10, 20, 30], "output_tokens": [5, 6, 7],
                       "session_id": [1, 1, 2], "step": [0, 1, 0],
                       "prefix_hashes": [[1], [1, 2], [3]]})
    notes = {}
    for name in ("t.csv", "t.parquet"):
        path = tmp_path / name
        df.to_csv(path, index=False) if name.endswith(".csv") else df.to_parquet(path)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            load_lengths(path)
        notes[name] = [str(w.message).removeprefix(f"{path}: ") for w in seen]
    assert notes["t.parquet"] == notes["t.csv"]
    assert "'session_id', 'step', 'prefix_hashes' not read" in notes["t.parquet"][0]
