"""Round 27, hostile input: hand-edited result folders and prices that the earlier fuzzing
rounds did not reach. Each test names what the command did before its fix."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import cheap_first_tiers, copy_folder, tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

from tiersim.cli import main
from tiersim.report.timeseries import grid_edges
from tiersim.results import saved_share


def _summary_edited(run, folder, **fields):
    """A copy of the run folder ``run`` at ``folder`` whose summary.json has ``fields`` set."""
    copy_folder(run, folder)
    path = folder / "summary.json"
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize("duration", [1e308, 9.3e18])
def test_a_hand_edited_huge_duration_gives_a_page_not_a_traceback(hand_edited_run, tmp_path,
                                                                   capsys, duration):
    """1e308 s over the 1 s load-series grid was an OverflowError traceback from the report's
    time buckets; 9.3e18 s wrapped round a 64-bit integer to a negative last edge."""
    folder = _summary_edited(hand_edited_run, tmp_path / "r", duration_s=duration)
    code, err = run_cli(capsys, "report", folder)
    assert "Traceback" not in err
    assert code == 0, err[-1000:]
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize(("interval", "end"), [(1.0, 9.3e18), (1.0, 1e300), (1e-320, 30.0)])
def test_time_buckets_beyond_a_countable_grid_are_equal_and_increasing(interval, end):
    edges = grid_edges(interval, end, 600)
    assert len(edges) == 601
    assert edges[0] == 0.0 and edges[-1] >= end
    assert np.all(np.diff(edges) > 0)


def test_time_buckets_of_a_run_stay_on_its_grid():
    """A run's own axis is untouched: whole intervals, the last edge past the end."""
    assert list(grid_edges(1.0, 2.5, 600)) == [0.0, 1.0, 2.0, 3.0]


def _call(capsys, *argv) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _near_free_bf16(tmp_path):
    """The tiny scenario over 30 s with bf16 priced 1e-320 USD per GPU-hour (a subnormal
    float): the uniform bf16 fleet costs about 1.5e-322 USD, so 1 - cost / it overflows."""
    doc = tiny_doc(trace={"path": "azure2023_code.parquet", "window": [240, 270]})
    doc["tiers"][1]["cost_per_gpu_hour"] = 1e-320
    return write_yaml(tmp_path / "s.yaml", doc)


def test_a_baseline_priced_near_zero_has_no_infinite_saving(tmp_path, capsys):
    """The console's "saved vs uniform bf16" row read "-inf %" (summary.json held null)."""
    code, out, err = _call(capsys, "run", _near_free_bf16(tmp_path))
    assert code == 0, err[-1000:]
    row = next(line for line in out.splitlines() if "saved vs uniform bf16" in line)
    assert "inf" not in row
    assert "USD more (the" in row  # the gap in USD: a free baseline has no share


def test_a_plan_priced_near_zero_says_so_not_infinitely_dearer(tmp_path, capsys):
    """A runner-up and the uniform w4a16 fleet read "inf% dearer than the plan"."""
    code, out, err = _call(capsys, "plan", _near_free_bf16(tmp_path), "--out", tmp_path / "p",
                           "--no-report")
    assert code == 0, err[-1000:]
    assert "inf%" not in out
    # since round 55 the size's brackets also name the GPU counts w4a16 was not sized at
    # (4 and 8: a split vLLM refuses; misc55)
    assert ("uniform w4a16 (1 x 1 GPU; not sized on 4 or 8 GPUs per replica: its W4A16 expert "
            "width 768 over 4 GPUs is 192 per GPU, not whole 128-wide quantisation groups: "
            "vLLM's Marlin MoE kernel refuses that split): meets every constraint; costs") in out
    assert "against the plan's 0" in out


@pytest.mark.parametrize(("cost", "baseline", "share"), [
    (1.0, 4.0, 0.75), (5.0, 4.0, -0.25), (1.0, 0.0, None), (1.0, None, None),
    (None, 1.0, None), (0.05, 1.5e-322, None)])
def test_saved_share(cost, baseline, share):
    assert saved_share(cost, baseline) == share


@pytest.mark.parametrize(("column", "rows"), [("replica", "all"), ("time_s", "first")])
def test_an_empty_replica_or_time_in_the_load_series_is_one_line(hand_edited_run, tmp_path,
                                                                  capsys, column, rows):
    """An all-empty replica column was a ValueError traceback (a zero-size maximum in the queue
    figure); an empty time was drawn as if the row were not there."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = copy_folder(hand_edited_run, tmp_path / "r")
    path = folder / "timeseries.parquet"
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values = [None] * len(values) if rows == "all" else [None, *values[1:]]
    table = table.set_column(table.column_names.index(column), column,
                             pa.array(values, table.schema.field(column).type))
    pq.write_table(table, path)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {path}: column {column!r}, row 1: empty, which tiersim never "
                    "writes; rerun the command that wrote it")


def test_results_the_folder_refuses_are_not_told_to_free_space(tmp_path, capsys, monkeypatch):
    """A file of the --out folder the user may not replace (EPERM) read "free space or choose
    another --out folder", the fix for a full disk."""
    import errno

    from tiersim import outputs

    def refused(folder, *args, **kwargs):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(outputs, "write_data_files", refused)
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(
        trace={"path": "azure2023_code.parquet", "window": [240, 270]},
        tiers=cheap_first_tiers()))  # no tier-order note above the error (round 53)
    out = tmp_path / "o"
    line = one_error_line(*run_cli(capsys, "run", scenario, "--out", out, "--no-baselines"))
    assert line == (f"Error: {out}: cannot write results (Operation not permitted); check the "
                    "folder's permissions or choose another --out folder")
