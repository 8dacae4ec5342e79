"""Round 57 (class57): a trace's ``difficulty_class`` column is a canonical optional column.

Read and checked alike from CSV, JSON lines and Parquet (a Parquet file's was left out of the
table, so the same labelled trace lost its classes there: ``accuracy_by_class`` and the closed
form's ``p`` read them from a CSV alone); used with ``correct_<tier>`` labels, and replaced
with a note where the workload draws difficulty instead.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml

from tiersim.errors import Note, TraceError
from tiersim.paths import bundled
from tiersim.routing.accuracy import prepare_workload
from tiersim.routing.types import TierInfo
from tiersim.trace.loader import read_trace

BASE = {"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [10, 20, 30], "output_tokens": [5, 5, 5]}


def write(df: pd.DataFrame, path) -> None:
    """``df`` as a CSV, JSON-lines or Parquet trace, by ``path``'s suffix."""
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    elif path.suffix == ".parquet":
        df.to_parquet(path)
    else:
        rows = df.astype(object).where(df.notna(), None).to_dict("records")
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def classes_of(tmp_path, suffix: str, classes: list) -> list:
    """The ``difficulty_class`` column read from a trace of ``classes``."""
    path = tmp_path / f"t{suffix}"
    write(pd.DataFrame({**BASE, "difficulty_class": classes}), path)
    column = read_trace(path).table["difficulty_class"]
    return column.astype(object).where(column.notna(), None).tolist()


def refusal(tmp_path, suffix: str, classes: list) -> str:
    """The one-line error a trace of ``classes`` gets, less the file's path."""
    path = tmp_path / f"t{suffix}"
    write(pd.DataFrame({**BASE, "difficulty_class": classes}), path)
    with pytest.raises(TraceError) as err:
        read_trace(path)
    return str(err.value).removeprefix(f"{path}: ")


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_every_format_reads_the_classes_alike(tmp_path, suffix):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not read" note
        got = classes_of(tmp_path, suffix, [" easy", "hard ", None])
    assert got == ["easy", "hard", None]
    table = read_trace(tmp_path / f"t{suffix}").table
    assert isinstance(table["difficulty_class"].dtype, pd.CategoricalDtype)


def test_a_csv_column_of_whole_numbers_reads_as_written(tmp_path):
    assert classes_of(tmp_path, ".csv", [1, None, 2]) == ["1", None, "2"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
@pytest.mark.parametrize(("cell", "words"), [(3, "a number"), (True, "true/false")])
def test_a_typed_number_is_refused_in_one_line(tmp_path, suffix, cell, words):
    got = refusal(tmp_path, suffix, [cell, cell, cell])
    line = " (file line 1)" if suffix == ".jsonl" else ""
    assert got == (
        f"row 1, column 'difficulty_class': difficulty_class must be text, a class name such "
        f"as easy or hard (got {words}); write the class name as a string, or leave the cell "
        f"empty{line}"
    )


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_control_character_is_refused(tmp_path, suffix):
    got = refusal(tmp_path, suffix, ["easy", "\x1b[31mhard", "hard"])
    line = {".csv": " (file line 3)", ".jsonl": " (file line 2)", ".parquet": ""}[suffix]
    assert got == (
        "row 2, column 'difficulty_class': difficulty_class contains the control or format "
        f"character U+001B; use printable text{line}"
    )


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_nul_character_is_refused(tmp_path, suffix):
    got = refusal(tmp_path, suffix, ["easy", "hard\x00", "hard"])
    assert got.startswith(
        "row 2, column 'difficulty_class': difficulty_class contains the control or format "
        "character U+0000; use printable text"
    )


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_a_class_name_over_100_characters_is_refused(tmp_path, suffix):
    assert classes_of(tmp_path, suffix, ["x" * 100, "a", "b"])[0] == "x" * 100
    got = refusal(tmp_path, suffix, ["easy", "x" * 101, "hard"])
    assert got.startswith(
        "row 2, column 'difficulty_class': difficulty_class is 101 characters long, over the "
        "100 a class name may have (it names a row of the accuracy-by-class table); shorten it"
    )


def test_a_list_cell_is_refused(tmp_path):
    path = tmp_path / "t.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({**BASE, "difficulty_class": [["easy"], ["hard"], ["hard"]]})
    pq.write_table(table, path)
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert "difficulty_class must be one number or text per row" in str(err.value)


TIERS = [TierInfo(name="w4a16", cost_weight=1.0), TierInfo(name="bf16", cost_weight=2.0)]


def test_without_labels_the_drawn_classes_replace_the_traces_with_a_note():
    from tiersim.routing.config import WorkloadQualityConfig

    df = pd.DataFrame({**BASE, "difficulty_class": pd.Categorical(["odd", "odd", None])})
    with pytest.warns(Note) as notes:
        out = prepare_workload(df, TIERS, WorkloadQualityConfig(), np.random.default_rng(0))
    texts = [str(n.message) for n in notes if "difficulty_class" in str(n.message)]
    assert texts == [
        "scenario: the trace's difficulty_class column is not used: without correct_<tier> "
        "labels, each request's class is drawn from workload.difficulty instead "
        "(accuracy_by_class and the closed form's p read those); give every tier's "
        "correct_<tier> labels in the trace to keep its classes"
    ]
    assert set(out.df["difficulty_class"].dropna()) <= {"easy", "hard", "hopeless"}


def test_a_traces_difficulty_column_replaces_its_classes_with_none_and_says_so():
    from tiersim.routing.config import WorkloadQualityConfig

    df = pd.DataFrame({**BASE, "difficulty": [0.1, 0.5, 0.9], "difficulty_class": "hard"})
    with pytest.warns(Note) as notes:
        prepare_workload(df, TIERS, WorkloadQualityConfig(), np.random.default_rng(0))
    texts = [str(n.message) for n in notes if "difficulty_class" in str(n.message)]
    assert texts == [
        "scenario: the trace's difficulty_class column is not used: without correct_<tier> "
        "labels, the trace's difficulty column gives every request's difficulty, read as "
        "continuous, with no class (accuracy_by_class and the closed form's p read those); "
        "give every tier's correct_<tier> labels in the trace to keep its classes"
    ]


def test_with_labels_the_traces_classes_are_kept_without_a_note():
    from tiersim.routing.config import WorkloadQualityConfig

    df = pd.DataFrame(
        {
            **BASE,
            "correct_w4a16": 1.0,
            "correct_bf16": 1.0,
            "difficulty_class": pd.Categorical(["odd", "odd", None]),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = prepare_workload(df, TIERS, WorkloadQualityConfig(), np.random.default_rng(0))
    assert out.df["difficulty_class"].astype(object).tolist()[:2] == ["odd", "odd"]


def labelled_trace(n: int = 400) -> pd.DataFrame:
    """The tiny scenario's window of the Azure code trace with both tiers' labels and a
    class a row (``odd`` among them, a name the generator never draws)."""
    raw = read_trace(bundled("traces", "azure2023_code.parquet")).table
    df = raw[(raw["arrival_s"] >= 240) & (raw["arrival_s"] < 360)].head(n).copy()
    df["arrival_s"] -= df["arrival_s"].iloc[0]
    rng = np.random.default_rng(7)
    cls = rng.choice(["easy", "hard", "odd"], len(df))
    df["difficulty_class"] = cls
    df["correct_w4a16"] = (rng.random(len(df)) < np.where(cls == "easy", 0.9, 0.3)).astype(float)
    df["correct_bf16"] = (rng.random(len(df)) < 0.8).astype(float)
    return df[
        [
            "request_id",
            "arrival_s",
            "input_tokens",
            "output_tokens",
            "difficulty_class",
            "correct_w4a16",
            "correct_bf16",
        ]
    ].reset_index(drop=True)


def run_on(trace_path, folder) -> dict:
    """tiny.yaml on ``trace_path`` (whole), its summary.json."""
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = yaml.safe_load(bundled("scenarios", "tiny.yaml").read_text())
    doc["trace"] = {"path": str(trace_path)}
    doc["tiers"][0]["cost_per_gpu_hour"] = 1.0  # the cheap tier, for the closed form's p
    path = folder / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    run_scenario(
        load_scenario(path), folder / "out", scenario_path=path, baselines=True, report=False
    )
    return json.loads((folder / "out" / "summary.json").read_text())


def test_csv_and_parquet_give_the_same_accuracy_by_class(tmp_path):
    df = labelled_trace()
    got = {}
    for suffix in (".csv", ".parquet"):
        folder = tmp_path / suffix[1:]
        folder.mkdir()
        write(df, folder / f"trace{suffix}")
        got[suffix] = run_on(folder / f"trace{suffix}", folder)
    csv, parquet = got[".csv"], got[".parquet"]
    assert list(csv["accuracy_by_class"]) == ["easy", "hard", "odd"]
    assert parquet["accuracy_by_class"] == csv["accuracy_by_class"]
    assert "params" in csv["analytic"], csv["analytic"]
    assert parquet["analytic"]["params"]["p"] == csv["analytic"]["params"]["p"]
    share = float((df["difficulty_class"] != "hard").mean())
    assert csv["analytic"]["params"]["p"] == pytest.approx(share)
