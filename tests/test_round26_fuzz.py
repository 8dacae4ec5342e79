"""Round 26 of hostile input, found by a generated-input fuzzer run from outside (mutated bundled
scenarios, traces in every format, results folders, resource limits): each a failure found that
way and fixed, with the exact line a user sees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_round19 import error_line, run_cli

import tiersim.fleet
import tiersim.trace.chunked

ROOT = Path(__file__).resolve().parents[1]


def _no_room(*_args, **_kwargs):
    """Raise what numpy raises when an array does not fit in the memory the process may use
    (``ulimit -v``): a 10^8-row Parquet trace of 1.9 MB under a 2 GiB limit did this."""
    raise _array_memory_error()


def _array_memory_error() -> MemoryError:
    """numpy's own MemoryError for a 10^8-element int64 array (its message, as a user saw it)."""
    from numpy._core._exceptions import _ArrayMemoryError

    return _ArrayMemoryError((100_000_000,), np.dtype("int64"))


def _trace(tmp_path):
    path = tmp_path / "big.parquet"
    pd.DataFrame({"request_id": [0, 1], "arrival_s": [0.0, 1.0], "input_tokens": [10, 10],
                  "output_tokens": [5, 5]}).to_parquet(path)
    return path


def test_a_trace_too_big_for_memory_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    """`tiersim trace inspect` of a 10^8-row Parquet trace (1.9 MB, constant columns) under
    `prlimit --as=2G` ended in numpy's MemoryError traceback; now one line naming the file,
    what did not fit and the fix."""
    path = _trace(tmp_path)
    monkeypatch.setattr(tiersim.trace.chunked, "read_canonical", _no_room)
    line = error_line(*run_cli(capsys, "trace", "inspect", path))
    assert line == (
        f"Error: {path}: reading this trace ran out of memory (Unable to allocate 763. MiB for "
        "an array with shape (100000000,) and data type int64); read it where the process may "
        "use more memory (ulimit -v, a container's limit), or cut it to the rows you need")


def test_a_run_whose_trace_does_not_fit_is_the_same_line(tmp_path, capsys, monkeypatch):
    """The same trace named by a scenario: the trace's line, as its other content errors are,
    and a new --out folder is left absent."""
    path = _trace(tmp_path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text((ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text().replace(
        "path: azure2023_code.parquet", "path: big.parquet").replace("window: [240, 360]", ""))
    monkeypatch.setattr(tiersim.trace.chunked, "read_canonical", _no_room)
    line = error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "out"))
    assert line.startswith(f"Error: {path}: reading this trace ran out of memory (Unable to "
                           "allocate 763. MiB"), line
    assert not (tmp_path / "out").exists()


def test_a_simulation_out_of_memory_is_one_line(tmp_path, capsys, monkeypatch):
    """Memory running out past the trace (the simulation of 10^7 requests, a sweep's grid) ended
    in a traceback too; now one line with the fix, and a new --out folder is left absent."""
    monkeypatch.setattr(tiersim.fleet, "simulate", _no_room)
    scenario = ROOT / "tiersim" / "scenarios" / "tiny.yaml"
    line = error_line(*run_cli(capsys, "run", scenario, "--out", tmp_path / "out",
                               "--no-baselines"))
    assert line == (
        "Error: out of memory (Unable to allocate 763. MiB for an array with shape (100000000,) "
        "and data type int64): this command needs more memory than the process may use; run "
        "it where it may use more (ulimit -v, a container's limit), or make the run smaller "
        "(a shorter trace.window, fewer replicas or sweep points)")
    assert not (tmp_path / "out").exists()


def _session_trace(tmp_path, ids):
    """A canonical trace of two sessions of two steps each, with request ids ``ids``."""
    path = tmp_path / "sessions.parquet"
    pd.DataFrame({"request_id": ids, "arrival_s": [0.0, 1.0, 2.0, 3.0],
                  "input_tokens": [100] * 4, "output_tokens": [10] * 4,
                  "session_id": [0, 1, 0, 1], "step": [0, 0, 1, 1]}).to_parquet(path)
    scenario = tmp_path / "s.yaml"
    scenario.write_text((ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text().replace(
        "path: azure2023_code.parquet", "path: sessions.parquet").replace(
        "window: [240, 360]", ""))
    return path, scenario


@pytest.mark.parametrize("first_id", [-1, -2])
def test_a_session_step_with_a_negative_request_id_is_refused(tmp_path, capsys, first_id):
    """The engine links a session's steps by their predecessor's request_id, -1 meaning none:
    a step after request -1 ended the run in a traceback ('ValueError: assignment destination
    is read-only', from sessions.links), and one after request -2 was replayed as a new task at
    its logged arrival, not after its predecessor. Now refused, naming the row."""
    path, scenario = _session_trace(tmp_path, [first_id, 0, 1, 2])
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (
        f"Error: {path}: row 1, column 'request_id': a session step's request_id must be >= 0 "
        f"(got {first_id}): the replay links a step to the one before it by its id, a negative "
        "id meaning none; number the requests from 0")


def test_session_links_of_an_empty_subset():
    """``sessions.links`` wrote into the array pandas hands out read-only when no step of the
    table lacked its predecessor (an empty subset, as a tier given no request is): 'ValueError:
    assignment destination is read-only'; now the links of no rows are none."""
    from tiersim.workload import sessions

    df = pd.DataFrame({"request_id": np.array([5, 6], dtype=np.int64),
                       sessions.FOLLOWS: np.array([-1, 5], dtype=np.int64), "tool_s": [0.0, 1.0]})
    follows, think = sessions.links(df.iloc[0:0])
    assert follows.tolist() == [] and think.tolist() == []
    assert sessions.links(df)[0].tolist() == [-1, 0]


def test_a_bare_memory_error_is_one_line_without_empty_brackets(tmp_path, capsys, monkeypatch):
    """Python's own MemoryError carries no text: 10^7 generated session steps under a 4 GiB
    limit peaked at 3.6 GB and ended in it (a traceback before); the line then has no '()'."""
    def no_room(*_args, **_kwargs):
        raise MemoryError

    monkeypatch.setattr(tiersim.fleet, "simulate", no_room)
    scenario = ROOT / "tiersim" / "scenarios" / "tiny.yaml"
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line.startswith("Error: out of memory: this command needs more memory"), line
