"""Round 56, plan56: today's fleet (plan.json ``current``) names a disaggregated tier's split,
and its reader refuses a fleet no plan writes.

Since round 55 today's split tier runs at the scenario's split (carried in proportion where
today's replicas differ), but neither its plan line nor plan.json said which: "bf16 3 x 1 GPU"
read the same for 1P 2D and 2P 1D. Now the line reads "bf16 3 x 1 GPU (1P 2D)", as the plan's
own line gives a split, and plan.json ``current.prefill`` holds each tier's prefill replicas
(null for one served aggregated; the key only where a tier is split).

plan.json's ``current`` was read back (``tiersim report``) with 2^70 replicas or GPUs per
replica, an unnamed ``given``, a ``design`` of other tiers: the report printed them. Each is
now the plan's one-line "malformed plan" error naming the file, the key and the fix, exit 1.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml
from test_round55_review55_today_split import _split_bf16

from tiersim.cli import main


def _plan(tmp_path: Path, today: int, capsys) -> tuple[str, dict]:
    """tiny with bf16 split 1P 2D, today's fleet bf16 at ``today`` replicas: (stdout,
    plan.json)."""
    doc = tiny_doc(
        tiers=[tiny_doc()["tiers"][0], _split_bf16(3, 1, 2)],
        plan={"current": [{"tier": "bf16", "replicas": today}]},
    )
    path = write_yaml(tmp_path / "s.yaml", doc)
    out = tmp_path / "p"
    code = main(["plan", str(path), "--check-seeds", "0", "--no-report", "--out", str(out)])
    assert code == 0
    return capsys.readouterr().out, json.loads((out / "plan.json").read_text())


@pytest.mark.parametrize(("today", "split"), [(3, "1P 2D"), (4, "1P 3D")])  # 4: carried
def test_todays_split_is_named_in_its_line_and_plan_json(tmp_path, capsys, today, split):
    out, data = _plan(tmp_path, today, capsys)
    line = next(x for x in out.splitlines() if x.startswith("  today's fleet ("))
    assert line.startswith(
        f"  today's fleet (plan.current: bf16 {today} x 1 GPU ({split})), simulated on the "
        "plan's trace at seed 0: "
    )
    assert data["current"]["prefill"] == {"bf16": 1}


def test_the_seed_checks_line_names_todays_split_too(tmp_path, capsys):
    doc = tiny_doc(
        tiers=[tiny_doc()["tiers"][0], _split_bf16(3, 1, 2)],
        plan={"current": [{"tier": "bf16", "replicas": 3}]},
    )
    path = write_yaml(tmp_path / "s.yaml", doc)
    code = main(
        ["plan", str(path), "--check-seeds", "1", "--no-report", "--out", str(tmp_path / "p")]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "    today's fleet (bf16 3 x 1 GPU (1P 2D)) meets the SLOs at 2 of 2 seeds" in out


def test_a_fleet_served_aggregated_writes_no_prefill(tmp_path, capsys):
    out, data = _plan(tmp_path, 1, capsys)  # one replica: no split
    assert "  today's fleet (plan.current: bf16 1 x 1 GPU), simulated" in out
    assert "prefill" not in data["current"]


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """plan.json of tiny planned beside today's bf16 1P 2D."""
    tmp = tmp_path_factory.mktemp("written")
    doc = tiny_doc(
        tiers=[tiny_doc()["tiers"][0], _split_bf16(3, 1, 2)],
        plan={"current": [{"tier": "bf16", "replicas": 3}]},
    )
    path = write_yaml(tmp / "s.yaml", doc)
    assert (
        main(["plan", str(path), "--check-seeds", "0", "--no-report", "--out", str(tmp / "p")]) == 0
    )
    return json.loads((tmp / "p" / "plan.json").read_text())


BIG = 2**70

CASES = [
    (
        "replicas",
        {"bf16": BIG},
        "'plan.current.replicas.bf16' must be a whole number from 1 to "
        f"100,000 (what a scenario may give), got {BIG}",
    ),
    (
        "gpus_per_replica",
        {"bf16": BIG},
        "'plan.current.gpus_per_replica.bf16' must be a whole "
        f"number from 1 to 4,096 (what a scenario may give), got {BIG}",
    ),
    (
        "gpus_per_replica",
        {"bf16": 2},
        '\'plan.current.design\' must be its tiers\' label "bf16@2", got "bf16"',
    ),
    (
        "given",
        "yaml",
        '\'plan.current.given\' must be "plan.current" or "--current" (where '
        'today\'s fleet was named), got "yaml"',
    ),
    (
        "dropped",
        BIG,
        f"'plan.current.dropped' must be at most {2**63 - 1} (a run's count), got {BIG}",
    ),
    (
        "prefill",
        {"bf16": 3},
        "'plan.current.prefill.bf16' must be null (served aggregated) or "
        "from 1 to 2 (its replicas less a decode one), got 3",
    ),
    (
        "prefill",
        {"fp8": 1},
        '\'plan.current.prefill\' must give each of its tiers ["bf16"], got {"fp8": 1}',
    ),
    (
        "prefill",
        {"bf16": 1.5},
        "'plan.current.prefill.bf16': input should be a valid integer, got 1.5",
    ),
    ("replicas", {"bf16": -3}, "'plan.current.replicas.bf16' must be >= 0, got -3"),
    (
        "replicas",
        {"bf16": 2.5},
        "'plan.current.replicas.bf16': input should be a valid integer, got 2.5",
    ),
]


@pytest.mark.parametrize(("key", "value", "said"), CASES)
def test_report_refuses_a_current_no_plan_writes(tmp_path, capsys, written, key, value, said):
    data = copy.deepcopy(written)
    data["current"][key] = value
    folder = tmp_path / "p"
    folder.mkdir()
    path = folder / "plan.json"
    path.write_text(json.dumps(data))
    assert main(["report", str(folder)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        f"Error: {path}: malformed plan ({said}); rerun `tiersim plan` to rewrite it"
    )
    assert "Traceback" not in err


def test_the_written_current_reads_back(written):
    from tiersim.results import PlanResult

    assert PlanResult.from_json(written).current["prefill"] == {"bf16": 1}
