"""fresh55a (a capacity planner new to tiersim): `tiersim plan` sized FP8 1 x 2 + BF16 1 x 4 GPU
behind the floor router (52 % of the requests to FP8). Its scenario.yaml with a
``router.confusion.fpr`` sweep sent FP8 100 % at every point, ``fpr: 0`` included, and missed
the p99 TPOT SLO the plan met: with ``confusion`` set the floor router fits its cuts on the
realised 0/1 correctness, not the expected one (README, router keys), and nothing in the run
said so. A run with ``confusion`` set on a ``floor`` or ``budget`` router now notes it, with the
shares it routes; without ``confusion`` it does not (modelled, profile: null)."""

from __future__ import annotations

from pathlib import Path

from tiersim.cli import main

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def _scenario(tmp_path: Path, router: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("name: t\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
                    f"trace: {{path: {TRACE}, window: [240, 360]}}\n"
                    "workload: {difficulty: {hint_auroc: 0.72}}\ntiers:\n"
                    "  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 2.5,\n"
                    "     accuracy: {easy: 0.97, hard: 0.70}}\n"
                    "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5,\n"
                    "     accuracy: {easy: 0.97, hard: 0.80}}\n"
                    f"accuracy_floor: 0.93\nrouter: {router}\n")
    return path


def _notes(tmp_path: Path, capsys, router: str) -> list[str]:
    path = _scenario(tmp_path, router)
    capsys.readouterr()
    code = main(["run", str(path), "--no-baselines", "--no-report"])
    err = capsys.readouterr().err
    assert code == 0, err
    return [line for line in err.splitlines() if "router.confusion is set" in line]


def test_a_floor_router_with_confusion_set_says_it_routes_on_the_draws(tmp_path, capsys):
    assert _notes(tmp_path, capsys, "{policy: floor, confusion: {fpr: 0.0}}") == [
        f"note: {tmp_path / 's.yaml'}: router.confusion is set (zeros too), so the floor router "
        "fits its cuts on the realised 0/1 correctness, not the expected one, and routes fp8 "
        "100%, bf16 0% here: not as the scenario without router.confusion routes (a sweep point at "
        "fpr 0 is not that scenario), nor as a plan sized without it; compare a "
        "router.confusion sweep's points with one another, or plan with the confusion set "
        "(README, router keys: confusion)"]


def test_a_floor_router_without_confusion_says_nothing_of_it(tmp_path, capsys):
    """The same scenario without ``confusion`` sends FP8 52 % (47.6 % to BF16), fitted on the
    expected correctness; no note."""
    assert _notes(tmp_path, capsys, "{policy: floor}") == []
