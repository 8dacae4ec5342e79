"""Plotly figures of the report: each builder returns a :class:`Panel` or None (no data for it).

Every panel has a title with units, labelled axes and one sentence saying what to look at.
Large inputs are thinned before plotting (CDFs to quantiles, time series to time bins) so the
page stays small whatever the trace length.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from tiersim.analytic import upper_hull
from tiersim.errors import escaped_lines
from tiersim.report.load import ReportData, axis_text
from tiersim.report.timeseries import bucketed, grid_edges, tier_peaks
from tiersim.results import RunResult, accuracy_name, within_limit

CDF_POINTS = 400
TIME_BINS = 600
LAYOUT = {"template": "plotly_white", "height": 430, "margin": {"t": 70, "l": 70, "r": 30}}


@dataclass
class Panel:
    """One figure of the report and the sentence printed under it."""

    key: str
    fig: go.Figure
    caption: str


def _tier_label(data: ReportData, tier) -> str:
    """A tier's name from an index or a name."""
    names = data.tier_names()
    if isinstance(tier, (int, np.integer)) and 0 <= int(tier) < len(names):
        return names[int(tier)]
    return str(tier)


def _tier_color(data: ReportData, tier) -> str:
    """A tier's colour, the same in every figure (by its position cheapest first)."""
    names = data.tier_names()
    label = _tier_label(data, tier)
    return _color(names.index(label) if label in names else tier)


def _slo(data: ReportData) -> dict[str, float]:
    """The scenario's SLOs (``ttft_p99_s``, ``tpot_p99_s``, and ``e2e_p99_s`` where set),
    where given."""
    run = data.run
    slo = {"ttft_p99_s": run.slo_ttft_p99_s if run else None,
           "tpot_p99_s": run.slo_tpot_p99_s if run else None,
           "e2e_p99_s": run.slo_e2e_p99_s if run else None,
           **((data.scenario or {}).get("slo") or {}), **((data.plan.constraints if data.plan
                                                           is not None else None) or {})}
    return {k: float(v) for k, v in slo.items()
            if k in ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s") and v is not None}


# --------------------------------------------------------------------------- latency (run)


def _cdf(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A CDF thinned to quantiles (numpy's linear interpolation): CDF_POINTS of them from the
    minimum to p99, and 50 more from p99 to the maximum, so the tail keeps its shape (not every
    value above p99: beyond 5,000 values there are more than 50 of them)."""
    v = np.sort(values.dropna().to_numpy(dtype=float))
    if len(v) == 0:
        return v, v
    probs = np.unique(np.concatenate([np.linspace(0, 0.99, CDF_POINTS),
                                      np.linspace(0.99, 1.0, 50)]))
    return np.quantile(v, probs), probs


def answering_tier(requests: pd.DataFrame) -> str | None:
    """The column naming each request's tier as the summary's per-tier figures count it: the
    tier whose answer the user got (``final_tier``; an escalated request is its second tier's),
    else ``tier`` (a table without ``final_tier``), else None."""
    return next((c for c in ("final_tier", "tier") if c in requests), None)


def latency_cdfs(data: ReportData) -> Panel | None:
    """TTFT and TPOT CDFs per tier (the tier that answered, as summary.json's per-tier p99s),
    from requests.parquet."""
    req = data.requests
    by = None if req is None else answering_tier(req)
    if by is None or not {"ttft_s", "tpot_s"} & set(req.columns):
        return None
    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT", "TPOT"))
    for col, metric in enumerate(("ttft_s", "tpot_s"), start=1):
        if metric not in req:
            continue
        for tier, group in req.groupby(by, sort=True):
            x, y = _cdf(group[metric])
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=_tier_label(data, tier),
                                     legendgroup=str(tier), showlegend=col == 1,
                                     line={"color": _tier_color(data, tier)}), row=1, col=col)
        slo = _slo(data).get(metric.replace("_s", "_p99_s"))
        if slo:
            fig.add_vline(x=slo, line_dash="dash", line_color="red", row=1, col=col,
                          annotation_text="SLO p99")
    fig.update_xaxes(type="log", title_text="time to first token (s, log scale)", row=1, col=1)
    fig.update_xaxes(type="log", title_text="time per output token (s, log scale)", row=1, col=2)
    fig.update_yaxes(title_text="fraction of requests at or below", range=[0, 1.01])
    fig.update_layout(title="Latency distribution per tier (CDF)", legend_title="tier", **LAYOUT)
    return Panel("latency_cdf", fig, "Read where each tier's curve crosses 0.99: left of the red "
                 "SLO line means that tier meets its p99 target; a long flat tail means queueing. "
                 "A request counts under the tier that answered it (an escalated one under the "
                 "tier it escalated to), as in the p99 bars.")


P99_BARS = (("ttft_p99_s", "TTFT p99", "p99 time to first token (s)"),
            ("tpot_p99_s", "TPOT p99", "p99 time per output token (s)"),
            ("e2e_p99_s", "end-to-end p99", "p99 end-to-end time (s)"))
"""The p99 bars per tier: (summary field, panel title, axis title); the end-to-end one only
where the run has it (its tiers' ``e2e_p99_s``, written where it holds ``slo.e2e_p99_s``)."""


def p99_per_tier(data: ReportData) -> Panel | None:
    """Bar chart of p99 TTFT and TPOT per tier from the summary, and end-to-end where the run
    has it (round 56: before, a run holding ``slo.e2e_p99_s`` showed no bar of it), with the
    SLO lines where set."""
    if data.run is None or not data.run.tiers:
        return None
    tiers = data.run.tiers
    names = [t.name for t in tiers]
    shown = [bar for bar in P99_BARS if bar[0] != "e2e_p99_s"
             or any(t.e2e_p99_s is not None for t in tiers)]
    fig = make_subplots(rows=1, cols=len(shown), subplot_titles=[b[1] for b in shown])
    for col, (metric, _, axis) in enumerate(shown, start=1):
        values = [getattr(t, metric) for t in tiers]
        fig.add_trace(go.Bar(x=names, y=values, marker_color=[_color(i) for i in range(len(names))],
                             showlegend=False, name=metric), row=1, col=col)
        if _slo(data).get(metric):
            fig.add_hline(y=_slo(data)[metric], line_dash="dash", line_color="red", row=1,
                          col=col, annotation_text="SLO")
        fig.update_yaxes(title_text=axis, row=1, col=col)
    fig.update_xaxes(title_text="tier")
    fig.update_layout(title="p99 latency per tier (seconds)", **LAYOUT)
    return Panel("p99_per_tier", fig, P99_BARS_CAPTION[data.run.slo_scope == "tier"])


P99_BARS_CAPTION = (
    "Bars above the red dashed SLO line are tiers whose own requests miss the latency "
    "objective, even where the fleet's p99 (what the SLO and the plan hold) meets it; add "
    "replicas there first.",
    "Bars above the red dashed SLO line are tiers whose own requests miss the latency "
    "objective: under slo.scope: tier each tier's own p99 is held, so such a tier misses the "
    "SLOs even where the fleet's p99 meets them; add replicas there first.")
"""The p99 bars' caption under ``slo.scope: fleet`` and under ``tier`` (a tier over a limit is
then the fleet's miss, not one the SLO lets pass)."""


# --------------------------------------------------------------------------- time series (run)

SERIES = (("running", ("running",), "sum", "mean batch (requests running)"),
          ("queue", ("waiting", "queue"), "sum", "queue (requests waiting)"),
          ("kv", ("kv_frac", "kv_blocks", "kv"), "mean", "KV cache in use (fraction of blocks)"))
"""(stem, candidate columns, how replicas combine, label) of each time-series row."""


def _time_column(frame: pd.DataFrame) -> str | None:
    """The time column of timeseries.parquet."""
    return next((c for c in ("time_s", "t_s", "time", "t") if c in frame), None)


def _series_values(frame: pd.DataFrame, stem: str, names: tuple[str, ...]) -> pd.Series | None:
    """The sampled values of one series (KV blocks divided by capacity when both are there)."""
    column = next((c for c in frame.columns for n in names if c.startswith(n)
                   and pd.api.types.is_numeric_dtype(frame[c])), None)
    if column is None:
        return None
    values = frame[column].astype(float)
    if stem == "kv" and column == "kv_blocks" and "kv_capacity" in frame:
        values = values / frame["kv_capacity"].where(frame["kv_capacity"] > 0)
    return values


def _end_time(data: ReportData, frame: pd.DataFrame, time_col: str) -> float:
    """Where the time axis ends: the run's duration, else the last sample."""
    last = float(frame[time_col].max())
    run = data.run.duration_s if data.run is not None else None
    return last if run is None else max(last, run)


def _edges(data: ReportData, frame: pd.DataFrame, time_col: str) -> np.ndarray:
    """The time buckets: whole intervals of the engine's grid (``interval_s``), where each
    bucket's mean is exact; else (older files of point samples) TIME_BINS equal buckets."""
    end = _end_time(data, frame, time_col)
    interval = frame["interval_s"].max() if "interval_s" in frame else None
    if interval is not None and np.isfinite(interval) and interval > 0:
        return grid_edges(float(interval), end, TIME_BINS)
    return np.linspace(0.0, end, TIME_BINS + 1)


def engine_replicas(data: ReportData) -> dict[str, int]:
    """Each tier's engine replicas (``replicas`` x ``data_parallel``: every DP rank samples on
    its own), from scenario.yaml, else the summary's ``replicas``; a tier whose count is not a
    whole number >= 1 is left out (its mean is then over the replicas sampled)."""
    tiers = (data.scenario or {}).get("tiers")
    if isinstance(tiers, list) and all(isinstance(t, dict) for t in tiers):
        counts = {str(t.get("name")): (t.get("replicas"), t.get("data_parallel", 1))
                  for t in tiers}
    else:
        counts = {t.name: (t.replicas, 1) for t in (data.run.tiers if data.run else ())}
    return {name: r * dp for name, (r, dp) in counts.items() if _whole(r) and _whole(dp)}


def _whole(value) -> bool:
    """A whole number >= 1 (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def load_over_time(data: ReportData) -> Panel | None:
    """Mean batch, mean and max queue, and KV use per time bucket, one line per tier.

    Time-weighted per bucket (:mod:`tiersim.report.timeseries`): each replica's rows hold
    until its next row; a bucket, made of whole intervals of the engine's grid, shows the exact
    mean over it (and, for the queue, the longest queue on any one replica in it), never a
    value sampled at an arbitrary instant.
    """
    ts = data.timeseries
    if ts is None or ts.empty or "tier" not in ts or _time_column(ts) is None:
        return None
    time_col = _time_column(ts)
    found = [(stem, how, label, v) for stem, names, how, label in SERIES
             if (v := _series_values(ts, stem, names)) is not None]
    if not found:
        return None
    edges = _edges(data, ts, time_col)
    fig = make_subplots(rows=len(found), cols=1, shared_xaxes=True,
                        subplot_titles=[label for _, _, label, _ in found], vertical_spacing=0.08)
    for row, (stem, how, label, values) in enumerate(found, start=1):
        for tier, (mean, peak) in bucketed(ts, time_col, values, edges, how,
                                           engine_replicas(data)).items():
            color = _tier_color(data, tier)
            fig.add_trace(go.Scatter(x=edges[:-1], y=mean, mode="lines",
                                     name=_tier_label(data, tier), legendgroup=str(tier),
                                     showlegend=row == 1, line={"color": color, "shape": "hv"}),
                          row=row, col=1)
            if stem == "queue":
                if "waiting_max" in ts:  # the longest queue on one replica (module timeseries)
                    peak = tier_peaks(ts, time_col, ts["waiting_max"], edges)[tier]
                fig.add_trace(go.Scatter(x=edges[:-1], y=peak, mode="lines",
                                         name=f"{_tier_label(data, tier)} max on one replica",
                                         legendgroup=str(tier), showlegend=False,
                                         line={"color": color, "shape": "hv", "dash": "dot"}),
                              row=row, col=1)
        fig.update_yaxes(title_text=label.split(" (")[0], row=row, col=1)
    fig.update_xaxes(title_text="time since trace start (s)", row=len(found), col=1)
    fig.update_layout(title="Load, queue and KV cache use over time per tier (time-weighted "
                      f"per {edges[1] - edges[0]:.3g} s bucket)", legend_title="tier",
                      **{**LAYOUT, "height": 250 * len(found) + 120})
    return Panel("load_over_time", fig, "Each bucket shows the exact time-weighted mean over "
                 "the bucket (queue: dotted line = the longest queue on any one replica in it). "
                 "Queues that grow and do not drain, or KV use pinned near 1.0, mark where "
                 "capacity ran out; batch and queue are summed over a tier's replicas, KV use is "
                 "their mean over all of them (a replica that never ran counts as empty).")


# --------------------------------------------------------------------------- frontier


def _pareto(cost: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """Indices of points no other point beats on both lower cost and higher accuracy."""
    order = np.lexsort((-acc, cost))
    best, keep = -np.inf, []
    for i in order:
        if acc[i] > best:
            keep.append(i)
            best = acc[i]
    return np.array(keep, dtype=int)


def _cost_column(frame: pd.DataFrame) -> str | None:
    """The cost metric to plot: per 1M output tokens when present, else total USD."""
    return next((c for c in ("cost_per_1m_output_tokens", "cost_usd") if c in frame
                 and frame[c].notna().any()), None)


def _point_labels(frame: pd.DataFrame, axes: list[str]) -> list[str]:
    """Hover text naming each sweep point by its axis values (only the axis columns read:
    ``iterrows`` copied every metric column of every point into Python objects)."""
    columns = [frame[a].tolist() for a in axes]
    return ["\n".join(f"{a} = {axis_text(value)}" for a, value in zip(axes, values, strict=True))
            for values in zip(*columns, strict=True)] if axes else [""] * len(frame)


def _savings_series(savings: dict) -> dict[str, tuple[list, list, str]]:
    """Frontier series from a run's ``savings`` figures: uniform tiers, static split, routing."""
    uniform = {k: v for k, v in (savings.get("uniform") or {}).items()
               if isinstance(v, dict) and v.get("cost_usd") is not None
               and v.get("accuracy") is not None}
    series: dict[str, tuple[list, list, str]] = {}
    if uniform:
        names = sorted(uniform, key=lambda k: uniform[k]["cost_usd"])
        xs = [uniform[n]["cost_usd"] for n in names]
        ys = [uniform[n]["accuracy"] for n in names]
        series["uniform tiers (every request on one tier)"] = (xs, ys, "markers+text", names)
        hull = _pareto(np.array(xs, float), np.array(ys, float))
        series["static random split (mixes of uniform tiers)"] = (
            [xs[i] for i in hull], [ys[i] for i in hull], "lines", None)
    acc = savings.get("accuracy")
    if acc is not None and savings.get("static_split_cost_usd") is not None:
        series["static split of equal accuracy"] = ([savings["static_split_cost_usd"]], [acc],
                                                    "markers", None)
    if acc is not None and savings.get("routed_cost_usd") is not None:
        missed = savings.get("missed")  # the run missed what its baselines are held to
        name = (f"this run (misses {missed}: not comparable)" if missed
                else "this run (routing policy)")
        series[name] = ([savings["routed_cost_usd"]], [acc], "markers", None)
    return series


def _run_savings(run: RunResult | None) -> dict:
    """A run's savings figures in the form :func:`_savings_series` takes (sweeps give it the
    same figures from their columns); ``missed``: what the run's fleet missed of what its
    baselines are held to, in words, when its saving is not comparable (else None)."""
    s = run.savings if run is not None else None
    if s is None:
        return {}
    return {"uniform": {u.tier: {"cost_usd": u.cost_usd, "accuracy": u.accuracy}
                        for u in s.uniform},
            "accuracy": s.accuracy, "static_split_cost_usd": s.static_split_cost_usd,
            "routed_cost_usd": s.routed_cost_usd,
            "missed": None if s.comparable else s.missed}


def _summary_series(run: RunResult | None) -> dict[str, tuple[list, list, str, list | None]]:
    """Frontier series of a run: its savings figures and its ``analytic`` map of
    ``name: [[cost, accuracy], ...]`` (an analytic curve is drawn dotted)."""
    found = dict(_savings_series(_run_savings(run)))
    for key in ("analytic",):
        block = run.analytic if run is not None else None
        for name, points in (block.items() if isinstance(block, dict) else []):
            points = points if isinstance(points, list) else []
            pairs = sorted((float(p[0]), float(p[1])) for p in points
                           if isinstance(p, (list, tuple)) and len(p) == 2 and None not in p)
            if pairs:  # drawn as reachable: a vertex that costs more for less accuracy is off
                pairs = [tuple(p) for p in upper_hull(np.array(pairs))]
                label = name if key == "frontier" else f"analytic: {name}"
                found[label] = ([c for c, _ in pairs], [a for _, a in pairs], "lines", None)
    return found


UNIFORM_SETS_SHOWN = 10
"""Most sets of uniform fleets a sweep's frontier draws (one per distinct set of points)."""


def _sweep_savings(sweep: pd.DataFrame, axes: list[str]
                   ) -> tuple[dict[str, tuple[list, list, str, list | None]], int]:
    """Uniform-tier and static-split series of a sweep's points, and how many distinct sets of
    uniform fleets its points have. Points whose uniform fleets cost the same (no axis changes
    a price, the load or the fleet) give one set, drawn as a run's; where an axis changes them,
    each set (up to :data:`UNIFORM_SETS_SHOWN`) is drawn apart, named by the axis values its
    points share: point 0's fleets drawn beside every point made a point priced at 10 USD an
    hour look dearer than uniform fleets priced at 3.5."""
    prefix = "savings.uniform."
    names = sorted({c[len(prefix):].rsplit(".", 1)[0] for c in sweep.columns
                    if c.startswith(prefix) and c.endswith(".cost_usd")})
    columns = [f"{prefix}{n}.{k}" for n in names for k in ("cost_usd", "accuracy")
               if f"{prefix}{n}.{k}" in sweep]
    if not columns:
        return {}, 0
    sets = [group for _, group in sweep.groupby(columns, sort=False, dropna=False)]
    series: dict[str, tuple[list, list, str, list | None]] = {}
    for group in sets[:UNIFORM_SETS_SHOWN]:
        found = _savings_series({"uniform": _uniform_of(group.iloc[0], names)})
        where = "" if len(sets) == 1 else f" at {_shared_values(group, axes)}"
        series.update({name + where: points for name, points in found.items()})
    return series, len(sets)


def _uniform_of(point: pd.Series, names: list[str]) -> dict[str, dict[str, Any]]:
    """``{tier: {cost_usd, accuracy}}`` of one sweep point's uniform fleets (those with both)."""
    uniform = {n: {"cost_usd": point.get(f"savings.uniform.{n}.cost_usd"),
                   "accuracy": point.get(f"savings.uniform.{n}.accuracy")} for n in names}
    return {k: v for k, v in uniform.items() if pd.notna(v["cost_usd"])
            and pd.notna(v["accuracy"])}


def _shared_values(group: pd.DataFrame, axes: list[str]) -> str:
    """The axis values every point of ``group`` holds (``a=1, b=x``), else its first point's."""
    shared = [a for a in axes if a in group and group[a].nunique(dropna=False) == 1]
    first = group.iloc[0]
    return ", ".join(f"{a}={axis_text(first[a])}"
                     for a in (shared or [a for a in axes if a in group]))


def frontier(data: ReportData) -> Panel | None:
    """Cost vs accuracy: sweep points and their Pareto front, uniform tiers, static split,
    the routed run, and an analytic curve where the summary carries one."""
    ledger = data.run.savings.cost_model if data.run and data.run.savings else "attributed"
    fig, n_points, cost_label = go.Figure(), 0, f"cost of the run (USD, {ledger})"
    several, sets = False, 0
    sweep = _ok(data.sweep)
    series = dict(_summary_series(data.run))
    if sweep is not None and not sweep.empty and "accuracy" in sweep:
        cost_col = "savings.routed_cost_usd" if "savings.routed_cost_usd" in sweep \
            else _cost_column(sweep)
        if cost_col:
            groups = _by_ledger(sweep, cost_col)
            for i, (ledger, group) in enumerate(groups):
                suffix = f" ({ledger})" if len(groups) > 1 else ""
                n_points += _add_sweep_points(fig, group, cost_col, data.sweep_axes, suffix, i)
                if cost_col.startswith("savings."):
                    found, count = _sweep_savings(group, data.sweep_axes)
                    series.update({name + suffix: points for name, points in found.items()})
                    sets = max(sets, count)
            cost_label = _cost_axis(cost_col, [ledger for ledger, _ in groups])
            several = len(groups) > 1
    for i, (name, (xs, ys, mode, text)) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=xs, y=ys, mode=mode, name=name, text=text,
                                 textposition="top center",
                                 marker={"size": 11, "color": _color(i + 2)},
                                 line={"dash": "dot" if "analytic" in name else "solid",
                                       "color": _color(i + 2)}))
        n_points += len(xs)
    if n_points < 2:
        return None
    name = _accuracy_name(data, sweep)
    fig.update_layout(title="Cost vs accuracy frontier", xaxis_title=cost_label,
                      yaxis_title=(name[:-1] + "; " if name.endswith(")") else name + " (")
                      + "fraction answered correctly)", **LAYOUT)
    return Panel("frontier", fig, "Up and to the left is better: routing points left of the "
                 "static-split line save money at equal accuracy, and sweep points off the Pareto "
                 "front are settings never worth choosing." + (LEDGERS_NOTE if several else "")
                 + (_sets_note(sets) if sets > 1 else ""))


def _accuracy_name(data: ReportData, sweep: pd.DataFrame | None) -> str:
    """The accuracy's name as the console and the headline give it: "expected accuracy", or
    "accuracy (realised draws)" where the router scores it on the realised draws (a cascade),
    from the run's router basis and the sweep's ``router.basis`` column; a sweep whose points
    score it both ways says so."""
    bases = set()
    if data.run is not None and data.run.router is not None:
        bases.add(data.run.router.basis)
    if sweep is not None and "router.basis" in sweep:
        bases.update(str(b) for b in sweep["router.basis"].dropna())
    if "realised" in bases and len(bases) > 1:
        return "accuracy (expected or realised draws, as each point's router scores it)"
    return accuracy_name("realised" if bases == {"realised"} else "expected")


def _sets_note(sets: int) -> str:
    """The caption's sentence for a sweep whose points have several sets of uniform fleets."""
    shown = f"the first {UNIFORM_SETS_SHOWN} of {sets} drawn" if sets > UNIFORM_SETS_SHOWN \
        else f"{sets} sets"
    return (" The sweep's axes change the uniform fleets and static split (their price, "
            "accuracy, load or fleet), so each set is drawn with the axis values of its points "
            f"({shown}); compare each point with its own set.")


LEDGERS_NOTE = (" The sweep prices its points under several cost models, which are not "
                "comparable: each has its own points and Pareto front, named in the legend.")
FRONT_COLORS = ("#1f77b4", "#9467bd", "#8c564b")
"""Pareto-front colours, one per cost model (three exist)."""


def _add_sweep_points(fig: go.Figure, sweep: pd.DataFrame, cost_col: str, axes: list[str],
                      suffix: str = "", number: int = 0) -> int:
    """Sweep points as grey markers plus their Pareto front (names ending in ``suffix``, the
    ``number``-th cost model's colour and symbol); returns how many were drawn."""
    every = sweep.dropna(subset=[cost_col, "accuracy"])
    missed = _missed(every)
    frame = every[~missed]
    cost, acc = frame[cost_col].to_numpy(float), frame["accuracy"].to_numpy(float)
    symbol = ("circle", "diamond", "square")[number % 3]
    fig.add_trace(go.Scatter(x=cost, y=acc, mode="markers", name="sweep points" + suffix,
                             text=_point_labels(frame, axes), hoverinfo="text+x+y",
                             marker={"color": "#999", "size": 8, "symbol": symbol}))
    if missed.any():
        out = every[missed]
        fig.add_trace(go.Scatter(
            x=out[cost_col].to_numpy(float), y=out["accuracy"].to_numpy(float), mode="markers",
            name="sweep points missing their SLOs or floor (not on the front)" + suffix,
            text=_point_labels(out, axes), hoverinfo="text+x+y",
            marker={"color": "#d62728", "size": 8, "symbol": "x"}))
    front = _pareto(cost, acc)
    fig.add_trace(go.Scatter(x=cost[front], y=acc[front], mode="lines+markers",
                             name="Pareto front of the sweep" + suffix,
                             marker={"symbol": symbol},
                             line={"color": FRONT_COLORS[number % len(FRONT_COLORS)]}))
    return len(frame)


def _missed(frame: pd.DataFrame) -> np.ndarray:
    """Per sweep point, whether its fleet missed the SLOs or the accuracy floor its uniform
    baselines are held to (``savings.routed_slo_met`` / ``routed_floor_met`` false), so its
    saving is not comparable and it is no setting worth choosing: it is kept off the Pareto
    front. A table without savings (``--no-baselines``) is judged as a run judges itself:
    a request dropped, a p99 over the point's SLO, or ``router.floor_met`` false."""
    def false(column: str) -> np.ndarray:
        if column not in frame:
            return np.zeros(len(frame), dtype=bool)
        return np.array([v is not None and not pd.isna(v) and not bool(v)
                         for v in frame[column]], dtype=bool)

    if "savings.routed_slo_met" in frame or "savings.routed_floor_met" in frame:
        return false("savings.routed_slo_met") | false("savings.routed_floor_met")
    out = false("router.floor_met")
    if "dropped" in frame:
        out |= pd.to_numeric(frame["dropped"], errors="coerce").fillna(0).to_numpy() > 0
    for metric in ("ttft_p99_s", "tpot_p99_s"):
        limit = f"slo_{metric}"
        if metric in frame and limit in frame:
            out |= np.array([_over(v, lim) for v, lim in zip(frame[metric], frame[limit],
                                                               strict=True)], dtype=bool)
    return out


def _over(value, limit) -> bool:
    """Whether a written p99 is over its written limit (either missing: not judged)."""
    try:
        value, limit = float(value), float(limit)
    except (TypeError, ValueError):
        return False
    return value == value and limit == limit and not within_limit(value, limit)


def _ledger_column(cost_col: str) -> str:
    """The column naming the cost model a sweep's cost column is priced under."""
    return "savings.cost_model" if cost_col.startswith("savings.") else "cost_model"


def _by_ledger(sweep: pd.DataFrame, cost_col: str) -> list[tuple[str | None, pd.DataFrame]]:
    """(cost model, points) per cost model of ``cost_col`` (one group, None, when the table
    does not say; points that do not say are a group of their own)."""
    column = _ledger_column(cost_col)
    if column not in sweep or sweep[column].isna().all():
        return [(None, sweep)]
    return [(str(ledger) if pd.notna(ledger) else "cost model not recorded", group)
            for ledger, group in sweep.groupby(column, sort=False, dropna=False)]


COST_AXES = {"cost_per_1m_output_tokens": "cost per 1M output tokens",
             "cost_usd": "cost of the run", "savings.routed_cost_usd": "cost of the run"}


def _cost_axis(column: str, ledgers: list[str | None] = ()) -> str:
    """Axis label of a cost column, with the cost model its values are priced under."""
    name = COST_AXES.get(column, column)
    ledgers = [ledger for ledger in ledgers if ledger is not None]
    if len(ledgers) == 1:
        return f"{name} (USD, {ledgers[0]})"
    if ledgers:
        return f"{name} (USD; each series under its own cost model: {', '.join(ledgers)})"
    return f"{name} (USD)"


def _ok(sweep: pd.DataFrame | None) -> pd.DataFrame | None:
    """The sweep's successful points only."""
    if sweep is None or "status" not in sweep:
        return sweep
    return sweep[sweep["status"] == "ok"]


# --------------------------------------------------------------------------- sweep


def _fpr_axis(axes: list[str]) -> str | None:
    """The sweep axis that injects the router's false-positive rate."""
    return next((a for a in axes if a.split(".")[-1] == "fpr"), None)


def _groups(frame: pd.DataFrame, others: list[str]):
    """(label, sub-frame) per combination of the other axes (one group when there are none)."""
    if not others:
        yield "all points", frame
        return
    for key, group in frame.groupby(others, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        yield ", ".join(f"{a.split('.')[-1]}={axis_text(v)}"
                        for a, v in zip(others, key, strict=True)), \
            group


def fpr_sweep(data: ReportData) -> Panel | None:
    """Cost saved, accuracy lost and silent failures as the injected FPR grows."""
    sweep, axis = _ok(data.sweep), _fpr_axis(data.sweep_axes)
    cost_col = _cost_column(sweep) if sweep is not None else None
    if axis is None or cost_col is None or "accuracy" not in sweep:
        return None
    others = [a for a in data.sweep_axes if a != axis]
    silent = "router.silent_failure_rate" if "router.silent_failure_rate" in sweep else None
    fig = make_subplots(rows=1, cols=3 if silent else 2, subplot_titles=(
        "cost saved vs lowest FPR", "accuracy lost vs lowest FPR", "silent failures")[:3 if silent
                                                                                      else 2])
    groups = list(_groups(sweep, others))
    missed_drawn = 0
    for i, (label, group) in enumerate(groups[:LINES_SHOWN]):
        group = group.sort_values(axis)
        base = group.iloc[0]
        x = group[axis]
        saved = 100 * (1 - group[cost_col] / base[cost_col])
        lost = 100 * (base["accuracy"] - group["accuracy"])
        style = {"legendgroup": label, "line": {"color": _color(i)}, "mode": "lines+markers"}
        fig.add_trace(go.Scatter(x=x, y=saved, name=label, **style), row=1, col=1)
        fig.add_trace(go.Scatter(x=x, y=lost, name=label, showlegend=False, **style), row=1, col=2)
        missed = _missed(group)
        if missed.any():  # its saving is not comparable, as its Points row and the frontier
            # say: a red cross over its point, so no line reads as a plan (round 55)
            fig.add_trace(go.Scatter(
                x=x[missed], y=saved[missed], mode="markers", name=MISSED_NAME,
                legendgroup="missed", showlegend=missed_drawn == 0,
                text=_point_labels(group[missed], data.sweep_axes), hoverinfo="text+x+y",
                marker={"color": "#d62728", "size": 11, "symbol": "x"}), row=1, col=1)
            missed_drawn += int(missed.sum())
        if silent:
            fig.add_trace(go.Scatter(x=x, y=100 * group[silent], name=label, showlegend=False,
                                     **style), row=1, col=3)
    fig.update_xaxes(title_text="injected false-positive rate (hard sent to a cheaper tier)")
    fig.update_yaxes(title_text="cost saved (%)", row=1, col=1)
    fig.update_yaxes(title_text="accuracy lost (percentage points)", row=1, col=2)
    if silent:
        fig.update_yaxes(title_text="silently wrong answers (% of requests)", row=1, col=3)
    fig.update_layout(title="Router false positives: cost saved vs accuracy lost", **LAYOUT)
    drawn = [g for _, g in groups[:LINES_SHOWN]]
    return Panel("fpr_sweep", fig, (_flat_cost_sentence(drawn, cost_col) or
                 "Each false positive saves money and silently loses accuracy: "
                 "compare the slopes, the cost saved per point of accuracy lost is the price of "
                 "a cheaper, sloppier classifier.") + _lines_note(len(groups))
                 + _missed_note(missed_drawn, sum(len(g) for _, g in
                                                  groups[:LINES_SHOWN])))


def _flat_cost_sentence(lines: list[pd.DataFrame], cost_col: str) -> str | None:
    """The FPR figure's first sentence where every line drawn (``lines``, one frame each)
    costs the same at each of its points (a sweep over ``router.confusion.fpr`` keeps its
    fleet, which provisioned cost bills whoever serves a request): its "cost saved" lines are
    flat at 0 %, and "each false positive saves money" would say the opposite (round 57).
    Lines at different costs (a second axis that moves the fleet) are each checked alone
    (review57c: they were pooled, and flat lines at two costs kept "saves money"). None where
    the cost moves along a line."""
    costs = [line[cost_col].dropna().to_numpy(float) for line in lines]
    if sum(len(c) for c in costs) < 2 or any(
            len(c) and not np.allclose(c, c[0], rtol=1e-9, atol=0.0) for c in costs):
        return None
    low, high = min(c.min() for c in costs if len(c)), max(c.max() for c in costs if len(c))
    unit = "USD per 1M output tokens" if cost_col == "cost_per_1m_output_tokens" else "USD"
    drawn = pd.concat(lines)
    billed = (", and under provisioned cost it is paid whoever serves a request"
              if "cost_model" in drawn and (drawn["cost_model"] == "provisioned").all() else "")
    if np.isclose(low, high, rtol=1e-9, atol=0.0):
        where = f"at every point drawn ({_cost_shown(low)} {unit})"
    else:
        where = (f"at every rate on each line drawn ({_cost_shown(low)} to {_cost_shown(high)} "
                 f"{unit})")
    return (f"The cost is the same {where}, so these false "
            f"positives save nothing and only lose accuracy: the fleet is kept at every "
            f"rate{billed}; to price a sloppier classifier, size a fleet at each rate with "
            f"tiersim plan (router.confusion set in the scenario).")


def _cost_shown(cost: float) -> str:
    """A cost as the FPR figure's flat-cost sentence writes it: three figures, whole above
    1,000."""
    return f"{cost:,.0f}" if abs(cost) >= 1000 else f"{cost:#.3g}".removesuffix(".")


MISSED_NAME = "misses its SLOs or floor: saving not comparable"
"""The legend name of the FPR figure's red crosses (:func:`fpr_sweep`)."""


def _missed_note(missed: int, drawn: int) -> str:
    """The FPR figure's sentence for points whose fleet misses its SLOs or floor: the "cost
    saved" drawn for them is no saving a planner can take (their Points rows read "not
    comparable"); empty where none does."""
    if not missed:
        return ""
    if missed == drawn:
        who, verb, its = "every point drawn", "misses", "its"
    else:
        who = f"{missed:,} of the {drawn:,} points drawn"
        verb, its = ("misses", "its") if missed == 1 else ("miss", "their")
    return (f" Red crosses: {who} {verb} {its} SLOs or accuracy floor, so {its} cost saved is "
            "not comparable (the Points table says which was missed; size such a fleet with "
            "tiersim plan).")


LINES_SHOWN = 10
"""Most lines (settings of the other axes) a sweep figure draws."""


def _lines_note(lines: int) -> str:
    """The caption's sentence for a figure with more settings of the other axes than it draws."""
    if lines <= LINES_SHOWN:
        return ""
    return (f" The first {LINES_SHOWN} of the {lines} settings of the other axes are drawn; "
            "the sweep table has every point.")


def sweep_column_names(data: ReportData, sweep: pd.DataFrame) -> dict[str, str]:
    """A sweep's headline columns as its figures and its points table both name them, each
    with its unit as a run's report gives it: the accuracy with its basis, a cost with its
    cost model (:func:`_cost_axis`). Where a response cache answered requests at any point,
    the figures a run's headline scopes to the requests the fleet served say so here too
    (:attr:`tiersim.results.RunResult.served_scope`)."""
    names = {"ttft_p99_s": "TTFT p99 (s)", "tpot_p50_s": "TPOT p50 (s)",
             "tpot_p99_s": "TPOT p99 (s)",
             "accuracy": _accuracy_name(data, sweep),
             "slo_attainment": "SLO attainment (fraction)",
             "router.silent_failure_rate": "silent failure rate (fraction)"}
    task_slo = sweep.get("slo_session_p99_s")
    if task_slo is not None and pd.to_numeric(task_slo, errors="coerce").notna().any():
        names["slo_attainment"] = "SLO attainment (fraction, per request)"  # not the task SLO
    for cost in COST_AXES:
        if cost in sweep:
            names[cost] = _cost_axis(cost, [ledger for ledger, _ in _by_ledger(sweep, cost)])
    hits = sweep.get("response_cache.hits")
    if hits is not None and (pd.to_numeric(hits, errors="coerce").fillna(0) > 0).any():
        for key in ("ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "slo_attainment",
                    "cost_per_1m_output_tokens"):
            if key in names:
                names[key] = f"{names[key][:-1]}; requests the fleet served)"
        names["accuracy"] += " (requests the fleet served)"
    return names


def sweep_metrics(data: ReportData) -> Panel | None:
    """p99 TTFT, accuracy and cost against the first sweep axis, one line per other setting."""
    sweep = _ok(data.sweep)
    if sweep is None or sweep.empty or not data.sweep_axes:
        return None
    axis = data.sweep_axes[0]
    if not pd.api.types.is_numeric_dtype(sweep[axis]):
        return None
    names = sweep_column_names(data, sweep)
    metrics = [(m, names[m]) for m in ("ttft_p99_s", "tpot_p99_s", "accuracy",
                                       _cost_column(sweep)) if m and m in sweep]
    fig = make_subplots(rows=1, cols=len(metrics), subplot_titles=[t for _, t in metrics])
    others = [a for a in data.sweep_axes if a != axis]
    for i, (label, group) in enumerate(list(_groups(sweep, others))[:10]):
        group = group.sort_values(axis)
        for col, (metric, _) in enumerate(metrics, start=1):
            fig.add_trace(go.Scatter(x=group[axis], y=group[metric], name=label, legendgroup=label,
                                     showlegend=col == 1, mode="lines+markers",
                                     line={"color": _color(i)}), row=1, col=col)
    for col, (_, title) in enumerate(metrics, start=1):
        fig.update_yaxes(title_text=title, row=1, col=col)
    fig.update_xaxes(title_text=axis)
    fig.update_layout(title=f"Headline metrics across the sweep of {axis}", **LAYOUT)
    return Panel("sweep_metrics", fig, f"How latency, accuracy and cost move as {axis} changes; "
                 "lines are the other axes' settings (up to 10 shown).")


# --------------------------------------------------------------------------- plan


PLAN_POINTS = {"ok": ("meets every constraint", "#2ca02c", "circle"),
               "missed": ("misses one", "#d62728", "x"),
               "baseline": ("uniform baseline only (its tier is under baselines:, never "
                            "planned)", "#7f7f7f", "diamond")}
"""Legend name, colour and symbol of the plan search's fleets by kind: a fleet of a tier
listed under ``baselines:`` (plan.json ``evaluated`` ``baseline_only``) is sized for the saving
but never planned, so it is drawn apart from the designs the star is chosen among."""


def plan_search(data: ReportData) -> Panel | None:
    """Every fleet the planner simulated: cost vs p99 TTFT, meeting every constraint or not."""
    plan = data.plan
    evaluated = [e for e in (plan.evaluated if plan is not None else ())
                 if e.get("cost_usd") is not None and e.get("ttft_p99_s") is not None]
    if not evaluated:
        return None
    frame = pd.DataFrame([{"cost_usd": e["cost_usd"], "ttft_p99_s": e["ttft_p99_s"],
                           "ok": bool(e.get("ok")), "label": _replica_text(e),
                           "kind": "baseline" if e.get("baseline_only") is True
                           else "ok" if e.get("ok") else "missed"}
                          for e in evaluated])
    fig = go.Figure()
    for kind, group in frame.groupby("kind", sort=False):
        name, color, symbol = PLAN_POINTS[kind]
        fig.add_trace(go.Scatter(x=group["cost_usd"], y=group["ttft_p99_s"],
                                 mode="markers", text=group["label"], hoverinfo="text+x+y",
                                 name=name, marker={"size": 10, "color": color,
                                                    "symbol": symbol}))
    chosen = plan.plan or {}
    if chosen.get("cost_usd") is not None and chosen.get("ttft_p99_s") is not None:
        fig.add_trace(go.Scatter(x=[chosen["cost_usd"]], y=[chosen["ttft_p99_s"]],
                                 mode="markers", name="chosen plan",
                                 marker={"size": 18, "symbol": "star", "color": "#ff7f0e"}))
    if _slo(data).get("ttft_p99_s"):
        fig.add_hline(y=_slo(data)["ttft_p99_s"], line_dash="dash", line_color="red",
                      annotation_text="TTFT SLO")
    fig.update_yaxes(type="log")
    ledger = plan.cost_model or chosen.get("cost_model") or "cost model not recorded"
    fig.update_layout(title="Capacity plan search: every fleet simulated",
                      xaxis_title=f"cost of the trace on the fleet (USD, {ledger})",
                      yaxis_title="p99 time to first token (s, log scale)", **LAYOUT)
    if plan.plan is None:
        return Panel("plan_search", fig, "No fleet met every constraint, so there is no star: "
                     "each red cross is a fleet simulated that missed one (hover for the design "
                     "and replicas).")
    return Panel("plan_search", fig, "The star is the cheapest fleet that meets every constraint; "
                 "red crosses left of it are cheaper fleets that miss one (hover for the design "
                 "and replicas).")


def _replica_text(entry: dict) -> str:
    """Hover label of a planner candidate: design, replicas per tier, router settings."""
    parts = [str(entry.get("design", ""))]
    parts += [f"{k}={v}" for k, v in (entry.get("replicas") or {}).items()]
    parts += [f"{k}={v}" for k, v in (entry.get("router") or {}).items()]
    return ", ".join(p for p in parts if p)


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def _color(key) -> str:
    """A stable colour for a tier index or series number."""
    try:
        return PALETTE[int(key) % len(PALETTE)]
    except (TypeError, ValueError):
        return PALETTE[sum(map(ord, str(key))) % len(PALETTE)]


BUILDERS = (frontier, latency_cdfs, p99_per_tier, load_over_time, fpr_sweep, sweep_metrics,
            plan_search)


def build_panels(data: ReportData) -> list[Panel]:
    """All panels the data supports, in page order, each figure's text made plain
    (:func:`plain_text`)."""
    panels = [panel for build in BUILDERS if (panel := build(data)) is not None]
    for panel in panels:
        plain_text(panel.fig)
    return panels


def plain_text(fig: go.Figure) -> go.Figure:
    """Every text ``fig`` shows made plain: plotly reads ``<b>``, ``<a href>``, ``<br>`` and
    entities in trace names, labels, categories and titles as markup, so a tier named
    ``<b>x</b>&amp;`` was drawn as a bold "x&". Each text is HTML-escaped (plotly shows
    ``&lt;`` as ``<``); a newline, the one break a label asks for, becomes ``<br>``."""
    for trace in fig.data:
        for key in ("name", "text", "hovertext", "x", "y"):
            if key in trace and trace[key] is not None:
                trace[key] = _escaped(trace[key])
    fig.for_each_xaxis(_escape_title)
    fig.for_each_yaxis(_escape_title)
    for part in (fig.layout.title, fig.layout.legend.title, *fig.layout.annotations):
        if part.text is not None:
            part.text = _escaped(part.text)
    return fig


def _escape_title(axis) -> None:
    """An axis title as plain text."""
    if axis.title.text is not None:
        axis.title.text = _escaped(axis.title.text)


def _escaped(value):
    """Text (or each text of a sequence) HTML-escaped with newlines as ``<br>`` and any other
    control or format character as its escape (``\\x1b``, ``\\u202e``: a path's, which the
    tables show so); numbers and other values as they are."""
    if isinstance(value, str):
        return html.escape(escaped_lines(value), quote=False).replace("\n", "<br>")
    if isinstance(value, (tuple, list, np.ndarray)) and any(isinstance(v, str) for v in value):
        return [_escaped(v) for v in value]
    return value
