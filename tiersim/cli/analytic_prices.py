"""The prices ``tiersim analytic`` puts in the closed form: c0 and dc from the flags, or as
``tiersim run`` prices a scenario's tiers (each tier's uniform fleet sized by simulation,
:func:`_prices`), and the scenario's cheapest uniform fleet at the floor in those units
(:func:`_fleet_uniform`, :func:`_uniform_at_floor`).
"""

from __future__ import annotations

from tiersim.analytic import TwoType


def _fleet_uniform(cost_model: str, runs: dict, scored: tuple, floor: float,
                   model: tuple) -> tuple[str | None, float | None, list[str]]:
    """The scenario's cheapest uniform fleet meeting the SLOs and ``floor``, of every tier's
    sized fleet (``runs``, by name; baseline-only tiers included), chosen as ``tiersim run``
    chooses its baseline (:func:`tiersim.savings.cheapest_uniform`, each fleet's accuracy on
    the run's basis: ``scored`` is the served table, every tier's info and that basis): (its
    tier, its cost in the model's units, the tiers it was chosen among), tier and cost None
    where none meets the floor. ``model``: the compared pair, c0 and dc (:func:`_model_cost`)."""
    from tiersim.savings import cheapest_uniform, same_basis

    fleets = same_basis(list(runs.values()), *scored)
    base = cheapest_uniform(cost_model, fleets, floor)
    among = [u.tier for u in fleets]
    if base is None:
        return None, None, among
    return base.tier, _model_cost(cost_model, base, runs, *model), among


def _model_cost(cost_model: str, fleet, runs: dict, pair, c0: float, dc: float) -> float:
    """A sized uniform fleet's cost in the closed form's units (:func:`tiersim.summary.
    two_tier_prices`): c0 and c0 + dc for the compared pair, else its cost over the workload,
    or under provisioned costs (a cheap fleet paid per hour) c0 scaled by its price per hour
    over the cheap fleet's, as dc is."""
    if fleet.tier == pair[0].name:
        return c0
    if fleet.tier == pair[1].name:
        return c0 + dc
    cheap = runs[pair[0].name].cost_per_hour_usd
    if cost_model == "provisioned" and cheap and fleet.cost_per_hour_usd is not None:
        return c0 + c0 * (fleet.cost_per_hour_usd / cheap - 1.0)
    return float(fleet.cost_usd)


def _uniform_at_floor(at_floor: dict, model: TwoType, est: dict, pick) -> dict:
    """``at_floor`` naming its cheapest uniform fleet (:func:`tiersim.analytic.with_uniform`):
    the scenario's, of every tier (``pick``, :func:`_fleet_uniform`), where the scenario priced
    them all; else the cheaper of the two compared tiers meeting the floor, named as such. Its
    static split is the model's, of the two compared tiers (``static_split_tiers``)."""
    from tiersim.analytic import with_uniform

    at_floor = {**at_floor, "static_split_tiers": [est["cheap"], est["top"]]}
    if pick is not None:
        tier, cost, among = pick
        return with_uniform(at_floor, tier, cost, among, every=True)
    cost = at_floor["uniform_cost"]
    tier = None if cost is None else est["cheap"] if cost == model.c0 else est["top"]
    return with_uniform(at_floor, tier, cost, [est["cheap"], est["top"]], every=False)


def _prices(scn, served, pair, source: str, given: tuple, est: dict) -> tuple:
    """c0, dc and every tier's sized uniform fleet by name: the flags' (``given``; no fleets),
    else the scenario's as run prices them (``served``: its fleet, the requests its tiers serve
    and the least the run lasts), else 1 for a bare trace (no fleets). Says in ``est`` which
    units they are in (``costs``, ``per``), which were assumed, and the run's ``note`` where
    the scenario's prices leave no trade to model."""
    c0, dc = given
    runs = None
    est["costs"] = "costs per request, as --c0 and --dc give them"
    if scn is None and (dc is None or c0 is None):  # a bare trace has no prices
        est["assumed"] = ", ".join(f"{k} = 1" for k, v in (("c0", c0), ("dc", dc)) if v is None)
        est["costs"] = "costs per request in the units of --c0 and --dc"
    if scn is not None and dc is None and c0 is None:  # one alone is refused: mixed units
        priced, runs = _scenario_prices(scn, *served, pair, source)
        # provisioned: each fleet's USD/hour on the cheap fleet's duration (the report's dc
        # says so); before, a uniform fleet's 38.1542 here read against 38.0, its own run's cost
        hourly = (f": each fleet's USD/hour on all {pair[0].name}'s duration"
                  if scn.cost_model == "provisioned" else "")
        est["costs"] = (f"costs in USD of all requests on uniform fleets sized by simulation "
                        f"({scn.cost_model} cost{hourly}), as tiersim run prices them, "
                        f"{_step_words(served[0], pair)}")
        est["per"] = "USD over the workload"
        if priced.note is not None:
            est["note"] = priced.note
        c0, dc = priced.c0, priced.dc
    return (1.0 if c0 is None else c0), (1.0 if dc is None else dc), runs


def _step_words(fleet, pair) -> str:
    """Where the sized fleets' latencies come from, as ``tiersim run`` says it: "step times
    from fp8: public measured (6 ops) + ...; bf16: ..." for the two compared tiers."""
    from tiersim.summary import source_label

    names = [t.name for t in pair]
    return "step times from " + "; ".join(f"{t.name}: {source_label(t)}" for t in fleet.tiers
                                          if t.name in names)


def _scenario_prices(scn, fleet, df, end_s: float, pair, source: str):
    """c0 and dc as ``tiersim run`` prices them (:func:`tiersim.summary.two_tier_prices`):
    each tier's uniform fleet sized by simulation on ``df`` and costed in the scenario's cost
    model; with the run's note where there is no trade to model (a fleet meeting the SLOs at
    no size, or the top tier not dearer). Also every tier's sized fleet, by name."""
    from tiersim.savings import sized_uniform_runs
    from tiersim.summary import gpu_hour_prices, two_tier_prices

    uniform = {u.tier: u for u in sized_uniform_runs(scn, source, fleet, df, end_s)}
    return two_tier_prices(scn.cost_model, uniform, pair, gpu_hour_prices(scn)), uniform
