"""``tiersim plan``'s answer in a few lines of text (:func:`format_plan`): the chosen design,
its saving against the sized uniform fleets, and what each other design missed.
"""

from __future__ import annotations

from tiersim.errors import setting_written
from tiersim.results import (
    PlanResult,
    as_given,
    baseline_design,
    by_planned_tier,
    design_verdict,
    figure_text,
    in_margin_order,
    source_words,
    whose_p99,
)
from tiersim.results_figures import MARGIN_SOURCE
from tiersim.results_savings import split_words


def _num(value, pattern: str | None = None) -> str:
    """A figure for a line of text as ``tiersim run`` prints one and the report shows it
    (:func:`~tiersim.results.figure_text`: 3 significant figures), else by ``pattern``; '-'
    when missing."""
    if pattern is None or value is None:
        return figure_text(value)
    return pattern.format(value)


def format_plan(result: PlanResult, quality=None) -> str:
    """The plan in a few lines of text: the chosen design, its router settings (a plan of
    ``--choose router.cascade.threshold=0.3,0.5,0.7`` did not say which it chose), its saving
    against the sized uniform fleets, and what each other design missed. Its figures are
    plan.json's (read back from what it writes), as the report's are: a cost of
    3.3905000000000003 USD, 3.3905 there, reads 3.39 in both, not 3.391 here; to 3
    significant figures, as ``tiersim run`` and the report print them (the limits as
    given). ``quality``: the planned fleet's run's router quality
    (:class:`tiersim.results.RouterQuality`), for the line on a router no better than chance
    (:func:`_chance_line`)."""
    result = PlanResult.from_json(result.to_json())
    from tiersim.results_plan_lines import time_words

    head = time_words(result.simulations, result.wall_s, result.seed_check, result.current,
                      result.splits)
    chosen = result.plan
    from tiersim.results_seeds import robust_lines

    floor = result.constraints.get("accuracy_floor")
    if not chosen:
        from tiersim.results_current import current_lines

        return "\n".join([f"no fleet meets the constraints ({head}): {result.reason}",
                          *robust_lines(result.robust, floor),
                          *current_lines(result.current, result.constraints)])
    sizes = ", ".join(f"{t}={r}x{chosen.get('gpus_per_replica', {}).get(t, 1)} GPU"
                      f"{split_words(r, _prefill(chosen, t), _techniques(chosen, t))}"
                      for t, r in by_planned_tier(chosen, "replicas"))
    over = _over_words(chosen.get("duration_s"), result.robust)
    lines = [f"plan ({head}): {chosen.get('design')}: {sizes}; cost "
             f"{_num(chosen.get('cost_usd'))} USD ({chosen.get('cost_model', '-')}){over}, "
             f"{_num(chosen.get('cost_per_hour_usd'))} USD/hour provisioned "
             "(GPUs x USD/GPU-hour)"]
    lines += robust_lines(result.robust, floor,
                          (chosen.get("accuracy_sources") or {}).get("basis"))
    for name, m in in_margin_order(chosen.get("margins") or {}):
        if name != "accuracy":  # on its own line, with its source
            whose = whose_p99(m).removesuffix(")") or " ("  # "(tier bf16's own p99; modelled)"
            lines.append(f"  {name}: {_num(m.get('value'))} vs limit "
                         f"{as_given(m.get('limit'))}{whose}{'; ' * (whose != ' (')}"
                         f"{MARGIN_SOURCE})")
    lines.append(_accuracy_line(chosen))
    if chosen.get("router"):  # the settings chosen (--choose), as the report's plan table
        settings = sorted(chosen["router"].items(), key=lambda kv: (kv[0] != "policy", kv[0]))
        lines.append("  router: " + ", ".join(f"{k} {setting_written(v)}" for k, v in settings))
    lines += _floor_above_accuracy(chosen, result)
    saving = chosen.get("savings") or {}
    if saving.get("baseline_uniform_tier") is not None:
        lines.append(_saving_line(saving, result.robust))
    lines += _chance_line(quality, saving)
    lines += _baseline_accuracy(chosen, result)  # a month of it, and its cost in accuracy
    from tiersim.results_current import current_lines

    lines += current_lines(result.current, result.constraints)
    for tier, check in by_planned_tier(chosen, "one_fewer"):
        lines.append(f"  one fewer {tier}: {check.get('verdict')}")
    lines += _tiers_over_slo(chosen, result.constraints, result.robust)
    for other in result.runners_up:
        lines.append(_runner_up_line(other))
    said = (chosen.get("accuracy_sources") or {}).get("source")
    saving = chosen.get("savings") or {}
    lines += [_uniform_line(other, saving) + source_words(other, said)
              for other in result.uniform]
    lines += _p99_lines(chosen, result)
    e2e = result.constraints.get("e2e_p99_s")
    limits = (result.constraints.get("ttft_p99_s"), result.constraints.get("tpot_p99_s"), e2e)
    for split in result.splits:  # scored as `tiersim disagg` scores them, a dropping one starred
        from tiersim.metrics import DROP_STAR_WORDS, plan_split_score, split_drops
        from tiersim.results_plan_lines import split_score_words

        table = "; ".join(f"{r['label']} score {plan_split_score(r, limits)}"
                          for r in split["splits"])
        star = f"; {DROP_STAR_WORDS}" if any(map(split_drops, split["splits"])) else ""
        covers = split_score_words(result.constraints, chosen)
        lines.append(f"  {split['tier']} split: {split['chosen']['label']} (of {table}; "
                     f"{covers}{star})")
    from tiersim.results_seeds import seed_check_lines

    lines += seed_check_lines(result.seed_check, result.current)
    return "\n".join(lines)


def _over_words(span, robust: dict | None) -> str:
    """What the plan's cost is of (fresh55a: "cost 4.84 USD" of what?): " over the run's
    347 s", whole seconds from 10 s, below that 3 significant figures (a 0.71 s run read "1
    s"). Under ``--robust`` where the seeds' runs differ in cost or length, the seed whose run
    it is, the costliest (:func:`tiersim.plan.robust.worst_outcome`): " over seed 4's run of
    29 s (the costliest seed's)"; before round 56 the cost was the costliest seed's and the
    length the longest seed's, two runs on one line. "" without a length."""
    if not isinstance(span, int | float):
        return ""
    length = f"{span:,.0f}" if span >= 10 else _num(span)
    rows = (robust or {}).get("per_seed") or []
    seed = ((robust or {}).get("worst_seed") or {}).get("cost_usd")
    pairs = {(r.get("cost_usd"), r.get("duration_s")) for r in rows}
    if seed is None or len(pairs) < 2 or any(r.get("duration_s") is None for r in rows):
        return f" over the run's {length} s"  # one run (or a plan.json before round 56)
    return f" over seed {seed}'s run of {length} s (the costliest seed's)"


def _baseline_accuracy(chosen: dict, result: PlanResult) -> list[str]:
    """The plan's saving a month and accuracy against its saving's baseline
    (:func:`tiersim.results_plan_lines.baseline_line`, as the report gives it), then its
    accuracy per difficulty class against the baseline's (:func:`~tiersim.results_plan_lines.
    class_line`), indented; none where it has none."""
    from tiersim.results_plan_lines import baseline_line, class_line, task_line

    lines = [baseline_line(chosen, result.uniform, result.current, result.hours_per_month),
             class_line(chosen, result.uniform),  # and the accuracy per difficulty class
             task_line(chosen, result.uniform)]  # and task success, with agent sessions
    return ["  " + line for line in lines if line is not None]


def _p99_lines(chosen: dict, result: PlanResult) -> list[str]:
    """The plan's p99 line (:func:`tiersim.results_plan_lines.p99_line`, as the report gives
    it), indented; none where it has none."""
    from tiersim.results_plan_lines import p99_line

    line = p99_line(chosen, result.uniform, result.constraints)
    return [] if line is None else ["  " + line]


def _runner_up_line(other: dict) -> str:
    """One runner-up design: its label, its replicas and GPUs per tier where it was sized
    (:func:`tiersim.fleet_sizes.sized_words`: "nvfp4 3 x 1 GPU + fp8 2 x 1 GPU", as the
    plan's line gives its own; "nvfp4 3 + fp8 2 replicas" from a plan.json without the GPUs;
    where it met no size, the last tried), and what it missed or how it compares with the
    plan. Before, a runner-up gave replicas alone beside the plan's "nvfp4=3x1 GPU". A sized
    runner-up also names the router setting it was judged under
    (:func:`tiersim.fleet_sizes.router_words`), as the plan's ``router:`` line does."""
    from tiersim.fleet_sizes import router_words, sized_words

    size = sized_words(other, " replicas", gpus=True)
    router = router_words(other)
    sized = "" if size is None else f" ({size}{'' if router is None else '; ' + router})"
    return f"  runner-up {other.get('design')}{sized}: {other.get('missed')}"


def _prefill(design: dict, tier: str) -> int | None:
    """The prefill replicas of ``tier``'s split in a plan.json design (``per_tier.<tier>.prefill``),
    None where the tier runs aggregated."""
    return ((design.get("per_tier") or {}).get(tier) or {}).get("prefill")


def _techniques(design: dict, tier: str) -> str | None:
    """The serving techniques ``tier`` ran in a plan.json design (``per_tier.<tier>.techniques``:
    ``spec decode k=3``), None where it runs none."""
    return ((design.get("per_tier") or {}).get(tier) or {}).get("techniques")


def _split_after(replicas: int, prefill: int | None, techniques: str | None = None) -> str:
    """``, nP mD`` and ``, spec decode k=3`` after a size already in brackets; ``""`` for an
    aggregated tier run plainly."""
    split = "" if prefill is None else f", {prefill}P {replicas - prefill}D"
    return split + ("" if techniques is None else f", {techniques}")


def _uniform_line(other: dict, saving: dict | None = None) -> str:
    """One sized uniform fleet: its size, its verdict and its cost; the cost of a fleet that
    misses a constraint at every size (the last size tried is shown) is no baseline, and one
    never sized (no GPU count it may use loads, or its router fails) has no size to show. A
    uniform fleet keeps its tier's serving settings, so a disaggregated one shows the split it
    was sized at ("uniform fp8 (4 x 1 GPU, 2P 2D)"; ``tiersim run`` and the report show the
    split too): before, it read "4 x 1 GPU", as if aggregated, beside the plan's own split.
    The GPU counts its tier was not sized at for a refused layout follow a sized fleet's size
    in its brackets (:func:`tiersim.results_plan_lines.left_out_words`, as the report's row
    gives them beside its size; an unsized fleet's reason already names its refusal). The
    fleet the plan's ``saving`` is against says its gap on the saving's basis too
    (:func:`tiersim.results_plan_lines.baseline_gap_words`)."""
    from tiersim.results_plan_lines import baseline_gap_words, left_out_words

    replicas, gpus = other.get("replicas") or {}, other.get("gpus_per_replica") or {}
    if not replicas:
        return f"  uniform {other.get('design')}: {other.get('missed')}; not sized, so no baseline"
    size = ", ".join(f"{replicas[t]} x {gpus.get(t, '?')} GPU"
                     f"{_split_after(replicas[t], _prefill(other, t), _techniques(other, t))}"
                     for t in replicas)
    left = left_out_words(other)
    size += "" if left is None else f"; {left}"
    if other.get("feasible", True):
        return (f"  uniform {other.get('design')} ({size}): "
                f"{design_verdict(other)}{baseline_gap_words(other, saving or {})}, "
                f"cost {_num(other.get('cost_usd'))} USD")
    return (f"  uniform {other.get('design')} ({size}): {other.get('missed')}; "
            f"cost at that size {_num(other.get('cost_usd'))} USD, no baseline")


def _accuracy_line(chosen: dict) -> str:
    """The chosen design's accuracy line (:func:`tiersim.results_plan_lines.accuracy_line`, as
    the report gives it), indented."""
    from tiersim.results_plan_lines import accuracy_line

    return "  " + accuracy_line(chosen)


def _floor_above_accuracy(chosen: dict, result: PlanResult) -> list[str]:
    """The plan's floor note (:func:`tiersim.results_plan_lines.floor_notes`, as the report
    gives it), indented."""
    from tiersim.results_plan_lines import floor_notes

    return ["  " + line for line in floor_notes(chosen, result.constraints, result.uniform)]


def _chance_line(quality, saving: dict) -> list[str]:
    """A line where the planned fleet's router has a realised AUROC whose 95% interval (DeLong's)
    takes in 0.5 (:meth:`~tiersim.results.RouterQuality.chance_text`): its choices are no
    better than chance on this trace, so the plan's saving is that of a split no better than a
    random one meeting the floor; with the plan's figure against a static split of equal
    accuracy where it has one. fresh54's floor router read 0.514 (0.478 - 0.549) beside a plan
    quoting 41.7 % saved, and no line said so; none where the interval leaves 0.5 out. With
    fewer than 100 requests of a class, "no verdict on chance" and why
    (:meth:`~tiersim.results.RouterQuality.too_few_words`), as the AUROC asked is given no
    verdict from the same interval (review55: the two read one interval by two rules)."""
    from tiersim.results import basis_words, saving_verdict
    from tiersim.results_savings import costs_more, mix_words

    text = quality.chance_text() if quality is not None else None
    if text is None:
        return []
    few = quality.too_few_words()  # the asked AUROC's rule: no verdict under 100 of a class
    verdict = ("its choices are no better than chance on this trace" if few is None
               else f"no verdict on chance: {few}")
    line = f"  router: its realised AUROC, {text}, has 0.5 inside its 95% CI: {verdict} (modelled)"
    frac, usd = saving.get("vs_static_split_frac"), saving.get("vs_static_split_usd")
    verdict, shown = saving_verdict(frac, usd)
    if shown is not None:
        per = basis_words(saving.get("saving_basis"), frac)
        mix = mix_words(saving.get("static_split_mix"))
        split = f"a static split of equal accuracy{f' ({mix})' if mix else ''}"
        line += "; the plan " + (f"costs the same{per} as {split}" if verdict == "same" else
                                 f"{costs_more(shown, per)} than {split}" if verdict == "costs"
                                 else f"saves {shown}{per} against {split}")
    return [line]


def _saving_line(saving: dict, robust: dict | None = None) -> str:
    """The plan's saving against the cheapest sized uniform fleet, in words: "saves", or
    "costs ... more than" where the plan is the dearer, by the share on the plan's basis, or
    against a free baseline (no share) by the USD gap over the trace. Before, a plan dearer
    than a free baseline read "saves -16 USD (the baseline costs 0 USD: no percentage)". A
    share of 0 (:func:`~tiersim.results.without_noise`) "costs the same as": it read "saves 0
    %", and a share of -5e-12 "costs 0 % more". Under ``--robust`` over the trace, the seeds
    of the two runs it compares (:func:`tiersim.results_seeds.robust_saving_words`)."""
    from tiersim.results import basis_words, saving_verdict
    from tiersim.results_savings import costs_more
    from tiersim.results_seeds import robust_saving_words

    frac = saving.get("vs_uniform_frac")
    # to 3 figures, as tiersim run prints a saving and the report shows this one, and as a
    # runner-up's "% dearer than the plan" reads (the words tiersim run and the report use for
    # a dearer fleet: tiersim.results.dearer_words)
    verdict, shown = saving_verdict(frac, saving.get("vs_uniform_usd"))
    per = basis_words(saving.get("saving_basis"), frac)  # as the plan is ranked
    words = (f"costs the same{per} as" if verdict == "same" else f"{costs_more(shown, per)} than"
             if verdict == "costs" else f"saves {shown}{per} against")
    drain = f" ({saving['drain_gap']})" if saving.get("drain_gap") else ""
    seeds = robust_saving_words(robust, saving)
    return (f"  {words} the cheapest sized uniform fleet ({baseline_design(saving)}), "
            f"simulated{drain}{'' if seeds is None else f'; {seeds}'}")


def _tiers_over_slo(chosen: dict, constraints: dict, robust: dict | None = None) -> list[str]:
    """The plan's tier-over-SLO lines (:func:`tiersim.results_plan_lines.tiers_over_slo`, as
    the report gives them), indented."""
    from tiersim.results_plan_lines import tiers_over_slo

    return ["  " + line for line in tiers_over_slo(chosen, constraints, robust)]
