"""fresh55a (a capacity planner new to tiersim): a candidate tier written at ``replicas: 0``,
as the README's "zero drops a tier" suggests, was told only "must be >= 1 (got 0)". The line
now says how to keep a tier out of the routed fleet, and a baseline (whose replicas are unused)
is told to leave the key out."""

from __future__ import annotations

from conftest import run_cli

SCENARIO = """\
name: z
model: Llama-3.1-8B
trace: {{path: azure2023_conv.parquet, window: [0, 10]}}
tiers:
  - {{name: bf16, precision: bf16, replicas: {tier}, cost_per_gpu_hour: 3.5}}
baselines:
  - {{name: fp8, precision: fp8, replicas: {base}, cost_per_gpu_hour: 3.5}}
"""


def _error(tmp_path, tier: int, base: int) -> tuple[int, str]:
    path = tmp_path / "z.yaml"
    path.write_text(SCENARIO.format(tier=tier, base=base))
    done = run_cli("run", str(path), "--no-report", "--no-baselines")
    return done.returncode, (done.stdout + done.stderr).strip()


def test_a_tier_at_zero_replicas_is_told_how_to_leave_the_fleet(tmp_path):
    code, text = _error(tmp_path, 0, 1)
    assert code == 1
    assert text == (
        f"Error: {tmp_path / 'z.yaml'}: line 5: tiers[0].replicas: must be >= 1 (got 0): a tier "
        "runs 1 replica or more; to keep a tier out of the routed fleet, move it under "
        "baselines: (sized only as a uniform fleet for the saving) or remove it (tiersim plan "
        "chooses every tier's replicas, zero included, whatever count is written)")


def test_a_baseline_at_zero_replicas_is_told_to_leave_the_key_out(tmp_path):
    code, text = _error(tmp_path, 1, 0)
    assert code == 1
    assert text == (
        f"Error: {tmp_path / 'z.yaml'}: line 7: baselines[0].replicas: must be >= 1 (got 0): a "
        "baseline is sized by simulation, so its replicas are unused; leave the key out")
