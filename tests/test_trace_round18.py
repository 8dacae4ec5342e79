"""Round 18: trace files read silently wrong or refused for the wrong reason (times beyond what
a decimal holds exactly, line ends of one carriage return, undecodable bytes without their line,
microsecond timestamps read as milliseconds), and their fixes."""

from __future__ import annotations

import json

import pytest

from tiersim.errors import TraceError
from tiersim.trace import read_trace


def _mooncake(path, times):
    """A Mooncake JSON-lines trace of one small request at each of ``times``."""
    path.write_text("".join(json.dumps({"timestamp": t, "input_length": 5, "output_length": 2})
                            + "\n" for t in times))
    return path


def test_a_time_read_as_a_decimal_beyond_2_53_is_refused_not_rounded(tmp_path):
    # Mooncake milliseconds beyond 2**63 are decimals to the JSON reader: 2**63 + 0, 500 and
    # 1000 ms replayed 0, 0 and 2.048 s apart without a word (round 52: each timestamp is
    # quoted as the file writes it, not as Python writes the float it reads as)
    path = _mooncake(tmp_path / "m.jsonl", [2**63 + t for t in (0, 500, 1000)])
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value) == (
        f"{path}: row 1, column 'timestamp': timestamp 9223372036854775808 is at or beyond "
        "2**53 milliseconds, where a number read as a decimal is not exact (decimals there are "
        "2,048 milliseconds apart); subtract the first timestamp from every row (file line 1)")
    # BurstGPT seconds written as decimals: 2**60 + 0.5, 500.5 ... read 512 s apart
    csv = tmp_path / "b.csv"
    csv.write_text("Timestamp,Request tokens,Response tokens\n" + "".join(
        f"{2**60 + t}.5,10,5\n" for t in (0, 500, 1000)))
    with pytest.raises(TraceError, match=r"row 1, column 'Timestamp': timestamp "
                       r"1152921504606846976\.5 is at or beyond 2\*\*53 seconds"):
        read_trace(csv)
    # whole numbers below 2**63 are read exactly, as integers
    exact = read_trace(_mooncake(tmp_path / "i.jsonl", [2**62 + t for t in (0, 500, 1000)]))
    assert exact.table["arrival_s"].tolist() == [0.0, 0.5, 1.0]


def test_a_file_whose_lines_end_in_a_carriage_return_alone_is_read(tmp_path, monkeypatch):
    # the parsers end a line at a lone \r (old Mac files); the header checks read up to the
    # first \n, so a CSV of 400 such rows "had 1,202 columns or more" and a JSON-lines file of
    # more than 8 MB "had a first line longer than 8,000,000 bytes"
    from tiersim.trace import filecheck

    csv = tmp_path / "cr.csv"
    csv.write_bytes(b"arrival_s,input_tokens,output_tokens\r" + b"".join(
        b"%d,10,5\r" % i for i in range(400)))
    assert len(read_trace(csv).table) == 400
    monkeypatch.setattr(filecheck, "MAX_JSONL_LINE_BYTES", 1_000)  # 16 MiB, made small
    lines = tmp_path / "cr.jsonl"
    lines.write_bytes(b"".join(b'{"timestamp": %d, "input_length": 5, "output_length": 2}\r'
                               % (100 * i) for i in range(100)))
    assert len(read_trace(lines).table) == 100
    # a header longer than the limit is still refused, whatever ends it
    long = tmp_path / "long.jsonl"
    long.write_bytes(b'{"timestamp": 1, "x": "' + b"y" * 2_000 + b'"}\r')
    with pytest.raises(TraceError, match="row 1: longer than 1,000 bytes"):
        read_trace(long)


def test_mooncake_microseconds_read_as_milliseconds_are_a_note(tmp_path):
    # 30 minutes at one request a second, logged in microseconds: read as milliseconds they
    # replayed over 21 days, billed, without the note seconds read as milliseconds get
    path = _mooncake(tmp_path / "us.jsonl", [1_000_000 * i for i in range(1_800)])
    assert read_trace(path).origin.notes == (
        "timestamp is read in milliseconds, but the arrivals span 20.8 days with a median gap "
        "of 1,000 s between consecutive ones: if they are microseconds, every arrival comes "
        "1000x too late; set trace.time_scale: 1000 (tiersim trace inspect: --time-scale 1000) "
        "or write them in milliseconds",)
    # Mooncake's own milliseconds (a request every 175 ms) stay without a note
    assert read_trace(_mooncake(tmp_path / "ms.jsonl", [175 * i for i in range(1_800)])
                      ).origin.notes == ()


def test_a_csv_that_is_not_utf8_names_its_first_undecodable_line(tmp_path):
    # a Latin-1 'café' in row 31 was "not a text CSV file (cannot decode it as UTF-8)", with
    # no place to look, where a JSON-lines file names its line
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"arrival_s,input_tokens,output_tokens,prompt\n" + b"".join(
        b"%d,10,5,caf%s\n" % (i, b"\xe9" if i == 30 else b"e") for i in range(50)))
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value) == (f"{path}: not a text CSV file (cannot decode it as UTF-8 at file "
                              "line 32); save the trace as UTF-8")
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))  # a lone \r ends each line
    with pytest.raises(TraceError, match=r"UTF-8 at file line 32\); save"):
        read_trace(path)


@pytest.mark.parametrize("encoding, name", [("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"),
                                            ("utf-32", "UTF-32"), ("utf-32-le", "UTF-32")])
def test_wide_text_is_named_by_its_encoding(tmp_path, encoding, name):
    # UTF-32 with its byte-order mark was called UTF-16, and UTF-16 without one "binary
    # content that is not Parquet ... decompress it first"
    path = tmp_path / "wide.csv"
    path.write_bytes("arrival_s,input_tokens,output_tokens\n0,10,5\n".encode(encoding))
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value) == f"{path}: {name} text; save the trace as UTF-8 (CSV or JSON lines)"


@pytest.mark.parametrize("mark, words", [(";", "semicolons"), ("\t", "tabs")])
def test_a_csv_separated_otherwise_than_by_commas_says_so(tmp_path, mark, words):
    # a trace saved with ';' (a European spreadsheet) or tabs read as one column: "none of its
    # 1 column name(s) is a trace column", with no word on why
    path = tmp_path / "t.csv"
    path.write_text(mark.join(("TIMESTAMP", "ContextTokens", "GeneratedTokens")) + "\n" +
                    mark.join(("2023-11-16 18:17:03", "10", "5")) + "\n")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value).startswith(
        f"{path}: not a trace: none of its 1 column name(s) is a trace column (its header is "
        f"one column holding {words}: a trace CSV is separated by commas; save it with "
        "commas); expected azure (TIMESTAMP, ContextTokens, GeneratedTokens);")


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"])
def test_a_json_line_nested_too_deep_is_named_whatever_its_line_ends(tmp_path, end):
    # the depth check counted only \n: a file of lone \r line ends was one line to it, so the
    # error named line 1 where the UTF-8 check names the real line
    lines = [b'{"timestamp": %d, "input_length": 5, "output_length": 2}' % i for i in range(5)]
    lines[3] = lines[3][:-1] + b', "x": ' + b"[" * 40 + b"]" * 40 + b"}"
    path = tmp_path / "deep.jsonl"
    path.write_bytes(end.join(lines) + end)
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value) == f"{path}: line 4 is nested more than 32 levels deep; not a trace"


def test_lone_carriage_returns_cut_the_checks_chunks(tmp_path, monkeypatch):
    # the checks' chunks were cut at \n only: a file of lone \r line ends was held whole (a
    # 127 MB file took 1.6 GB in the checks), and a \r\n is never split between two chunks
    from tiersim.trace import filecheck

    monkeypatch.setattr(filecheck, "CHUNK_BYTES", 64)
    path = tmp_path / "cr.jsonl"
    path.write_bytes(b"".join(b'{"timestamp": %d, "input_length": 5}\r' % i for i in range(50)))
    chunks = list(filecheck.line_chunks(path))
    assert len(chunks) > 10 and max(map(len, chunks)) < 200
    assert b"".join(chunks) == path.read_bytes()
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(b"".join(b'{"t": %d, "input": 5}\r\n' % i for i in range(50)))
    assert all(not c.endswith(b"\r") for c in filecheck.line_chunks(crlf))


def test_fractional_milliseconds_a_minute_apart_get_one_unit_note(tmp_path):
    # both 'set time_scale: 0.001' (a fraction of a millisecond) and 'set time_scale: 1000'
    # (minutes apart) were said of one file
    import warnings

    from tiersim.trace.loader import read_trace

    path = tmp_path / "m.jsonl"
    path.write_text("".join(
        f'{{"timestamp": {i * 500000.5}, "input_length": 100, "output_length": 10}}\n'
        for i in range(400)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read_trace(path)
    scales = [w for w in caught if "time_scale" in str(w.message)]
    assert len(scales) == 1 and "time_scale: 1000 " in str(scales[0].message)


def test_a_unit_note_followed_is_not_said_again(tmp_path):
    # with trace.time_scale: 1000 set as the note advised, it still said to set it
    import warnings

    from tiersim.trace.loader import read_trace

    path = tmp_path / "us.jsonl"
    path.write_text("".join(
        f'{{"timestamp": {i * 1_000_000}, "input_length": 100, "output_length": 10}}\n'
        for i in range(400)))

    def scale_notes(time_scale: float) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            read_trace(path, time_scale=time_scale)
        return [str(w.message) for w in caught if "time_scale" in str(w.message)]

    assert len(scale_notes(1.0)) == 1 and len(scale_notes(2.0)) == 1
    assert scale_notes(1000.0) == []
