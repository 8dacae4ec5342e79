"""benchmarks/fidelity_silicon.py --rows-file on hostile measured rows (round 23)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402
from test_fidelity_rows_file import make_row, run_main, write_rows  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_files():
    yield
    fs.DATA_FILES.update(rows=None, aic=None)


@pytest.mark.parametrize("over, reason", [
    ({"isl": "inf"}, "isl inf is not a whole number"),
    ({"osl": "-inf"}, "osl -inf is not a whole number"),
    ({"batch_size": "inf"}, "batch_size inf is not a whole number"),
    ({"tp_size": "inf"}, "tp_size inf is not a whole number"),
    ({"moe_ep_size": "inf"}, "moe_ep_size inf is not a whole number"),
    ({"pp_size": "inf"}, "pp_size inf is not a whole number"),
    ({"isl": "1e30"}, "isl 1e+30 is out of range (a count of at most 2147483647)"),
])
def test_a_count_that_is_no_finite_whole_number_is_listed_not_a_crash(tmp_path, capsys, over,
                                                                       reason):
    path = write_rows(tmp_path / "s.csv", make_row(id="good"), make_row(id="bad", **{
        "silicon_tpot_ms": 6.0, **over}))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    assert f"  vllm   Llama-3.1-8B       1 rows: {reason}\n" in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")


@pytest.mark.parametrize("over", [{"tp_size": ""}, {"tp_size": "inf"}, {"mode": "agg"}])
def test_an_id_naming_a_layout_beside_an_empty_tp_size_is_listed_not_a_crash(tmp_path, capsys,
                                                                              over):
    path = write_rows(tmp_path / "s.csv", make_row(id="good"), make_row(
        id="x_tp1_epnone_1", **{"silicon_tpot_ms": 6.0, **over}))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    n = 2 if over == {"mode": "agg"} else 1
    assert out.rstrip().endswith(f"(n={n}); aiconfigurator n/a, n/a")
    if n == 1:
        assert "  vllm   Llama-3.1-8B       1 rows: tp_size " in out


@pytest.mark.parametrize("over", [
    {"batch_size": 100_000_000, "silicon_data_source": "x"},
    {"silicon_data_source": "x; silicon_concurrency=100000000"},
])
def test_more_clients_than_the_replay_runs_is_listed_not_gigabytes(tmp_path, capsys, over):
    path = write_rows(tmp_path / "s.csv", make_row(id="good"), make_row(id="bad", **{
        "silicon_tpot_ms": 6.0, **over}))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    assert ("  vllm   Llama-3.1-8B       1 rows: 100,000,000 clients (at most 131,072 are "
            "replayed)\n") in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")


def test_a_request_longer_than_the_models_context_is_listed_not_replayed(tmp_path, capsys):
    # Llama-3.1-8B serves 131,072 tokens: vLLM refuses a 200,000-token prompt
    path = write_rows(tmp_path / "s.csv", make_row(id="good"), make_row(
        id="bad", isl=200_000, osl=100, silicon_tpot_ms=6.0))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    assert ("  vllm   Llama-3.1-8B       1 rows: a request of 200000+100 tokens is longer than "
            "Llama-3.1-8B's context (131,072 tokens), which the engine refuses\n") in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")


def shipped_training_row() -> dict:
    """One of the shipped H200 rows the vLLM fit trained on (Llama-3.1-70B), as written."""
    rows = pd.read_csv(fs.DATA / "silicon_h200.csv", dtype=str)
    pick = rows[(rows["backend"] == "vllm") & (rows["model_path"] == "meta-llama/Llama-3.1-70B")
                & (rows["osl"] == "1024")]
    return pick.iloc[0].to_dict()


def test_new_rows_of_a_training_model_are_held_out_not_called_training(tmp_path, capsys):
    new = {**shipped_training_row(), "id": "new", "silicon_ttft_ms": "100.0",
           "backend_version": "0.20.0"}
    path = write_rows(tmp_path / "s.csv", new)
    out = run_main(capsys, "--rows-file", str(path))[1]
    assert "training:" not in out and "held out" not in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")


def test_a_shipped_training_row_in_a_rows_file_still_reads_as_training(tmp_path, capsys):
    row = shipped_training_row()
    path = write_rows(tmp_path / "s.csv", row, {**row, "id": "new", "silicon_ttft_ms": "100.0"})
    out = run_main(capsys, "--rows-file", str(path))[1]
    assert "training: vllm Llama-3.1-70B n=  1 " in out
    assert "held out: every other vllm row n=  1 " in out


def shipped_vllm_row() -> dict:
    """A shipped H200 vLLM Llama-3.1-8B FP8 row that has a cached aiconfigurator estimate."""
    rows = pd.read_csv(fs.DATA / "silicon_h200.csv", dtype=str)
    return rows[rows["model_path"] == "nvidia/Llama-3.1-8B-Instruct-FP8"].iloc[0].to_dict()


def test_a_cached_estimate_joins_only_the_row_it_was_computed_for(tmp_path, capsys):
    row = shipped_vllm_row()
    other = {**row, "isl": "8000", "batch_size": "4", "silicon_data_source": "x; "
             "silicon_concurrency=4"}  # the same id, another run: the cache's is not its estimate
    path = write_rows(tmp_path / "s.csv", other)
    code, out, err = run_main(capsys, "--rows-file", str(path), "--rows")
    assert code == 0
    assert out.splitlines()[1].split()[10] == "n/a"
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")
    assert err == (f"{path}: 1 rows share an id with a copied h200_sxm row but not its inputs "
                   "(e.g. isl); aiconfigurator's cached estimate of that id is not theirs, left "
                   "out (--aic-file PATH --refresh-aic estimates them)\n")
    path = write_rows(tmp_path / "same.csv", row)
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "") and "(n=1); aiconfigurator n/a, n/a" not in out


@pytest.mark.parametrize("version, backend", [
    ("0.12.0", "deepgemm"), ("v0.12.0", "deepgemm"), ("0.12", "deepgemm"),
    ("0.12.1rc1", "deepgemm"), ("V0.12.0", "deepgemm"), ("0.120.0", "auto"), ("0.13.0", "auto"),
    ("", "auto"), (float("nan"), "auto"),
])
def test_vllm_0_12_is_read_however_its_version_is_spelled(version, backend):
    rows = fs.load_rows()
    row = rows[(rows["model"] == "Qwen3-235B-FP8") & (rows["backend"] == "vllm")].iloc[0]
    assert fs.case_of({**row.to_dict(), "backend_version": version}).moe_backend == backend


@pytest.mark.parametrize("over, gpus", [
    ({"attention_dp_size": 1_000_000}, "1,000,000"),
    ({"attention_dp_size": "", "moe_tp_size": "", "moe_ep_size": 1_000_000}, "1,000,000"),
])
def test_more_gpus_than_the_replay_runs_is_listed_not_gigabytes(tmp_path, capsys, over, gpus):
    path = write_rows(tmp_path / "s.csv", make_row(id="good"), make_row(id="bad", **{
        "silicon_tpot_ms": 6.0, **over}))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    assert f"  vllm   Llama-3.1-8B       1 rows: {gpus} GPUs (at most 4,096 are replayed)\n" in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")
