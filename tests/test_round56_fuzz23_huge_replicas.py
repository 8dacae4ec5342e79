"""Round 56, hostile-input round (fuzz23): a tier's replicas written as a whole number past a
float's range.

``replicas: -1000...0`` (400 digits) or ``replicas: 1000...0`` in a tier or a baseline ended in
a traceback (``OverflowError: int too large to convert to float`` in the check that words a
whole number below 1); each is now the line a small number gets. A check's line that quotes a
number cuts the number (its first digits), not the line: the whole line was cut to 300
characters, and its fix went with it.
"""

from __future__ import annotations

import pytest
from test_hostile_inputs import run_cli

HUGE = 10**400


def _scenario(tmp_path, replicas: int, baseline: bool = False):
    """A one-tier scenario whose tier (or whose one baseline) runs ``replicas``."""
    tier = "  - name: a\n    precision: bf16\n    replicas: {n}\n    cost_per_gpu_hour: 3.5\n"
    text = "name: t\ntrace: {path: azure2023_code.parquet}\ntiers:\n" + tier.format(
        n=1 if baseline else replicas
    )
    if baseline:
        text += "baselines:\n" + tier.format(n=replicas).replace("name: a", "name: b")
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _last_line(capsys, *args) -> str:
    code, err = run_cli(capsys, *args)
    assert code == 1, err
    assert "Traceback" not in err
    return err.splitlines()[-1]


SHOWN = "-1" + "0" * 75 + "..."
"""The number as a line quotes it: its first 77 characters."""


@pytest.mark.parametrize(
    ("baseline", "told"),
    [
        (
            False,
            "line 6: tiers[0].replicas: must be >= 1 (got {}): a tier runs 1 replica or "
            "more; to keep a tier out of the routed fleet, move it under baselines: (sized "
            "only as a uniform fleet for the saving) or remove it (tiersim plan chooses every "
            "tier's replicas, zero included, whatever count is written)",
        ),
        (
            True,
            "line 11: baselines[0].replicas: must be >= 1 (got {}): a baseline is sized by "
            "simulation, so its replicas are unused; leave the key out",
        ),
    ],
)
def test_a_huge_negative_replicas_is_told_it_is_below_one(tmp_path, capsys, baseline, told):
    """The line -2 gets, the number cut to its first digits and the fix kept whole."""
    bad = _scenario(tmp_path, -HUGE, baseline)
    line = _last_line(capsys, "run", bad, "--out", tmp_path / "o")
    assert line == f"Error: {bad}: " + told.format(SHOWN)
    assert not (tmp_path / "o").exists()


CUT = "1" + "0" * 39 + "... (401 characters)"
"""A 401-digit count as a flag's or the limit's line shows it: its first 40 characters."""


def test_a_huge_replicas_is_told_the_limit(tmp_path, capsys):
    """Above the limit, as 100000000 is, the count cut to its first digits."""
    bad = _scenario(tmp_path, HUGE)
    assert _last_line(capsys, "run", bad, "--out", tmp_path / "o") == (
        f"Error: {bad}: line 6: tiers[0].replicas: {CUT} replicas is above "
        "limits.max_replicas (1024); set limits: {max_replicas: N} to allow more"
    )


@pytest.mark.parametrize(
    ("flag", "told"),
    [
        (
            ("--current", f"w4a16={HUGE}"),
            f"--current 'w4a16={str(HUGE)[:34]}... (407 characters)': {CUT} replicas is above "
            "limits.max_replicas (1024); give the replicas the tier runs today, 1 to 1024 (set "
            "limits: {max_replicas: N} in the scenario to allow more)",
        ),
        (
            ("--current", f"w4a16=1x{HUGE}"),
            f"--current 'w4a16=1x{str(HUGE)[:32]}... (409 characters)': {CUT} GPUs per replica; "
            "give 1 to 4096",
        ),
        (
            ("--check-seeds", str(HUGE)),
            f"--check-seeds {CUT}: more than the 1,000 seeds a plan checks (each is an evaluator "
            "build and two or three simulations, after the search); give at most 1,000",
        ),
    ],
)
def test_a_huge_plan_flag_is_cut_to_its_first_digits(tmp_path, capsys, flag, told):
    """Each quoted the 401 digits whole, twice for --current (over 800 characters)."""
    line = _last_line(capsys, "plan", "tiny", "--out", tmp_path / "p", "--no-report", *flag)
    assert line == f"Error: {told}"
    assert not (tmp_path / "p").exists()
