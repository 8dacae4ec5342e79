"""Round 54, base54: bad input naming today's fleet (``plan.current``, ``plan.hours_per_month``,
``tiersim plan --current`` / ``--hours-per-month``) gets one line naming the file, the key (with
its line) or the flag, and the fix; exit 1, no traceback, and nothing simulated first."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def _said(capsys, path: Path, *args: str) -> str:
    """``tiersim plan path args`` (no other seed checked): exit 1 and its one line of text."""
    assert main(["plan", str(path), "--check-seeds", "0", "--no-report", "--out",
                 str(path.parent / "p"), *args]) == 1
    out = capsys.readouterr()
    text = (out.out + out.err).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    assert not (path.parent / "p").exists()  # refused before anything was simulated
    return text


def _line(path: Path, entry: int | None, key: str) -> int:
    """The line of ``key`` in the scenario file: in ``plan.current[entry]`` (the entry's own
    first line where it does not write ``key``), or directly under ``plan`` (``entry`` None)."""
    lines = path.read_text().splitlines()
    start = lines.index("plan:")
    if entry is None:
        return 1 + next(i for i in range(start, len(lines)) if lines[i].strip().startswith(
            f"{key}:"))
    items = [i for i in range(start, len(lines)) if lines[i].startswith("  - ")]
    end = items[entry + 1] if entry + 1 < len(items) else len(lines)
    return 1 + next((i for i in range(items[entry], end)
                     if lines[i].lstrip(" -").startswith(f"{key}:")), items[entry])


def _with(tmp_path: Path, current, keys: dict | None = None, **doc) -> Path:
    """tiny with ``plan: {current: current, **keys}`` and ``doc``'s top-level keys."""
    return write_yaml(tmp_path / "s.yaml", tiny_doc(**doc, plan={"current": current,
                                                                 **(keys or {})}))


@pytest.mark.parametrize(("current", "at", "said"), [
    ([{"tier": "fp16", "replicas": 2}], (0, "tier"),
     "'fp16' names no tier of the scenario; write one of 'w4a16', 'bf16'"),
    ([{"tier": "bf16", "replicas": 0}], (0, "replicas"),
     "0 replicas serve nothing; give the replicas the tier runs today (1 or more), or leave the "
     "tier out of plan.current"),
    ([{"tier": "bf16", "replicas": -1}], (0, "replicas"),
     "-1 replicas serve nothing; give the replicas the tier runs today (1 or more), or leave "
     "the tier out of plan.current"),
    ([{"tier": "bf16", "replicas": 2}, {"tier": "bf16", "replicas": 1}], (1, "tier"),
     "'bf16' is listed twice in today's fleet; give each tier once, with all its replicas"),
    ([{"tier": "bf16", "replicas": 2000}], (0, "replicas"),
     "2000 replicas is above limits.max_replicas (1024); set limits: {max_replicas: N} to "
     "allow more"),
    ([{"tier": "bf16", "replicas": 2, "precision": "fp8"}], (0, "precision"),
     "unknown key (known keys: gpus_per_replica, replicas, tier)"),
    ([{"tier": "bf16", "replicas": 2, "gpus_per_replica": 0}], (0, "gpus_per_replica"),
     "must be >= 1 (got 0)"),
    ([], (None, "current"), "must have at least 1 item(s)"),
    ([{"tier": "bf16", "replicas": 2, "gpus_per_replica": 3}], (0, "gpus_per_replica"),
     "tier 'bf16' on 3 GPUs per replica is refused (Qwen3-Coder-30B-A3B cannot be split over "
     "3 GPUs: 32 attention heads are not divisible by 3; use gpus_per_replica in {1, 2, 4, 8, "
     "16, 32}); give gpus_per_replica the GPUs one replica runs on today (a count it fits on)"),
])
def test_a_bad_current_is_one_line_at_its_key(tmp_path, capsys, current, at, said):
    path = _with(tmp_path, current)
    entry, key = at
    where = "plan.current" + ("" if entry is None else f"[{entry}].{key}")
    assert _said(capsys, path) == f"Error: {path}: line {_line(path, *at)}: {where}: {said}"


def test_a_precision_for_a_tier_name_is_told_the_name(tmp_path, capsys):
    """A planner who names the tier by its precision (``BF16`` for the tier named ``top``) is
    told which tier runs it."""
    tiers = tiny_doc()["tiers"]
    path = _with(tmp_path, [{"tier": "BF16", "replicas": 2}],
                 tiers=[tiers[0], {**tiers[1], "name": "top"}])
    assert _said(capsys, path) == (
        f"Error: {path}: line {_line(path, 0, 'tier')}: plan.current[0].tier: 'BF16' names no "
        "tier of the scenario (it is the precision of 'top': name a tier by its name, not its "
        "precision); write one of 'w4a16', 'top'")


def test_a_fleet_too_big_for_its_gpus_is_told_the_count(tmp_path, capsys):
    """Llama-3.1-70B in BF16 on one H200 per replica: its weights alone are over the GPU's
    usable memory."""
    tiers = [{**t, "gpus_per_replica": 2} for t in tiny_doc()["tiers"]]
    path = _with(tmp_path, [{"tier": "bf16", "replicas": 2, "gpus_per_replica": 1}],
                 model="Llama-3.1-70B", tiers=tiers)
    assert _said(capsys, path) == (
        f"Error: {path}: line {_line(path, 0, 'gpus_per_replica')}: "
        "plan.current[0].gpus_per_replica: tier 'bf16' on 1 GPU per "
        "replica is refused (Llama-3.1-70B at BF16 does not fit on 1x H200: weights 141.1 GB + "
        "reserve 3.6 GB > usable 135.7 GB (short by 9.0 GB); use gpus_per_replica 2, a smaller "
        "precision or a GPU with more memory); give gpus_per_replica the GPUs one replica runs "
        "on today (a count it fits on)")


def test_a_baseline_only_tier_beside_others_is_refused(tmp_path, capsys):
    w4a16, bf16 = tiny_doc()["tiers"]
    path = _with(tmp_path, [{"tier": "w4a16", "replicas": 1}, {"tier": "fp8", "replicas": 1}],
                 baselines=[{**bf16, "name": "fp8", "precision": "fp8"}])
    assert _said(capsys, path) == (
        f"Error: {path}: line {_line(path, 1, 'tier')}: plan.current[1].tier: 'fp8' is a "
        "baseline-only tier, which no router sends requests beside other tiers; name it alone, "
        "or list it under tiers")


def test_hours_out_of_a_month_are_refused(tmp_path, capsys):
    path = _with(tmp_path, [{"tier": "bf16", "replicas": 2}], keys={"hours_per_month": 800})
    assert _said(capsys, path) == (f"Error: {path}: line {_line(path, None, 'hours_per_month')}:"
                                   " plan.hours_per_month: must be <= 744.0 (got 800)")


@pytest.mark.parametrize(("args", "said"), [
    (["--current", "fp16=2"], "Error: --current 'fp16=2': 'fp16' names no tier of {path}; write "
     "one of 'w4a16', 'bf16'"),
    (["--current", "bf16"], "Error: --current 'bf16': write TIER=REPLICAS or TIER=REPLICASxGPUS "
     "(a tier of the scenario, its replicas today and GPUs per replica), e.g. --current "
     "bf16=5x2"),
    (["--current", "bf16=0"], "Error: --current 'bf16=0': 0 replicas serve nothing; give the "
     "replicas the tier runs today, 1 to 1024 (set limits: {{max_replicas: N}} in the scenario "
     "to allow more)"),
    (["--current", "bf16=2", "--current", "bf16=1"], "Error: --current 'bf16=2': 'bf16' is "
     "given twice; give each tier once, with all its replicas"),
    (["--current", "bf16=2x3"], "Error: --current 'bf16=2x3': tier 'bf16' on 3 GPUs per replica "
     "is refused (Qwen3-Coder-30B-A3B cannot be split over 3 GPUs: 32 attention heads are not "
     "divisible by 3; use gpus_per_replica in {{1, 2, 4, 8, 16, 32}}); give the GPUs one "
     "replica runs on today (a count it fits on)"),
    # --hours-per-month without today's fleet was refused here ("no month to price"); since
    # round 56 the hours stand alone (tests/test_round56_left56_month.py)
    (["--current", "bf16=2", "--hours-per-month", "0"], "Error: --hours-per-month 0: give the "
     "hours a month is paid for, above 0 and at most 744 (730: 24/7)"),
])
def test_a_bad_flag_is_one_line_naming_it(tmp_path, capsys, args, said):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc())
    assert _said(capsys, path, *args) == said.format(path=path)
