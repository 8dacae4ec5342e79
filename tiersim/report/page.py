"""Assemble the report: one self-contained HTML page (plotly.js inlined once, no network).

``write_report(dir)`` loads whatever the directory holds (a run, a sweep, a plan, or several),
builds the tables and figures it supports and writes ``dir/report.html``.
"""

from __future__ import annotations

import datetime as dt
import errno
import functools
import html
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.offline
import yaml

import tiersim
from tiersim import fidelity
from tiersim.atomic import create_temp
from tiersim.errors import ReportError, escaped, note_kind, setting_written
from tiersim.fleet_sizes import router_words, sized_words
from tiersim.manifest import missing_note
from tiersim.report.agentic import (
    bound_words,
    cache_rows,
    cache_source,
    prefix_source,
    session_rows,
    session_source,
    step_type_rows,
)
from tiersim.report.figures import Panel, build_panels, sweep_column_names
from tiersim.report.load import ReportData, axis_text, load_dir
from tiersim.report.point_slo import SLO_COLUMNS, slo_cell
from tiersim.results import (
    ATTRIBUTED_WORDS,
    E2E_SLO_WORDS,
    GPU_HOURS_WORDS,
    PER_HOUR_WORDS,
    SESSION_SLO_WORDS,
    PlanResult,
    RunResult,
    accuracy_name,
    accuracy_words,
    as_given,
    baseline_design,
    basis_words,
    by_planned_tier,
    dearer_words,
    design_verdict,
    figure_text,
    floor_digits,
    in_margin_order,
    mix_rows,
    percent_text,
    saving_without_share,
    share_digits,
    share_text,
    slo_attainment_label,
    source_words,
    split_words,
    tier_slo_notes,
    whose_p99,
)
from tiersim.results_figures import MARGIN_SOURCE
from tiersim.results_savings import (
    SIMULATED_WORDS,
    TASK_SUCCESS_COLUMN,
    estimate_label,
    saving_text,
)

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1200px;color:#222;padding:0 1em}
.warn{color:#a33;font-weight:600}
h1{margin-bottom:0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0;font-size:14px}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.caption{color:#444;margin:.2em 0 1.5em 0;font-style:italic}.muted{color:#777}
.bad{color:#b00020;font-weight:bold}.good{color:#1b7f3b;font-weight:bold}
pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:12px}
h1,h3,p,li,th,td:not(.num){overflow-wrap:anywhere}
"""


ZERO = 1e-12
"""A number within this of 0 is shown as 0: float noise (a saving of -4.4e-16) is no figure."""


class Percent(float):
    """A fraction shown as a percent, as ``tiersim run`` prints it (:func:`fmt`)."""


def percent(value: float | None) -> Percent | None:
    """``value`` (a fraction) to be shown as a percent; None stays None (a dash)."""
    return None if value is None else Percent(value)


class Digits(float):
    """A fraction shown to its own significant figures rather than the table's: an accuracy to
    4, as ``tiersim run`` prints it (0.9440 here, 94.40 % there), an SLO attainment to 3; one
    that is not exactly 1 never as 1 (:func:`~tiersim.results.share_digits`: 0.99996, not
    1.000, as the console's 99.996 %)."""

    digits: int = 4

    def __new__(cls, value: float, digits: int = 4) -> Digits:
        """``value``, to be shown to ``digits`` significant figures."""
        number = super().__new__(cls, value)
        number.digits = digits
        return number


def to_figures(value: float | None, count: int = 4) -> Digits | None:
    """``value`` to be shown to ``count`` significant figures; None stays None (a dash)."""
    return None if value is None else Digits(value, count)


SIG_FIGURES = 3
"""Significant figures of a number in the report's tables: those ``tiersim run`` prints (a
figure shown to 4 here and 3 there read 12.75 s beside 12.7 s)."""


def fmt(value: Any, digits: int = SIG_FIGURES, zeros: bool = True) -> str:
    """A cell's text: numbers to ``digits`` significant figures, trailing zeros kept as the
    console prints them (``0.0440``; ``zeros=False``: dropped, as ``{:.4g}`` prints them; a
    :class:`Digits` to its own, a :class:`Percent` to 3 as ``23.4 %``, in plain digits however
    small, :func:`~tiersim.results.share_text`), within :data:`ZERO` of 0 as 0, None as a
    dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, Percent):
        return share_text(value)
    if isinstance(value, float):
        count = share_digits(value, value.digits) if isinstance(value, Digits) else digits
        return "0" if abs(value) < ZERO else _significant(value, count, "#" if zeros else "")
    return str(value)


analytic_number = functools.partial(fmt, digits=4, zeros=False)
"""The closed form's number, as ``tiersim analytic`` prints it: 4 significant figures
(``{:.4g}``)."""


def _significant(value: float, digits: int, flags: str = "") -> str:
    """``value`` to ``digits`` significant figures; from ``10 ** digits`` up a whole number with
    thousands separators, as ``tiersim run`` prints it (e-notation, "-2.40e+03", before)."""
    if abs(float(f"{value:.{digits}g}")) >= 10 ** digits:  # 9999.7 to 4 figures is 10,000
        return f"{value:,.0f}"
    return f"{value:{flags},.{digits}g}".removesuffix(".")


def page_text(value: str) -> str:
    """``value`` for the page: HTML-escaped, and each control or format character written as
    its escape (``\\x1b``, ``\\u202e``), as the terminal shows it (a path is the user's text: a
    right-to-left override in a folder name reversed the rest of its cell)."""
    return html.escape(escaped(value))


def table(headers: list[str], rows: list[list[Any]], number=fmt) -> str:
    """An HTML table; numeric cells right-aligned, written by ``number`` (default :func:`fmt`:
    as ``tiersim run`` prints them)."""
    head = "".join(f"<th>{page_text(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{page_text(number(v))}</td>' if isinstance(v, (int, float))
            and not isinstance(v, bool) else f"<td>{page_text(fmt(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


# --------------------------------------------------------------------------- sections


def _profile_used(data: ReportData, profile: dict) -> str | None:
    """The profile the results were computed with: the run's summary, else the sweep's
    points, else the scenario's own key (an omitted key means the GPU's default profile, so the
    scenario alone cannot tell)."""
    if profile.get("name"):
        return profile["name"]
    return _points_value(data.sweep, "profile.name") or (data.scenario or {}).get("profile")


def _swept(data: ReportData, path: str) -> str | None:
    """The sweep axis that varies the scenario setting at ``path`` (the path itself or a map
    above it), or None (a run, a plan, or a setting every point shares)."""
    if data.sweep is None:
        return None
    return next((axis for axis in data.sweep_axes
                 if path == axis or path.startswith(f"{axis}.")), None)


SETTING_PATHS = {"scenario": "name", "trace": "trace.path", "trace window (s)": "trace.window",
                 "trace time scale": "trace.time_scale",
                 "trace skip longer than (tokens)": "trace.skip_longer_than", "model": "model",
                 "GPU": "gpu",
                 "calibration profile": "profile", "seed": "seed",
                 "router policy": "router.policy", "cost model": "cost_model"}
"""The scenario setting each provenance row shows, by the row's name."""


def provenance(data: ReportData) -> str:
    """Scenario and provenance: trace, model, GPU, profile and step-time sources, seed."""
    sc, run = data.scenario or {}, data.run
    trace = sc.get("trace") or {}
    profile = {"name": run.profile.name, "sources": run.profile.sources} if run else {}
    rows = [["kind of result", data.kind],
            ["run id", data.run_id],
            ["scenario", sc.get("name", run.scenario if run else None)],
            ["trace", trace.get("path", "not recorded (no scenario.yaml in this folder)")],
            *_trace_read_rows(run),
            ["trace window (s)", trace.get("window")],
            ["trace time scale", trace.get("time_scale")],
            ["trace skip longer than (tokens)", trace.get("skip_longer_than")],
            ["model", sc.get("model", run.model if run else None)],
            ["GPU", sc.get("gpu", run.gpu if run else None)],
            ["calibration profile", _profile_used(data, profile) or "none (roofline)"],
            ["seed", sc.get("seed", run.seed if run else None)],
            ["router policy", (sc.get("router") or {}).get("policy")
             or (run.router.policy if run else None)],
            ["cost model", run.cost_model if run else
             _points_value(data.sweep, "cost_model") or sc.get("cost_model")]]
    # a sweep's base value of a setting an axis varies is no point's: name the axis instead
    for row in rows:
        axis = _swept(data, SETTING_PATHS.get(row[0], ""))
        if axis is not None:
            row[1] = f"varied by the sweep (axis {axis})"
    if run is None:
        rows += _sweep_sources(data)
    if run is not None:
        rows += [["latency comes from", run.sources.latency],
                 ["accuracy comes from", run.sources.accuracy],
                 ["cost comes from", run.sources.cost]]
        rows += [[f"step time of tier {t.name}", t.step_time_source] for t in run.tiers]
        rows += [["fidelity of these step times",
                  fidelity.describe(run.profile.checked).removeprefix("fidelity: ")]]
    rows.append(["written by", f"tiersim {tiersim.__version__}, "
                 f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}"])
    rows = [[k, _text(v)] for k, v in rows if v not in (None, "", [])]
    # safe_dump writes a control or format character as its YAML escape (\e, \u202E)
    text = html.escape(yaml.safe_dump(sc, sort_keys=False)) if sc else ""
    details = f"<details><summary>full scenario</summary><pre>{text}</pre></details>" if sc \
        else ""
    return ("<h2>Scenario and provenance</h2>" + table(["item", "value"], rows)
            + _profile_sources(profile.get("sources") or {}) + model_read_section(run)
            + details)


SWEEP_SOURCES = {"latency comes from": "sources.latency",
                 "accuracy comes from": "sources.accuracy", "cost comes from": "sources.cost"}
"""The provenance rows a sweep's report gives from its points' columns, as a run's report
gives them from its summary."""


def _sweep_sources(data: ReportData) -> list[list[Any]]:
    """Where a sweep's latencies, accuracies and costs come from, from its points
    (:func:`_points_value`)."""
    return [[name, _points_value(data.sweep, column, counted=True)]
            for name, column in SWEEP_SOURCES.items()]


def _points_value(sweep: pd.DataFrame | None, column: str, counted: bool = False) -> str | None:
    """A sweep column's one value over its points, or "varied across the points: a, b" when
    they differ; None when the sweep has no such column (or no sweep). ``counted``: each value
    quoted, with how many points read it, joined by "; " ('varied across the points: "fitted
    on measured serving rows; public measured" (2 points); "roofline" (2 points)'): a
    source's own words hold commas and semicolons, so before, two sources joined by "; " read
    as three or four, and no reader could tell where one ended."""
    if not isinstance(sweep, pd.DataFrame) or column not in sweep:
        return None
    counts = sweep[column].dropna().astype(str).value_counts(sort=False)
    used = list(counts.index)
    if not used:
        return None
    if len(used) == 1:
        return used[0]
    if not counted:
        return f"varied across the points: {', '.join(used)}"
    return "varied across the points: " + "; ".join(
        f'"{v}" ({n} point{"s" * (n != 1)})' for v, n in counts.items())


def _trace_read_rows(run: RunResult | None) -> list[list[Any]]:
    """The format the trace was read as and its file's SHA-256, from the run's summary; none
    for a summary written before they were recorded (or a sweep, which has no one run)."""
    if run is None or run.trace is None:
        return []
    rows = [["trace format read", run.trace.format],
            ["trace SHA-256", f"{run.trace.sha256} ({run.trace.file})"]]
    t = run.trace
    if t.skip_longer_than is not None and t.skipped_requests is not None and t.requests_read:
        rows.append(["trace requests left out", f"{t.skipped_requests:,} of {t.requests_read:,} "
                     f"({percent_text(t.skipped_requests / t.requests_read, 1)}), longer "
                     f"(prompt + output) than trace.skip_longer_than {t.skip_longer_than:,} "
                     "tokens"])
    return rows


def model_read_section(run: RunResult | None) -> str:
    """Per tier, what tiersim read from its model's config: where from (tiersim's catalogue,
    or the config.json and its SHA-256), parameters, weights per GPU at the tier's layout and
    formats, KV-cache bytes per token per GPU and the KV dtype, each module group's weight
    format; nothing for a summary written before they were recorded."""
    tiers = [t for t in run.tiers if t.model_read is not None] if run is not None else []
    if not tiers:
        return ""
    rows = [[t.name, t.model or run.model, t.model_read.source_words(), t.model_read.params,
             t.model_read.active_params, t.model_read.weights_per_gpu_gb,
             _whole(t.model_read.kv_bytes_per_token), t.model_read.kv_dtype,
             t.model_read.formats_words] for t in tiers]
    return ("<h3>Model as read, per tier</h3>"
            + table(["tier", "model", "read from", "parameters", "active parameters",
                     "weights per GPU (GB)", "KV cache per token per GPU (bytes)", "KV dtype",
                     "weight format per module group"], rows)
            + '<p class="caption">From the model\'s config (or tiersim\'s catalogue) at the '
              "tier's precision, GPUs per replica and kv_dtype, as the simulation sizes the "
              "tier; check them against the model card.</p>")


def _whole(value: float) -> float | int:
    """``value`` as a whole number where it is one (36,864 bytes, not 3.686e+04)."""
    return int(value) if float(value).is_integer() else value


def _profile_sources(sources: dict[str, dict[str, str]]) -> str:
    """Where each operator table of each tier's step-time model comes from."""
    ops = sorted({op for per_tier in sources.values() for op in per_tier})
    if not ops:
        return ""
    rows = [[op, *[sources[t].get(op, "-") for t in sources]] for op in ops]
    return ("<h3>Step-time sources per operator table</h3>"
            + table(["operator table", *sources], rows))


def _text(value: Any) -> str:
    """A provenance value as text (lists and dicts compactly)."""
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def run_headline(run: RunResult) -> str:
    """Headline table of one run (each figure with its unit and where it comes from, as
    `tiersim run` prints it), per-tier table, router figures and savings."""
    cache = run.response_cache
    latency, cost, acc = run.sources.latency, run.sources.cost, run.sources.accuracy
    scope = run.served_scope
    said = run.sources.requests  # "trace", or generated sessions
    rows = [
        ["requests", run.requests if cache is None else cache.requests, "", said],
        ["completed", run.completed, "", said],
        ["dropped", run.dropped + (0 if cache is None else cache.unanswered), "", said],
        *([] if cache is None else [["answered by the response cache", cache.hits, "",
                                     said]]),
        ["simulated duration", run.duration_s, "s", run.duration_source],
        *([f"{name}{scope}", value, unit, latency] for name, value, unit in (
            ("TTFT p50", run.ttft_p50_s, "s"), ("TTFT p99", run.ttft_p99_s, "s"),
            ("TPOT p50", run.tpot_p50_s, "s"), ("TPOT p99", run.tpot_p99_s, "s"),
            ("end-to-end p99", run.e2e_p99_s, "s"),
            (slo_attainment_label(run.slo_session_p99_s),
             to_figures(run.slo_attainment, SIG_FIGURES), "fraction"),
            ("throughput", run.throughput_tok_s, "output tokens/s"))),
        *([] if run.slo_e2e_p99_s is None else [  # a limit of the scenario's, as the console
            ["end-to-end p99 SLO", run.slo_e2e_p99_s, "s", E2E_SLO_WORDS]]),
        *([] if run.slo_session_p99_s is None else [
            ["task latency p99 SLO", run.slo_session_p99_s, "s", SESSION_SLO_WORDS]]),
        [f"cost ({run.cost_model})", run.cost_usd, "USD", cost],
        ["attributed (busy GPU time only)", run.attributed_cost_usd, "USD", ATTRIBUTED_WORDS],
        [f"cost per 1M output tokens{scope}", run.cost_per_1m_output_tokens, "USD", cost],
        *([] if run.cost_per_hour_usd is None else [
            ["cost per hour (provisioned)", run.cost_per_hour_usd, "USD/hour", PER_HOUR_WORDS]]),
        ["GPU-hours provisioned", run.gpu_hours, "h", GPU_HOURS_WORDS],
        [f"{run.accuracy_label}{scope}", run.accuracy_text(to_figures), "fraction", acc],
    ]
    out = "<h2>Headline</h2>" + table(["metric", "value", "unit", "source"], rows)
    passes = run.passes_differ()  # a cascade's cheap tier runs more passes than it answers
    e2e = any(t.e2e_p99_s is not None for t in run.tiers)  # held: each tier's own, as console
    out += "<h3>Per tier</h3>" + table(
        ["tier", "requests", *(["passes run"] if passes else []), "share", "accuracy",
         "TTFT p99 (s)", "TPOT p99 (s)", *(["end-to-end p99 (s)"] if e2e else []),
         "utilization", "KV peak", f"cost (USD, {run.cost_model})", "attributed (USD)"],
        [[t.label, t.requests, *([t.passes] if passes else []), percent(t.share),
          percent(t.accuracy), t.ttft_p99_s, t.tpot_p99_s, *([t.e2e_p99_s] if e2e else []),
          percent(t.utilization), percent(t.kv_peak_frac), t.cost_usd, t.attributed_cost_usd]
         for t in run.tiers])
    dropped = run.tier_dropped_words()  # the tiers' requests count their dropped ones too
    out += (f"<p class='caption'>Each tier's p99s, utilization and KV peak are simulated on its "
            f"step times ({page_text(latency)}; per tier in the provenance above); cost: "
            f"{page_text(cost)}; attributed: {page_text(ATTRIBUTED_WORDS)}. Utilization is the "
            "share of time a replica runs steps, however full: not headroom (a step counts "
            "whole whatever its batch). A tier's accuracy is the run's over the requests it "
            "answered alone (a dropped one scored 0): a router sends the hard ones to its "
            "strong tier, so it reads lower there and says nothing of the tier itself."
            f"{'' if dropped is None else ' ' + page_text(dropped[0].upper() + dropped[1:]) + '.'}"
            "</p>")
    r = run.router
    # an accuracy is shown to 4 figures, as the console prints it; a floor missed by less than
    # 4 figures show, with the accuracy, to the figures that tell them apart (both read 0.944
    # beside "floor met: no")
    count = 4 if r.accuracy_floor is None else floor_digits(r.accuracy_floor, r.accuracy, 4)
    shown = functools.partial(to_figures, count=count)
    routed = f"this run's routing, scored on {run.routing_source()}"  # the console's words
    out += "<h3>Router</h3>" + table(["metric", "value", "source"], [
        ["policy", r.policy, "scenario"], ["accuracy basis", r.basis, acc],
        ["accuracy", run.accuracy_text(shown, r.accuracy), acc],
        ["accuracy 95% interval", r.interval_text(fmt), acc],
        ["accuracy floor", shown(r.accuracy_floor), "scenario"],
        ["floor met", r.floor_met, acc], ["floor met by the interval's low end",
                                          r.floor_met_ci95, acc],
        ["FPR", percent(r.fpr), routed], ["FNR", percent(r.fnr), routed],
        *([[r.COUNTS_LABEL, r.counts_text(), routed]] if r.counts_text() else []),
        ["escalation rate", percent(r.escalation_rate), routed],
        *([["escalated: refused by the first tier", percent(r.escalation_refused_rate),
            routed]] if r.escalation_refused_rate is not None else []),
        ["silent failure rate", percent(r.silent_failure_rate), routed],
        *quality_rows(r)])
    return (out + class_section(run, acc) + prefix_cache_section(run) + spec_section(run)
            + savings_section(run) + agentic_section(run) + notes_section(run))


def class_section(run: RunResult, accuracy_source: str) -> str:
    """The accuracy per difficulty class (``accuracy_by_class``): the run's with its 95%
    interval beside each uniform fleet's over the same requests, so a planner reads whether
    routing's saving cost the hard requests accuracy; "" where the requests have no class."""
    classes = run.accuracy_by_class
    if not classes:
        return ""
    given = {name for c in classes for name in c.uniform}  # in the savings table's order
    order = [b.tier for b in run.savings.uniform] if run.savings is not None else []
    fleets = [n for n in order if n in given] + sorted(given - set(order))
    rows = [[c.name, c.requests, percent(c.accuracy),
             f"{fmt(percent(c.accuracy_ci95[0]))} - {fmt(percent(c.accuracy_ci95[1]))}",
             *(percent(c.uniform.get(name)) for name in fleets)] for c in classes]
    header, words = class_interval_words(run.router.basis)
    return ("<h3>Accuracy by difficulty class</h3>"
            + table(["class", "requests", f"{run.fleet_label()}", header,
                     *(f"all {name}" for name in fleets)], rows)
            + f"<p class='caption'>{page_text(run.accuracy_label.capitalize())} over each "
            "difficulty class of the requests (the workload's difficulty_class), modelled; "
            f"accuracy from {page_text(accuracy_source)}. The classes weighted by their "
            "requests give the overall accuracy; a uniform fleet that dropped requests is "
            f"not shown.{words}</p>")


def class_interval_words(basis: str | None) -> tuple[str, str]:
    """The class table's interval column header and the caption's sentence on it. On the
    expected basis the interval is of the mean of the class's per-request expected values
    (:func:`tiersim.routing.metrics.accuracy_ci`): it holds their spread over the requests,
    not each answer's 0/1 draw, so a class whose requests expect alike reads narrow (the
    default job's hard class 78.53 - 78.78 % about 78.71 %, where Wilson's interval of 2,232
    answers drawn at that rate is 3.4 points wide, modelled); "95% interval" on the realised
    basis, of the 0/1 answers themselves."""
    if basis != "expected":
        return "95% interval", ""
    return ("95% interval of the mean expected value",
            " On the expected basis a class's interval is of the mean of its requests' "
            "expected correctness: it holds how those expectations spread over the requests, "
            "not each answer's right-or-wrong draw, so a class whose requests expect alike "
            "reads narrower than the overall interval; it is not the range the class's "
            "realised accuracy would fall in (docs/metrics.md in tiersim's source repository, "
            "accuracy_by_class).")


def quality_rows(r) -> list[list]:
    """The router table's rows of its realised AUROC on the replayed trace and what the
    scenario asked (:class:`tiersim.results.RouterQuality`, the console's line), on drawn
    difficulty also its AUROC for the cheapest tier answering wrong; none for a summary
    written before it was kept."""
    q = r.quality
    if q is None:
        return []
    of = "" if q.wrong_positives is None else f" ({q.wrong_positives:,} of them)"  # as the
    wrong = [] if q.auroc_wrong is None else [[  # console's line: a count read as null, none
        f"classifier AUROC for {q.wrong_target}", q.wrong_auroc_text(),
        f"against the drawn correctness of {q.requests:,} requests{of}: what a routing error "
        "costs"]]
    return [["classifier AUROC on the replayed trace", q.auroc_text(), q.scored_words()],
            *wrong,
            ["AUROC asked", q.asked_text(), "scenario"],
            ["FPR / FNR asked", q.confusion_text(),
             "scenario; the realised FPR / FNR above include the policy's own errors"]]


def prefix_cache_section(run: RunResult) -> str:
    """Per tier with prefix caching: the share of prompt tokens found cached, by level, against
    one unbounded cache (why, where it is 0: :func:`~tiersim.report.agentic.bound_words`), and
    offloaded prefixes loaded or recomputed (as the console prints them); nothing when no tier
    caches prefixes."""
    rows = [[t.name, t.prefix_hit_rate,
             ", ".join(f"{level} {fmt(percent(v))}"
                       for level, v in (t.prefix_hit_by_level or {}).items())
             or None, (f"{fmt(t.prefix_hit_bound)}{bound_words(t.prefix_hit_bound)}"
                       if bound_words(t.prefix_hit_bound) else t.prefix_hit_bound),
             t.offload_loads, t.offload_recomputes,
             t.prefix_recompute_rate]
            for t in run.tiers if t.prefix_hit_rate is not None]
    if not rows:
        return ""
    return ("<h3>Prefix cache</h3>" + table(
        ["tier", "prompt tokens found cached (fraction)", "by level", "one unbounded cache",
         "offloaded prefixes loaded", "recomputed (link slower than prefill)",
         "recomputed prompt tokens (fraction)"], rows)
        + f"<p class='caption'>Source: {page_text(prefix_source(run))}.</p>")


def spec_section(run: RunResult) -> str:
    """Per speculative tier, its realised draws: verify steps, tokens per step beside the
    formula's expectation, and the share of drafted tokens accepted (vLLM's acceptance rate);
    nothing when no tier is speculative (or the summary predates the figures)."""
    rows = [[t.name, t.spec_verify_steps, _three(t.spec_tokens_per_step),
             _three(t.spec_expected_tokens_per_step), _three(t.spec_draft_acceptance)]
            for t in run.tiers if t.spec_verify_steps is not None]
    if not rows:
        return ""
    return ("<h3>Speculative decoding</h3>" + table(
        ["tier", "verify steps", "tokens per verify step (realised)",
         "formula's expectation (the tier's k and acceptance)",
         "drafted tokens accepted (fraction; vLLM's acceptance rate)"], rows)
        + "<p class='caption'>Source: modelled, from the engine's acceptance draws; the "
          "acceptance rate is accepted over drafted tokens, not the per-position "
          "<code>acceptance</code> (docs/serving.md in tiersim's source repository).</p>")


def _three(value: float | None) -> str | None:
    """A figure to three decimals, as the console's speculative line gives it (None: none)."""
    return None if value is None else f"{value:.3f}"


def notes_section(run: RunResult) -> str:
    """The run's notes, as the command printed them, with its note on each tier whose own p99
    is over an SLO the fleet's p99 meets (:func:`~tiersim.results.tier_slo_notes`, printed
    under the tier table); none: nothing."""
    notes = [*run.notes, *(n.removeprefix("note: ") for n in tier_slo_notes(run))]
    if not notes:
        return ""
    items = "".join(f"<li>{page_text(note)}</li>" for note in notes)
    return f"<h3>Notes</h3><ul>{items}</ul>"


def agentic_section(run: RunResult) -> str:
    """Per-task figures beside the per-request ones, step types, and the response cache."""
    out = ""
    if run.sessions is not None:
        out += ("<h3>Agentic tasks: per request vs per task</h3>"
                + table(["figure", "per request", "per task", "unit"], session_rows(run))
                + table(["step type", "steps", "accuracy", "final tiers"], step_type_rows(run))
                + f"<p class='caption'>Source: {page_text(session_source(run))}.</p>")
    if run.response_cache is not None:
        out += ("<h3>Response cache (this run vs the same run without it)</h3>"
                + table(["figure", "with cache", "without", "unit"], cache_rows(run))
                + f"<p class='caption'>Source: {page_text(cache_source(run))}.</p>")
    return out


def savings_section(run: RunResult) -> str:
    """The routed fleet against the uniform fleets; an estimate is labelled as one."""
    s = run.savings
    if s is None:
        return ""
    label = ("Savings (uniform fleets simulated)" if not s.estimated
             else f"Estimated savings ({s.PRICED_WORDS})" if s.priced_per_request
             else "Estimated savings (uniform costs scaled from this run's per-token cost; "
                  "an estimate, not a simulation)")
    timed = any(u.ttft_p99_s is not None for u in s.uniform)  # sized by simulation
    e2e = timed and run.slo_e2e_p99_s is not None  # held: its p99 beside the others
    task = timed and run.slo_session_p99_s is not None  # held: the task latency p99 too
    routed_task = None if run.sessions is None else run.sessions.task_latency_p99_s
    tasks = run.sessions is not None  # agent tasks: each fleet's task success (modelled)
    rows = [[u.tier, f"infeasible: {u.infeasible}" if u.infeasible else
             u.replicas if u.prefill_replicas is None and u.techniques is None else
             f"{u.replicas}{split_words(u.replicas, u.prefill_replicas, u.techniques)}",
             u.gpus_per_replica, _met(u.slo_met),
             _met(s.meets_floor(u)),
             to_figures(u.accuracy), *([to_figures(u.task_success)] if tasks else []),
             u.cost_usd,
             *([u.cost_per_hour_usd] if s.shows_rates else []),
             *(_p99_cells(u.ttft_p99_s, u.tpot_p99_s) if timed else []),
             *([figure_text(u.e2e_p99_s, " s")] if e2e else []),
             *([figure_text(u.session_p99_s, " s")] if task else [])] for u in s.uniform]
    rows.append([run.fleet_label(), " + ".join(
        f"{t.replicas}{split_words(t.replicas, t.prefill_replicas, t.techniques)}"
        for t in run.tiers),
                 " + ".join(str(t.gpus_per_replica) for t in run.tiers), _met(s.routed_slo_met),
                 _met(s.routed_floor_met), to_figures(s.accuracy),
                 *([to_figures(run.sessions.task_success)] if tasks else []), s.routed_cost_usd,
                 *([s.routed_cost_per_hour_usd] if s.shows_rates else []),
                 *(_p99_cells(run.ttft_p99_s, run.tpot_p99_s) if timed else []),
                 *([figure_text(run.e2e_p99_s, " s")] if e2e else []),
                 *([figure_text(routed_task, " s")] if task else [])])
    unlike = (f"not comparable: this fleet misses {run.missed_words()}, the uniform fleets are "
              "held to them (size it with tiersim plan)")
    no_baseline = run.no_baseline_words()  # the console's reason, where it gives one
    summary = table(["item", "value"], [
        ["cost model", _savings_cost_model(run, s)], ["method", s.method],
        ["accuracy floor", run.floor_words()],
        *([["accuracy of the uniform fleets", said.removeprefix("accuracy from ")]]
          if (said := run.uniform_accuracy_words()) else []),
        ["cheapest uniform tier meeting the floor", s.baseline_uniform_tier],
        _saved_row("saved vs that tier", s.saving_basis, s.vs_uniform_frac, s.vs_uniform_usd,
                   no_baseline if no_baseline is not None else
                   None if s.comparable else unlike),
        *mix_rows(s.static_split_mix),
        _saved_row("saved vs a static split of equal accuracy", s.saving_basis,
                   s.vs_static_split_frac, s.vs_static_split_usd,
                   None if s.comparable else unlike),
        *_why_rows(s.drain_gap)])
    return (f"<h3>{page_text(label)}</h3>" + summary
            + table(["fleet", "replicas", "GPUs per replica", "meets SLOs", "meets floor",
                     run.accuracy_label, *([TASK_SUCCESS_COLUMN] if tasks else []),
                     "cost (USD)",
                     *(["cost (USD per hour)"] if s.shows_rates else []),
                     *(["TTFT p99", "TPOT p99"] if timed else []),
                     *(["end-to-end p99"] if e2e else []),
                     *(["task latency p99"] if task else [])], rows)
            + closed_form_note(run))


def _p99_cells(ttft_s: float | None, tpot_s: float | None) -> list[str]:
    """A fleet's p99 TTFT and TPOT as the console's uniform-fleets line writes them ("-" for
    a fleet with none)."""
    return [figure_text(ttft_s, " s"), figure_text(tpot_s, " ms", 1e3)]


def _savings_cost_model(run: RunResult, s) -> str:
    """The cost model the savings are in: the run's, or, for an estimate under another (it
    scales each tier's per-token attributed cost, whatever the cost model), that one named as
    not the run's: "cost model: attributed" stood under a provisioned headline, as though the
    run were costed so."""
    if s.cost_model == run.cost_model:
        return s.cost_model
    how = f" ({ATTRIBUTED_WORDS})" if s.cost_model == "attributed" else ""
    return (f"{s.cost_model}{how}, not this run's {run.cost_model} cost: the estimate scales "
            "each tier's per-token attributed cost")


def _saved(frac: float | None, usd: float | None) -> Percent | str | None:
    """A saving's cell: the share saved, or against a baseline of 0 USD the USD gap."""
    return saving_without_share(frac, usd) or percent(frac)


def _saved_row(label: str, basis: str | None, frac: float | None, usd: float | None,
               instead: str | None = None) -> list:
    """A saving's row: ``label`` with its basis (:func:`~tiersim.results.basis_words`) and the
    share saved (:func:`_saved`), or where the fleet is the dearer ``label`` alone and the
    words ``tiersim plan`` and ``tiersim run`` use ("costs 100 % more per hour":
    :func:`~tiersim.results.dearer_words`; it read "saved vs that tier per hour" -100 %); a
    cell given ``instead`` (why there is no saving to compare) under the label with its
    basis."""
    dearer = None if instead is not None else dearer_words(frac, usd, basis)
    if dearer is not None:
        return [label, dearer]
    return [f"{label}{basis_words(basis, frac)}", instead or _saved(frac, usd)]


def _plan_saving_rows(saving: dict, robust: dict | None = None) -> list[list]:
    """The plan's saving against the cheapest sized uniform fleet and a static split, each
    labelled with its basis (:func:`~tiersim.results.basis_words`); where the saving is per
    hour, the baseline's cost per hour beside its cost over the trace (before, "its cost (USD)"
    over the trace stood beside "saved vs it per hour", which it does not give); under
    ``--robust`` over the trace, which seeds' runs the saving compares, in the words the
    console's saving line ends with (:func:`tiersim.results_seeds.robust_saving_words`)."""
    from tiersim.results_seeds import robust_saving_words

    seeds = robust_saving_words(robust, saving)
    basis = saving.get("saving_basis")
    share = saving.get("vs_uniform_frac")
    rows = [["cheapest sized uniform fleet meeting the floor", baseline_design(saving)],
            ["its cost (USD)", saving.get("baseline_uniform_cost_usd")]]
    if basis_words(basis, share):
        rows.append(["its cost (USD per hour)", saving.get("baseline_uniform_cost_per_hour_usd")])
    split = saving.get("vs_static_split_frac")
    return rows + [
        _saved_row("saved vs it", basis, share, saving.get("vs_uniform_usd")),
        *([] if seeds is None else [["which runs it compares", seeds]]),
        *mix_rows(saving.get("static_split_mix")),
        _saved_row("saved vs a static split of equal accuracy", basis, split,
                   saving.get("vs_static_split_usd")),
        *_why_rows(saving.get("drain_gap"))]


def _why_rows(drain_gap: str | None) -> list[list[str]]:
    """A "why the costs differ" row where a saving is only the drain after the last arrival (a
    tie in USD/hour, as the console's saving line says); none otherwise."""
    return [["why the costs differ", drain_gap]] if drain_gap else []


def _met(flag: bool | None) -> str | None:
    """yes / no for a simulated SLO check; None when it was not simulated."""
    return None if flag is None else ("yes" if flag else "no")


CLOSED_FORM_NOTE = (
    "dC* is the two-type closed form's largest saving of oracle routing over a static random "
    "split, with cost linear in requests (a fixed price per request, or a fleet so large that "
    "batching no longer changes with load). The simulated saving differs from it when those "
    "assumptions fail: a tier's cost per request changes with its load (bigger batches are "
    "cheaper per token, so moving traffic between tiers changes both tiers' unit costs); "
    "replica counts are whole numbers, so a sized fleet carries headroom that a split cannot "
    "share; the SLOs, not the traffic, can decide a fleet's size (a p99 target holds replicas "
    "a mean-cost model would drop); and real requests are not two types with one loss each. "
    "With a fixed price per request the two agree (tests/test_plan_closed_form.py, in "
    "tiersim's source repository, holds them within 5%).")


def closed_form_note(run: RunResult) -> str:
    """The closed form's dC* beside the simulated saving vs a static split, and why they can
    differ; the summary's note where the closed form has nothing to model (two tiers of one
    price, a cheap tier the more accurate); empty when the run carries neither."""
    params = (run.analytic or {}).get("params") or {}
    d_star = params.get("dC_star_usd")
    s = run.savings
    note = (run.analytic or {}).get("note")
    if d_star is None and note:
        return f"<h3>Against the closed form</h3><p>{page_text(note)}</p>"
    if d_star is None or s is None:
        return ""
    rows = [["closed form dC* (USD)", d_star, closed_form_source(run, params)],
            [f"this run's saving vs a static split ({s.method}, USD)",
             s.vs_static_split_usd if s.comparable else f"not comparable: this fleet misses "
             f"{run.missed_words()}", "this run's cost against the static split of its "
             f"{'sized' if not s.estimated else 'estimated'} uniform fleets, over the trace"],
            ["two-type parameters p / eps / delta",
             " / ".join(analytic_number(params.get(k)) for k in ("p", "eps", "delta")),
             two_type_source(run, params)]]
    return ("<h3>Against the closed form</h3>" + table(["item", "value", "source"], rows)
            + f"<p>{page_text(CLOSED_FORM_NOTE)}</p>")


def closed_form_source(run: RunResult, params: dict) -> str:
    """Where dC* comes from: the closed form of the p / eps / delta beside it and the prices
    ``summary.analytic_summary`` gives it, c0 and dc with their figures (the uniform fleets'
    costs; under provisioned cost dc is the top fleet's USD/hour over the cheap one's, on the
    cheap fleet's duration), so the row can be recomputed from the page."""
    cheap, top, s = params.get("cheap"), params.get("top"), run.savings
    fleets, dc = s.closed_form_prices(cheap, top)  # as summary.json's analytic.sources says
    from tiersim.results_figures import closed_form_words  # its home (the import-cycle fix)

    return (f"{closed_form_words('p / eps / delta below')} and the uniform fleets "
            f"{fleets} ({s.cost_model}): c0 {analytic_number(params.get('c0_usd'))} USD "
            f"(all {cheap}), dc {analytic_number(params.get('dc_usd'))} USD ({dc})")


def two_type_source(run: RunResult, params: dict) -> str:
    """Where p, eps and delta come from: estimated from every request's correctness on the
    two compared tiers, as ``summary.analytic_summary`` estimates them, on the accuracy's
    source of those tiers (labels, the scenario's table or the precision prior)."""
    pair = [params.get("cheap"), params.get("top")]
    found = {t.name: t.accuracy_source for t in run.tiers
             if t.name in pair and t.accuracy_source}
    source = " + ".join(accuracy_words(found)) if found else run.sources.accuracy
    return (f"estimated from this run's requests' correctness on {pair[0]} and {pair[1]} "
            f"({source})")


SWEEP_METRICS = ("accuracy", "cost_usd", "cost_per_1m_output_tokens", "ttft_p99_s", "tpot_p50_s",
                 "tpot_p99_s", "slo_attainment", "router.silent_failure_rate")
"""The headline figures of each point the Points table shows, where the sweep table has them:
p50 TPOT too, the figure speculative decoding moves most (fresh54's acceptance sweep moved
p50 TPOT from 17.1 to 8.2 ms and showed only the p99s; a sweep table written before its
column leaves it out)."""

SWEEP_ROUTER_METRICS = {"router.fpr": "router FPR, realised (fraction)",
                        "router.fnr": "router FNR, realised (fraction)",
                        "router.escalation_rate": "escalation rate (fraction)",
                        "router.quality.auroc": "classifier AUROC, realised"}
"""The router's realised rates, shown after :data:`SWEEP_METRICS` where a point has them (the
escalation rate where some point escalated): a sweep of ``router.confusion.fpr`` showed the
injected rate alone, not the realised FPR each point's run prints (6.74 % at 0.05 on a
cascade), nor how many requests its cascade escalated; a sweep of
``workload.difficulty.hint_auroc`` likewise the AUROC asked, not the one its classifier
realised (``router.quality``, each point's console line)."""


SWEEP_FRACTIONS = ("slo_attainment", "router.silent_failure_rate", *SWEEP_ROUTER_METRICS)
"""The sweep's columns that are fractions, shown as :func:`to_figures` shows one."""


POINTS_IN_REPORT = 200
"""The most points the report's Points table shows."""


HOURLY_NAME = "provisioned cost (USD per hour)"
"""The Points table's header of a point's USD/hour (``cost_per_hour_usd``), as the plan's
section names the plan's."""


def _provisioned(sweep: pd.DataFrame) -> pd.Series | None:
    """Per point, whether it is costed ``provisioned`` and has its USD/hour
    (``cost_per_hour_usd``); None where no point is, or the table lacks the columns (written
    before them)."""
    if "cost_per_hour_usd" not in sweep or "cost_model" not in sweep:
        return None
    hourly = (sweep["cost_model"] == "provisioned") & pd.to_numeric(
        sweep["cost_per_hour_usd"], errors="coerce").notna()
    return hourly if hourly.any() else None


def sweep_headline(data: ReportData, limit: int = POINTS_IN_REPORT) -> str:
    """Sweep overview and a table of its points (first ``limit``)."""
    sweep = data.sweep
    ok = int((sweep["status"] == "ok").sum()) if "status" in sweep else len(sweep)
    rows = [["points", len(sweep)], ["finished", ok], ["failed", len(sweep) - ok]]
    rows += [[f"axis {a}", _axis_values(sweep[a])] for a in data.sweep_axes if a in sweep]
    metrics = [m for m in SWEEP_METRICS if m in sweep]
    metrics += [m for m in SWEEP_ROUTER_METRICS if m in sweep and _has_rate(sweep[m], m)]
    hits = _prefix_hit_columns(sweep)
    metrics += list(hits)
    agent = {**_share_columns(sweep), **_session_columns(sweep)}
    metrics += list(agent)
    hourly = _provisioned(sweep)
    if hourly is not None and "cost_usd" in metrics:  # the USD/hour beside the cost over the
        # run, as run and plan give it
        metrics.insert(metrics.index("cost_usd") + 1, "cost_per_hour_usd")
    cols = [*data.sweep_axes, *metrics, "status", "error"]
    cols = [c for c in cols if c in sweep]
    shown = sweep.head(limit)[cols].astype(object)
    shown = shown.where(shown.notna(), None)
    if "cost_per_hour_usd" in shown:  # a point costed another way has no USD/hour cell
        shown["cost_per_hour_usd"] = shown["cost_per_hour_usd"].where(
            hourly.head(limit), None)
    for axis in (a for a in data.sweep_axes if a in shown):
        shown[axis] = [_axis_cell(v) for v in shown[axis]]
    for col, count in (("accuracy", 4),
                       *((c, SIG_FIGURES) for c in (*SWEEP_FRACTIONS, *hits, *agent))):
        if col in shown and col not in data.sweep_axes:  # the accuracy to 4 figures, as a
            # run's is printed; a fraction that is not 1 never as 1 (to_figures: an SLO
            # attainment of 0.9996 read 1.00); an axis (router.fpr) as its cells show it
            shown[col] = pd.Series([to_figures(v, count) for v in shown[col]],
                                   index=shown.index, dtype=object)
    names = {**SWEEP_ROUTER_METRICS, **sweep_column_names(data, sweep), **hits, **agent,
             "cost_per_hour_usd": HOURLY_NAME}
    verdicts = point_verdicts(sweep.head(limit))
    for name, cells in verdicts.items():  # before status and error
        shown.insert(len(shown.columns) - sum(c in shown for c in ("status", "error")), name,
                     cells)
    cols = list(shown.columns)
    points = table([names.get(c, c) for c in cols], shown.values.tolist())
    more = f"<p class='muted'>first {limit:,} of {len(sweep):,} points shown</p>" \
        if len(sweep) > limit else ""
    return ("<h2>Sweep</h2>" + table(["item", "value"], rows)
            + "<h3>Points</h3>" + points + more + _sweep_notes(sweep))


VERDICT_COLUMNS = ("router.fpr", "router.fpr_among", "savings.routed_slo_met",
                   "savings.routed_floor_met", "accuracy_floor", "savings.vs_uniform_frac",
                   "savings.vs_uniform_usd", "savings.baseline_uniform_tier", "savings.method",
                   "savings.cost_model", "savings.saving_basis", *SLO_COLUMNS)
"""The sweep table's columns :func:`point_verdicts` reads (``tiersim sweep`` reads these
alone from ``sweep.parquet`` to print them: :mod:`tiersim.sweep.verdicts`)."""


def point_verdicts(sweep: pd.DataFrame) -> dict[str, list[str]]:
    """What each point's run says of itself beside its figures, as ``tiersim run`` prints it:
    the router's FPR as counts ("4 of 10": a rate over a handful of requests reads as one),
    whether the fleet met its SLOs and (where a point sets one) its accuracy floor, and its
    saving against the cheapest uniform fleet meeting the floor, with that fleet's tier ("not
    comparable" where the fleet missed what its baselines were held to). Only the columns
    some point has (the saving's where some point has a saving or is "not comparable": a
    sweep whose every point missed its SLOs says so); a sweep read without them (written
    before them) shows none."""
    out: dict[str, list[str]] = {}
    rows = sweep.to_dict("records")
    if "router.fpr_among" in sweep and "router.fpr" in sweep and sweep["router.fpr_among"].notna(
            ).any():
        out["router FPR as counts"] = [_fpr_count(r) for r in rows]
    if "savings.routed_slo_met" in sweep and sweep["savings.routed_slo_met"].notna().any():
        out["meets SLOs"] = [slo_cell(_known_bool(r.get("savings.routed_slo_met")), r)
                             for r in rows]
    if "savings.routed_floor_met" in sweep and "accuracy_floor" in sweep \
            and sweep["accuracy_floor"].notna().any():
        out[_floor_header(sweep["accuracy_floor"])] = [
            _met(_known_bool(r.get("savings.routed_floor_met"))) for r in rows]
    if "savings.vs_uniform_frac" in sweep:  # shown where any point says something: every
        # point "not comparable" (each missed its SLOs) is a verdict too, as the run prints it
        saved = [_point_saving(r) for r in rows]
        if any(cell != "-" for cell in saved):
            out["saved vs uniform"] = saved
    return out


def _floor_header(floors: pd.Series) -> str:
    """The points' floor verdict's header, naming the floor it judges: "meets accuracy floor
    78.5 %" where the points share one ``accuracy_floor`` (the table has no column of it, and
    "meets floor" beside a ``router.floor`` axis of 0.81 read as that floor, met at 79.46 %),
    else "meets accuracy floor" (an ``accuracy_floor`` axis shows each point's)."""
    values = {float(v) for v in floors.dropna()}
    if len(values) == 1:
        return f"meets accuracy floor {figure_text(values.pop(), ' %', 100)}"
    return "meets accuracy floor"


def _known_bool(value: Any) -> bool | None:
    """A sweep cell's True/False, None for a missing one (NaN in a column some point lacks)."""
    return None if value is None or value != value else bool(value)


def _fpr_count(row: dict) -> str:
    """A point's FPR as "4 of 10" (:meth:`tiersim.results.RouterResult.rate_count`), "-"
    where it has none."""
    rate, among = row.get("router.fpr"), row.get("router.fpr_among")
    if rate is None or among is None or rate != rate or among != among:
        return "-"
    return f"{round(rate * among):,} of {int(among):,}"


ESTIMATE_WORDS = "estimate, on per-token attributed cost: not a USD/hour gap"
"""What a point's estimated saving (``tiersim sweep --no-baselines``) is labelled with in its
cell: the estimate compares the work each request takes (replica-seconds at its tier's
USD/hour, at the batch the point's load gives a replica), not provisioned fleets, so it moves
with each tier's load per replica while the fleet's USD/hour stands still (tiny at fractions
0.5 / 0.5: 0.383 % at 7.00 USD/hour, 5.94 % with a second bf16 replica at 10.5 USD/hour,
where the uniform bf16 fleet sized by simulation is 3.50 USD/hour)."""


def _point_saving(row: dict) -> str:
    """A point's saving against the cheapest uniform fleet meeting the floor, as the run's
    console row gives it ("25.0 % per hour vs bf16", "costs 3.20 % more per hour vs bf16",
    "12.0 % (estimate, on per-token attributed cost: not a USD/hour gap) vs bf16" for a point
    of ``tiersim sweep --no-baselines`` (:data:`ESTIMATE_WORDS`), "(per-request prices)" where
    that estimate is exact; against a free baseline its USD gap), "not
    comparable" where the point's fleet missed its SLOs or floor, "-" where it has none."""
    missed = [what for what, key in (("its SLOs", "savings.routed_slo_met"),
                                     ("its accuracy floor", "savings.routed_floor_met"))
              if _known_bool(row.get(key)) is False]
    if missed:
        return f"not comparable: misses {' and '.join(missed)}"
    frac, usd = (None if v is None or v != v else v for v in (
        row.get("savings.vs_uniform_frac"), row.get("savings.vs_uniform_usd")))
    if frac is None and usd is None:
        return "-"
    tier = row.get("savings.baseline_uniform_tier")
    label = estimate_label(row.get("savings.method") == "estimated",
                           row.get("savings.cost_model") == "fixed_per_request")
    if label == "estimate":  # what it is an estimate of: the run's console row says it in its
        # source column, which a point's cell lacks; "costs 4.65 % more (estimate)" beside a
        # fleet of its baseline's USD/hour read as a fleet-cost gap (round 55)
        label = ESTIMATE_WORDS
    said = saving_text(frac, usd, row.get("savings.saving_basis"), label)  # as the console's
    said = f"{said} vs {tier}" if isinstance(tier, str) else said
    # a simulated saving says so, as the run's source column ("uniform fleets simulated") and
    # the plan's saving line (", simulated") do: it read bare beside an estimate's label
    return f"{said} ({SIMULATED_WORDS})" if row.get("savings.method") == "simulated" else said


def sweep_note_lines(sweep: pd.DataFrame) -> list[str]:
    """The sweep's notes (its points' ``notes`` column), each kind once as ``tiersim sweep``
    prints them: a kind is one text with its numbers left out, shown as the text of its
    point first in the table (grid order), with the point's id and how many other points have
    it with other numbers, or on how many of the points it was raised where not on all.
    Before, the report showed none: a sweep over ``router.confusion.fpr`` whose every point
    said the rate changed nothing read as a table of identical points."""
    if "notes" not in sweep:
        return []
    kinds: dict[str, list[Any]] = {}  # kind -> [text, point, count, differs]
    for point, cell in zip(sweep.get("point_id", pd.Series(index=sweep.index)), sweep["notes"],
                           strict=True):
        try:
            notes = json.loads(cell) if isinstance(cell, str) else list(cell or ())
        except (TypeError, ValueError):
            continue
        for note in notes if isinstance(notes, list) else ():
            text = str(note)
            kind = kinds.setdefault(note_kind(text), [text, point, 0, False])
            kind[2] += 1
            kind[3] = kind[3] or text != kind[0]
    lines = []
    for text, point, count, differs in kinds.values():
        if differs:
            more = count - 1
            text += (f" (point {point}; {more:,} more "
                     f"{'points have' if more != 1 else 'point has'} this note with other "
                     "numbers)")
        elif count < len(sweep):
            text += (f" (point {point} only, of {len(sweep):,})" if count == 1 else
                     f" ({count:,} of the {len(sweep):,} points, the first {point})")
        lines.append(text)
    return lines


def _sweep_notes(sweep: pd.DataFrame) -> str:
    """The sweep's notes as a list under its points (:func:`sweep_note_lines`)."""
    lines = sweep_note_lines(sweep)
    if not lines:
        return ""
    return "<h3>Notes</h3><ul>" + "".join(f"<li>{page_text(t)}</li>" for t in lines) + "</ul>"


def _prefix_hit_columns(sweep: pd.DataFrame) -> dict[str, str]:
    """Each tier's prefix-cache hit rate and its unbounded-cache bound, named, where some
    point caches prefixes on that tier: a sweep of ``kv_offload`` capacities showed latency
    and cost per point but not the hit rate the capacity buys (it was in ``sweep.parquet``
    only)."""
    names = {}
    for col in sweep.columns:
        tier = col[len("tiers."):-len(".prefix_hit_rate")]
        if (col.startswith("tiers.") and col.endswith(".prefix_hit_rate")
                and pd.to_numeric(sweep[col], errors="coerce").notna().any()):
            names[col] = f"prefix cache hit rate, {tier} (fraction of prompt tokens)"
            bound = f"tiers.{tier}.prefix_hit_bound"
            if bound in sweep:
                names[bound] = f"unbounded-cache bound, {tier} (fraction)"
    return names


def _share_columns(sweep: pd.DataFrame) -> dict[str, str]:
    """Each tier's share of the requests, named, where the sweep has more than one tier: a
    sweep of a router's threshold or FPR moved the cheap tier's share, and the Points table
    showed neither it nor the task figures it moves (they were in ``sweep.parquet`` only)."""
    cols = [c for c in sweep.columns if c.startswith("tiers.") and c.endswith(".share")
            and c.count(".") == 2 and pd.to_numeric(sweep[c], errors="coerce").notna().any()]
    if len(cols) < 2:
        return {}
    return {c: f"share of requests, {c[len('tiers.'):-len('.share')]} (fraction)" for c in cols}


SESSION_COLUMNS = {"sessions.task_success": "task success (fraction; product of step "
                                            "correctness)",
                   "sessions.task_latency_p99_s": "task latency p99 (s)",
                   "sessions.cost_per_task_usd": "cost per task (USD)"}
"""The per-task figures of agent sessions the Points table shows where a point has them."""


def _session_columns(sweep: pd.DataFrame) -> dict[str, str]:
    """:data:`SESSION_COLUMNS` that some point of the sweep has a number in."""
    return {c: name for c, name in SESSION_COLUMNS.items()
            if c in sweep and pd.to_numeric(sweep[c], errors="coerce").notna().any()}


def _has_rate(column: pd.Series, name: str) -> bool:
    """Whether a router rate column holds a number at some point (the escalation rate: one
    above 0, as only a cascade escalates)."""
    values = pd.to_numeric(column, errors="coerce")
    return bool((values > 0).any() if name == "router.escalation_rate" else values.notna().any())


AXIS_VALUES_SHOWN = 50
"""Most values of one axis the sweep headline lists (then how many more there are)."""


def _axis_values(column: pd.Series) -> str:
    """An axis' distinct values in grid order, the first :data:`AXIS_VALUES_SHOWN` of them."""
    values = column.unique()
    more = len(values) - AXIS_VALUES_SHOWN
    text = ", ".join(_axis_cell(v) for v in values[:AXIS_VALUES_SHOWN])
    return text + (f", ... ({more:,} more)" if more > 0 else "")


def _axis_cell(value: Any) -> str:
    """An axis value's cell text, as the scenario gives it: a number in full (rounded to 3
    figures, as a metric is, 3.50001 and 3.50002 read as two points of 3.50), a boolean as
    :func:`fmt` writes it, the axis' null as ``null``."""
    if isinstance(value, (bool, np.bool_)):
        return fmt(bool(value))
    if isinstance(value, (int, float, np.integer)) and axis_text(value) != "null":
        return f"{value:,}"
    return axis_text(value)


def _split_and_techniques(per_tier: dict, tier: str) -> tuple[int | None, str | None]:
    """A plan.json design's ``per_tier.<tier>`` prefill replicas and serving techniques, as
    :func:`~tiersim.results.split_words` takes them (None where the tier has none)."""
    entry = per_tier.get(tier) or {}
    return entry.get("prefill"), entry.get("techniques")


def plan_section(plan: PlanResult) -> str:
    """The capacity plan: chosen design and sizes, constraint margins, its saving against the
    sized uniform fleets, the one-fewer check, and what every other design missed. Its figures
    to the 3 significant figures ``tiersim plan`` and ``tiersim run`` print (an accuracy to 4),
    as the run's headline beside it shows them; before, to 4 (the plan's cost 0.1029 USD above
    the headline's 0.103); limits and router settings as given. The plan's accuracy line (its
    95 % interval and source) and its p99 line beside its uniform fleets' are the console's own
    words (:mod:`tiersim.results_plan_lines`): before, the section gave neither the interval
    nor the uniform fleets' p99s, and with no floor not the plan's accuracy at all; so are its
    notes of a router floor above the fleet's accuracy and of a tier over an SLO the fleet's
    p99 meets."""
    from tiersim.results_plan_lines import (
        accuracy_line,
        baseline_gap_words,
        baseline_line,
        class_line,
        floor_notes,
        left_out_words,
        p99_line,
        task_line,
        tiers_over_slo,
        time_words,
    )

    chosen = plan.plan
    head = time_words(plan.simulations, plan.wall_s, plan.seed_check, plan.current, plan.splits)
    if not chosen:
        return ("<h2>Capacity plan</h2><p class='bad'>No fleet met every constraint "
                f"({page_text(head)}): {page_text(str(plan.reason or ''))}</p>"
                + _robust_paragraph(plan) + plan_sources_section(plan.sources)
                + current_section(plan))
    gpus = chosen.get("gpus_per_replica") or {}
    per_tier = chosen.get("per_tier") or {}
    rows = [[f"tier {t}", f"{n}{split_words(n, *_split_and_techniques(per_tier, t))} x "
             f"{gpus.get(t, 1)} GPU"] for t, n in by_planned_tier(chosen, "replicas")]
    router = sorted((chosen.get("router") or {}).items(),  # the console's order: policy first
                    key=lambda kv: (kv[0] != "policy", kv[0]))
    rows += [[f"router {k}", setting_written(v)] for k, v in router]
    rows += [["design", chosen.get("design")], ["cost model", chosen.get("cost_model")],
             ["cost of the trace (USD)", chosen.get("cost_usd")],
             ["provisioned cost (USD per hour)", chosen.get("cost_per_hour_usd")]]
    basis = (chosen.get("accuracy_sources") or {}).get("basis")
    margins = [[accuracy_name(basis) if name == "accuracy" else name + whose_p99(m),
                as_given(m.get("limit")),
                to_figures(m.get("value")) if name == "accuracy" else m.get("value"),
                m.get("margin"), m.get("met")]
               for name, m in in_margin_order(chosen.get("margins") or {})]
    fewer = [[t, c.get("replicas"), c.get("verdict")]
             for t, c in by_planned_tier(chosen, "one_fewer")]
    said = (chosen.get("accuracy_sources") or {}).get("source")
    p99 = p99_line(chosen, plan.uniform, plan.constraints)  # as tiersim plan prints it
    lost = baseline_line(chosen, plan.uniform, plan.current, plan.hours_per_month)  # likewise
    classes = class_line(chosen, plan.uniform)  # the accuracy per difficulty class, likewise
    tasks = task_line(chosen, plan.uniform)  # task success, with agent sessions, likewise
    notes = [*floor_notes(chosen, plan.constraints, plan.uniform),  # and its notes
             *tiers_over_slo(chosen, plan.constraints, plan.robust)]
    savings = chosen.get("savings") or {}  # its baseline's gap on the saving's basis too
    # a uniform fleet names its split and techniques, as the console's "uniform fp8 (7 x 1
    # GPU, spec decode k=3)" line does; a runner-up's also names the router setting it was
    # sized under, as its console line does; a sized uniform fleet, the GPU counts its tier
    # was left out at, as its console line's brackets do
    others = [[o.get("design"), "; ".join(filter(None, (
                   sized_words(o, techniques=uniform), router_words(o),
                   left_out_words(o) if uniform and o.get("replicas") else None))) or None,
               o.get("cost_usd"),
               (design_verdict(o) or "-") + baseline_gap_words(o, savings)
               + source_words(o, said)
               if "accuracy_source" in o else design_verdict(o)]
              for group, uniform in ((plan.runners_up, False), (plan.uniform, True))
              for o in group]
    return ("<h2>Capacity plan</h2><p>Cheapest fleet that meets every constraint on this trace "
            f"({page_text(head)}):</p>" + _robust_paragraph(plan, basis)
            + table(["item", "value"], rows)
            + plan_sources_section(plan.sources)
            + "<h3>Margin on each constraint</h3>"
            + f"<p>{page_text(accuracy_line(chosen))}</p>"
            + table(["constraint", "limit", f"value ({MARGIN_SOURCE})", "margin (+ is slack)",
                     "met"], margins)
            + "".join(f"<p>{page_text(line)}</p>" for line in notes)
            + "<h3>Against uniform fleets (each sized by simulation)</h3>"
            + table(["item", "value"], _plan_saving_rows(chosen.get("savings") or {},
                                                         plan.robust))
            + ("" if lost is None else f"<p>{page_text(lost)}</p>")
            + ("" if classes is None else f"<p>{page_text(classes)}</p>")
            + ("" if tasks is None else f"<p>{page_text(tasks)}</p>")
            + ("" if p99 is None else f"<p>{page_text(p99)}</p>")
            + current_section(plan)
            + "<h3>One replica fewer</h3>"
            + table(["tier", "replicas tried", "verdict"], fewer)
            + "<h3>Other designs</h3>"
            + table(["design", "replicas", "cost (USD)", "missed / compared"], others)
            + "".join(split_section(split, plan.constraints, chosen)
                      for split in plan.splits)
            + seed_check_section(plan.seed_check, plan.seed_check_none, plan.current))


PLAN_SOURCE_ROWS = (("latency", "latency (every p99) comes from"),
                    ("cost", "cost of the trace comes from"),
                    ("cost_per_hour", "USD per hour comes from"))
"""plan.json ``sources`` keys and the plan section's row names for them, in the words the
provenance section names a run's sources ("latency comes from")."""


def plan_sources_section(sources: dict[str, str] | None) -> str:
    """Where every design's latency and cost figures come from (plan.json ``sources``,
    :func:`tiersim.plan.sources.plan_sources`): which step times at which GPU counts, which
    cost model at which prices; nothing for a plan.json written before round 56, which has
    none. Before, the section gave the cost model's name alone and no step-time source, so a
    planner read the plan's figures without knowing what they rest on."""
    if not sources:
        return ""
    rows = [[name, sources[key]] for key, name in PLAN_SOURCE_ROWS if sources.get(key)]
    return ("<h3>Where the plan's figures come from</h3>"
            + table(["figure", "source"], rows))


def current_section(plan: PlanResult) -> str:
    """Today's fleet (plan.json ``current``: ``plan.current`` or ``--current``): its USD/hour,
    p99s against the SLOs and accuracy against the floor, whether it meets them, and the
    plan's saving against it per hour and per month, that saving split into right-sizing and
    the plan's design (or why not), in the words the plan's console gives
    (:func:`tiersim.results_current.current_lines`); nothing where no fleet was named."""
    from tiersim.results_current import fleet_words, saving_words, split_words, today_words

    current = plan.current
    if not current:
        return ""
    c = plan.constraints
    fleet = fleet_words(current)
    hours = current.get("hours_per_month")
    rows = [["today's fleet", f"{fleet} ({current.get('given')})"],
            ["its cost (USD per hour, provisioned)", current.get("cost_per_hour_usd")],
            ["its p99 TTFT (s), SLO", f"{figure_text(current.get('ttft_p99_s'))}, "
             f"{as_given(c.get('ttft_p99_s'))}"],
            ["its p99 TPOT (s), SLO", f"{figure_text(current.get('tpot_p99_s'))}, "
             f"{as_given(c.get('tpot_p99_s'))}"],
            *([] if c.get("e2e_p99_s") is None else [
                ["its p99 end-to-end (s), SLO", f"{figure_text(current.get('e2e_p99_s'))}, "
                 f"{as_given(c.get('e2e_p99_s'))}"]]),
            *([] if c.get("session_p99_s") is None else [
                ["its p99 task latency (s), SLO",
                 f"{figure_text(current.get('session_p99_s'))}, "
                 f"{as_given(c.get('session_p99_s'))}"]]),
            ["its dropped requests", current.get("dropped")],
            ["meets the SLOs", _met(current.get("meets_slos"))],
            [accuracy_name(current.get("accuracy_basis")),
             None if current.get("accuracy") is None else to_figures(current["accuracy"])],
            ["meets the accuracy floor", "no floor" if c.get("accuracy_floor") is None
             else _met(current.get("meets_floor"))],
            *_today_saving_rows(current.get("vs_current_per_hour_usd"),
                                current.get("vs_current_per_month_usd"), hours)]
    words = [today_words(current, c), saving_words(current), split_words(current)]
    # under --robust, at every seed sized for (its line names them), not the plan's one seed
    basis = ("at its seeds, each figure the worst" if len(current.get("seeds") or ()) > 1
             else "and seed")
    heading = f"Against today's fleet (simulated on the plan's trace {basis})"
    return (f"<h3>{page_text(heading)}</h3>"
            + "".join(f"<p>{page_text(w)}</p>" for w in words if w)
            + table(["item", "value"], rows))


def _today_saving_rows(per_hour: float | None, month: float | None,
                       hours: float | None) -> list[list]:
    """The plan's saving against today's fleet per hour and per month of ``hours`` hours, as
    "saved" rows, or "the plan costs more" rows of the gap unsigned where the plan is the
    dearer (a saving is never shown below 0, as the run's "costs ... more"); none without a
    plan."""
    if per_hour is None:
        return []
    word = "the plan costs more than it by" if per_hour < 0 else "saved vs it"
    return [[f"{word} (USD per hour)", abs(per_hour)],
            [f"{word} (USD a month of {as_given(hours)} hours)",  # as set, as the console
             None if month is None else abs(month)]]


def _robust_paragraph(plan: PlanResult, basis: str | None = None) -> str:
    """``tiersim plan --robust``'s line, as the plan prints it (the seeds sized for, and which
    seed gave each worst figure); nothing for a plan sized at its own seed alone."""
    from tiersim.results_seeds import robust_lines

    lines = robust_lines(plan.robust, plan.constraints.get("accuracy_floor"), basis)
    return "".join(f"<p>{page_text(line.strip())}</p>" for line in lines)


def seed_check_section(check: dict | None, none: str | None = None,
                       current: dict | None = None) -> str:
    """``tiersim plan --check-seeds``: the lines the plan prints of it (its count, ranges and
    where it failed), then each seed's figures; where no seed was checked, the console's line
    saying why (``none``: plan.json ``seed_check_none``), else nothing. ``current``: plan.json's
    ``current``, for the line on today's fleet at every seed."""
    from tiersim.results_seeds import (
        CONSTRAINT_WORDS,
        HELD_P99S,
        seed_check_lines,
        share_ranges,
        unchecked_lines,
    )

    if not check:
        said = [line.strip() for line in unchecked_lines(none)]
        return "".join(f"<h3>At other seeds</h3><p>{page_text(x)}</p>" for x in said)
    lines = [line.strip() for line in seed_check_lines(check, current)]
    tiers = [t for t, _ in share_ranges(check)]
    held = [(key, name) for key, name in HELD_P99S  # where their limits are set
            if any(key in r for r in check.get("per_seed") or [])]
    rows = [[r.get("seed"), "planned" if r.get("planned") else "checked",
             r.get("ttft_p99_s"), r.get("tpot_p99_s"), *[r.get(key) for key, _ in held],
             to_figures(r.get("accuracy")),
             *[to_figures((r.get("shares") or {}).get(t)) for t in tiers],
             None if r.get("vs_uniform_frac") is None else Percent(r["vs_uniform_frac"]),
             ", ".join(CONSTRAINT_WORDS.get(k, k) for k in r.get("missed") or []) or "none"]
            for r in check.get("per_seed") or []]
    headers = ["seed", "", "p99 TTFT (s)", "p99 TPOT (s)", *[f"{name} (s)" for _, name in held],
               "accuracy",
               *[f"{t} share" for t in tiers], "saving", "missed"]
    return ("<h3>At other seeds</h3><p>" + "<br>".join(page_text(x) for x in lines) + "</p>"
            + table(headers, rows))


def split_section(split: dict[str, Any] | None, constraints: dict[str, Any],
                  design: dict[str, Any] | None = None) -> str:
    """A planned split tier's prefill/decode splits and aggregated serving on its GPUs, best
    first, with the one the plan chose (as ``plan`` prints them, a split that drops requests
    with the starred score of its p99s, against the planned SLOs ``constraints``); nothing
    for no split. Where the plan holds an end-to-end limit, which the score reads, each
    split's p99 end-to-end is a column too, as in ``tiersim disagg`` (review56b: a score over
    1 beside TTFT and TPOT within their SLOs said nothing of why). What the score covers in the
    planned ``design`` (plan.json's ``plan``) is said as ``tiersim plan`` says it
    (:func:`tiersim.results_plan_lines.split_score_words`)."""
    if not split:
        return ""
    from tiersim.metrics import DROP_STAR_WORDS, plan_split_score, split_drops
    from tiersim.results_plan_lines import split_score_words

    e2e = constraints.get("e2e_p99_s")
    limits = (constraints.get("ttft_p99_s"), constraints.get("tpot_p99_s"), e2e)
    splits = split.get("splits") or []
    rows = [[r.get("label"), r.get("ttft_p99_s"), r.get("tpot_p99_s"),
             *([] if e2e is None else [r.get("e2e_p99_s")]), plan_split_score(r, limits)]
            for r in splits]
    heads = ["split", "TTFT p99 (s)", "TPOT p99 (s)", *([] if e2e is None else ["E2E p99 (s)"]),
             "score"]
    tier, chosen = split.get("tier"), (split.get("chosen") or {}).get("label")
    star = f"; {DROP_STAR_WORDS}" if any(map(split_drops, splits)) else ""
    said = split_score_words(constraints, design)
    return (f"<h3>{page_text(f'Prefill/decode split of tier {tier}')}</h3>"
            f"<p>{page_text(f'chosen: {chosen} ({said}{star})')}</p>"
            + table(heads, rows))


def figure_html(panel: Panel) -> str:
    """A figure's div and script (plotly.js itself is inlined once in the head)."""
    div = panel.fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{panel.key}",
                            config={"displaylogo": False, "responsive": True})
    return (f'<div class="figure" data-key="{panel.key}">{div}'
            f'<p class="caption">{page_text(panel.caption)}</p></div>')


def render(data: ReportData) -> str:
    """The whole page as a string."""
    name = (data.scenario or {}).get("name") or (data.run.scenario if data.run else "")
    parts = [provenance(data)]
    if data.missing:
        parts.insert(0, f"<p class='warn'>{page_text(missing_note(data.missing))}</p>")
    if data.run is not None:
        parts.append(run_headline(data.run))
    if data.sweep is not None:
        parts.append(sweep_headline(data))
    if data.plan:
        parts.append(plan_section(data.plan))
    panels = build_panels(data)
    if panels:
        parts.append("<h2>Figures</h2>" + "".join(figure_html(p) for p in panels))
    title = page_text(f"tiersim {data.kind} report {name}".strip())
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{CSS}</style><script type='text/javascript'>{plotly.offline.get_plotlyjs()}"
            f"</script></head><body><h1>{title}</h1>"
            f"<p class='muted'>{page_text(_where(data))}</p>{''.join(parts)}"
            "</body></html>")


def _where(data: ReportData) -> str:
    """The folder the page describes, with the run id its files carry."""
    where = str(data.shown_as or data.directory)
    return f"{where} (run {data.run_id})" if data.run_id else where


def write_report(directory: str | Path, shown_as: str | Path | None = None) -> Path:
    """Write ``directory/report.html`` for the run, sweep or plan found there; return its path.

    ``shown_as``: the folder named on the page (when the files are still in a temporary one).
    """
    data = load_dir(directory, shown_as)
    path = Path(directory) / "report.html"
    _write_atomic(path, render(data), Path(shown_as or directory) / "report.html")
    return path


def _write_atomic(path: Path, text: str, named: Path | None = None) -> None:
    """Write ``text`` to ``path`` under a unique temporary name, then rename it into place; a
    failure (full or read-only disk) leaves no temporary file and is one line (a
    :class:`tiersim.errors.ReportError`) naming ``named`` (the page's place in the folder the
    user gave, where ``path`` lies in a run's temporary folder, which no user knows and which
    is gone), and an interruption
    (Ctrl-C, which left the half-written page until the folder's next command) leaves none
    either.
    The page gets an ordinary file's mode (0666 less the umask), not mkstemp's 0600."""
    tmp = None
    try:
        fd, tmp = create_temp(path.parent, ".report-", ".html.tmp")
        # a name UTF-8 cannot hold (a Latin-1 folder name) is shown as its escape, \udce9
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except OSError as err:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        named = path if named is None else named
        raise ReportError(str(named), str(err.strerror or err), _write_fix(path, err)
                          ) from None
    except BaseException:  # Ctrl-C mid-write: no half page left beside the folder's files
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise


#: errno values that say the folder may not be written (permissions, a read-only disk).
NOT_WRITABLE = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def _write_fix(path: Path, err: OSError) -> str:
    """What to do when the report cannot be written to ``path``."""
    if path.is_dir():
        return "remove that folder or choose another"
    if err.errno in NOT_WRITABLE:
        return "check the folder's permissions, or copy the run elsewhere and report there"
    if err.errno == errno.EFBIG:  # over ulimit -f: free space does not help
        return ("raise the largest file size this shell lets a command write (ulimit -f) or "
                "choose another folder")
    return "free some space or choose another folder"

