"""Round 22 of hostile input on the command line, profiles and the calibrate harness: each a
failure found from outside and fixed, with the exact line a user sees."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()
H200 = ROOT / "tiersim" / "profiles" / "h200_aiconfigurator_vllm.json"


# ------------------------------------------------------------------ a long --out file name

LONG = "p" * 245 + ".json"
"""A file name of 250 bytes: a name the system takes (255 at most), that the checks of
``--out`` pass, and that a temporary name built by adding to it overran."""


def test_the_harness_writes_a_profile_of_a_long_name(tmp_path):
    """``schema.write`` (the harness's write, after minutes of measuring) wrote through
    ``NAME.<pid>.tmp``: for a long ``--out`` name that was past the system's 255 bytes, so the
    write failed with 'File name too long' and the measured profile was lost."""
    from tiersim.calibrate import schema

    out = tmp_path / LONG
    schema.write(out, {"schema": "tiersim.profile/1"})
    assert json.loads(out.read_text()) == {"schema": "tiersim.profile/1"}
    assert [p.name for p in tmp_path.iterdir()] == [LONG]


def test_an_imported_profile_of_a_long_name_is_written(tmp_path):
    """``save_profile`` (what ``calibrate --from aiconfigurator`` writes with) wrote through
    ``.NAME.XXXXXXXX.tmp``, past the system's 255 bytes for a long name: 'File name too long',
    naming the temporary file."""
    from tiersim.perf.profile import load_profile, save_profile

    out = tmp_path / LONG
    save_profile(load_profile(H200), out)
    assert load_profile(out).name == "h200_aiconfigurator_vllm"
    assert [p.name for p in tmp_path.iterdir()] == [LONG]
