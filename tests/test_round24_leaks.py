"""Round 24 of hostile input, resources over long use: what a process keeps between runs,
sweeps and calls (caches, files, descriptors) is bounded; each test counts, never times."""

from __future__ import annotations


def test_the_input_digest_cache_is_bounded(tmp_path, monkeypatch):
    """Each input file version a sweep point read was digested once and its digest kept for
    the life of the process: a service sweeping a fresh trace file each call, or a trace
    rewritten between sweeps, kept one entry per file version ever read. At most
    :data:`tiersim.sweep.inputs.DIGEST_CACHE_SIZE` are kept now, one per file."""
    from tiersim.sweep import inputs

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
