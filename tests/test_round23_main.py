"""Round 23, found while reviewing: command-line behaviour a user could not see before."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tiersim" / "scenarios" / "tiny.yaml"
NOTE = "note: --report writes report.html only with --out DIR; this run writes no files"


def test_report_asked_for_without_out_is_noted(tmp_path, capsys, monkeypatch):
    """``tiersim run --report`` without ``--out`` wrote nothing and said nothing, though the
    flag asks for a file: one note says why none is written."""
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "run", TINY, "--report")
    assert code == 0
    assert NOTE in err.splitlines()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flags", [[], ["--no-report"]])
def test_no_report_note_where_none_was_asked_for(tmp_path, capsys, monkeypatch, flags):
    """The default (and ``--no-report``) without ``--out`` stays quiet: nothing was asked
    that the run does not do."""
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, "run", TINY, *flags)
    assert code == 0
    assert "--report" not in err


# ------------------------------------------------------------------ the sweep table, in pieces

import json  # noqa: E402

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SCALARS = st.one_of(st.none(), st.integers(-5, 5), st.floats(allow_nan=True, width=32),
                    st.booleans(), st.sampled_from(["a", "b"]))


def _whole_table(rows: list[dict]) -> pd.DataFrame:
    """The table as one pandas frame of every row makes it, through Arrow (how ``collect``
    built it before it wrote in pieces): mixed columns as text, NaN and gaps as null."""
    frame = pd.DataFrame(rows)
    for column in frame.columns:
        if frame[column].dtype != object:
            continue
        kinds = {type(v) for v in frame[column] if v is not None and v == v}
        if len(kinds) > 1 and not kinds <= {int, float}:
            frame[column] = frame[column].map(lambda v: None if v is None or v != v else str(v))
    return pa.Table.from_pandas(frame, preserve_index=False).to_pandas()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["x", "y", "z"]), SCALARS, max_size=3),
                min_size=1, max_size=9))
def test_the_table_written_in_pieces_is_the_whole_table(tmp_path_factory, summaries):
    """``sweep.parquet`` is written a few rows at a time from one schema found first: it
    holds what one frame of every row held, column by column and type by type."""
    import tiersim.sweep.store as store

    out = tmp_path_factory.mktemp("t")
    records = {f"p{i}": {"point_id": f"p{i}", "index": i, "status": "ok", "error": None,
                         "wall_s": 0.0, "values": {}, "summary": s}
               for i, s in enumerate(summaries)}
    chunk, store.TABLE_CHUNK = store.TABLE_CHUNK, 2
    try:
        written = store.collect(out, [], list(records), records)
    finally:
        store.TABLE_CHUNK = chunk
    whole = _whole_table([store.record_row(r, []) for r in records.values()])
    assert written.columns.tolist() == whole.columns.tolist()
    for column in whole.columns:  # a column of no value is null either way, of any dtype
        if whole[column].isna().all():
            assert written[column].isna().all(), column
        else:
            pd.testing.assert_series_equal(written[column], whole[column], check_dtype=True)
    assert pq.ParquetFile(out / "sweep.parquet").metadata.num_row_groups == (len(records) + 1) // 2


def test_a_sweep_keeps_no_summary_beside_its_bookkeeping(tmp_path, monkeypatch):
    """A sweep read every stored record whole (summaries, nine tenths of each) at its start
    and again at its end, and built its table from all of them at once: a resumed sweep's
    memory grew with its points' summaries. It now holds records without summaries, and the
    table reads each summary again from its point's file as it writes that row. (A sweep of
    at most one piece's points keeps them: its table is written from them at once.)"""
    import tiersim.sweep.run as sweep_run
    import tiersim.sweep.store as store
    from tiersim.sweep.store import read_bookkeeping
    from tiersim.sweep.testing import synthetic_runner

    monkeypatch.setattr(store, "TABLE_CHUNK", 2)  # a sweep of more points than one piece
    held: list[dict] = []

    def tracked(out, skipped=None):  # round 54: the files a resume does not keep, noted
        records = read_bookkeeping(out, skipped)
        held.append(records)
        return records

    monkeypatch.setattr(sweep_run, "read_bookkeeping", tracked)
    doc = {"name": "s", "sweep": {"seed": [1, 2, 3]}}
    frame = sweep_run.run_sweep(doc, tmp_path / "o", workers=1, runner=synthetic_runner,
                                validator=None, progress=False, report=False, source="s.yaml")
    assert held[-1] and all("summary" not in r for r in held[-1].values())
    stored = json.loads(next((tmp_path / "o" / "points").glob("*.json")).read_text())
    assert frame["accuracy"].tolist() == [stored["summary"]["accuracy"]] * 3
    assert frame["seed"].tolist() == [1, 2, 3]


# ------------------------------------------------------------------ shares summing to one


@pytest.mark.parametrize(("last", "ok"), [(0.099999, True), (0.100001, True), (0.10001, False)])
def test_a_step_mix_sums_to_one_within_the_same_slack_on_both_sides(last, ok):
    """A session generator's ``step_mix`` took 1.000001 and refused 0.999999 (the decimal is
    a double just past 1e-6 below 1): it now holds the rule router fractions hold."""
    from pydantic import ValidationError

    from tiersim.workload.sessions import SessionGenerator

    mix = {"tool_call": 0.45, "code": 0.30, "verify": 0.15, "recovery": last}
    if ok:
        assert SessionGenerator(step_mix=mix).step_mix == mix
    else:
        with pytest.raises(ValidationError, match="step_mix shares must be >= 0 and sum to 1"):
            SessionGenerator(step_mix=mix)


# ------------------------------------------------------------------ benchmarks without the extra


@pytest.mark.parametrize("flag", ["--weights", "--unseen", "--refresh-aic"])
def test_decode_table_says_which_extra_its_flag_needs(monkeypatch, capsys, flag):
    """``decode_table.py --weights`` without aiconfigurator-core (README's command, run as a
    new user would) was a ModuleNotFoundError traceback: one line names the extra."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import decode_table

    monkeypatch.setattr(decode_table.fs, "aic_installed", lambda: False)
    assert decode_table.main([flag]) == 1
    assert capsys.readouterr().err == (
        f"decode_table.py: {flag} needs aiconfigurator-core, which is not installed; "
        "pip install -e '.[aic]'\n")
