"""Round 26 (seriescap): runs whose load series nobody writes keep none, with the same results;
generated session steps kept as columns, and sessions too large for memory refused up front."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from conftest import TINY, tiny_doc, write_yaml

from tiersim import fleet as fleet_mod
from tiersim import runner
from tiersim.outputs import write_parquet
from tiersim.results import dumps
from tiersim.scenario import scenario_from_dict
from tiersim.sweep.points import estimate_runner

CACHED_ROUTER = {"policy": "static_split", "fractions": [0.5, 0.5],
                 "response_cache": {"mode": "top_n", "size": 20, "lookup_s": 0.005,
                                    "popularity": {"distinct": 1000, "exponent": 1.0}}}
"""The tiny scenario's router with a response cache: its run without the cache is simulated too."""


@pytest.fixture
def series_asked(monkeypatch) -> list[bool]:
    """The ``series`` each engine run of the runner is asked for, in order."""
    asked: list[bool] = []
    real = fleet_mod.simulate

    def spy(*args, series: bool = True, **kwargs):
        asked.append(series)
        return real(*args, series=series, **kwargs)

    monkeypatch.setattr(fleet_mod, "simulate", spy)
    return asked


def test_runs_nobody_writes_a_series_of_keep_none(series_asked, tmp_path):
    """A run without an output folder (a sweep's point) and ``tiersim disagg``'s runs keep no
    load series (each engine run recorded one, ~4% of its time); a run written to a folder
    keeps it for timeseries.parquet, which is not empty."""
    scenario = scenario_from_dict(tiny_doc(), str(TINY))
    runner.run_scenario(scenario)
    runner.run_with_requests(scenario)
    assert series_asked == [False, False]
    runner.run_scenario(scenario, out_dir=tmp_path / "out")
    assert series_asked[2:] == [True]
    assert len(json.loads((tmp_path / "out" / "summary.json").read_text())["tiers"]) == 2
    assert (tmp_path / "out" / "timeseries.parquet").stat().st_size > 0
    assert len(pd.read_parquet(tmp_path / "out" / "timeseries.parquet")) > 0


def test_the_cache_comparison_keeps_no_series(series_asked, tmp_path):
    """With a response cache the run without it is simulated for its summary alone: no series,
    also when the run itself writes one."""
    doc = tiny_doc(router=CACHED_ROUTER)
    scenario = scenario_from_dict(doc, str(write_yaml(tmp_path / "s.yaml", doc)))
    run = runner.run_scenario(scenario, out_dir=tmp_path / "out")
    assert run.response_cache is not None
    assert series_asked == [True, False]


def _results(scenario, series: bool, folder):
    """summary.json's bytes and requests.parquet's bytes of ``scenario``'s run, and its engine
    result's load series."""
    run, requests, result, _ = runner._noted(scenario, scenario.source, False, series=series)
    folder.mkdir()
    write_parquet(folder / "requests.parquet", requests)
    return run.dumps(), (folder / "requests.parquet").read_bytes(), result.samples


def test_results_byte_identical_with_and_without_series(tmp_path):
    """summary.json and requests.parquet are the same bytes whether the engine keeps the load
    series or not (the response cache's comparison run included); only the series differs."""
    doc = tiny_doc(router=CACHED_ROUTER)
    scenario = scenario_from_dict(doc, str(write_yaml(tmp_path / "s.yaml", doc)))
    kept = _results(scenario, True, tmp_path / "kept")
    none = _results(scenario, False, tmp_path / "none")
    assert json.loads(kept[0])["response_cache"] is not None
    assert kept[0] == none[0]
    assert kept[1] == none[1]
    assert any(rows for replicas in kept[2].values() for rows in replicas)
    assert not any(rows for replicas in none[2].values() for rows in replicas)


def test_sweep_point_summary_is_the_written_runs(tmp_path):
    """A sweep point's summary (the row of sweep.parquet; its run keeps no series) is the
    summary.json of the same scenario run into a folder (which keeps one)."""
    point = estimate_runner(tiny_doc(), str(TINY))
    runner.run_scenario(scenario_from_dict(tiny_doc(), str(TINY)), out_dir=tmp_path / "out")
    assert dumps(point) == (tmp_path / "out" / "summary.json").read_text()


# --------------------------------------------------------------------- generated steps' memory

ONE_TOKEN = {k: {"input": 1, "output": 1}
             for k in ("planning", "tool_call", "code", "verify", "recovery", "final")}
"""Step tokens of the one-token steps the memory figures are measured with."""


def test_generated_steps_are_kept_as_columns_not_a_dict_each():
    """The generator kept a dict per step until the table was made: 10^6 one-token steps took
    570 MB at their peak; as columns of machine numbers about 180 MB (tracemalloc here: 50,756
    steps, 519 bytes a step before, 165 now), the same table."""
    import tracemalloc

    import numpy as np

    from tiersim.workload import sessions

    cfg = sessions.SessionGenerator(tasks=500, middle_steps_mean=100, max_steps=10_000,
                                    token_sigma=0, tokens=ONE_TOKEN, task_rate_rps=10)
    tracemalloc.start()
    try:
        table = sessions.generate(cfg, np.random.default_rng(0), "s.yaml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(table) > 45_000
    assert peak / len(table) < 250
    assert table["step_type"].iloc[0] == "planning" and table["step_type"].iloc[-1] == "final"
    assert (table["step"] == table["parent"] + 1).all()


def _steps_scenario(tmp_path, tasks: int, middle: int):
    """A scenario file generating ``tasks`` tasks of about ``middle + 2`` one-token steps."""
    doc = tiny_doc(workload={"sessions": {"source": "generate", "generate": {
        "tasks": tasks, "task_rate_rps": 10, "middle_steps_mean": middle, "max_steps": 10_000,
        "token_sigma": 0, "tokens": ONE_TOKEN, "tool_s_median": 0.1}}})
    return write_yaml(tmp_path / "steps.yaml", doc)


def test_sessions_too_large_for_memory_are_refused_before_any_step(tmp_path):
    """10^7 one-token steps (the step cap) under a 4 GB address-space limit were generated and
    run until memory ran out (above 3.6 GB, docs/security.md); now the run is refused in
    seconds, before any step is made, naming the key, the estimate and the fix."""
    import resource
    import subprocess
    import sys
    import time

    path = _steps_scenario(tmp_path, 10_000, 1_000)

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))

    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tiersim", "run", str(path), "--no-baselines"],
                          capture_output=True, text=True, preexec_fn=limited, timeout=120)
    took = time.monotonic() - began
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"Error: {path}: line ")
    assert (": workload.sessions.generate: makes about 10,020,000 steps on average (10,000 "
            "tasks of about 1,002.0 steps), which need at least about 6.5 GB at about 650 bytes "
            "a step, more than the ") in lines[0]
    assert lines[0].endswith("GB this process may still use (its address-space limit, ulimit "
                             "-v); lower tasks, middle_steps_mean or max_steps, or run where "
                             "more memory is allowed")
    assert took < 60


def test_the_memory_check_counts_expected_steps(monkeypatch, tmp_path):
    """The check reads the steps a scenario makes on average (tasks x (planning + final +
    min(1 + Poisson(mean - 1), max_steps - 2))) against the room left; a scenario within it
    runs, one above it is refused."""
    from tiersim.errors import ScenarioError
    from tiersim.workload import sessions

    cfg = sessions.SessionGenerator(tasks=100, middle_steps_mean=4, max_steps=5)
    # middle steps: min(1 + Poisson(3), 3) = 3 - P(Y=1)*2 - P(Y=2)*1 = 3 - 2e^-3 - 3e^-3
    assert sessions.expected_steps(cfg) == pytest.approx(100 * (5 - 5 * 2.718281828 ** -3))
    need = sessions.expected_steps(cfg) * sessions.GENERATED_STEP_BYTES
    monkeypatch.setattr(sessions, "memory_room", lambda: (need + 1, "a test's limit"))
    sessions.check_memory(cfg, "s.yaml")
    monkeypatch.setattr(sessions, "memory_room", lambda: (need - 1, "a test's limit"))
    with pytest.raises(ScenarioError, match=r"^s.yaml: workload.sessions.generate: makes about "
                       r"475 steps on average \(100 tasks of about 4.8 steps\)"):
        sessions.check_memory(cfg, "s.yaml")
