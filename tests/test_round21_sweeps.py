"""Round 21 of hostile input, sweeps: each a failure found from outside and fixed (the exact line
a user sees, or what was lost or kept)."""

from __future__ import annotations

from pathlib import Path

from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def test_sweep_refuses_a_quoted_number_in_its_base_as_run_does(tmp_path, capsys):
    """``cost_per_gpu_hour: "3.50"`` outside the sweep map: `tiersim run` refuses it at its
    line, `tiersim sweep` read it as 3.5 and ran every point (the points are validated from a
    dict, without the file's node tree that tells a quoted value)."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("cost_per_gpu_hour: 3.50", 'cost_per_gpu_hour: "3.50"', 1)
                        + "\nsweep:\n  seed: [0, 1]\n")
    line = ("line 17: tiers[0].cost_per_gpu_hour: must be a number, not a string ('3.50'); "
            "write it without quotes")
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines")) == (
        f"Error: {scenario}: {line}")
    out = tmp_path / "o"
    assert error_line(*run_cli(capsys, "sweep", scenario, "--out", out, "-w", "1",
                               "--no-baselines")) == f"Error: {scenario}: {line}"
    assert not out.exists()
