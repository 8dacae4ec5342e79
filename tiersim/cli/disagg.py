"""``tiersim disagg SCENARIO [--tier NAME]``: choose a tier's prefill/decode split.

Every split x prefill + y decode of the tier's replicas, and the aggregated tier on the same GPUs,
is simulated (:func:`tiersim.disagg.compare_splits`); the table lists them best first, scored by
the worse of TTFT p99 / SLO and TPOT p99 / SLO (below 1 meets both SLOs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def disagg(
    scenario: Annotated[Path, typer.Argument(help="Scenario YAML.")],
    tier: Annotated[str | None, typer.Option(
        "--tier", help="The tier to split (default: the first).")] = None,
) -> None:
    """Simulate every prefill/decode split of a tier beside aggregated serving; best first."""
    from tiersim.cli.run import scenario_path
    from tiersim.disagg import compare_splits
    from tiersim.scenario import load_scenario

    rows = compare_splits(load_scenario(scenario_path(scenario)), tier)
    typer.echo(f"{'split':>12} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} "
               f"{'TPOT p99':>9} {'score':>6}")
    for r in rows:
        typer.echo(f"{r.label:>12} {r.ttft_p50_s:9.3f} {r.ttft_p99_s:9.3f} {r.tpot_p50_s:9.4f} "
                   f"{r.tpot_p99_s:9.4f} {r.score:6.2f}")
    best = rows[0]
    verdict = "meets both SLOs" if best.score < 1 else "misses an SLO"
    typer.echo(f"best: {best.label} ({verdict}; score {best.score:.2f})")


__all__ = ["disagg"]
