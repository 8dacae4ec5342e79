"""review55b: a baseline written at ``replicas: 0.0`` or ``-1.0`` (a whole number YAML reads
as a float) was told to "move it under baselines:", where it already is: the baseline's own
check caught ints alone, so the float went on to the tier's check, whose line is for a routed
tier. Every whole number below 1 under ``baselines:`` now reads the baseline's line, as 0 does."""

from __future__ import annotations

import pytest

from tiersim.errors import ScenarioError
from tiersim.scenario import load_scenario

SCENARIO = """\
name: z
model: Llama-3.1-8B
trace: {{path: azure2023_conv.parquet, window: [0, 10]}}
tiers:
  - {{name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}}
baselines:
  - {{name: fp8, precision: fp8, replicas: {base}, cost_per_gpu_hour: 3.5}}
"""


@pytest.mark.parametrize("base", ["0", "0.0", "-1.0", "0e0"])
def test_a_baseline_below_one_replica_is_told_to_leave_the_key_out(tmp_path, base):
    path = tmp_path / "z.yaml"
    path.write_text(SCENARIO.format(base=base))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    text = str(err.value)
    assert "baselines[0].replicas: must be >= 1 (got " in text
    assert text.endswith("): a baseline is sized by simulation, so its replicas are unused; "
                         "leave the key out")
    assert "move it under baselines" not in text
