"""Round 7 of the harness (tiersim calibrate): the time budget is not overrun by a one-time
import, harness tables name the device that measured them, and a shape a 4-bit format cannot
block says so in words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]


def test_budget_is_not_overrun_by_the_prefill_mask_import(tmp_path):
    """The first prefill point imported torch._dynamo (seconds on a CPU) after the budget was
    checked: --budget-s 0.3 ran for 4 s. The import is now start-up, outside the budget."""
    out = tmp_path / "p.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tiersim.calibrate", "--device", "cpu", "--quick",
         "--ops", "attn_prefill", "--kv-dtypes", "bf16", "--budget-s", "0.3",
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert "Traceback" not in proc.stderr
    done = out if out.exists() else tmp_path / "p.partial.json"
    elapsed = json.loads(done.read_text())["provenance"]["elapsed_s"]
    assert elapsed <= 0.3 + 1.0, proc.stderr[-2000:]
