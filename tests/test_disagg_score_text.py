"""``tiersim disagg`` prints each split's score to 3 significant digits: at 2 decimals three
splits scoring 0.0663, 0.0675 and 0.0691 all read 0.07 under a "best" that named the first."""

from __future__ import annotations

import pytest

from tiersim.cli.app import main
from tiersim.disagg import SplitResult, score_text


@pytest.mark.parametrize(("score", "text"), [
    (0.06631830561218806, "0.0663"), (1.0703, "1.07"), (1.6, "1.60"), (18.31, "18.3"),
    (2515.398, "2,515"), (0.0, "0.00"), (float("inf"), "inf"), (None, "inf")])
def test_score_text(score, text):
    assert score_text(score) == text


def test_disagg_prints_scores_that_tell_the_splits_apart(tmp_path, monkeypatch, capsys):
    rows = [SplitResult(0, 0, 0.102, 0.00663, 0.026, 0.0044, 59, 0.0663),
            SplitResult(1, 2, 0.135, 0.00646, 0.031, 0.0047, 59, 0.0675),
            SplitResult(2, 1, 0.102, 0.00691, 0.028, 0.0050, 59, 0.0691)]
    lines = disagg_lines(rows, 3, "", tmp_path, monkeypatch, capsys)
    assert [line.split()[-1] for line in lines[1:4]] == ["0.0663", "0.0675", "0.0691"]
    assert lines[4] == "best: aggregated (meets both SLOs; score 0.0663)"


def disagg_lines(rows, replicas: int, extra: str, tmp_path, monkeypatch, capsys) -> list[str]:
    """``tiersim disagg``'s printed lines for a one-tier BF16 scenario of ``replicas``
    replicas (``extra``: more scenario lines) whose splits score as ``rows``."""
    monkeypatch.setattr("tiersim.disagg.compare_splits", lambda scenario, tier: rows)
    monkeypatch.setattr("tiersim.cli.run.provenance_lines", lambda path: [])
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nmodel: Llama-3.1-8B\ngpu: H200\ntrace: {path: "
                        "azure2023_code.parquet, window: [240, 270]}\ntiers:\n  - {name: bf16, "
                        f"precision: bf16, replicas: {replicas}, cost_per_gpu_hour: 3.5}}\n"
                        + extra)
    assert main(["disagg", str(scenario)]) == 0
    return capsys.readouterr().out.splitlines()
