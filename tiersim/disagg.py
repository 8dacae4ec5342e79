"""Choose a tier's prefill/decode split: simulate every split of its replicas and the
aggregated tier on the same GPUs, and keep the one that best meets the SLOs.

``python -m tiersim.disagg SCENARIO [--tier NAME]`` prints the table. Each split is a full run of
the scenario with the tier's ``disaggregation`` block set (or removed: aggregated); the score is
the worse of TTFT p99 / SLO and TPOT p99 / SLO (below 1 meets both SLOs), lowest first.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from tiersim.errors import TiersimError
from tiersim.runner import run_scenario
from tiersim.scenario import DisaggConfig, Scenario, load_scenario


@dataclass(frozen=True)
class SplitResult:
    """One way of serving the tier: ``prefill`` and ``decode`` replicas (0, 0: aggregated)."""

    prefill: int
    decode: int
    ttft_p99_s: float
    tpot_p99_s: float
    ttft_p50_s: float
    tpot_p50_s: float
    completed: int
    score: float

    @property
    def label(self) -> str:
        """``aggregated`` or ``xP yD``."""
        return "aggregated" if not self.prefill else f"{self.prefill}P {self.decode}D"


def _with_split(scenario: Scenario, index: int, split: tuple[int, int] | None) -> Scenario:
    tier = scenario.tiers[index]
    link = tier.disaggregation or DisaggConfig(prefill_replicas=1, decode_replicas=1)
    cfg = None
    if split is not None:
        cfg = link.model_copy(update={"prefill_replicas": split[0], "decode_replicas": split[1]})
    tiers = list(scenario.tiers)
    tiers[index] = tier.model_copy(update={"disaggregation": cfg})
    return scenario.model_copy(update={"tiers": tiers})


def compare_splits(scenario: Scenario, tier: str | None = None) -> list[SplitResult]:
    """Every split of ``tier`` (default: the first) and the aggregated tier, best first."""
    names = [t.name for t in scenario.tiers]
    index = names.index(tier) if tier is not None else 0
    count = scenario.tiers[index].replicas
    out = []
    for split in [None] + [(x, count - x) for x in range(1, count)]:
        res = run_scenario(_with_split(scenario, index, split)).to_json()
        score = max(res["ttft_p99_s"] / scenario.slo.ttft_p99_s,
                    res["tpot_p99_s"] / scenario.slo.tpot_p99_s)
        out.append(SplitResult(split[0] if split else 0, split[1] if split else 0,
                               res["ttft_p99_s"], res["tpot_p99_s"], res["ttft_p50_s"],
                               res["tpot_p50_s"], res["completed"], score))
    return sorted(out, key=lambda r: r.score)


def main(argv: list[str] | None = None) -> int:
    """Print the splits of a scenario's tier, best first."""
    parser = argparse.ArgumentParser(prog="python -m tiersim.disagg", description=__doc__)
    parser.add_argument("scenario")
    parser.add_argument("--tier", default=None)
    args = parser.parse_args(argv)
    try:
        rows = compare_splits(load_scenario(args.scenario), args.tier)
    except TiersimError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{'split':>12} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} {'TPOT p99':>9} "
          f"{'score':>6}")
    for r in rows:
        print(f"{r.label:>12} {r.ttft_p50_s:9.3f} {r.ttft_p99_s:9.3f} {r.tpot_p50_s:9.4f} "
              f"{r.tpot_p99_s:9.4f} {r.score:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
