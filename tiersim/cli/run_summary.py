"""``tiersim run``'s summary on the terminal (:func:`print_summary`): the headline numbers, the
per-tier table, the savings and the notes on where the step times come from, each number with
its source. The tables read the typed :class:`~tiersim.results.RunResult`, never string keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tiersim.results import figure_text, slo_attainment_label, tier_slo_notes
from tiersim.results_figures import p99_words as p99_words  # tests import it from here

if TYPE_CHECKING:
    from tiersim.results import RunResult, SavingsResult


def print_summary(result: RunResult, out: Path | None, report: bool = False) -> None:
    """Print the headline numbers, the per-tier table and the savings, each with its source."""
    from rich.console import Console

    from tiersim.errors import escaped
    from tiersim.fidelity import describe as describe_check

    console = Console(width=max(Console().width, 100), markup=False)  # names are text
    console.print(headline_table(result))
    line = quality_line(result)
    if line is not None:
        console.print(line)
    console.print(tier_table(result))
    for line in tier_slo_notes(result) + model_lines(result):
        console.print(line)
    console.print(describe_check(result.profile.checked))
    for line in prefix_lines(result) + prefix_source_lines(result) + spec_lines(result):
        console.print(line)
    if result.savings is not None and result.savings.method == "simulated":
        print_whole(console, baseline_table(result))
    for extra_table in agentic_tables(result):
        console.print(extra_table)
    if out is not None:
        extra = ", report.html" if report else ""
        console.print(f"wrote {escaped(out)}/requests.parquet, summary.json, "
                      f"timeseries.parquet, scenario.yaml, manifest.json{extra}")


def print_whole(console, table) -> None:
    """Print ``table`` on ``console``, on a console as wide as its narrowest layout where that
    is wider: rich fits a table wider than the console by shrinking its one column that wraps
    to nothing and cutting the rest at the edge. The uniform fleets table, all of whose columns
    but the accuracy are kept whole, needs 105 columns for three tiers' "1 x 1 + 1 x 1 + 1 x 1"
    and 113 for four: at the console's 100, ``routing``'s table read "USD/h" and "the scena"
    with no right edge, and ``plan_default``'s had no accuracy column at all."""
    from rich.console import Console
    from rich.measure import Measurement

    from tiersim.cli.width import MAX_COLUMNS

    need = Measurement.get(console, console.options.update(width=MAX_COLUMNS), table).minimum
    if need <= console.width:
        console.print(table)
        return
    Console(width=min(need, MAX_COLUMNS), markup=False, file=console.file).print(table)


fmt = figure_text
"""A number for the table: :func:`tiersim.results.figure_text`, the one formatter of a figure
the console, a plan's lines and the planner's words share."""


def _request_counts(r: RunResult) -> str:
    """The trace's requests, completed and dropped by the fleet, and those the response cache
    answered (the fleet's figures cover the others)."""
    counts = f"{r.requests:,} ({r.completed:,} / {r.dropped:,})"
    cache = r.response_cache
    if cache is None:
        return counts
    return (f"{cache.requests:,} ({r.completed:,} / {r.dropped + cache.unanswered:,}; "
            f"{cache.hits:,} answered by the response cache)")


def headline_table(r: RunResult):
    """Fleet-wide numbers: value and where each comes from."""
    from rich.table import Table

    from tiersim.results import (
        ATTRIBUTED_WORDS,
        E2E_SLO_WORDS,
        GPU_HOURS_WORDS,
        PER_HOUR_WORDS,
        SESSION_SLO_WORDS,
    )

    latency, cost, acc = r.sources.latency, r.sources.cost, r.sources.accuracy
    scope = r.served_scope
    table = Table(title=f"tiersim run: {r.scenario}", title_justify="left")
    for col in ("metric", "value", "source"):
        table.add_column(col)
    rows = [
        ("requests (completed / dropped)", _request_counts(r), r.sources.requests),
        ("duration", fmt(r.duration_s, " s"), r.duration_source),
        (f"TTFT p50 / p99{scope}", f"{fmt(r.ttft_p50_s, ' s')} / {fmt(r.ttft_p99_s, ' s')}",
         latency),
        (f"TPOT p50 / p99{scope}", f"{fmt(r.tpot_p50_s, ' ms', 1e3)} / "
         f"{fmt(r.tpot_p99_s, ' ms', 1e3)}", latency),
        (f"end-to-end p99{scope}", fmt(r.e2e_p99_s, " s"), latency),
        *([] if r.slo_e2e_p99_s is None else [
            ("end-to-end p99 SLO", fmt(r.slo_e2e_p99_s, " s"), E2E_SLO_WORDS)]),
        *([] if r.slo_session_p99_s is None else [
            ("task latency p99 SLO", fmt(r.slo_session_p99_s, " s"), SESSION_SLO_WORDS)]),
        (f"{slo_attainment_label(r.slo_session_p99_s)}{scope}", fmt(r.slo_attainment, " %", 100),
         latency),
        (f"throughput{scope}", fmt(r.throughput_tok_s, " output tok/s"), latency),
        (f"cost ({r.cost_model})", fmt(r.cost_usd, " USD"), cost),
        ("attributed (busy GPU time only)", fmt(r.attributed_cost_usd, " USD"),
         ATTRIBUTED_WORDS),
        (f"cost per 1M output tokens{scope}", fmt(r.cost_per_1m_output_tokens, " USD"), cost),
        *([] if r.cost_per_hour_usd is None else [  # a summary written before it has none
            ("cost per hour (provisioned)", fmt(r.cost_per_hour_usd, " USD/hour"),
             PER_HOUR_WORDS)]),
        ("GPU-hours provisioned", fmt(r.gpu_hours), GPU_HOURS_WORDS),
        (f"{r.accuracy_label}{scope}",
         r.accuracy_text(lambda v: fmt(v, " %", 100, digits=4)), acc),
        *class_rows(r, acc),
        *router_rows(r, acc, r.routing_source()),
    ]
    for row in rows:
        table.add_row(*row)
    return table


def class_rows(r: RunResult, accuracy_source: str) -> list[tuple[str, str, str]]:
    """One row: the accuracy per difficulty class, the uniform baseline's beside it
    (:func:`tiersim.results.classes_line`), on the run's basis and source; none where the
    requests have no class."""
    from tiersim.results import classes_line

    base = None if r.savings is None else r.savings.baseline_uniform_tier
    line = classes_line(r.accuracy_by_class, base, lambda v: fmt(v, " %", 100, digits=4))
    if line is None:
        return []
    return [(f"{r.accuracy_label} by difficulty class{r.served_scope}", line, accuracy_source)]


def router_rows(r: RunResult, accuracy_source: str,
                routing_source: str | None = None) -> list[tuple[str, str, str]]:
    """The router's error rates (judged on ``routing_source``, default ``accuracy_source``),
    the floor, and the routed cost against the cheapest adequate uniform tier (an estimate
    says so and is never the headline)."""
    router = r.router
    refused = ("" if router.escalation_refused_rate is None else
               f" ({fmt(router.escalation_refused_rate, ' %', 100)} refused by the first tier)")
    rows = [(
        f"router ({router.policy}): FPR / FNR / escalated",
        f"{fmt(router.fpr, ' %', 100)} / {fmt(router.fnr, ' %', 100)} / "
        f"{fmt(router.escalation_rate, ' %', 100)}{refused}",
        f"this run's routing, scored on {routing_source or accuracy_source}",
    )]
    counts = router.counts_text()
    if counts is not None:
        rows.append((router.COUNTS_LABEL, counts, rows[0][2]))
    if router.accuracy_floor is not None:
        met = {True: "met", False: "MISSED", None: "-"}[router.floor_met]
        from tiersim.results import floor_digits

        digits = floor_digits(router.accuracy_floor, router.accuracy, 3)
        rows.append((f"accuracy floor {fmt(router.accuracy_floor, ' %', 100, digits=digits)}",
                     f"{met} (95% CI {router.interval_text(lambda v: fmt(v, ' %', 100))})",
                     accuracy_source))
    saving = r.savings
    if saving is not None and saving.baseline_uniform_tier is not None:
        rows.append(saving_row(saving, r.missed_words()))
    elif (why := r.no_baseline_words()) is not None:
        cache_answered_all = bool(saving.uniform) and r.requests == 0
        name = "estimated saving" if saving.estimated and not cache_answered_all else "saved"
        rows.append((f"{name} vs uniform", "-", why))
    return rows


def quality_line(r: RunResult) -> str | None:
    """The router's realised AUROC and FPR / FNR on the replayed trace beside what the
    scenario asked (:meth:`tiersim.results.RouterQuality.line`); None for a summary written
    before it was kept."""
    router = r.router
    if router.quality is None:
        return None
    rates = f"{fmt(router.fpr, ' %', 100)} / {fmt(router.fnr, ' %', 100)}"
    return router.quality.line(rates, r.routing_source())


def saving_row(saving: SavingsResult, missed: str | None = None) -> tuple[str, str, str]:
    """The routed cost against the cheapest adequate uniform tier: not comparable when the run's
    fleet missed what its baselines are held to (simulated or estimated alike, as the report
    says; ``missed``: that in words, with its figures, :meth:`RunResult.missed_words`), an
    estimate labelled as one, a free baseline's gap in USD."""
    from tiersim.results_savings import SIMULATED_WORDS, estimate_label, saving_text

    name = "estimated saving" if saving.estimated else "saved"
    label = f"{name} vs uniform {saving.baseline_uniform_tier}"
    if not saving.comparable:
        return (label, "not comparable", f"this fleet misses {missed or saving.missed}, the "
                "uniform fleets are held to them; size this one with tiersim plan")
    # a dearer fleet "costs 5.00 % more", as tiersim plan words it; on its basis, as it ranks
    value = saving_text(saving.vs_uniform_frac, saving.vs_uniform_usd, saving.saving_basis,
                        estimate_label(saving.estimated, saving.priced_per_request))
    if saving.priced_per_request:  # exact costs: labelled as such, not "(estimate)"
        return (label, value, f"fixed_per_request; {saving.PRICED_WORDS}")
    if saving.estimated:
        return (label, value,
                "estimate: per-token attributed cost, not simulated (--baselines simulates)")
    drain = f" ({saving.drain_gap})" if saving.drain_gap else ""  # as tiersim plan says it
    return (label, value, f"{saving.cost_model}; {SIMULATED_WORDS}{drain}")


def baseline_table(r: RunResult):
    """Each uniform fleet (every request on one tier), sized by simulation, against the routed
    run, in the run's cost model; where the run has agent sessions, each fleet's task success
    beside its per-request accuracy (what routing costs a task, not only a request)."""
    from rich.table import Table

    from tiersim.results import fleet_size
    from tiersim.results_savings import TASK_SUCCESS_COLUMN

    saving = r.savings
    said = r.uniform_accuracy_words()
    table = Table(title=f"uniform fleets, sized by simulation (cost {saving.cost_model}; "
                        f"{r.floor_words()}{'' if said is None else f'; {said}'})",
                  title_justify="left", caption_justify="left",
                  caption="\n".join([*(f"all {b.tier} is infeasible: {b.infeasible}"
                                        for b in saving.uniform if b.infeasible),
                                      *filter(None, [p99_line(r)])]) or None)
    routed = " + ".join(fleet_size(t.replicas, t.gpus_per_replica, t.prefill_replicas,
                                   t.techniques) for t in r.tiers)
    rows = [(r.fleet_label(), routed)]
    rows += [(f"all {b.tier}", b.size()) for b in saving.uniform]
    for k, col in enumerate(("fleet", "replicas x GPUs")):  # names and sizes whole
        table.add_column(col, no_wrap=True, min_width=max(len(row[k]) for row in [(col, col),
                                                                                   *rows]))
    for col in ("meets SLOs", "meets floor"):
        table.add_column(col, no_wrap=True, min_width=len(col))
    # the accuracy's name ("accuracy (realised draws)") wraps where the console is narrow
    table.add_column(r.accuracy_label, min_width=len("100.00 %"))
    tasks = r.sessions is not None  # agent tasks: each fleet's task success beside it
    if tasks:
        table.add_column(TASK_SUCCESS_COLUMN, no_wrap=True, min_width=len(TASK_SUCCESS_COLUMN))
    table.add_column("cost USD", no_wrap=True, min_width=len("cost USD"))
    hourly = saving.shows_rates
    if hourly:  # the rates a saving per hour compares, beside the costs over the run
        table.add_column("USD/hour", no_wrap=True, min_width=len("USD/hour"))
    met = {True: "yes", False: "no", None: "-"}
    for b in saving.uniform:
        table.add_row(f"all {b.tier}", b.size(), met[b.slo_met], met[saving.meets_floor(b)],
                      fmt(b.accuracy, " %", 100, digits=4),
                      *([fmt(b.task_success, " %", 100, digits=4)] if tasks else []),
                      fmt(b.cost_usd),
                      *([fmt(b.cost_per_hour_usd)] if hourly else []))
    table.add_row(r.fleet_label(), routed, met[saving.routed_slo_met],
                  met[saving.routed_floor_met], fmt(saving.accuracy, " %", 100, digits=4),
                  *([fmt(r.sessions.task_success, " %", 100, digits=4)] if tasks else []),
                  fmt(saving.routed_cost_usd),
                  *([fmt(saving.routed_cost_per_hour_usd)] if hourly else []))
    return table


def p99_line(r: RunResult) -> str | None:
    """The uniform fleets' p99 TTFT and TPOT beside the routed fleet's, what a planner gives
    up or gains in latency for the saving (None where no uniform fleet was sized by
    simulation: an estimate, or none met the SLOs)."""
    sized = [(f"all {b.tier}", b.ttft_p99_s, b.tpot_p99_s, b.e2e_p99_s, b.session_p99_s)
             for b in r.savings.uniform if b.ttft_p99_s is not None]
    if not sized:
        return None
    task = None if r.sessions is None else r.sessions.task_latency_p99_s
    pairs = [*sized, (r.fleet_label(), r.ttft_p99_s, r.tpot_p99_s, r.e2e_p99_s, task)]
    return p99_words(pairs, r.slo_ttft_p99_s, r.slo_tpot_p99_s, r.slo_e2e_p99_s,
                     r.slo_session_p99_s)


def agentic_tables(r: RunResult) -> list:
    """Per-task figures next to per-request ones, step types, and the response cache."""
    from rich.table import Table

    from tiersim.report.agentic import (
        cache_rows,
        cache_source,
        session_rows,
        session_source,
        step_type_rows,
        step_type_source,
    )

    out = []
    for title, cols, rows, source in (
        ("agentic tasks: per request vs per task", ("figure", "per request", "per task", "unit"),
         session_rows(r), session_source),
        ("step types", ("step type", "steps", "accuracy", "final tiers"), step_type_rows(r),
         step_type_source),
        ("response cache: this run vs the same run without it",
         ("figure", "with cache", "without", "unit"), cache_rows(r), cache_source),
    ):
        if not rows:
            continue
        table = Table(title=title, title_justify="left", caption=f"source: {source(r)}",
                      caption_justify="left")
        for col in cols:
            table.add_column(col)
        for row in rows:
            table.add_row(*(v if isinstance(v, str) else fmt(v) for v in row))
        out.append(table)
    return out


def prefix_lines(r: RunResult) -> list[str]:
    """Per tier with prefix caching: prompt tokens found cached, per cache level, and the
    unbounded-cache bound (why, where it is 0: :func:`~tiersim.report.agentic.bound_words`);
    with offload levels, how many passes loaded their offloaded prefix
    blocks and how many recomputed them (the load-or-recompute rule)."""
    from tiersim.report.agentic import bound_words

    lines = []
    for t in r.tiers:
        if t.prefix_hit_rate is None:
            continue
        levels = ", ".join(f"{name} {fmt(v, ' %', 100)}"
                           for name, v in (t.prefix_hit_by_level or {}).items())
        line = (f"prefix cache {t.name}: {fmt(t.prefix_hit_rate, ' %', 100)} of prompt "
                f"tokens ({levels}); unbounded cache {fmt(t.prefix_hit_bound, ' %', 100)}"
                f"{bound_words(t.prefix_hit_bound)}")
        if t.offload_loads is not None:
            line += (f"; offloaded prefixes {fmt(t.offload_loads)} loaded, "
                     f"{fmt(t.offload_recomputes)} recomputed")
            if t.offload_recomputes:
                line += (f" (link slower than prefill; {fmt(t.prefix_recompute_rate, ' %', 100)} "
                         f"of prompt tokens)")
        lines.append(line)
    return lines


def spec_lines(r: RunResult) -> list[str]:
    """Per speculative tier, its realised draws (:meth:`~tiersim.results.TierResult.spec_text`):
    tokens per verify step beside the formula's, and the share of drafted tokens accepted."""
    return [f"speculative decoding {t.name}: {t.spec_text()}" for t in r.tiers
            if t.spec_text() is not None]


def prefix_source_lines(r: RunResult) -> list[str]:
    """Under the prefix-cache lines, where their figures come from (none without them)."""
    from tiersim.report.agentic import prefix_source

    if all(t.prefix_hit_rate is None for t in r.tiers):
        return []
    return [f"prefix cache source: {prefix_source(r)}"]


def model_lines(r: RunResult) -> list[str]:
    """Per tier, what tiersim read from its model's config (tiersim's catalogue, or the
    config.json and its digest's first 12 hex digits): parameters, weights per GPU at the
    tier's layout and formats, KV-cache bytes per token per GPU and the KV dtype (none for a
    summary written before they were recorded). A model path is shown with its control and
    format characters escaped (a folder name is the user's text)."""
    from tiersim.errors import escaped

    lines = []
    for t in r.tiers:
        read = t.model_read
        if read is None:
            continue
        active = ("" if read.active_params == read.params else
                  f" ({fmt(read.active_params, ' billion', 1e-9)} active)")
        lines.append(
            f"model of {t.name}: {escaped(t.model or r.model)} ({read.source_words(12)}): "
            f"{fmt(read.params, ' billion', 1e-9)} parameters{active}; weights "
            f"{fmt(read.weights_per_gpu_gb, ' GB')} per GPU ({read.formats_words}); KV cache "
            f"{fmt(read.kv_bytes_per_token, ' bytes')} per token per GPU ({read.kv_dtype})")
    return lines


UTIL_FOOTNOTE = "util = share of time a replica runs steps, however full: not headroom"
"""The tier table's footnote on its util column (docs/metrics.md, ``utilization``): a step
counts whole whatever its batch, so a replica near 100% may have room for many more."""


TIER_FIGURES_WORDS = "p99s, util and KV peak simulated on the step times below"
"""Where the tier table's latency, utilization and KV figures come from, in its title, as the
report's per-tier caption says it: its caption's step times ("TTFT p99 0.306 s" and "KV peak
4.85 %" had a source only for their step times, a line below, and none for the KV figure)."""


def tier_table(r: RunResult):
    """Per-tier numbers, with each tier's step-time source."""
    from rich.table import Table

    from tiersim.errors import escaped

    passes = r.passes_differ()
    e2e = any(t.e2e_p99_s is not None for t in r.tiers)  # held (slo.e2e_p99_s): each tier's
    said = "; reqs = answered there, passes = run there" if passes else ""
    table = Table(title=f"tiers (cheapest first; {TIER_FIGURES_WORDS}; cost $ = {r.cost_model}, "
                  f"attrib. $ = busy GPU time{said})", title_justify="left")
    table.add_column("tier", overflow="fold")  # a long name folds; a number is never cut
    for col in ("reqs", *(("passes",) if passes else ()), "share", "TTFT p99", "TPOT p99",
                *(("e2e p99",) if e2e else ()), "util", "KV peak", "cost $", "attrib. $"):
        table.add_column(col, no_wrap=True, min_width=len(col))
    for t in r.tiers:
        table.add_row(
            escaped(t.label), fmt(t.requests), *((fmt(t.passes),) if passes else ()),
            fmt(t.share, " %", 100),
            fmt(t.ttft_p99_s, " s"), fmt(t.tpot_p99_s, " ms", 1e3),
            *((fmt(t.e2e_p99_s, " s"),) if e2e else ()), fmt(t.utilization, " %", 100),
            fmt(t.kv_peak_frac, " %", 100),
            fmt(t.cost_usd), fmt(t.attributed_cost_usd),
        )
    steps = "; ".join(f"{t.name}: {t.step_time_source}" for t in r.tiers)
    dropped = r.tier_dropped_words()
    table.caption = (f"step times from {steps}\n{UTIL_FOOTNOTE}"
                     + ("" if dropped is None else f"\n{dropped}"))
    table.caption_justify = "left"
    return table
