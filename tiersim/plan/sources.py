"""Where a plan's latency and cost figures come from (plan.json ``sources``), in the words a
run's summary.json ``sources`` uses for its own: the step times of every tier at every GPU
count a design was simulated on (:func:`tiersim.summary.source_label`, with the scenario's own
numbers latency rests on beside them, :func:`tiersim.summary.latency_assumptions`), and the
cost model with the prices it reads (:data:`tiersim.costs.COST_WORDS`).

Before, plan.json named where each design's accuracy comes from (``plan.accuracy_sources``)
and said nothing of its latencies and costs; the planned run's summary.json did.
"""

from __future__ import annotations

from typing import Any

from tiersim import costs
from tiersim.results import as_given

PER_HOUR_WORDS = "provisioned GPUs x $/GPU-hour"
"""What every design's ``cost_per_hour_usd`` is, whatever the plan's cost model: the fleet's
GPUs x USD per GPU-hour (the provisioned ledger of :data:`tiersim.costs.COST_WORDS`, per
hour)."""


def plan_sources(evaluator) -> dict[str, str]:
    """plan.json ``sources`` of a plan searched by ``evaluator`` (a
    :class:`tiersim.plan.evaluate.SimEvaluator`, or one per seed under ``--robust``, which
    answers for its first): ``latency``, ``cost`` and ``cost_per_hour``, each in words."""
    built = [
        (name, gpus, evaluator.built(name, gpus)) for name, gpus in simulated_layouts(evaluator)
    ]
    built = [layout for layout in built if layout[2] is not None]  # every simulated one is
    tiers = [evaluator.by_name[name] for name in dict.fromkeys(name for name, _, _ in built)]
    return {
        "latency": latency_words(built),
        "cost": cost_words(evaluator.cost_model, tiers),
        "cost_per_hour": gpu_hour_words(PER_HOUR_WORDS, tiers),
    }


def simulated_layouts(evaluator) -> list[tuple[str, int]]:
    """Every (tier, GPUs per replica) a simulated design ran, in the scenario's order of tiers
    (baseline-only tiers last), then by GPU count."""
    rank = {name: k for k, name in enumerate(evaluator.by_name)}
    found = {
        (name, design.gpus(name)) for design, _ in evaluator.simulated() for name in design.tiers
    }
    return sorted(found, key=lambda layout: (rank[layout[0]], layout[1]))


def latency_words(layouts: list[tuple[str, int, Any]]) -> str:
    """ "simulated, step times from fp8: public measured (6 ops) + roofline (1 op); bf16: ..."
    for built tiers given as (tier, GPUs per replica, built tier), as ``tiersim plan``'s last
    lines say them. A tier whose step times come from different sources at different GPU
    counts is named at each, as plan.json labels designs (``fp8@2``); "simulated" alone where
    no design was simulated."""
    said: dict[str, list[tuple[int, str]]] = {}
    for name, gpus, built in layouts:
        said.setdefault(name, []).append((gpus, step_words(built)))
    parts = []
    for name, words in said.items():
        if len({w for _, w in words}) == 1:
            parts.append(f"{name}: {words[0][1]}")
        else:
            parts += [f"{name if g == 1 else f'{name}@{g}'}: {w}" for g, w in words]
    return "simulated, step times from " + "; ".join(parts) if parts else "simulated"


def step_words(built) -> str:
    """Where one built tier's step times come from: its operator tables' sources, then the
    scenario's numbers its latency rests on (speculative acceptance, offload bandwidths, a
    prefill-to-decode link), joined by " + " as ``tiersim plan`` prints them."""
    from tiersim.summary import latency_assumptions, source_label  # it imports the runner

    return " + ".join([source_label(built), *latency_assumptions([built])])


def cost_words(cost_model: str, tiers) -> str:
    """A ledger in words with the scenario's prices it reads, per tier: "provisioned GPUs x
    duration x $/GPU-hour at fp8 3.5, bf16 3.5 USD per GPU-hour (the scenario's
    cost_per_gpu_hour)"; under ``fixed_per_request`` each tier's ``cost_per_request_usd``;
    the ledger alone with no tier (no design simulated)."""
    if not tiers:
        return costs.COST_WORDS[cost_model]
    if cost_model == "fixed_per_request":
        prices = ", ".join(f"{t.name} {as_given(t.cost_per_request_usd)}" for t in tiers)
        return (
            f"{costs.COST_WORDS[cost_model]} at {prices} USD (the scenario's cost_per_request_usd)"
        )
    return gpu_hour_words(costs.COST_WORDS[cost_model], tiers)


def gpu_hour_words(ledger: str, tiers) -> str:
    """``ledger`` at each tier's USD per GPU-hour: "... at fp8 3.5, bf16 3.5 USD per GPU-hour
    (the scenario's cost_per_gpu_hour)"; ``ledger`` alone with no tier."""
    if not tiers:
        return ledger
    prices = ", ".join(f"{t.name} {as_given(t.cost_per_gpu_hour)}" for t in tiers)
    return f"{ledger} at {prices} USD per GPU-hour (the scenario's cost_per_gpu_hour)"
