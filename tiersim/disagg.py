"""Choose a tier's prefill/decode split: simulate every split of its replicas and the
aggregated tier on the same GPUs, and keep the one that best meets the SLOs.

``tiersim disagg SCENARIO [--tier NAME]`` prints the table. Each split is a full run of the
scenario with the tier's ``disaggregation`` block set (or removed: aggregated); the score is the
worse of the tier's own TTFT p99 / SLO and TPOT p99 / SLO (below 1 meets both SLOs; a TPOT
that no request has, one-token outputs, does not count; a tier that drops requests scores
infinity), best first: fewest dropped requests, then the lowest score of the p99s alone
(:func:`tiersim.metrics.split_rank`). The p50 columns are the tier's own too (the requests it
answered). The tier split by default is the first with a ``disaggregation`` block, else the
first. A tier of more than :data:`MAX_SPLITS` + 1 replicas is tried at :data:`MAX_SPLITS`
prefill counts spread evenly from 1 to all but one (every split of 1,024 replicas took minutes
per hundred).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from tiersim.errors import Note, TiersimError, baseline_only
from tiersim.metrics import (
    MAX_SPLITS,
    SCORE_WORDS,
    percentile,
    prefill_counts,
    score_text,
    slo_score,
    split_rank,
)
from tiersim.runner import IDLE_TIER_NOTE, run_with_requests
from tiersim.scenario import DisaggConfig, Scenario
from tiersim.scenario_where import _short

__all__ = ["MAX_SPLITS", "NOTED_RUNS", "SCORE_WORDS", "SplitResult", "compare_splits",
           "default_tier", "other_tiers", "prefill_counts", "score_text", "splits_to_run",
           "splittable"]


@dataclass(frozen=True)
class SplitResult:
    """One way of serving the tier: ``prefill`` and ``decode`` replicas (0, 0: aggregated)."""

    prefill: int
    decode: int
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    ttft_p50_s: float | None
    tpot_p50_s: float | None
    completed: int
    score: float
    dropped: int = 0  # the tier's own dropped requests (any makes the score infinite)
    e2e_p99_s: float | None = None  # its p99 end-to-end, where slo.e2e_p99_s holds one

    @property
    def label(self) -> str:
        """``aggregated`` or ``xP yD``."""
        return "aggregated" if not self.prefill else f"{self.prefill}P {self.decode}D"


LONE_PREFILL_NOTE = r".*: balancer \S+ picks one of the tier's prefill replicas"
"""The start of the note that a split tier's balancer has one prefill replica to pick
(:func:`tiersim.scenario_checks._note_lone_balancer`): a 1P split is one of those
:func:`compare_splits` tries, and the other splits read the balancer, so the note (that the key
changes nothing, and to remove it) is not shown for it."""


def _with_split(scenario: Scenario, index: int, split: tuple[int, int] | None) -> Scenario:
    tier = scenario.tiers[index]
    link = tier.disaggregation or DisaggConfig(prefill_replicas=1, decode_replicas=1)
    cfg = None
    if split is not None:
        cfg = link.model_copy(update={"prefill_replicas": split[0], "decode_replicas": split[1]})
    tiers = list(scenario.tiers)
    tiers[index] = tier.model_copy(update={"disaggregation": cfg})
    return scenario.model_copy(update={"tiers": tiers})


def default_tier(scenario: Scenario) -> str:
    """The tier split when none is named: the first with a ``disaggregation`` block, else the
    first."""
    blocks = [t.name for t in scenario.tiers if t.disaggregation is not None]
    return (blocks or [scenario.tiers[0].name])[0]


def splittable(scenario: Scenario) -> list[str]:
    """The tiers a prefill/decode split can be simulated for: two replicas or more, with no
    speculative block and ``data_parallel`` 1."""
    return [t.name for t in scenario.tiers
            if t.replicas >= 2 and t.speculative is None and t.data_parallel == 1]


NOTED_RUNS = 8
"""More runs than this, and ``tiersim disagg`` says up front how many it makes (each is a full
run of the scenario, one after another; 64 of a 300-replica tier over an hour of the tiny
scenario's trace took 75 s, and printed nothing until all had run)."""


def splits_to_run(scenario: Scenario, tier: str | None = None
                  ) -> tuple[int, list[tuple[int, int] | None]]:
    """The index of the tier :func:`compare_splits` splits (``tier``, default:
    :func:`default_tier`) and the splits it runs, ``None`` (aggregated) first; a tier it cannot
    split is refused in one line."""
    names = [t.name for t in scenario.tiers]
    baseline = [t.name for t in scenario.baselines]
    baseline_line = baseline_only(tier, names, baseline, "which serves no request of the "
                                  "trace, so it has no split to compare")
    if baseline_line is not None:
        raise TiersimError(f"{scenario.source}: --tier: {baseline_line}")
    if tier is not None and tier not in names:
        raise TiersimError(f"{scenario.source}: --tier: no tier named {_short(tier, 64)!r}; "
                           f"tiers are {', '.join(names)}")
    index = names.index(tier if tier is not None else default_tier(scenario))
    chosen = scenario.tiers[index]
    if chosen.speculative is not None or chosen.data_parallel != 1:
        what = "a speculative block" if chosen.speculative is not None else "data_parallel > 1"
        other = other_tiers(scenario, chosen.name)
        raise TiersimError(f"{scenario.source}: tier {chosen.name!r} has {what}; disaggregated "
                           "splits of such a tier are not modelled, so they cannot be compared; "
                           f"remove it{' or ' + other if other else ''}")
    count = chosen.replicas
    return index, [None] + [(x, count - x) for x in prefill_counts(count)]


def compare_splits(scenario: Scenario, tier: str | None = None) -> list[SplitResult]:
    """Every split of ``tier`` (default: :func:`default_tier`) and the aggregated tier, best
    first (:func:`tiersim.metrics.split_rank`)."""
    index, splits = splits_to_run(scenario, tier)
    chosen = scenario.tiers[index]
    out = []
    for split in splits:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", IDLE_TIER_NOTE, Note)  # a cost note: none here
            if split is not None:  # a split tried here, not one the scenario chose
                warnings.filterwarnings("ignore", LONE_PREFILL_NOTE, Note)
            run, requests = run_with_requests(_with_split(scenario, index, split))
        own = run.tier(chosen.name)
        if not own.requests:  # no latency to score: every split would "meet" the SLOs
            raise TiersimError(_unserved(scenario, chosen.name, run))
        mine = (requests["final_tier"] == chosen.name).to_numpy()
        out.append(SplitResult(split[0] if split else 0, split[1] if split else 0,
                               own.ttft_p99_s, own.tpot_p99_s,
                               percentile(requests["ttft_s"].to_numpy()[mine], 50),
                               percentile(requests["tpot_s"].to_numpy()[mine], 50),
                               run.completed, _score(run, own, scenario), own.dropped or 0,
                               own.e2e_p99_s))
    limits = split_limits(scenario)
    return sorted(out, key=lambda r: split_rank(r.ttft_p99_s, r.tpot_p99_s, limits, r.dropped,
                                                r.e2e_p99_s))


def split_limits(scenario: Scenario) -> tuple[float | None, ...]:
    """The SLOs a split is scored against (:func:`tiersim.metrics.slo_score`): p99 TTFT and
    TPOT, and the end-to-end one where the scenario holds it (``slo.e2e_p99_s``)."""
    slo = scenario.slo
    return (slo.ttft_p99_s, slo.tpot_p99_s, getattr(slo, "e2e_p99_s", None))


def other_tiers(scenario: Scenario, chosen: str) -> str:
    """The other tiers to split, in words (``choose --tier bf16``), or "" when no other tier
    of the scenario can be split (:func:`splittable`)."""
    names = [name for name in splittable(scenario) if name != chosen]
    return "choose " + " or ".join(f"--tier {name}" for name in names) if names else ""


def _unserved(scenario: Scenario, name: str, run) -> str:
    """The line for a tier ``name`` that serves no request in ``run``: another tier that
    serves some is the fix, unless the response cache answered every request (no tier serves
    one, so no --tier helps)."""
    if scenario.router.response_cache is None or any(t.requests for t in run.tiers):
        return (f"{scenario.source}: tier {name!r} serves no request of this trace "
                f"({_served(run)}), so its splits have no latency to compare; choose a tier "
                "that serves traffic with --tier")
    return (f"{scenario.source}: router.response_cache answers every request of this trace, so "
            "no tier serves one and no split has a latency to compare; remove "
            "router.response_cache (or give it fewer hits) to compare the splits")


def _served(run) -> str:
    """How many requests each tier served, in words."""
    return ", ".join(f"{t.name} {t.requests:,}" for t in run.tiers)


def _score(run, own, scenario: Scenario) -> float:
    """The worse of the tier's p99s over their SLOs; infinity when the tier drops requests
    (another tier's drops are no split's doing)."""
    return slo_score(own.ttft_p99_s, own.tpot_p99_s, split_limits(scenario), bool(own.dropped),
                     own.e2e_p99_s)
