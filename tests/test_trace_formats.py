"""Each trace format parses into the canonical table; auto-detection; window and time scale."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import write_frame
from hypothesis import given
from hypothesis import strategies as st

from tiersim.errors import TraceError
from tiersim.trace import TraceWarning, load_lengths, load_trace, read_trace, write_canonical
from tiersim.trace.filecheck import Source
from tiersim.trace.loader import apply_time_scale, apply_window

AZURE_2023 = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:17:03.9799600,4808,10
2023-11-16 18:17:04.0319600,3180,8
2023-11-16 18:17:06.4799600,110,27
"""
AZURE_2024 = """TIMESTAMP,ContextTokens,GeneratedTokens
2024-05-10 00:00:00.009930+00:00,2162,5
2024-05-10 00:00:00.513930+00:00,17,1
2024-05-10 00:00:02.009930+00:00,938,330
"""
BURSTGPT = """Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,0,1087,Conversation log
118,GPT-4,417,276,693,API log
118,ChatGPT,1360,0,1360,Conversation log
"""
MOONCAKE = """{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [0, 1]}
{"timestamp": 30535, "input_length": 6472, "output_length": 26, "hash_ids": [0, 2]}
{"timestamp": 30535, "input_length": 100, "output_length": 3, "hash_ids": []}
"""
CANONICAL = """request_id,arrival_s,input_tokens,output_tokens,session_id,step,task_type,\
difficulty,correct_bf16,feat_len,prefix_hashes
7,0.0,1000,5,1,0,code,0.25,1,3.5,"[1, 2]"
8,0.5,1100,6,1,1,conv,0.75,0,4.0,"[1, 3]"
9,2.0,30,7,2,0,code,1.0,1,5.5,[]
"""



def load(path, **kw):
    """The table and the origin :func:`read_trace` gives."""
    loaded = read_trace(path, **kw)
    return loaded.table, loaded.origin

def write(tmp_path, name: str, text: str):
    """Write ``text`` to ``tmp_path/name`` and return the path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_core(df: pd.DataFrame) -> None:
    """The canonical core columns with their dtypes and invariants."""
    assert list(df.columns[:4]) == ["request_id", "arrival_s", "input_tokens", "output_tokens"]
    assert df["request_id"].dtype == np.int64
    assert df["arrival_s"].dtype == np.float64
    assert df["input_tokens"].dtype == np.int32 and df["output_tokens"].dtype == np.int32
    assert (np.diff(df["arrival_s"]) >= 0).all()
    assert (df["input_tokens"] > 0).all() and (df["output_tokens"] > 0).all()


def test_azure_2023(tmp_path):
    df, origin = load(write(tmp_path, "code.csv", AZURE_2023))
    assert_core(df)
    assert origin.format == "azure"
    np.testing.assert_allclose(df["arrival_s"], [0.0, 0.052, 2.5], atol=1e-9)
    assert df["input_tokens"].tolist() == [4808, 3180, 110]
    assert df["output_tokens"].tolist() == [10, 8, 27]
    assert df["request_id"].tolist() == [0, 1, 2]


def test_azure_2024_timezone_timestamps(tmp_path):
    df = load_trace(write(tmp_path, "code_1week.csv", AZURE_2024), format="azure")
    assert_core(df)
    np.testing.assert_allclose(df["arrival_s"], [0.0, 0.504, 2.0], atol=1e-9)
    assert df["output_tokens"].tolist() == [5, 1, 330]


def test_burstgpt_drops_failed_requests_loudly(tmp_path):
    path = write(tmp_path, "BurstGPT_1.csv", BURSTGPT)
    with pytest.warns(TraceWarning, match="dropped 2 of 4 rows with 0 response tokens"):
        df, origin = load(path)
    assert_core(df)
    assert origin.format == "burstgpt"
    assert df["request_id"].tolist() == [0, 2]  # ids are the source rows, gaps show the drops
    assert df["arrival_s"].tolist() == [0.0, 113.0]
    assert df["input_tokens"].tolist() == [472, 417]
    assert list(origin.notes) == [
        "dropped 2 of 4 rows with 0 response tokens (failed requests in BurstGPT; "
        "first at row 2)",
        "its Model column names 2 models (ChatGPT 50%, GPT-4 50%); their requests are served "
        "as one stream by the scenario's model (filter the rows to study one)"]


def test_burstgpt_without_failures_warns_nothing(tmp_path):
    text = "\n".join(line.replace("GPT-4", "ChatGPT") for line in BURSTGPT.splitlines()
                     if ",0," not in line) + "\n"  # one model: no note about a mix either
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df, origin = load(write(tmp_path, "b.csv", text))
    assert len(df) == 2 and origin.notes == ()


def test_mooncake_jsonl(tmp_path):
    df, origin = load(write(tmp_path, "trace.jsonl", MOONCAKE))
    assert_core(df)
    assert origin.format == "mooncake"
    np.testing.assert_allclose(df["arrival_s"], [0.0, 3.053, 3.053])
    assert [h.tolist() for h in df["prefix_hashes"]] == [[0, 1], [0, 2], []]
    assert df["prefix_hashes"].iloc[0].dtype == np.int64


def test_canonical_csv_with_optional_columns(tmp_path):
    df = load_trace(write(tmp_path, "mine.csv", CANONICAL))
    assert_core(df)
    assert df["request_id"].tolist() == [7, 8, 9]
    assert df["session_id"].dtype == np.int64 and df["step"].dtype == np.int32
    assert isinstance(df["task_type"].dtype, pd.CategoricalDtype)
    assert df["difficulty"].dtype == np.float32 and df["correct_bf16"].dtype == np.float32
    assert df["feat_len"].tolist() == [3.5, 4.0, 5.5]
    assert [h.tolist() for h in df["prefix_hashes"]] == [[1, 2], [1, 3], []]


def test_canonical_parquet_round_trip(tmp_path):
    df = load_trace(write(tmp_path, "mine.csv", CANONICAL))
    path = write_canonical(df, tmp_path / "mine.parquet", {"source": "test"})
    back, origin = load(path)
    assert origin.format == "canonical"
    pd.testing.assert_frame_equal(back.drop(columns="prefix_hashes"),
                                  df.drop(columns="prefix_hashes"))
    assert [h.tolist() for h in back["prefix_hashes"]] == [[1, 2], [1, 3], []]


@pytest.mark.parametrize("name,text,fmt", [
    ("a.csv", AZURE_2023, "azure"), ("b.csv", BURSTGPT, "burstgpt"),
    ("m.jsonl", MOONCAKE, "mooncake"), ("c.csv", CANONICAL, "canonical"),
])
def test_auto_detection_matches_named_format(tmp_path, name, text, fmt):
    path = write(tmp_path, name, text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        (auto, origin), named = load(path), load_trace(path, format=fmt)
    assert origin.format == fmt
    pd.testing.assert_frame_equal(auto.drop(columns="prefix_hashes", errors="ignore"),
                                  named.drop(columns="prefix_hashes", errors="ignore"))


def test_detection_ignores_file_extension(tmp_path):
    df, origin = load(write(tmp_path, "trace.txt", MOONCAKE))
    assert origin.format == "mooncake" and df.attrs == {}  # nothing travels in df.attrs


def test_window_is_half_open_and_rezeroed_at_its_start(tmp_path):
    df = load_trace(write(tmp_path, "code.csv", AZURE_2023), window=(0.05, 2.5))
    assert df["request_id"].tolist() == [1]
    np.testing.assert_allclose(df["arrival_s"], [0.002], atol=1e-9)


def test_window_open_end_and_time_scale(tmp_path):
    path = write(tmp_path, "code.csv", AZURE_2023)
    df = load_trace(path, window=(0.05, None), time_scale=2.0)
    assert df["request_id"].tolist() == [1, 2]
    np.testing.assert_allclose(df["arrival_s"], [0.001, 1.225], atol=1e-9)


def test_time_scale_divides_arrivals(tmp_path):
    path = write(tmp_path, "code.csv", AZURE_2023)
    base, fast = load_trace(path), load_trace(path, time_scale=4.0)
    np.testing.assert_allclose(fast["arrival_s"], base["arrival_s"] / 4.0)
    assert fast["input_tokens"].tolist() == base["input_tokens"].tolist()


def test_load_lengths_reads_length_only_files(tmp_path):
    text = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n74,918,992,0.08\n"
    df = load_lengths(write(tmp_path, "lengths.csv", text))
    assert df.to_dict("list") == {"input_tokens": [74], "output_tokens": [918]}
    assert df["input_tokens"].dtype == np.int32


def test_load_lengths_of_a_full_trace(tmp_path):
    df = load_lengths(write(tmp_path, "code.csv", AZURE_2023))
    assert df["input_tokens"].tolist() == [4808, 3180, 110]


SRC = Source("mem", None)


@given(st.lists(st.floats(0, 1e4), min_size=1, max_size=60),
       st.floats(0, 1e4), st.floats(0.001, 1e4), st.floats(0.1, 10))
def test_window_then_scale_keeps_exactly_the_window(times, start, length, scale):
    t = np.sort(np.asarray(times))
    table = pd.DataFrame({"request_id": np.arange(len(t)), "arrival_s": t})
    end = start + length
    inside = (t >= start) & (t < end)
    if not inside.any():
        with pytest.raises(TraceError, match="selects no requests"):
            apply_window(table, (start, end), SRC)
        return
    out = apply_time_scale(apply_window(table, (start, end), SRC), scale, SRC)
    assert out["request_id"].tolist() == np.flatnonzero(inside).tolist()
    np.testing.assert_allclose(out["arrival_s"], (t[inside] - start) / scale)
    assert (out["arrival_s"] >= 0).all()


def test_azure_parquet_with_datetime_column(tmp_path):
    raw = pd.DataFrame({"TIMESTAMP": pd.to_datetime(["2024-05-10 00:00:00",
                                                     "2024-05-10 00:00:01.5"],
                                                    format="ISO8601"),
                        "ContextTokens": [3, 4], "GeneratedTokens": [5, 6]})
    raw.to_parquet(tmp_path / "a.parquet")
    df, origin = load(tmp_path / "a.parquet")
    assert origin.format == "azure"
    assert df["arrival_s"].tolist() == [0.0, 1.5]


@pytest.mark.filterwarnings("ignore::tiersim.trace.TraceWarning")  # a late first arrival
@given(st.lists(st.tuples(st.floats(0, 1e6), st.integers(1, 2**31 - 1),
                          st.integers(1, 100_000)), min_size=1, max_size=40))
def test_canonical_csv_round_trip(tmp_path_factory, rows):
    rows = sorted(rows)
    df = pd.DataFrame(rows, columns=["arrival_s", "input_tokens", "output_tokens"])
    path = tmp_path_factory.mktemp("rt") / "t.csv"
    df.to_csv(path, index=False)
    back = load_trace(path)
    assert_core(back)
    assert back["arrival_s"].tolist() == df["arrival_s"].tolist()
    assert back["input_tokens"].tolist() == df["input_tokens"].tolist()
    assert back["output_tokens"].tolist() == df["output_tokens"].tolist()


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_a_trace_of_150_columns_is_read_without_fragmenting_the_table(tmp_path, kind):
    """Adding the optional columns one at a time gave pandas' PerformanceWarning ("DataFrame is
    highly fragmented"), there and at every column added to the table later."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [5, 6], "output_tokens": [2, 3],
                       **{f"feat_{k}": [0.5, 1.5] for k in range(150)}})
    path = write_frame(df, tmp_path / f"wide.{kind}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = load_trace(path)
        table["added"] = 1
    assert table.shape == (2, 155) and table["feat_149"].tolist() == [0.5, 1.5]


def test_logged_formats_keep_the_canonical_optional_columns(tmp_path):
    """Azure, BurstGPT and Mooncake readers dropped every extra column: a Mooncake
    prompt_hash was never a cache key, an Azure correct_bf16 never a label."""
    azure = tmp_path / "a.csv"
    azure.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,prompt_hash,correct_bf16,x\n"
                     "2023-11-16 18:15:00,100,10,7,1,a\n2023-11-16 18:15:01,100,10,8,0,b\n")
    loaded = read_trace(azure)
    assert loaded.table["prompt_hash"].tolist() == [7, 8]
    assert loaded.table["correct_bf16"].tolist() == [1.0, 0.0]
    assert loaded.origin.notes == ("column(s) 'x' not read (neither this format's nor a "
                                   "canonical optional column such as prompt_hash or "
                                   "correct_<tier>)",)
    mooncake = tmp_path / "m.jsonl"
    mooncake.write_text('{"timestamp": 0, "input_length": 600, "output_length": 5, '
                        '"hash_ids": [1, 2], "prompt_hash": 3}\n')
    assert load_trace(mooncake)["prompt_hash"].tolist() == [3]
    burst = tmp_path / "b.csv"
    burst.write_text("Timestamp,Request tokens,Response tokens,prompt_hash\n0,5,0,1\n1,5,5,2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        assert load_trace(burst)["prompt_hash"].tolist() == [2]


def test_a_logged_formats_optional_column_is_checked_as_a_canonical_ones(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,correct_bf16\n"
                    "2023-11-16 18:15:00,100,10,2\n")
    with pytest.raises(TraceError) as info:
        load_trace(path)
    assert str(info.value) == (f"{path}: row 1, column 'correct_bf16': correct_bf16 must be "
                               "between 0 and 1 (got 2); fix or remove the row (file line 2)")


def test_a_logged_formats_prefix_hashes_hold_one_id_per_block(tmp_path):
    """An Azure or BurstGPT trace's carried prefix_hashes skipped the block-count check a
    canonical one gets: 50 ids on a 1,183-token prompt read as 98% prefix reuse."""
    ids = "[" + ", ".join(map(str, range(50))) + "]"
    azure = tmp_path / "a.csv"
    azure.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,prefix_hashes\n"
                     f'2023-11-16 18:15:00,1183,10,"{ids}"\n')
    with pytest.raises(TraceError) as info:
        load_trace(azure)
    assert str(info.value) == (
        f"{azure}: row 1, column 'prefix_hashes': 50 prefix block ids for a 1,183-token prompt, "
        "which spans 3 block(s) of 512 tokens; tiersim takes one id per 512-token block, "
        "Mooncake's size (no setting changes it; ids of smaller blocks, such as Bailian's "
        "16-token ones, do not fit): remove the column prefix_hashes to replay without prefix "
        "caching, or give one id per 512 prompt tokens (file line 2)")
    burst = tmp_path / "b.csv"  # a failed row (dropped) is not held to it
    burst.write_text("Timestamp,Request tokens,Response tokens,prefix_hashes\n"
                     f'0,0,0,"{ids}"\n1,600,5,"[1, 2]"\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        assert [list(h) for h in load_trace(burst)["prefix_hashes"]] == [[1, 2]]


def test_write_canonical_refuses_a_path_that_is_not_parquet(tmp_path):
    """Parquet bytes written into x.csv would be read back as a binary file, not a CSV."""
    df = load_trace(write(tmp_path, "mine.csv", CANONICAL))
    with pytest.raises(TraceError) as err:
        write_canonical(df, tmp_path / "x.csv")
    assert str(err.value) == (f"{tmp_path / 'x.csv'}: write_canonical writes Parquet; name the "
                              "file .parquet (for CSV, write the table with df.to_csv)")
    assert not (tmp_path / "x.csv").exists()


def test_canonical_parquet_keeps_the_loaders_notes_once(tmp_path):
    """A canonical Parquet file read in chunks dropped every chunk's notes: its 'hash_ids'
    column was not read, and nothing said so."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0, 2.0], "input_tokens": [600, 600, 600],
                       "output_tokens": [5, 5, 5], "hash_ids": [[1, 2], [1, 3], [4]]})
    path = tmp_path / "h.parquet"
    df.to_parquet(path)
    from tiersim.trace import chunked
    chunked.CHUNK_ROWS, rows = 2, chunked.CHUNK_ROWS  # two chunks, one note
    try:
        with pytest.warns(TraceWarning):
            notes = read_trace(path).origin.notes
    finally:
        chunked.CHUNK_ROWS = rows
    assert notes == ("column 'hash_ids' is not read: a canonical trace's prompt block hashes "
                     "are 'prefix_hashes' (rename the column to model prefix caching with it)",)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_canonical_columns_nothing_reads_are_noted_with_the_name_meant(tmp_path, suffix):
    """can_typo.csv: a misspelt session_id and prefix hash column were read by nothing, and
    the notes were empty (Azure's unread columns were noted)."""
    df = pd.DataFrame({"arrival_s": [0.0, 1.0], "input_tokens": [100, 100],
                       "output_tokens": [10, 10], "prompt_hashes": [5, 5], "sesion_id": [1, 1],
                       "zone": ["a", "b"], "subject": ["x", "y"], "feat_x": [1.0, 2.0]})
    path = tmp_path / f"t.{suffix}"
    df.to_csv(path, index=False) if suffix == "csv" else df.to_parquet(path)
    with pytest.warns(TraceWarning):
        notes = read_trace(path).origin.notes
    assert notes == ("column(s) 'prompt_hashes' (prompt_hash or prefix_hashes?), 'sesion_id' "
                     "(session_id?), 'zone' not read (not a canonical column: carried in the "
                     "table, used by nothing)",)


def test_timestamps_sized_for_another_unit_are_noted(tmp_path):
    """Float seconds under Mooncake's names (Qwen's Bailian traces) read as milliseconds
    replayed 3,753.7 req/s for 3.75; a canonical arrival_s in milliseconds billed 40 days."""
    bailian = tmp_path / "b.jsonl"
    bailian.write_text("".join(f'{{"timestamp": {t}, "input_length": 5, "output_length": 2}}\n'
                               for t in (0.0, 0.25, 0.5, 1.0)))
    with pytest.warns(TraceWarning):
        notes = read_trace(bailian).origin.notes
    assert notes == (
        "timestamp is read in milliseconds (this format's unit), but 50.0% of them have a "
        "fraction of a millisecond; the median gap between consecutive ones is 0.25 ms: if "
        "they are seconds (as in Qwen's Bailian traces), every arrival comes 1000x too early; "
        "set trace.time_scale: 0.001 (tiersim trace inspect: --time-scale 0.001) or write them "
        "in milliseconds",)
    epochs = tmp_path / "e.jsonl"
    epochs.write_text("".join(f'{{"timestamp": {t}, "input_length": 5, "output_length": 2}}\n'
                              for t in (1717000000, 1717000002, 1717000003)))
    with pytest.warns(TraceWarning, match="the first, 1717000000, is sized as a Unix time in "
                      "seconds: if they are seconds"):
        read_trace(epochs)
    ms = tmp_path / "c.csv"
    ms.write_text("arrival_s,input_tokens,output_tokens\n0,5,2\n120000,5,2\n240000,5,2\n")
    with pytest.warns(TraceWarning) as caught:
        read_trace(ms)
    assert [str(w.message) for w in caught] == [
        f"{ms}: arrival_s is read in seconds, but the arrivals span 2.8 days with a median gap "
        "of 120,000 s between consecutive ones: if they are milliseconds, every arrival comes "
        "1000x too late; set trace.time_scale: 1000 (tiersim trace inspect: --time-scale 1000) "
        "or write them in seconds"]
    plain = tmp_path / "p.jsonl"  # Mooncake's own: whole milliseconds, gaps of 175 ms
    plain.write_text("".join(f'{{"timestamp": {t}, "input_length": 5, "output_length": 2}}\n'
                             for t in (0, 175, 350)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TraceWarning)
        read_trace(plain)
