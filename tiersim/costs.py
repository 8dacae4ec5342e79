"""The one cost ledger: what a run costs under each cost model, in total, per tier, per request.

Three ways to price a run (``price_t`` = USD per engine-replica-second of tier t, i.e. its
``tensor_parallel`` GPUs x ``cost_per_gpu_hour`` / 3600; one engine replica per data-parallel
rank):

- **provisioned**: every replica paid for the whole run, idle or not:
  ``sum_t engine_replicas_t x price_t x D`` = GPUs x $/GPU-hour x D / 3600. What you would pay
  for the fleet.
- **fixed_per_request**: the tier's ``cost_per_request_usd`` for every pass that ran (the first
  pass unless its tier refused it at admission, plus the escalation pass when it ran). What you
  would pay a provider that charges per request.
- **attributed**: busy replica time only: each iteration's duration shared among the requests in
  it by the tokens each computes (the engine's ``gpu_s``), times the price. Never more than
  provisioned; the difference is idle capacity.

The scenario's ``cost_model`` picks the headline (:attr:`Ledger.headline_usd`, per tier
:meth:`Ledger.tier_headline`, per request :func:`request_costs`); the attributed figure is always
reported beside it as "attributed". Savings and plans use the same ledger.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiersim.fleet import Fleet

COST_MODELS = ("attributed", "provisioned", "fixed_per_request")
"""The cost models a scenario may choose."""

COST_WORDS = {"attributed": "modelled busy GPU time x $/GPU-hour",
              "provisioned": "provisioned GPUs x duration x $/GPU-hour",
              "fixed_per_request": "price per request"}
"""How each cost model is described in provenance and on the command line."""


@dataclass(frozen=True)
class TierCost:
    """One tier's cost under every model (``fixed_per_request_usd`` None without a price)."""

    attributed_usd: float
    provisioned_usd: float
    fixed_per_request_usd: float | None
    passes: int


@dataclass(frozen=True)
class Ledger:
    """A run's costs: per tier and in total, under every model, and the headline model."""

    cost_model: str
    tiers: dict[str, TierCost]

    def total(self, model: str) -> float | None:
        """Total USD under ``model``; None for fixed_per_request when a tier has no price."""
        values = [getattr(t, f"{model}_usd") for t in self.tiers.values()]
        return None if any(v is None for v in values) else float(sum(values))

    @property
    def headline_usd(self) -> float | None:
        """The run's cost under its cost model."""
        return self.total(self.cost_model)

    @property
    def attributed_usd(self) -> float:
        """Busy-time cost of the run."""
        return float(sum(t.attributed_usd for t in self.tiers.values()))

    def tier_headline(self, name: str) -> float | None:
        """One tier's cost under the run's cost model."""
        return getattr(self.tiers[name], f"{self.cost_model}_usd")


def check_cost_model(cost_model: str) -> None:
    """Raise ValueError for a cost model that is not one of :data:`COST_MODELS`."""
    if cost_model not in COST_MODELS:
        raise ValueError(f"cost_model must be one of {COST_MODELS} (got {cost_model!r})")


def prices(fleet: Fleet) -> np.ndarray:
    """USD per engine-replica-second of each tier."""
    return np.array([t.usd_per_replica_second for t in fleet.tiers], dtype=np.float64)


def escalations_run(result) -> np.ndarray:
    """The tier each request escalated to, -1 where no second pass ran (a planned escalation
    whose first pass was dropped never happens; one dropped on arrival never ran)."""
    ran = np.asarray(result.escalated) & ~np.asarray(result.dropped)
    return np.where(ran, np.asarray(result.final_tier), -1)


def refused(result) -> np.ndarray:
    """Per request, whether its first tier refused it at admission (the engine's ``refused``;
    all False for a result without one)."""
    given = getattr(result, "refused", None)
    if given is None:
        return np.zeros(len(result.dropped), dtype=bool)
    return np.asarray(given, dtype=bool)


def first_pass_ran(result) -> np.ndarray:
    """Whether each request's first pass was admitted: not dropped on arrival, nor refused
    there and sent on to a cascade's escalation tier (:func:`refused`)."""
    return (~np.asarray(result.dropped) | np.asarray(result.escalated)) & ~refused(result)


def passes_run(result) -> tuple[np.ndarray, np.ndarray]:
    """Per request, the tier of its first pass that ran (or would have) and whether a second
    pass followed it: a request its first tier refused at admission and a cascade sent on ran
    one pass only, on its final tier (:func:`refused`)."""
    sent_on = refused(result)
    first = np.where(sent_on, result.final_tier, result.first_tier).astype(np.int64)
    return first, np.asarray(result.escalated, dtype=bool) & ~sent_on


def pass_counts(result, k: int) -> np.ndarray:
    """Passes each of ``k`` tiers ran: admitted first passes plus escalations into it."""
    first = np.asarray(result.first_tier, dtype=np.int64)[first_pass_ran(result)]
    second = escalations_run(result)
    return (np.bincount(first, minlength=k) + np.bincount(second[second >= 0], minlength=k))


def attributed_passes(fleet: Fleet, result) -> tuple[np.ndarray, np.ndarray]:
    """Per request, the attributed USD of its first pass and of its final (second) pass."""
    price = prices(fleet)
    first = np.asarray(result.first_tier, dtype=np.int64)
    final = np.asarray(result.final_tier, dtype=np.int64)
    return (np.asarray(result.gpu_s_first, dtype=np.float64) * price[first],
            np.asarray(result.gpu_s_final, dtype=np.float64) * price[final])


def attributed_costs(fleet: Fleet, result) -> np.ndarray:
    """USD per request: each pass's attributed replica-seconds times its tier's price."""
    a_first, a_final = attributed_passes(fleet, result)
    return a_first + a_final


def provisioned_totals(fleet: Fleet, duration_s: float) -> np.ndarray:
    """Provisioned USD per tier: engine replicas x price x duration."""
    count = np.array([t.engine_replicas for t in fleet.tiers], dtype=np.float64)
    return count * prices(fleet) * duration_s


def provisioned_costs(fleet: Fleet, result, duration_s: float) -> np.ndarray:
    """USD per request: each pass's share of its own tier's provisioned cost, in proportion to
    attributed cost (a request never pays for another tier's idle replicas; an idle tier's cost
    is carried by no request)."""
    a_first, a_final = attributed_passes(fleet, result)
    first = np.asarray(result.first_tier, dtype=np.int64)
    final = np.asarray(result.final_tier, dtype=np.int64)
    k = len(fleet.tiers)
    attributed = (np.bincount(first, weights=a_first, minlength=k)
                  + np.bincount(final, weights=a_final, minlength=k))
    provisioned = provisioned_totals(fleet, duration_s)
    per_usd = np.divide(provisioned, attributed, out=np.zeros(k), where=attributed > 0)
    return a_first * per_usd[first] + a_final * per_usd[final]


def fixed_costs(fleet: Fleet, result) -> np.ndarray:
    """USD per request: the price of each pass that ran (0 for a tier without a price)."""
    fixed = np.array([t.config.cost_per_request_usd or 0.0 for t in fleet.tiers])
    first = np.asarray(result.first_tier, dtype=np.int64)
    second = escalations_run(result)
    return (np.where(first_pass_ran(result), fixed[first], 0.0)
            + np.where(second >= 0, fixed[np.maximum(second, 0)], 0.0))


def request_costs(cost_model: str, fleet: Fleet, result, duration_s: float) -> np.ndarray:
    """USD per request under ``cost_model`` (the ``cost_usd`` column of requests.parquet)."""
    check_cost_model(cost_model)
    if cost_model == "fixed_per_request":
        return fixed_costs(fleet, result)
    if cost_model == "provisioned":
        return provisioned_costs(fleet, result, duration_s)
    return attributed_costs(fleet, result)


def ledger(cost_model: str, fleet: Fleet, result, duration_s: float) -> Ledger:
    """Every tier's cost under every model; the totals follow from it."""
    check_cost_model(cost_model)
    k = len(fleet.tiers)
    passes = pass_counts(result, k)
    provisioned = provisioned_totals(fleet, duration_s)
    tiers = {}
    for i, tier in enumerate(fleet.tiers):
        busy = float(sum(result.busy_s[tier.name]))
        price = tier.config.cost_per_request_usd
        tiers[tier.name] = TierCost(
            attributed_usd=busy * tier.usd_per_replica_second,
            provisioned_usd=float(provisioned[i]),
            fixed_per_request_usd=None if price is None else int(passes[i]) * price,
            passes=int(passes[i]),
        )
    return Ledger(cost_model=cost_model, tiers=tiers)
