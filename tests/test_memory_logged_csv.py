"""Memory of a logged CSV trace (BurstGPT's 5.3 million rows): the columns no converter reads
are read as categories, and the model-mix note counts codes, not a string a row; the table,
the notes and the errors stay those of reading every column as it is."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest

from tiersim.errors import TraceError
from tiersim.trace import formats, read_trace
from tiersim.trace.formats import FORMATS, columns_used
from tiersim.trace.source import column_names, read_raw

HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,notes,prompt_hash"
ROWS = ["1.0,GPT-4,10,0,10,API log,x,7",  # failed: dropped, its model is no share
        "2.0,chatgpt,20,5,25,API log,y,8",
        "3.0, ChatGPT ,30,6,36,Conversation log,z,9",
        "4.0,GPT-4,40,7,47,API log,,10",
        "5.0,,50,8,58,API log,w,11",
        "6.0,gpt-4,60,9,69,API log,v,12"]


def burstgpt(tmp_path, rows=ROWS):
    """A BurstGPT CSV with the log's own columns, one column no format reads and a
    canonical optional column."""
    path = tmp_path / "burst.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def test_columns_no_converter_reads_are_read_as_categories(tmp_path):
    raw, _ = read_raw(burstgpt(tmp_path), columns_used)
    kinds = {c: isinstance(raw[c].dtype, pd.CategoricalDtype) for c in raw.columns}
    assert kinds == {"Timestamp": False, "Model": False, "Request tokens": False,
                     "Response tokens": False, "Total tokens": True, "Log Type": True,
                     "notes": True, "prompt_hash": False}


def test_a_canonical_or_unknown_table_is_read_as_it_is():
    assert columns_used(["arrival_s", "input_tokens", "output_tokens", "Log Type"]) is None
    assert columns_used(["TIMESTAMP", "Timestamp"]) is None  # no format complete
    assert columns_used(["Timestamp", "Request tokens", "Response tokens"], "azure") is None


def test_the_table_and_notes_are_those_of_every_column_read_as_it_is(tmp_path):
    path = burstgpt(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = read_trace(path)
    table, notes = FORMATS["burstgpt"].convert(*read_raw(path))
    pd.testing.assert_frame_equal(loaded.table, table)
    assert list(loaded.origin.notes) == notes
    assert notes[0] == ("column(s) 'notes' not read (neither this format's nor a canonical "
                        "optional column such as prompt_hash or correct_<tier>)")
    assert notes[-1] == ("its Model column names 3 models (chatgpt 40%, GPT-4 40%, (blank) "
                         "20%); their requests are served as one stream by the scenario's "
                         "model (filter the rows to study one)")


def test_a_row_with_an_extra_field_is_still_refused(tmp_path):
    path = burstgpt(tmp_path, [ROWS[0], ROWS[1] + ",extra", *ROWS[2:]])
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value) == (f"{path}: row 2: has 9 fields where the header has 8 (file line "
                              "3); fix the separators or quoting")


def test_column_names_of_a_csv_come_from_its_header(tmp_path):
    path = burstgpt(tmp_path, [ROWS[0], ROWS[1] + ",extra"])  # refused when read
    assert column_names(path) == HEADER.split(",")


def test_the_model_note_counts_codes_not_a_string_a_row():
    n = 200_000
    models = pd.Series(np.where(np.arange(n) % 3, " ChatGPT", "GPT-4")).astype("str")
    raw = pd.DataFrame({"Model": models})
    tracemalloc.start()
    try:
        note = formats._burstgpt_models(raw, np.ones(n, dtype=bool))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert note[0].startswith("its Model column names 2 models (ChatGPT 67%, GPT-4 33%)")
    assert peak / n < 64  # bytes a row; a stripped and a folded string a row took 128
