"""Round 21 of hostile input on the commands other than the readers (plan, report, calibrate,
profile import): each a failure found from outside and fixed, with the exact line a user sees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_round19 import error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
H200 = ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


def _small_profile() -> dict:
    """The shipped H200 profile cut to a few tables."""
    doc = json.loads(H200.read_text())
    doc["tables"] = doc["tables"][:3]
    return doc


# ------------------------------------------------------------------ a profile's table op

@pytest.mark.parametrize("op", [[], ["gemm"], {}, {"gemm": 1}])
def test_a_table_op_that_is_a_list_or_object_is_one_line(tmp_path, capsys, op):
    """A table's ``op`` given as a JSON list or object ended a run in ``TypeError: unhashable
    type`` (it was looked up in a dict of the ops)."""
    doc = _small_profile()
    doc["tables"][1]["op"] = op
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(doc))
    scenario = tmp_path / "s.yaml"
    scenario.write_text(TINY.replace("profile: null", f"profile: {profile}"))
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 7: profile: {profile}: tables[1].op: must be one "
                    "of gemm, moe, attn_prefill, attn_decode, allreduce, gdn_decode, "
                    f"gdn_prefill (got {op!r})")
