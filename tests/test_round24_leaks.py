"""Round 24 of hostile input, resources over long use: what a process keeps between runs,
sweeps and calls (caches, files, descriptors) is bounded; each test counts, never times."""

from __future__ import annotations


def test_the_input_digest_cache_is_bounded(tmp_path, monkeypatch):
    """Each input file version a sweep point read was digested once and its digest kept for
    the life of the process: a service sweeping a fresh trace file each call, or a trace
    rewritten between sweeps, kept one entry per file version ever read. At most
    :data:`tiersim.input_files.DIGEST_CACHE_SIZE` are kept now, one per file."""
    from tiersim import input_files as inputs

    monkeypatch.setattr(inputs, "_DIGESTS", type(inputs._DIGESTS)())
    monkeypatch.setattr(inputs, "DIGEST_CACHE_SIZE", 5)
    files = []
    for n in range(8):
        files.append(tmp_path / f"t{n}.csv")
        files[-1].write_text(f"file {n}\n")
        inputs.file_digest(files[-1])
    assert len(inputs._DIGESTS) == 5
    calls = []
    monkeypatch.setattr(inputs, "_digest", lambda *a: calls.append(a) or "x")
    inputs.file_digest(files[-1])
    assert not calls  # a file still held is not hashed again
    for n in range(3):  # one file rewritten: only its latest version is kept
        files[-1].write_text("changed" * (n + 1))
        inputs.file_digest(files[-1])
    held = [key[0] for key in inputs._DIGESTS]
    assert len(held) == 5 and len(set(held)) == 5


def test_a_command_keeps_no_captured_output_stream(tmp_path):
    """A program calling ``tiersim.cli.main`` with its output captured (``redirect_stdout``
    to a StringIO, as a service or a notebook does) kept every captured stream, with all the
    text the command wrote: click's echo caches a wrapper per stream in a weak map whose value
    is the stream itself, so no entry was ever let go (three objects and the whole output per
    call). The command's lines are written to the stream directly now, so it is let go."""
    import contextlib
    import gc
    import io
    import weakref

    from tiersim.cli import main

    gone = []
    for argv in (["report", str(tmp_path / "missing")], ["analytic", "--help-not-an-option"]):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(argv) != 0
        assert err.getvalue().startswith("Error: ")
        gone += [weakref.ref(out), weakref.ref(err)]
        del out, err
    gc.collect()
    assert [ref() is None for ref in gone] == [True] * 4
