"""Round 55, hostile-input round (fuzz22): a profile that holds no tables (``tables: []``).

fuzz21 found it accepted without a word: every operator then runs on the bare roofline,
without the calibration a run with no profile reads, while the scenario names a profile.
With nothing else in it (no ``overhead_s``, no ``eager_s``) it is now refused; with an
overhead or an eager cost (the harness's ``--ops overhead``, a hand edit of a shipped
profile) it runs, with one note saying what is read from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_hostile_inputs import run_cli

import tiersim

SHIPPED = Path(tiersim.__file__).parent / "profiles" / "h200_aiconfigurator_vllm.json"
TINY = Path(tiersim.__file__).parent / "scenarios" / "tiny.yaml"


def _scenario(tmp_path: Path, drop: tuple[str, ...]) -> Path:
    """tiny.yaml naming the shipped H200 profile with its tables emptied (and ``drop``'s
    fields removed)."""
    doc = json.loads(SHIPPED.read_text())
    doc["tables"] = []
    for field in drop:
        doc.pop(field)
    (tmp_path / "empty.json").write_text(json.dumps(doc))
    text = TINY.read_text().replace("profile: null ", "profile: empty.json")
    assert "profile: empty.json" in text
    (tmp_path / "s.yaml").write_text(text)
    return tmp_path / "s.yaml"


def test_a_profile_of_no_tables_and_nothing_else_is_refused(tmp_path, capsys):
    """The line names the file, the field and the two fixes; nothing is written."""
    scenario = _scenario(tmp_path, ("overhead_s", "eager_s"))
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "o")
    assert code == 1, err
    assert err.strip().splitlines()[-1] == (
        f"Error: {scenario}: line 7: profile: {tmp_path / 'empty.json'}: tables: empty, and "
        "no overhead_s or eager_s: nothing in the profile would be read (every step the bare "
        "roofline's); give its tables, or no profile (profile: null) for the roofline with "
        "its shipped calibration")
    assert not (tmp_path / "o").exists()


def test_a_profile_of_no_tables_but_its_overhead_runs_with_a_note(tmp_path, capsys):
    """The shipped profile's fitted overhead and eager cost are still read: it runs, and says
    that nothing else is."""
    scenario = _scenario(tmp_path, ())
    code, err = run_cli(capsys, "run", scenario, "--out", tmp_path / "o")
    assert code == 0, err
    assert [line for line in err.splitlines() if "tables: []" in line] == [
        f"note: profile {tmp_path / 'empty.json'}: holds no tables (tables: []), so the bare "
        "roofline times every operator, without the calibration a run with no profile "
        "(profile: null) reads; only its per-iteration overhead and eager-step cost are read "
        "from it; give it tables (tiersim calibrate), or use profile: null"]
