"""Issue 13, memory: the request table is computed from the run's arrays when read, never held
whole; its columns, its row slices, the statistics read from it and the Parquet file streamed
from it are those of the one-frame table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import REPO

from tiersim import metrics, outputs, runner, summary
from tiersim.fleet import build_fleet
from tiersim.scenario import load_scenario


@pytest.fixture(scope="module", params=["tiny", "agentic", "cascade"])
def served(request):
    """(scenario, fleet, prepared table, engine result, request table) of a bundled scenario."""
    path = REPO / "scenarios" / f"{request.param}.yaml"
    scenario = load_scenario(path)
    workload_rng, train_rng, router_rng = runner._rngs(scenario)
    fleet = build_fleet(scenario)
    infos = runner.tier_infos(scenario, fleet)
    df = runner.prepare(runner.load_scenario_trace(scenario, str(path)), infos, scenario,
                        workload_rng, str(path)).df
    _, result, requests = runner._serve(scenario, fleet, df, infos, (train_rng, router_rng),
                                        str(path))
    return scenario, fleet, df, result, requests


def test_columns_are_the_files_and_read_as_series(served):
    *_, df, result, requests = served
    frame = requests.frame()
    assert list(frame.columns) == requests.columns
    assert requests.columns[:len(summary.REQUEST_COLUMNS)] == summary.REQUEST_COLUMNS
    assert len(requests) == len(df) == len(frame)
    for name in requests.columns:
        pd.testing.assert_series_equal(requests[name], frame[name], check_exact=True)
    assert np.array_equal(frame["finish_s"].to_numpy(), result.finish_s, equal_nan=True)
    with pytest.raises(KeyError):
        requests["no_such_column"]


@pytest.mark.parametrize("step", [1, 7, 1000])
def test_row_slices_join_to_the_whole_table(served, step):
    requests = served[-1]
    parts = [requests.rows(lo, min(lo + step, len(requests)))
             for lo in range(0, len(requests), step)]
    joined = pd.concat(parts, ignore_index=True)
    pd.testing.assert_frame_equal(joined, requests.frame(), check_exact=True)


def test_statistics_read_from_columns_equal_those_of_the_frame(served):
    scenario, *_, requests = served
    slo = metrics.Slo(ttft_s=scenario.slo.ttft_p99_s, tpot_s=scenario.slo.tpot_p99_s)
    assert metrics.request_stats(requests, slo) == metrics.request_stats(requests.frame(), slo)


def test_tier_figures_equal_those_of_the_frame(served):
    scenario, fleet, *_ = served
    requests = served[-1]
    frame = requests.frame()
    index = {t.name: i for i, t in enumerate(scenario.tiers)}
    numeric = frame.assign(final_tier=frame["final_tier"].map(index))
    final = np.asarray(served[3].final_tier)
    ttft, tpot = frame["ttft_s"].to_numpy(), frame["tpot_s"].to_numpy()
    for i in range(len(fleet.tiers)):
        mine = numeric[numeric["final_tier"] == i]  # the tier's rows, read from the frame
        expected = metrics.TierStats(
            requests=len(mine), share=len(mine) / len(numeric) if len(numeric) else None,
            ttft_p99_s=metrics.percentile(mine["ttft_s"], 99),
            tpot_p99_s=metrics.percentile(mine["tpot_s"], 99))
        assert summary._tier_stats(final == i, ttft, tpot) == expected


def test_streamed_file_is_the_frames_file(served, tmp_path):
    requests = served[-1]
    outputs.write_parquet(tmp_path / "one.parquet", requests)
    requests.frame().to_parquet(tmp_path / "frame.parquet", index=False)
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "frame.parquet").read_bytes()
    rows = max(1, len(requests) // 3)
    outputs.write_parquet(tmp_path / "groups.parquet", requests, rows=rows)
    outputs.write_parquet(tmp_path / "frame_groups.parquet", requests.frame(), rows=rows)
    assert pq.ParquetFile(tmp_path / "groups.parquet").num_row_groups > 1
    assert ((tmp_path / "groups.parquet").read_bytes()
            == (tmp_path / "frame_groups.parquet").read_bytes())
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "groups.parquet"),
                                  requests.frame(), check_exact=True)


class _OnDemand:
    """A table built on demand (as :class:`tiersim.summary.RequestTable`): ``arrays`` and
    ``rows`` of a frame's columns, with NaN in a float and a text column."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame

    def __len__(self) -> int:
        return len(self.frame)

    def arrays(self, lo: int, hi: int) -> dict:
        return {name: column.to_numpy()[lo:hi] for name, column in self.frame.items()}

    def rows(self, lo: int, hi: int) -> pd.DataFrame:
        return pd.DataFrame(self.arrays(lo, hi))


def test_groups_written_from_arrays_keep_pandas_nulls(tmp_path):
    """Round 51 writes each row group of a table built on demand from its arrays, not a
    DataFrame: a NaN must still be written as the null ``Table.from_pandas`` makes of it (a
    dropped request's times, a missing text value), so the file is the frame's, byte for
    byte."""
    frame = pd.DataFrame({
        "request_id": np.arange(7, dtype=np.int64),
        "tier": np.array(["fp8", "bf16", None, "fp8", "bf16", "fp8", "bf16"], dtype=object),
        "finish_s": np.array([1.0, np.nan, 2.5, np.nan, 3.0, 4.0, np.nan]),
        "completed": np.array([True, False, True, False, True, True, False])})
    table = _OnDemand(frame)
    assert outputs._plain_schema(table) is not None  # the path under test
    outputs.write_parquet(tmp_path / "arrays.parquet", table, rows=3)
    outputs.write_parquet(tmp_path / "frame.parquet", table.rows(0, len(table)), rows=3)
    assert pq.ParquetFile(tmp_path / "arrays.parquet").num_row_groups == 3
    assert ((tmp_path / "arrays.parquet").read_bytes()
            == (tmp_path / "frame.parquet").read_bytes())
    assert pq.read_table(tmp_path / "arrays.parquet").column("finish_s").null_count == 3
