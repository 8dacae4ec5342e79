"""``tiersim plan --check-seeds N``: whether the planned fleet, and the saving quoted for it,
hold at other seeds (:func:`check_seeds`), and that check in a few lines of text
(:func:`seed_check_lines`).

A plan is sized at the scenario's ``seed``; the seed draws the correctness of each request on
each tier, the router's training and calibration sample (the floor router fits its cuts on it)
and its own draws. A routed saving sized at one seed may not survive another: the floor
router's share to the cheaper tier moves with its calibration sample's accuracy estimate. The
check simulates the planned fleet (the planned scenario.yaml with only ``seed`` changed) and the
uniform fleet its saving is quoted against, at each of seeds ``seed + 1 .. seed + N``, with the
plan's own evaluator (:class:`tiersim.plan.evaluate.SimEvaluator`, which wires a run as
:func:`tiersim.runner.run_scenario` does), and holds them to the plan's constraints as the plan
held its designs (:func:`tiersim.plan.constraints.margins`). Nothing is sized again.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from tiersim.errors import Note

DEFAULT_CHECK_SEEDS = 3
"""Seeds ``tiersim plan`` checks its fleet at unless ``--check-seeds`` says otherwise (0: none).
Three cost about 3% of the plan's search time on ``plan_default.yaml`` and 15% on
``default.yaml`` (docs/planning.md, "Checking the plan at other seeds")."""

SOURCE = ("modelled: simulated by the plan's evaluator, the planned scenario with only its "
          "seed changed")
"""Where every figure of the seed check comes from, as plan.json's ``seed_check.source`` and
the printed block say it."""

CONSTRAINT_WORDS = {"ttft_p99_s": "p99 TTFT", "tpot_p99_s": "p99 TPOT",
                    "accuracy": "accuracy floor", "dropped": "dropped requests"}
"""A missed constraint of the seed check, in words."""


LARGEST_SEED = 2**63 - 1
"""The largest ``seed`` a scenario takes (:class:`tiersim.scenario_models.Scenario`)."""


def check_count(scenario, count: int, source: str) -> None:
    """Refuse, before the search, a ``--check-seeds`` whose last seed is past the largest seed a
    scenario takes (the scenario's ``seed`` + ``count``): found after the search, it stopped a
    plan minutes in."""
    from tiersim.errors import TiersimError

    if count and scenario.seed + count > LARGEST_SEED:
        raise TiersimError(f"--check-seeds {count}: {source} has seed {scenario.seed}, and seed "
                           f"{scenario.seed} + {count} is past the largest seed, {LARGEST_SEED}; "
                           f"give at most --check-seeds {LARGEST_SEED - scenario.seed}")


def check_seeds(scenario, result, source: str, max_replicas: int | None, count: int
                ) -> dict[str, Any] | None:
    """plan.json's ``seed_check``: the plan's fleet and its saving's uniform baseline at the
    plan's seed (its own figures) and simulated at each of the ``count`` seeds after it; None
    with ``count`` 0 or no plan. ``scenario`` is the scenario planned (its cost model the
    plan's), ``max_replicas`` the limit the plan sized under (written into the planned
    scenario as :func:`tiersim.cli.plan.write_plan` writes it)."""
    from tiersim.cli.plan_scenario import planned_doc
    from tiersim.plan.constraints import Constraints

    chosen = result.plan
    if not count or chosen is None:
        return None
    c = Constraints(**result.constraints)
    doc = planned_doc(scenario, result, max_replicas)  # the scenario.yaml the plan writes
    saving = chosen.get("savings") or {}
    base = _baseline(result, saving.get("baseline_uniform_tier"))
    same = base is not None and base["replicas"] == chosen["replicas"] \
        and base["gpus_per_replica"] == chosen["gpus_per_replica"]
    t0 = time.perf_counter()
    rows = [_planned_row(scenario.seed, chosen, base, result.cost_model)]
    for k in range(1, count + 1):
        rows.append(_seed_row(scenario, doc, source, scenario.seed + k, c, base, same,
                              result.cost_model))
    return {**_summary(rows, chosen, base, same, saving),
            "accuracy_basis": (chosen.get("accuracy_sources") or {}).get("basis"),
            "accuracy_floor": c.accuracy_floor, "wall_s": time.perf_counter() - t0}


def _baseline(result, tier: str | None) -> dict[str, Any] | None:
    """The plan's uniform fleet of ``tier`` (the one its saving is quoted against), or None."""
    if tier is None:
        return None
    for other in result.uniform:
        if list(other.get("replicas") or {}) == [tier]:
            return other
    return None


def _planned_row(seed: int, chosen: dict, base: dict | None, cost_model: str | None) -> dict:
    """The plan's own seed, from the plan's figures (simulated by the search)."""
    from tiersim.results import paid_share

    row = {"seed": seed, "planned": True, "ttft_p99_s": chosen.get("ttft_p99_s"),
           "tpot_p99_s": chosen.get("tpot_p99_s"), "accuracy": chosen.get("accuracy"),
           "dropped": chosen.get("dropped"),
           "missed": [k for k, m in _ordered(chosen.get("margins") or {}) if not m.get("met")],
           "shares": _shares(chosen.get("per_tier") or {})}
    if base is not None:  # chosen as the baseline for meeting every constraint there
        row["baseline_missed"] = []
        row["vs_uniform_frac"] = paid_share(cost_model, (chosen["cost_usd"],
                                                         chosen["cost_per_hour_usd"]),
                                            (base["cost_usd"], base["cost_per_hour_usd"]))
    return row


def _seed_row(scenario, doc: dict, source: str, seed: int, c, base: dict | None, same: bool,
              cost_model: str | None) -> dict:
    """The planned fleet (and the saving's baseline) simulated at ``seed``."""
    from tiersim.plan.constraints import margins
    from tiersim.plan.evaluate import Design, SimEvaluator
    from tiersim.results import paid_share
    from tiersim.scenario import scenario_from_dict

    with warnings.catch_warnings():  # the plan's own notes again, once a seed: said already
        warnings.simplefilter("ignore", Note)
        seeded = scenario_from_dict(as_searched_seed(doc, scenario, seed), source)
        evaluator = SimEvaluator(seeded, source, cost_model=cost_model)
        evaluator.slo = (c.ttft_p99_s, c.tpot_p99_s)  # a split chosen as the plan chose it
        design = Design(tuple(t.name for t in seeded.tiers),
                        tuple(t.gpus_per_replica for t in seeded.tiers))
        o = evaluator.evaluate(design, {t.name: t.replicas for t in seeded.tiers})
        row = {"seed": seed, "ttft_p99_s": o.ttft_p99_s, "tpot_p99_s": o.tpot_p99_s,
               "accuracy": o.accuracy, "dropped": o.dropped,
               "missed": [k for k, m in _ordered(margins(o, c)) if not m["met"]],
               "shares": _shares({n: {"requests": t.requests} for n, t in o.tiers.items()})}
        if base is None:
            return row
        if same:  # the plan is its own baseline: nothing more to simulate
            b = o
        else:
            tier = next(iter(base["replicas"]))
            b = evaluator.evaluate(Design((tier,), (base["gpus_per_replica"][tier],)),
                                   dict(base["replicas"]))
    row["baseline_missed"] = [k for k, m in _ordered(margins(b, c)) if not m["met"]]
    row["vs_uniform_frac"] = paid_share(cost_model, (o.cost_usd, o.cost_per_hour_usd),
                                        (b.cost_usd, b.cost_per_hour_usd))
    return row


def as_searched_seed(doc: dict, scenario, seed: int) -> dict:
    """The planned scenario ``doc`` at ``seed``, its trace named as the search read it
    (:func:`tiersim.cli.plan_scenario.as_searched`)."""
    from tiersim.cli.plan_scenario import as_searched

    return as_searched({**doc, "seed": seed}, scenario)


def _ordered(margins: dict) -> list[tuple[str, Any]]:
    """A map by constraint in the order the plan prints its margins (TTFT, TPOT, drops,
    accuracy: :data:`tiersim.results.MARGIN_ORDER`)."""
    from tiersim.results import in_margin_order

    return in_margin_order(margins)


def _shares(per_tier: dict) -> dict[str, float]:
    """Each tier's share of the requests routed to it."""
    total = sum(int(t.get("requests") or 0) for t in per_tier.values())
    return {n: int(t.get("requests") or 0) / total for n, t in per_tier.items()} if total else {}


def _span(values: list) -> list | None:
    """[min, max] of the known ``values``; None when none is known."""
    known = [v for v in values if v is not None]
    return [min(known), max(known)] if known else None


def _summary(rows: list[dict], chosen: dict, base: dict | None, same: bool,
             saving: dict) -> dict[str, Any]:
    """plan.json's ``seed_check`` from its rows: counts, ranges and where it failed."""
    met = [r["seed"] for r in rows if not r["missed"]]
    failed: dict[str, list[int]] = {}
    for r in rows:
        for key in r["missed"]:
            failed.setdefault(key, []).append(r["seed"])
    failed_list = [{"constraint": k, "seeds": v} for k, v in _ordered(failed)]
    tiers = list(chosen.get("tiers") or [])
    out: dict[str, Any] = {
        "source": SOURCE,
        "seeds": [r["seed"] for r in rows],
        "planned_seed": rows[0]["seed"],
        "design": chosen.get("design"),
        "tiers": tiers,
        "met_seeds": met,
        "failed": failed_list,
        "ranges": {key: _span([r.get(key) for r in rows])
                   for key in ("ttft_p99_s", "tpot_p99_s", "accuracy", "vs_uniform_frac")},
        "share_ranges": ({t: _span([r["shares"].get(t) for r in rows]) for t in tiers}
                         if len(tiers) > 1 else {}),
        "per_seed": rows,
        "baseline_uniform_tier": None if base is None else next(iter(base["replicas"])),
        "baseline_is_plan": same,
        "saving_basis": saving.get("saving_basis"),
    }
    if base is not None:
        out["baseline_met_seeds"] = [r["seed"] for r in rows if not r["baseline_missed"]]
    return out


def seed_check_lines(check: dict | None) -> list[str]:
    """The seed check as ``tiersim plan`` prints it (one block, after the plan's lines); none
    without one."""
    from tiersim.results import accuracy_name, basis_words, figure_text, percent_text, share_text

    if not check:
        return []
    seeds = check["seeds"]
    n, met = len(seeds), check["met_seeds"]
    others = seeds[1:]
    lines = [f"  seed check ({check['source']}; seed {check['planned_seed']} planned, "
             f"seeds {_seed_list(others)} checked):",
             f"    meets the SLOs{_and_floor(check)} at {len(met)} of {n} seeds"
             + (f" ({_seed_list(met)})" if met else "")]
    r = check["ranges"]
    figures = [f"p99 TTFT {_range(r['ttft_p99_s'], lambda v: figure_text(v, ' s'))}",
               f"p99 TPOT {_range(r['tpot_p99_s'], lambda v: figure_text(v, ' s'))}",
               f"{accuracy_name(check.get('accuracy_basis'))} "
               f"{_range(r['accuracy'], lambda v: percent_text(v, 2))}"]
    figures += [f"{t} share {_range(span, lambda v: percent_text(v, 1))}"
                for t, span in share_ranges(check)]
    lines.append("    " + ", ".join(figures) + _undrawn(check))
    tier = check.get("baseline_uniform_tier")
    if tier is not None and not check.get("baseline_is_plan"):
        span = r.get("vs_uniform_frac")
        per = basis_words(check.get("saving_basis"), 0.0)
        shown = "-" if span is None else _range(span, share_text)
        if span is not None and share_text(span[0]) == share_text(span[1]):
            shown += " at every seed"
        base_met = check.get("baseline_met_seeds") or []
        lines.append(f"    saving{per} against uniform {tier} {shown}; uniform {tier} meets "
                     f"the SLOs{_and_floor(check)} at {len(base_met)} of {n} seeds")
    failed = check.get("failed") or []
    if failed:
        what = ("the saving is not robust to the router's / classifier's draws"
                if tier is not None and not check.get("baseline_is_plan")
                else "the fleet is not robust to the seed's draws")
        where = "; ".join(f"{CONSTRAINT_WORDS.get(f['constraint'], f['constraint'])} missed "
                          f"at seed{'s' * (len(f['seeds']) > 1)} {_seed_list(f['seeds'])}"
                          for f in failed)
        lines.append(f"    {what}: {where}")
    return lines


def _undrawn(check: dict) -> str:
    """Words after the figures where every seed's p99 TTFT and TPOT are the same to the bit:
    the seed draws nothing those depend on (a uniform router, no speculative decoding), so
    "meets the SLOs at 4 of 4 seeds" is one run's verdict four times, not evidence of
    robustness (a KV offload plan read as if checked against the seed's draws)."""
    rows = check.get("per_seed") or []
    if len(rows) < 2 or any(len({r.get(k) for r in rows}) != 1 or rows[0].get(k) is None
                            for k in ("ttft_p99_s", "tpot_p99_s")):
        return ""
    return (" (the same p99s at every seed: no draw the seed makes moves this fleet's latency, "
            "so the other seeds check nothing about it)")


def _and_floor(check: dict) -> str:
    """`` and the accuracy floor`` where the plan has one."""
    return "" if check.get("accuracy_floor") is None else " and the accuracy floor"


def share_ranges(check: dict) -> list[tuple[str, Any]]:
    """A seed check's ``share_ranges`` as (tier, range) pairs in the planned design's order of
    tiers (``tiers``): plan.json writes its maps with sorted keys, so the report, read from it,
    listed bf16's share before fp8's where the plan printed fp8's first."""
    ranges = check.get("share_ranges") or {}
    order = [t for t in check.get("tiers") or [] if t in ranges]
    return [(t, ranges[t]) for t in [*order, *(t for t in ranges if t not in order)]]


def _seed_list(seeds: list[int]) -> str:
    """``1, 2, 3``."""
    return ", ".join(str(s) for s in seeds)


def _range(span: list | None, show) -> str:
    """``min-max`` (one figure where they print alike); '-' when unknown."""
    if span is None:
        return "-"
    low, high = show(span[0]), show(span[1])
    return low if low == high else f"{low} to {high}"
