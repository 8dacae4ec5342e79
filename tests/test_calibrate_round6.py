"""Round 6 of the harness (tiersim calibrate): an interrupted or budget-cut run never replaces a
complete --out, the budget is checked inside a table's grid, config.json sizes are checked, an
empty run is an error, and --quick refuses --model / --config."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tiersim.calibrate import runner, shapes, timing  # noqa: E402
from tiersim.calibrate.cli import main  # noqa: E402
from tiersim.calibrate.errors import CalibrateError, Stopped  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# stands for a good profile a previous run wrote
EARLIER = '{"schema": "tiersim.profile/1", "name": "earlier"}\n'


def _last_err(capsys) -> str:
    """The last stderr line of the harness (progress lines come before it)."""
    return capsys.readouterr().err.strip().splitlines()[-1]


# ---- 1. a stopped run leaves a complete --out as it was -----------------------------------

def test_sigterm_keeps_the_earlier_out_and_writes_the_partial_name(tmp_path):
    """SIGTERM replaced a complete good.json with a partial one, printing nothing."""
    out, partial = tmp_path / "good.json", tmp_path / "good.partial.json"
    out.write_text(EARLIER)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tiersim.calibrate", "--device", "cpu", "--quick",
         "--out", str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    deadline = time.monotonic() + 90
    while not partial.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err[-2000:]
    doc = json.loads(partial.read_text())
    section = doc["provenance"]["status"].removeprefix("partial: interrupted by SIGTERM during ")
    assert section in runner.SECTIONS
    n = len(doc["tables"])
    assert err.strip().splitlines()[-1] == (
        f"Error: interrupted by SIGTERM during {section}: {n} table{'' if n == 1 else 's'} and "
        f"the overhead measured; partial profile in {partial}, {out} left as it was")
    assert out.read_text() == EARLIER
    assert "Traceback" not in err


def test_sigint_keeps_the_earlier_out(tmp_path, monkeypatch, capsys):
    out, partial = tmp_path / "good.json", tmp_path / "good.partial.json"
    out.write_text(EARLIER)

    def interrupted(run, precisions):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "measure_gemm", interrupted)
    assert main(["--device", "cpu", "--quick", "--ops", "overhead,gemm", "--out",
                 str(out)]) == 1
    assert _last_err(capsys) == (
        f"Error: interrupted by SIGINT during gemm: 0 tables and the overhead measured; "
        f"partial profile in {partial}, {out} left as it was")
    assert out.read_text() == EARLIER
    doc = json.loads(partial.read_text())
    assert doc["provenance"]["status"] == "partial: interrupted by SIGINT during gemm"
    assert doc["overhead_s"]["value"] > 0


def test_stopped_before_anything_is_measured_writes_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "good.json"

    def stopped(run):
        raise Stopped("SIGTERM")

    monkeypatch.setattr(runner, "measure_overhead", stopped)
    assert main(["--device", "cpu", "--quick", "--ops", "overhead", "--out", str(out)]) == 1
    assert _last_err(capsys) == (
        f"Error: interrupted by SIGTERM before anything was measured; {out} not written")
    assert list(tmp_path.iterdir()) == []


def test_a_complete_run_writes_out_and_removes_a_stale_partial(tmp_path, capsys):
    out, partial = tmp_path / "p.json", tmp_path / "p.partial.json"
    partial.write_text(EARLIER)  # an earlier run's partial profile
    assert main(["--device", "cpu", "--quick", "--ops", "overhead", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["provenance"]["status"] == "complete"
    assert not partial.exists()
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"wrote {out}"


# ---- 2. the budget is checked inside a table's grid ------------------------------------------

def test_timer_near_its_deadline_takes_one_warmup_one_estimate_one_repeat():
    calls = []
    timer = timing.Timer(torch.device("cpu"), warmup=3, min_repeats=5, max_repeats=30,
                         target_s=0.05, flush_bytes=0)
    timer.deadline = time.monotonic() - 1
    timer.measure(lambda: calls.append(1))
    assert len(calls) == 3


def test_budget_cuts_a_table_inside_its_grid_and_says_partial(tmp_path, monkeypatch, capsys):
    """--budget-s 1 ran 47 s: the budget was checked only between tables."""
    def slow(self, fn):
        time.sleep(0.4)
        return 1e-4

    monkeypatch.setattr(timing.Timer, "measure", slow)
    out, partial = tmp_path / "p.json", tmp_path / "p.partial.json"
    t0 = time.monotonic()
    assert main(["--device", "cpu", "--quick", "--ops", "gemm", "--precisions", "bf16",
                 "--budget-s", "1", "--out", str(out)]) == 1
    assert time.monotonic() - t0 < 1 + 0.4 + 1.0  # the budget, one measurement, slack
    assert _last_err(capsys) == (
        "Error: time budget (--budget-s 1) spent: 1 table kept (1 cut short), 3 not measured; "
        f"partial profile in {partial}, {out} not written; allow more seconds")
    assert not out.exists()
    doc = json.loads(partial.read_text())
    (table,) = doc["tables"]
    kept = len(table["axes"]["m"])
    assert 1 <= kept < 4 and len(table["latency_s"]) == kept
    assert table["notes"].endswith(f"; PARTIAL: cut short by the time budget (--budget-s) "
                                   f"after {kept} of 4 grid points")
    prov = doc["provenance"]
    assert prov["status"] == ("partial: time budget (--budget-s 1) spent; 1 table cut short, "
                              "3 not measured")
    assert prov["cut"] == [{"table": table_name(table), "points": f"{kept} of 4",
                            "reason": "time budget (--budget-s) spent"}]


def table_name(t: dict) -> str:
    return f"gemm/{t['precision']}/{t['key']['n']}x{t['key']['k']}"


def test_budget_cut_attention_keeps_whole_rows(tmp_path, monkeypatch):
    """A 2-D table cut part-way keeps its whole rows (latency must stay rectangular)."""
    calls = []

    def counted(self):
        calls.append(1)
        return len(calls) > 3  # the 4th cell (second row, second column) finds the time up

    monkeypatch.setattr(runner.Run, "time_up", counted)
    with pytest.raises(runner.PartialProfile) as err:
        runner.run_calibration("cpu", quick=True, out=str(tmp_path / "p.json"),
                               ops=("attn_decode",), kv_dtypes=("bf16",), log=lambda s: None)
    (table,) = err.value.doc["tables"]
    assert table["axes"] == {"batch": [1], "context": [16, 64]}
    assert len(table["latency_s"]) == 1 and len(table["latency_s"][0]) == 2


# ---- 3 and 4. config.json sizes ----------------------------------------------------------------

BASE = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2, "vocab_size": 1024, "intermediate_size": 512}
# a qwen3_moe: a llama's FFN is dense whatever expert keys it carries, as the simulator reads it
MOE = {**BASE, "model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
       "moe_intermediate_size": 128}


@pytest.mark.parametrize(("cfg", "message"), [
    ({**BASE, "hidden_size": "abc"},
     'hidden_size must be a whole number from 1 to 65536 (got "abc"); fix it in the config.json'),
    ({**BASE, "hidden_size": [256]},
     "hidden_size must be a whole number from 1 to 65536 (got [256]); fix it in the config.json"),
    ({**BASE, "hidden_size": 1e400},
     "hidden_size must be a whole number from 1 to 65536 (got Infinity); fix it in the "
     "config.json"),
    ({**BASE, "hidden_size": 10**400},
     "hidden_size must be a whole number from 1 to 65536 (got 1000000000000000000000000000000000"
     "000...); fix it in the config.json"),
    ({**BASE, "hidden_size": 10_000_000},
     "hidden_size must be a whole number from 1 to 65536 (got 10000000); fix it in the "
     "config.json"),
    ({**BASE, "hidden_size": 0},
     "hidden_size must be a whole number from 1 to 65536 (got 0); fix it in the config.json"),
    ({**BASE, "hidden_size": -256},
     "hidden_size must be a whole number from 1 to 65536 (got -256); fix it in the config.json"),
    ({**BASE, "hidden_size": 256.7},
     "hidden_size must be a whole number from 1 to 65536 (got 256.7); fix it in the config.json"),
    ({**BASE, "num_attention_heads": 0},
     "num_attention_heads must be a whole number from 1 to 1024 (got 0); fix it in the "
     "config.json"),
    ({**BASE, "num_hidden_layers": True},
     "num_hidden_layers must be a whole number from 1 to 1024 (got true); fix it in the "
     "config.json"),
    ({**BASE, "vocab_size": -5},
     "vocab_size must be a whole number from 1 to 10000000 (got -5); fix it in the config.json"),
    ({**BASE, "num_key_value_heads": 8},
     "num_key_value_heads 8 does not divide num_attention_heads 4; fix the config.json"),
    ({**BASE, "num_key_value_heads": 3},
     "num_key_value_heads 3 does not divide num_attention_heads 4; fix the config.json"),
    ({**MOE, "num_experts_per_tok": 9},
     "num_experts_per_tok 9 is more than the 4 experts; fix the config.json"),
    ({**MOE, "num_experts": -8},
     "num_experts must be a whole number from 1 to 4096 (got -8); fix it in the config.json"),
    ({"text_config": "x"},
     "text_config must be a JSON object of the language model's sizes (got str); fix the "
     "config.json"),
    ({**BASE, "hidden_size": 250},
     "hidden_size 250 is not a multiple of num_attention_heads 4; add head_dim to the "
     "config.json"),
])
def test_bad_config_sizes_are_one_line_naming_file_and_key(tmp_path, capsys, cfg, message):
    path, out = tmp_path / "config.json", tmp_path / "p.json"
    path.write_text(json.dumps(cfg))
    assert main(["--device", "cpu", "--ops", "gemm", "--precisions", "bf16", "--budget-s", "3",
                 "--config", str(path), "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == f"Error: {path}: {message}"
    assert not out.exists()


def test_good_configs_still_parse(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(MOE))
    got = shapes.from_config(path, "m")
    assert (got.hidden, got.heads, got.kv_heads, got.head_dim, got.num_experts, got.top_k,
            got.expert_intermediate, got.intermediate) == (256, 4, 2, 64, 4, 2, 128, 0)
    path.write_text(json.dumps({"text_config": {**BASE, "head_dim": 32}}))
    got = shapes.from_config(path, "m")
    assert (got.head_dim, got.intermediate, got.num_experts) == (32, 512, 0)


# ---- 5. an empty run is an error, and no file ------------------------------------------------

def test_budget_spent_before_any_table_is_one_line_and_keeps_the_earlier_out(tmp_path, capsys):
    """--budget-s 1e-300 wrote status complete with no tables (a profile that cannot load)."""
    out = tmp_path / "p.json"
    out.write_text(EARLIER)
    assert main(["--device", "cpu", "--quick", "--budget-s", "1e-300", "--out", str(out)]) == 1
    assert _last_err(capsys) == (f"Error: --budget-s 1e-300: spent before any table was "
                                 f"measured; {out} left as it was; allow more seconds")
    assert out.read_text() == EARLIER and sorted(tmp_path.iterdir()) == [out]


def test_nothing_measured_for_other_reasons_is_an_error(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["--device", "cpu", "--quick", "--ops", "allreduce", "--out", str(out)]) == 1
    assert _last_err(capsys) == (
        "Error: nothing measured: every selected table was skipped (first allreduce: tp=1: a "
        "one-GPU replica does no all-reduce (use --tp N on N GPUs)); "
        f"{out} not written; choose other --ops")
    assert not out.exists()


# ---- 6. --quick refuses --model and --config --------------------------------------------------

def test_quick_refuses_config_and_model(tmp_path, capsys):
    out = str(tmp_path / "p.json")
    assert main(["--device", "cpu", "--quick", "--config", "/nonexistent/config.json",
                 "--out", out]) == 1
    assert capsys.readouterr().err.strip() == (
        "Error: --quick measures built-in tiny shapes and cannot measure --config "
        "/nonexistent/config.json; drop --quick to measure that model, or drop --config")
    assert main(["--device", "cpu", "--quick", "--model", "llama-3.1-8b", "--out", out]) == 1
    assert capsys.readouterr().err.strip() == (
        "Error: --quick measures built-in tiny shapes and cannot measure --model llama-3.1-8b; "
        "drop --quick to measure that model, or drop --model")
    with pytest.raises(CalibrateError, match="^--quick measures built-in tiny shapes"):
        runner.run_calibration("cpu", model="llama-3.1-8b", quick=True, log=lambda s: None)
    assert not Path(out).exists()
