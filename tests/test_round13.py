"""Round 13 of hostile input, each a failure found from outside and fixed: the exact line a user
sees, or the behaviour that was wrong."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.errors import ScenarioError
from tiersim.scenario import located

DP = ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
      "    replicas: 1\n    gpus_per_replica: 4\n    data_parallel: 3\n"
      "    cost_per_gpu_hour: 3.50\n  - name: bf16")


@pytest.mark.parametrize(("edits", "extra", "expected"), [
    # data_parallel that does not divide the GPUs pointed at the tier's first line and gave no
    # valid value; now its own line, and the values that divide
    ((DP,), "", "line 18: tiers[0].data_parallel: data_parallel (3) must divide "
                "gpus_per_replica (4); with 4 GPUs it may be 1, 2 or 4"),
    # it said "line 1: (top level)"
    ((), "cost_model: fixed_per_request\n",
     "line 30: cost_model: cost_model fixed_per_request needs cost_per_request_usd on every "
     "tier (missing on w4a16, bf16)"),
    # a check made after loading (the tier's accuracy prior) had the key path, no line
    ((("    precision: w4a16", "    precision: mxfp4"),), "",
     "line 14: tiers[0].accuracy: no accuracy prior for precision 'mxfp4'; known: bf16, fp16, "
     "fp8, int4, int8, nvfp4, w4a16, w8a16; set accuracy explicitly"),
    # a YAML hex number of thousands of digits: Python refused to print it, a traceback
    ((("seed: 0", "seed: 0x" + "f" * 400),), "",
     "line 4: seed: a whole number of 1,600 bits is beyond any setting (at most 64 bits)"),
    ((), "sweep:\n  0x" + "f" * 400 + ": [1, 2]\n",
     "line 30: sweep: a key: a whole number of 1,600 bits is beyond any setting (at most 64 "
     "bits)"),
])
def test_an_error_names_its_keys_own_line(tmp_path, capsys, edits, extra, expected):
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(*edits, extra=extra))
    code, err = run_cli(capsys, "run", path)
    assert one_error_line(code, err) == f"Error: {path}: {expected}"


def test_located_leaves_an_error_it_cannot_place_as_it_was(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("trace: {path: x}\ntiers: []\n")
    cases = [(str(path), "--dc"), (str(path), "router.floor"), (str(tmp_path / "s.json"),
                                                                 "tiers"),
             (str(tmp_path / "gone.yaml"), "tiers"), (str(path), "line 3: tiers")]
    for source, where in cases:
        err = ScenarioError(source, where, "m")
        assert located(err) is err
    assert str(located(ScenarioError(str(path), "tiers[0].name", "m"))) == (
        f"{path}: line 2: tiers[0].name: m")


def test_a_dropped_step_ends_its_session():
    """A step that can never fit its tier was dropped, and the next step was still sent with a
    prompt holding the output the dropped step never made. Now the task ends there: the steps
    after it are dropped too, never sent; another task is not touched."""
    import numpy as np

    from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate
    from tiersim.perf.base import LinearStepModel

    tier = TierSpec("t", 1, 400, LinearStepModel(),
                    SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=2048))
    # task A: steps 0 -> 1 (too long for 400 blocks x 16 tokens) -> 2; task B: step 3 -> 4
    work = Workload(np.array([0.0, 0.0, 0.0, 0.5, 0.0]), np.array([10, 100_000, 10, 10, 10]),
                    np.array([5, 5, 5, 5, 5]), np.zeros(5, int),
                    follows=np.array([-1, 0, 1, -1, 3]), think_s=np.zeros(5))
    res = simulate([tier], work)
    assert res.dropped.tolist() == [False, True, True, False, False]
    assert np.isnan(res.first_token_s[2]) and res.arrival_s[2] == res.arrival_s[1]
    assert res.arrival_s[1] == res.finish_s[0]
    assert res.arrival_s[4] == res.finish_s[3]
