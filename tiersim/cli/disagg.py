"""``tiersim disagg SCENARIO [--tier NAME]``: choose a tier's prefill/decode split.

Every split x prefill + y decode of the tier's replicas, and the aggregated tier on the same GPUs,
is simulated (:func:`tiersim.disagg.compare_splits`); the table lists them best first, scored by
the worse of the tier's own TTFT p99 / SLO and TPOT p99 / SLO (below 1 meets both SLOs); the
p50 columns are the tier's own too. The tier split by default is the first with a
``disaggregation`` block, else the first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiersim.cli.usage import echo, expand_home, scenario_help


def disagg(
    scenario: Annotated[Path, typer.Argument(help=scenario_help("Scenario YAML"),
                                                    parser=expand_home)],
    tier: Annotated[str | None, typer.Option(
        "--tier", help="The tier to split (default: the first with a disaggregation block, "
        "else the first).")] = None,
) -> None:
    """Simulate every prefill/decode split of a tier beside aggregated serving; best first."""
    from tiersim.cli.run import (
        base_point_only,
        check_scenario_keys,
        provenance_lines,
        scenario_path,
    )
    from tiersim.disagg import compare_splits, default_tier, other_tiers
    from tiersim.scenario import DisaggConfig, load_scenario

    path = scenario_path(scenario)
    loaded = load_scenario(path)
    check_scenario_keys(loaded, path)  # as `run` refuses them: a key no split reads
    if loaded.sweep:
        echo(f"note: {base_point_only(path, 'simulates')}", err=True)
    _note_runs(loaded, tier)
    rows = compare_splits(loaded, tier)
    chosen = tier or default_tier(loaded)
    if len(rows) > 1 and next(t for t in loaded.tiers if t.name == chosen).disaggregation is None:
        link = DisaggConfig(prefill_replicas=1, decode_replicas=1)
        echo(f"note: tier {chosen!r} has no disaggregation block, so its splits move the "
                   f"prompt's KV over disaggregation's default link: {link.link_gb_s:g} GB/s per "
                   f"GPU, {link.latency_us:g} us a transfer; add a disaggregation block (any "
                   "split) with your link_gb_s and latency_us", err=True)
    if len(rows) == 1:
        other = other_tiers(loaded, chosen)
        echo(f"note: tier {chosen!r} has one replica: no prefill/decode split of it "
                   "exists, so only aggregated serving is shown"
                   f"{'; ' + other if other else ''}", err=True)
    from tiersim.disagg import split_limits

    limits = split_limits(loaded)  # the end-to-end SLO too, where the scenario holds one
    e2e = limits[2] is not None  # then its p99 is scored, and shown beside the others
    e2e_head = f" {'E2E p99':>9}" if e2e else ""
    echo(f"{'split':>12} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} "
               f"{'TPOT p99':>9}{e2e_head} {'dropped':>8} {'score':>7}   (latencies in seconds)")
    for r in rows:
        echo(f"{r.label:>12} {_cell(r.ttft_p50_s, 3)} {_cell(r.ttft_p99_s, 3)} "
                   f"{_cell(r.tpot_p50_s, 4)} {_cell(r.tpot_p99_s, 4)}"
                   f"{' ' + _cell(r.e2e_p99_s, 3) if e2e else ''} {r.dropped:8,} "
                   f"{_score_cell(r, limits):>7}")
    best = rows[0]
    echo(f"best: {best.label} ({_verdict(best, limits)})")
    echo(_score_legend(loaded, any(r.dropped for r in rows)))
    for line in provenance_lines(path):
        echo(line)


def _note_runs(scenario, tier: str | None) -> None:
    """Say up front how many runs the table takes, where they are more than
    :data:`tiersim.disagg.NOTED_RUNS` (each a full run of the scenario: a tier of hundreds of
    replicas ran 64 of them, and nothing was printed until all had); a tier that cannot be
    split is refused, in its one line."""
    from tiersim.disagg import MAX_SPLITS, NOTED_RUNS, splits_to_run

    index, splits = splits_to_run(scenario, tier)
    if len(splits) <= NOTED_RUNS:
        return
    chosen = scenario.tiers[index]
    ways = chosen.replicas - 1
    some = (f"{len(splits) - 1} of its {ways:,} prefill/decode splits, spread evenly (at most "
            f"{MAX_SPLITS} are tried)" if len(splits) - 1 < ways else
            f"its {ways:,} prefill/decode splits")
    echo(f"note: simulating {len(splits)} runs of the scenario, one after another: tier "
         f"{chosen.name!r} aggregated and {some}; the table is printed once all have run",
         err=True)


def _score_legend(scenario, drops: bool) -> str:
    """What the score column is, with the SLOs it divides by, as given
    (:func:`~tiersim.results.as_given`; the plan prints the same words,
    :data:`tiersim.metrics.SCORE_WORDS`), how the splits rank, and, where some split drops
    requests (``drops``), what its starred score is."""
    from tiersim.metrics import DROP_STAR_WORDS, score_words
    from tiersim.results import as_given

    slo = scenario.slo
    e2e = getattr(slo, "e2e_p99_s", None)
    held = ("both" if e2e is None else "all three")
    text = (f"{score_words(e2e)} (TTFT {as_given(slo.ttft_p99_s)} s, TPOT "
            f"{as_given(slo.tpot_p99_s)} s"
            f"{'' if e2e is None else f', end-to-end {as_given(e2e)} s'}): below 1 meets "
            f"{held}; splits rank by fewest dropped requests, then lowest score")
    if drops:
        text += f"; {DROP_STAR_WORDS}"
    return text


def _score_cell(row, limits) -> str:
    """A split's score as the table prints it (:func:`tiersim.metrics.starred_score`: one that
    drops requests, the score of its p99s, starred)."""
    from tiersim.metrics import starred_score

    return starred_score(row.score, row.ttft_p99_s, row.tpot_p99_s, limits, bool(row.dropped),
                         row.e2e_p99_s)


def _verdict(row, limits) -> str:
    """Whether a split meets the SLOs, in words, and its score: a dropped request misses them
    whatever the latencies of the rest (its score is then of the requests it served)."""
    from tiersim.disagg import score_text

    if row.dropped:
        return (f"drops {row.dropped:,} of the tier's requests, so it misses the SLOs; score "
                f"{_score_cell(row, limits)}")
    held = "both SLOs" if len(limits) < 3 or limits[2] is None else "all three SLOs"
    verdict = f"meets {held}" if row.score < 1 else "misses an SLO"
    return f"{verdict}; score {score_text(row.score)}"


def _cell(value: float | None, digits: int) -> str:
    """A latency column cell ('-' when the tier has no such latency: one-token outputs have no
    TPOT)."""
    return f"{'-':>9}" if value is None else f"{value:9.{digits}f}"


__all__ = ["disagg"]
