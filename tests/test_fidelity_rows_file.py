"""benchmarks/fidelity_silicon.py on measured rows it was not built from (``--rows-file``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fidelity_silicon as fs  # noqa: E402


def make_row(**overrides) -> dict:
    """A silicon-sample row (vLLM, Llama-3.1-8B FP8, TP 1) with keyword overrides."""
    row = {
        "id": "r0", "backend": "vllm", "backend_version": "0.12.0", "mode": "agg",
        "model_path": "nvidia/Llama-3.1-8B-Instruct-FP8", "system": "h200_sxm",
        "precision": "fp8", "gemm_quant_mode": "fp8", "moe_quant_mode": "fp8", "isl": 128,
        "osl": 8, "batch_size": 2, "tp_size": 1, "pp_size": 1, "attention_dp_size": 1,
        "moe_tp_size": 1, "moe_ep_size": 1, "silicon_ttft_ms": 20.0, "silicon_tpot_ms": 5.0,
        "silicon_data_source": "test; silicon_concurrency=2",
    }
    row.update(overrides)
    return row


@pytest.fixture(autouse=True)
def _reset_files():
    yield
    fs.DATA_FILES.update(rows=None, aic=None)


def write_rows(path: Path, *rows: dict) -> Path:
    """``rows`` as a silicon-sample CSV at ``path``."""
    pd.DataFrame(list(rows)).to_csv(path, index=False)
    return path


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """``fidelity_silicon.main(argv)`` (two requests per client): exit code, stdout, stderr."""
    code = fs.main([*argv, "--jobs", "1", "--per-client", "2", "--prompt-pool", "0"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_rows_file_replays_its_own_systems_rows_and_counts_the_others(tmp_path, capsys):
    path = write_rows(tmp_path / "sample.csv", make_row(id="a"),
                      make_row(id="b", system="gb200"), make_row(id="c", system="gb200"))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert code == 0
    assert err == (f"{path}: 2 rows of other systems left out (gb200 2); --system picks one of "
                   "b200_sxm, b300_sxm, h100_sxm, h200_sxm\n")
    assert "vllm all median |TPOT error|" in out and "(n=1)" in out


def test_rows_file_that_does_not_exist_is_one_line(tmp_path):
    with pytest.raises(SystemExit) as exc:
        fs.main(["--rows-file", str(tmp_path / "nope.csv"), "--jobs", "1"])
    assert str(exc.value) == f"{tmp_path / 'nope.csv'}: no such file (--rows-file)"


@pytest.mark.parametrize("flag", ["--refresh-data", "--fit", "--write-check"])
def test_rows_file_never_writes_the_copied_data(tmp_path, capsys, flag):
    path = write_rows(tmp_path / "s.csv", make_row())
    with pytest.raises(SystemExit) as exc:
        fs.main(["--rows-file", str(path), flag])
    assert exc.value.code == 1  # one Error: line, exit 1 (argparse's usage block, exit 2)
    assert (f"{flag} writes benchmarks/data or the package from the copied rows; drop "
            "--rows-file") in capsys.readouterr().err


def test_refresh_aic_on_a_rows_file_needs_its_own_estimates_file(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row())
    with pytest.raises(SystemExit):
        fs.main(["--rows-file", str(path), "--refresh-aic"])
    assert "--refresh-aic with --rows-file needs --aic-file PATH" in capsys.readouterr().err


@pytest.mark.parametrize("text, reason", [
    ("", "not a CSV of measured rows (EmptyDataError: No columns to parse from file)"),
    ('a,b\n"x,1\n', 'a quote in the row on file line 2 is never closed (the file ends inside '
                    'it); close the quote, or write a quote inside a quoted cell as two ("")'),
    ("id,backend,model_path,mode,isl,osl,batch_size,tp_size,silicon_ttft_ms\n",
     "no column silicon_tpot_ms (a file of measured rows needs id, backend, model_path, mode, "
     "isl, osl, batch_size, tp_size, silicon_ttft_ms, silicon_tpot_ms; the silicon sample's "
     "others may be left out)"),
])
def test_a_file_that_is_no_csv_of_measured_rows_is_one_line(tmp_path, text, reason):
    path = tmp_path / "s.csv"
    path.write_text(text)
    with pytest.raises(SystemExit) as exc:
        fs.main(["--rows-file", str(path), "--jobs", "1"])
    assert str(exc.value) == f"{path}: {reason}"


def test_a_file_with_no_rows_of_the_system_says_so(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row())
    path.write_text(path.read_text().splitlines()[0] + "\n")
    assert run_main(capsys, "--rows-file", str(path))[::2] == (
        1, f"{path}: no h200_sxm rows to replay\n")


@pytest.mark.parametrize("over, reason", [
    ({"isl": "abc"}, "isl 'abc' is not a number"),
    ({"tp_size": 1.5}, "tp_size 1.5 is not a whole number"),
    ({"batch_size": 2.5}, "batch_size 2.5 is not a whole number"),
    ({"silicon_ttft_ms": ""}, "no measured silicon_ttft_ms (empty)"),
    ({"silicon_tpot_ms": "nan"}, "no measured silicon_tpot_ms (empty)"),
    ({"silicon_tpot_ms": 0}, "silicon_tpot_ms 0.0 (a positive measured time needed)"),
    ({"silicon_ttft_ms": -5}, "silicon_ttft_ms -5.0 (a positive measured time needed)"),
    ({"silicon_ttft_ms": "inf"}, "silicon_ttft_ms inf (a positive measured time needed)"),
])
def test_a_row_whose_numbers_cannot_be_read_is_listed_not_scored(tmp_path, capsys, over, reason):
    path = write_rows(tmp_path / "s.csv", make_row(id="good"), make_row(id="bad", **{
        "silicon_tpot_ms": 6.0, **over}))  # another measurement: not the good row's, refiled
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    assert f"  vllm   Llama-3.1-8B       1 rows: {reason}\n" in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")


P2 = fs.Protocol(per_client=2, pool=0)


@pytest.mark.parametrize("col", ["attention_dp_size", "pp_size", "moe_tp_size", "moe_ep_size"])
def test_a_parallel_size_below_one_is_the_rows_reason(col):
    row = make_row(**{col: 0})
    assert fs.simulate_row(row, "auto", P2, fs.Knobs()) == {
        "unrepresentable": f"{col} 0 (at least 1 needed)"}
    assert np.isnan(fs.prefill_load(row, "auto"))


def test_more_clients_than_the_step_budget_decodes_replay():
    row = make_row(batch_size=10_000, silicon_data_source="x; silicon_concurrency=10000", osl=2,
                   isl=16)
    out = fs.simulate_row(row, "auto", fs.Protocol(per_client=1, pool=0), fs.Knobs())
    assert out["sim_tpot_ms"] > 0


def test_a_row_whose_replay_fails_is_its_line_and_the_run_goes_on(tmp_path, capsys,
                                                                  monkeypatch):
    real = fs.replay

    def replay(tier, isl, osl, concurrency, proto):
        if isl == 999:
            raise RuntimeError("engine bug\nsecond line")
        return real(tier, isl, osl, concurrency, proto)

    monkeypatch.setattr(fs, "replay", replay)
    path = write_rows(tmp_path / "s.csv", make_row(id="good"),
                      make_row(id="bad", isl=999, silicon_tpot_ms=6.0))
    code, out, err = run_main(capsys, "--rows-file", str(path))
    assert (code, err) == (0, "")
    assert "1 rows: its replay failed: RuntimeError: engine bug\n" in out
    assert out.rstrip().endswith("(n=1); aiconfigurator n/a, n/a")


def test_two_runs_under_one_id_count_once_each_beside_one_estimate_each(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row(id="a"), make_row(id="a", silicon_tpot_ms=6.0))
    aic = tmp_path / "aic.csv"
    pd.DataFrame({"id": ["a", "a", "a#2"], "aic_ttft_ms": [1.0, 19.0, 20.0],
                  "aic_tpot_ms": [1.0, 5.5, 5.0]}).to_csv(aic, index=False)
    code, out, err = run_main(capsys, "--rows-file", str(path), "--aic-file", str(aic), "--rows")
    assert code == 0
    assert err == (f"{path}: 1 rows repeat an earlier row's id with another measurement or "
                   "layout; renamed <id>#2, #3... (e.g. a#2)\n")
    assert "(n=2); aiconfigurator 13.3%, 2.5%" in out  # TPOT 10%, 16.7%; TTFT 5%, 0%


def test_a_csv_in_a_folder_that_does_not_exist_is_refused_before_the_replay(tmp_path, capsys):
    out = tmp_path / "no" / "x.csv"
    with pytest.raises(SystemExit) as exc:
        fs.main(["--csv", str(out), "--jobs", "1", "--model", "Nope"])
    assert exc.value.code == 1  # one Error: line, exit 1 (argparse's usage block, exit 2)
    assert f"--csv {out}: no folder {out.parent} to write it in" in capsys.readouterr().err


def test_a_row_of_no_model_or_of_one_with_no_config_says_where_it_looked(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row(id="a", model_path="Acme/Nope-1B"),
                      make_row(id="b", model_path="", silicon_tpot_ms=6.0,
                               silicon_data_source=""))
    out = run_main(capsys, "--rows-file", str(path))[1]
    assert ("  vllm   Acme/Nope-1B       1 rows: no config for Acme/Nope-1B: no "
            "benchmarks/data/configs/Nope-1B/config.json, and aiconfigurator-core ships no "
            "Acme--Nope-1B_config.json\n") in out
    assert "  vllm   (no model_path)    1 rows: no model_path\n" in out
    assert fs.campaign(make_row(silicon_data_source=float("nan"), backend_version="")) == (
        "nvidia/Llama-3.1-8B-Instruct-FP8, vllm")


def test_an_engine_with_no_row_replayed_has_no_figure_not_nan(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row(mode="disagg"))
    out = run_main(capsys, "--rows-file", str(path))[1]
    assert out.endswith("vllm all median |TPOT error| = n/a, |TTFT error| = n/a (n=0); "
                        "aiconfigurator n/a, n/a\n")


def test_a_rows_line_shows_the_clients_that_ran_and_no_estimate_as_n_a(tmp_path, capsys):
    # batch_size per attention-DP rank (2 ranks of 2), 4 clients as the campaign recorded them
    path = write_rows(tmp_path / "s.csv", make_row(batch_size=2, attention_dp_size=2,
                                                   silicon_data_source="x; silicon_concurrency=4"))
    out = run_main(capsys, "--rows-file", str(path), "--rows")[1]
    line = out.splitlines()[1].split()
    assert line[:7] == ["vllm", "Llama-3.1-8B", "1", "2", "4", "128", "8"]
    assert line[10] == "n/a" and line[-1] == "n/a"


@pytest.mark.parametrize("argv, message", [
    (["--per-client", "0"], "--per-client must be >= 1 (got 0)"),
    (["--overhead-ms", "-50"], "--overhead-ms must be a finite number >= 0 (got -50)"),
    (["--overhead-ms", "nan"], "--overhead-ms must be a finite number >= 0 (got nan)"),
    (["--overhead-ms", "inf"], "--overhead-ms must be a finite number >= 0 (got inf)"),
])
def test_a_load_generator_or_overhead_that_cannot_replay_is_refused(capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        fs.main([*argv, "--jobs", "1", "--model", "Nope"])
    # one line, the value as typed (argparse's usage block first, exit 2, and -50.0)
    assert exc.value.code == 1 and capsys.readouterr().err == (
        f"Error: {message}; see python benchmarks/fidelity_silicon.py --help\n")


def test_a_replay_that_gives_no_finite_time_is_its_line(monkeypatch):
    monkeypatch.setattr(fs, "replay", lambda *a: {"sim_ttft_ms": float("nan"),
                                                   "sim_tpot_ms": 5.0})
    assert fs.simulate_row(make_row(), "auto", P2, fs.Knobs()) == {
        "unrepresentable": "its replay gave TTFT nan ms, TPOT 5.0 ms"}


def test_estimates_to_write_in_a_folder_that_does_not_exist_are_refused_first(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row())
    out = tmp_path / "no" / "aic.csv"
    with pytest.raises(SystemExit) as exc:
        fs.main(["--rows-file", str(path), "--aic-file", str(out), "--refresh-aic"])
    assert exc.value.code == 1  # one Error: line, exit 1 (argparse's usage block, exit 2)
    assert f"--aic-file {out}: no folder {out.parent} to write it in" in capsys.readouterr().err


def test_a_filter_that_matches_nothing_says_what_the_file_holds_once(tmp_path, capsys):
    path = write_rows(tmp_path / "s.csv", make_row(id="a"), make_row(id="a", system="gb200"))
    assert run_main(capsys, "--rows-file", str(path), "--model", "Nope")[::2] == (1, (
        f"{path}: 1 rows of other systems left out (gb200 1); --system picks one of b200_sxm, "
        f"b300_sxm, h100_sxm, h200_sxm\n{path}: no row matches --engine/--model; its models: "
        "Llama-3.1-8B\n"))
