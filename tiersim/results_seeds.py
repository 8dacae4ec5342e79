"""The seed check of ``tiersim plan --check-seeds`` (:mod:`tiersim.cli.plan_seeds`) in words:
the block ``tiersim plan`` prints and the plan's report shows, read from plan.json's
``seed_check``."""

from __future__ import annotations

from typing import Any

from tiersim.results_plan import NO_SEED_CHECK_WHY

CONSTRAINT_WORDS = {"ttft_p99_s": "p99 TTFT", "tpot_p99_s": "p99 TPOT",
                    "e2e_p99_s": "p99 end-to-end", "session_p99_s": "p99 task latency",
                    "accuracy": "accuracy floor", "dropped": "dropped requests",
                    "router": "router refused", "other": "a constraint"}
"""A missed constraint of the seed check, in words."""

HELD_P99S = (("e2e_p99_s", "p99 end-to-end"), ("session_p99_s", "p99 task latency"))
"""The p99s held only where their limit is set (``--slo-e2e-p99``, ``--slo-session-p99``):
the seed check's rows, its ranges, the report's table of seeds and a robust plan's rows and
worst seeds give each only then, in this order after TTFT and TPOT (a plan without them reads
as before)."""


DEFAULT_CHECK_SEEDS = 3
"""Seeds ``tiersim plan`` checks its fleet at unless ``--check-seeds`` says otherwise (0: none).
Three cost about 3% of the plan's search time on ``plan_default.yaml`` and 15% on
``default.yaml`` (docs/planning.md, "Checking the plan at other seeds")."""

NO_SEED_CHECK = dict(zip(NO_SEED_CHECK_WHY, (
    f"leave --check-seeds out to check the fleet at {DEFAULT_CHECK_SEEDS} more seeds",
    f"lower its seed to check the fleet at {DEFAULT_CHECK_SEEDS} more seeds"), strict=True))
"""Why a plan was checked at no other seed (plan.json ``seed_check_none``), each with what to
do for a check: ``--check-seeds 0`` typed, or a scenario at the largest seed, where the default
has no seed to check (:func:`tiersim.cli.plan_seeds.check_count`)."""


def unchecked_lines(why: str | None) -> list[str]:
    """The line ``tiersim plan`` prints where the seed check's block would be when none was run
    (``why``: plan.json's ``seed_check_none``, a key of :data:`NO_SEED_CHECK`), the report's
    "At other seeds" block the same: a plan checked at no other seed read like one that held at
    every seed. Nothing where ``why`` is None (seeds were checked, or no fleet was planned)."""
    if why is None:
        return []
    return [f"  seed check: none ({why}): every figure above is at the scenario's seed alone, "
            "whose draws (the router's fit, each request's correctness) can decide the plan; "
            f"{NO_SEED_CHECK[why]}"]


def seed_check_lines(check: dict | None, current: dict | None = None) -> list[str]:
    """The seed check as ``tiersim plan`` prints it (one block, after the plan's lines); none
    without one. ``current``: plan.json's ``current`` (today's fleet at the plan's seed), for
    the line on today's fleet at every seed (:func:`today_line`)."""
    from tiersim.results_accuracy import accuracy_name
    from tiersim.results_figures import figure_text, percent_text
    from tiersim.results_savings import basis_words, share_text

    if not check:
        return []
    seeds = check["seeds"]
    n, met = len(seeds), check["met_seeds"]
    others = seeds[1:]
    lines = [f"  seed check ({check['source']}; seed {check['planned_seed']} planned, "
             f"seed{'s' * (len(others) > 1)} {_seed_list(others)} checked):",
             f"    meets the SLOs{_and_floor(check)} at {len(met)} of {n} seeds"
             + (f" ({_seed_list(met)})" if met else "")]
    r = check["ranges"]
    figures = [f"p99 TTFT {_range(r['ttft_p99_s'], lambda v: figure_text(v, ' s'))}",
               f"p99 TPOT {_range(r['tpot_p99_s'], lambda v: figure_text(v, ' s'))}",
               *(f"{name} {_range(r[key], lambda v: figure_text(v, ' s'))}"
                 for key, name in HELD_P99S if key in r),
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
        if span is not None and len(met) < n:  # a fleet missing a constraint: no like saving
            shown += (f", comparable at seed{'s' * (len(met) > 1)} {_seed_list(met)} only (the "
                      "fleet misses a constraint at the others)" if met
                      else ", comparable at no seed (the fleet misses a constraint at each)")
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
        lines.append(f"    {what}: {where} (`tiersim plan --robust` sizes for every seed "
                     "checked)")
    return lines + today_line(check, current) + rejected_lines(check)


def today_line(check: dict, current: dict | None) -> list[str]:
    """Today's fleet at every seed of the check (plan.json's ``seed_check.current`` at the
    checked seeds, ``current`` at the plan's), as the plan's own line gives its fleet's: "today's
    fleet (bf16 2 x 1 GPU) meets the SLOs at 3 of 4 seeds (0, 1, 2); p99 TPOT missed at seed
    3". Nothing without today's fleet, or under ``--robust`` (its figures are then the worst
    over the seeds already)."""
    from tiersim.results_plan import MARGIN_ORDER

    today = check.get("current")
    if not today or not current:
        return []
    planned = check["planned_seed"]
    holds = current.get("meets_slos") and current.get("meets_floor") is not False
    met = ([planned] if holds else []) + list(today.get("met_seeds") or [])
    n = len(check["seeds"])
    missed: dict[str, list[int]] = {}
    if not holds:  # the plan's seed: its figures are plan.json current's
        for key in _current_missed(current):
            missed.setdefault(key, []).append(planned)
    for row in today.get("per_seed") or []:
        for key in row.get("missed") or []:
            missed.setdefault(key, []).append(row["seed"])
    from tiersim.results_current import fleet_words  # its split named, as its own line does

    fleet = fleet_words(current)
    order = [*MARGIN_ORDER, "router", "other"]  # as the plan prints its margins
    where = "; ".join(f"{CONSTRAINT_WORDS.get(k, k)} missed at seed{'s' * (len(v) > 1)} "
                      f"{_seed_list(sorted(v))}" for k, v in sorted(
                          missed.items(), key=lambda kv: order.index(kv[0])
                          if kv[0] in order else len(order)))
    return [f"    today's fleet ({fleet}) meets the SLOs{_and_floor(check)} at {len(met)} of {n} "
            f"seeds" + (f" ({_seed_list(met)})" if met else "") + (f"; {where}" if where else "")]


def _current_missed(current: dict) -> list[str]:
    """The constraints today's fleet missed at the plan's seed: plan.json ``current``'s
    ``missed_keys``; in a plan.json written before them (round 56), read out of ``missed``'s
    words, which name each by its key first ("ttft_p99_s 0.334 vs limit 0.3; accuracy 79.2% <
    floor 80.0%": :func:`tiersim.plan.constraints._missed`). "other" for a key the seed
    check has no words for, or where neither names one."""
    keys = current.get("missed_keys")
    if not isinstance(keys, list):
        keys = [part.split(" ")[0] for part in (current.get("missed") or "").split("; ") if part]
    keys = [k if k in CONSTRAINT_WORDS else "other" for k in keys]
    return list(dict.fromkeys(keys)) or ["other"]


def rejected_lines(check: dict) -> list[str]:
    """The seed check's lines on the fleets the plan turned away at its seed that rank before
    the plan or its saving's baseline (plan.json's ``seed_check.rejected``:
    :func:`tiersim.cli.plan_seeds.rejected_check`): one line for each that meets every
    constraint at some seed checked, saying the choice hinges on the plan's seed (where that
    fleet costs what the one it would replace costs, that the fleet hinges but the saving does
    not), then one line
    naming those that miss at every seed checked too; none where there is none."""
    from tiersim.results_savings import basis_words

    found = check.get("rejected") or []
    if not found:
        return []
    planned, checked = check["planned_seed"], len(check["seeds"]) - 1
    per = basis_words(check.get("saving_basis"), 0.0)
    base = check.get("baseline_uniform_tier")
    held = f"the SLOs{_and_floor(check)}"
    lines, still = [], []
    for r in found:
        role = r.get("ranks_before")
        than = "the plan" if role == "plan" else f"uniform {base}"
        gap = r.get("dearer_than_plan_frac" if role == "plan" else "dearer_than_baseline_frac")
        name = _fleet_name(r, "" if gap is None else f", {_cheaper(gap, per)} {than}")
        met = r.get("met_seeds") or []
        if not met:
            still.append(name)
            continue
        missed = ", ".join(CONSTRAINT_WORDS.get(k, k) for k in r.get("missed_at_planned_seed")
                           or [])
        where = (f"every seed checked ({_seed_list(met)})" if len(met) == checked else
                 f"{len(met)} of {checked} seeds checked ({_seed_list(met)})")
        what = "the choice of plan" if role == "plan" else "the saving's baseline"
        if gap == 0:  # the same price as the fleet it would replace: the fleet hinges, not the
            # saving (a tie on what is paid, ranked first by the tie's rules)
            fleets, which = (("fleets", "planned") if role == "plan" else
                             ("uniform fleets", "the saving's baseline"))
            hinge = (f"which of two {fleets} of the same cost{per} is {which} hinges on seed "
                     f"{planned}'s draws; the saving{per} does not")
        else:
            hinge = f"{what} hinges on seed {planned}'s draws"
        line = (f"    {name} was turned away at seed {planned} ({missed} missed) but "
                f"meets {held} at {where}: {hinge}")
        if role == "baseline":
            spans = [x["vs_fleet_frac"] for x in r.get("per_seed") or []
                     if x.get("seed") in met and x.get("vs_fleet_frac") is not None]
            if spans:
                line += f"; against it {_plan_against(spans, per)} there"
        lines.append(line + " (`tiersim plan --robust` sizes every fleet for every seed "
                     "checked)")
    if still:
        lines.append(f"    turned away at seed {planned} and missing at every seed checked too: "
                     + "; ".join(still))
    return lines


def _plan_against(spans: list[float], per: str = "") -> str:
    """The plan's saving against a fleet at the seeds where that fleet meets every constraint
    (``spans``, one share a seed; ``per``: " per hour" or ""), worded as the plan's own saving
    line words one (:func:`tiersim.results_savings.saving_verdict`): "the plan saves 5.00 %",
    "the plan costs 75.0 % more" (a baseline-only fleet cheaper than the plan; it read "saves
    -75.0 %"), "the plan costs the same", and a span across 0 as the signed saving."""
    from tiersim.results_savings import share_text, without_noise

    low, high = without_noise(min(spans)), without_noise(max(spans))

    def span(a: float, b: float) -> str:
        shown_a, shown_b = share_text(a), share_text(b)
        return shown_a if shown_a == shown_b else f"{shown_a} to {shown_b}"

    if low == high == 0:
        return f"the plan costs the same{per}"
    if low >= 0:
        return f"the plan saves {span(low, high)}{per}"
    if high <= 0:
        return f"the plan costs {span(-high, -low)} more{per}"
    return f"the plan's saving{per} is {span(low, high)}"


def _fleet_name(r: dict, after: str = "") -> str:
    """A rejected fleet of the seed check by name and size, ``after`` inside the brackets:
    ``uniform fp8 (3 x 1 GPU, 10.0 % cheaper per hour than the plan)``, ``fp8+bf16 (fp8 1 x 1
    GPU + bf16 2 x 1 GPU)``."""
    replicas, gpus = r.get("replicas") or {}, r.get("gpus_per_replica") or {}
    tiers = [t for t in r.get("tiers") or [] if t in replicas] or list(replicas)
    if len(tiers) == 1:
        t = tiers[0]
        return f"uniform {r.get('design')} ({replicas[t]} x {gpus.get(t, '?')} GPU{after})"
    sizes = " + ".join(f"{t} {replicas[t]} x {gpus.get(t, '?')} GPU" for t in tiers)
    return f"{r.get('design')} ({sizes}{after})"


def _cheaper(gap: float, per: str = "") -> str:
    """A cost gap (``theirs / other - 1``; ``per``: " per hour" or "") in words, before the
    other fleet's name: ``10.0 % cheaper per hour than``, ``2.00 % dearer than``, ``at the
    same cost per hour as`` (a tie on what is paid, ranked first by the tie's rules)."""
    from tiersim.results_savings import share_text

    if gap == 0:
        return f"at the same cost{per} as"
    return f"{share_text(abs(gap))} {'cheaper' if gap < 0 else 'dearer'}{per} than"


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


ROBUST_FIGURES = (("ttft_p99_s", "p99 TTFT"), ("tpot_p99_s", "p99 TPOT"), *HELD_P99S,
                  ("accuracy", None), ("cost_usd", "cost of the trace"))
"""The worst figures a robust plan's line names the seed of, in its order (the accuracy named
as the plan names it, by its basis; an end-to-end or task p99 only where its rows give it)."""


def robust_lines(robust: dict | None, floor: float | None, basis: str | None = None
                 ) -> list[str]:
    """``tiersim plan --robust``'s lines (plan.json's ``robust``): the seeds every design was
    sized for and, with a plan, which seed gave each worst figure the plan states, then what
    is not a worst figure: a tier's request count is the most any seed sent it (the counts
    need not add up), and the planned run written beside the plan is the plan's own seed's;
    none without ``--robust``."""
    from tiersim.results_accuracy import accuracy_name

    if not robust:
        return []
    seeds = _seed_list(robust["seeds"])
    held = _and_floor({"accuracy_floor": floor})
    head = (f"  robust (--robust): sized for seeds {seeds}, each design and uniform fleet held "
            f"to the SLOs{held} at every one")
    where, rows = robust.get("worst_seed"), robust.get("per_seed")
    if not rows or not where:
        return [f"{head}; none met them at every seed"]
    moved, same = [], []
    for key, name in ROBUST_FIGURES:
        if key in dict(HELD_P99S) and key not in rows[0]:  # its limit not set: not held
            continue
        label = name or accuracy_name(basis)
        if len({r.get(key) for r in rows}) == 1:
            same.append(label)
        elif where.get(key) is not None:
            moved.append(f"{label} at seed {where[key]}")
    same.append("USD/hour")
    alike = " and ".join([", ".join(same[:-1]), same[-1]] if len(same) > 1 else same)
    counts = ("each tier's requests (plan.json per_tier) are the most any seed sent it, so "
              "the tiers' counts need not add up to the trace's (each seed's shares: "
              "robust.per_seed); " if len(rows[0].get("shares") or {}) > 1 else "")
    return [f"{head}; figures are the worst over them: "
            + "; ".join(x for x in (", ".join(moved), f"{alike} the same at every seed") if x),
            f"  robust (--robust): {counts}the planned run --out writes (summary.json, the "
            f"report's run sections) is seed {robust.get('planned_seed', robust['seeds'][0])}'s "
            "alone, its uniform baselines sized at that seed only"]


def robust_saving_words(robust: dict | None, saving: dict) -> str | None:
    """Which runs a ``--robust`` saving over the trace compares, as ``tiersim plan``'s saving
    line ends and the report's saving table says it: each fleet's cost is its costliest seed's
    run (as the designs are ranked, :func:`tiersim.plan.robust.worst_outcome`), so the saving
    can set the plan's run at one seed against the baseline's at another; the words name both
    seeds, and where the plan saves less against the baseline's run at one seed, that least
    saving and its seed (plan.json ``robust.baseline_cost_seed``, ``least_saving_seed``,
    ``least_saving_frac``). None without ``--robust``, per hour (one USD/hour at every seed:
    no seed to name) and in a plan.json written before round 57."""
    from tiersim.results_plan import baseline_design
    from tiersim.results_savings import PER_HOUR, saving_verdict

    if not robust or saving.get("saving_basis") == PER_HOUR or "baseline_cost_seed" not in robust:
        return None
    mine, theirs = (robust.get("worst_seed") or {}).get("cost_usd"), robust["baseline_cost_seed"]
    name = baseline_design(saving)
    runs = (f"the plan's costliest run against {name}'s, both at seed {mine}" if mine == theirs
            else f"the plan's costliest run (seed {mine}) against {name}'s (seed {theirs})")
    least = robust.get("least_saving_frac")
    said, shown = saving_verdict(least, None)
    if least is None or (said, shown) == saving_verdict(saving.get("vs_uniform_frac"), None):
        return f"under --robust, {runs}"
    at = f"at seed {robust.get('least_saving_seed')}"
    alone = (f"it costs the same {at}" if said == "same" else f"it costs {shown} more {at}"
             if said == "costs" else f"it saves {shown} at least ({at.removeprefix('at ')})")
    return f"under --robust, {runs}; against {name}'s run at the same seed {alone}"
