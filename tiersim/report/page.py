"""Assemble the report: one self-contained HTML page (plotly.js inlined once, no network).

``write_report(dir)`` loads whatever the directory holds (a run, a sweep, a plan, or several),
builds the tables and figures it supports and writes ``dir/report.html``.
"""

from __future__ import annotations

import datetime as dt
import html
import math
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.offline
import yaml

import tiersim
from tiersim.report.figures import Panel, build_panels
from tiersim.report.load import ReportData, load_dir

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1200px;color:#222;padding:0 1em}
h1{margin-bottom:0}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0;font-size:14px}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
.caption{color:#444;margin:.2em 0 1.5em 0;font-style:italic}.muted{color:#777}
.bad{color:#b00020;font-weight:bold}.good{color:#1b7f3b;font-weight:bold}
pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:12px}
"""


def fmt(value: Any, digits: int = 4) -> str:
    """A cell's text: numbers to ``digits`` significant figures, None as a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}g}"
    return str(value)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """An HTML table; numeric cells right-aligned."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{html.escape(fmt(v))}</td>' if isinstance(v, (int, float))
            and not isinstance(v, bool) else f"<td>{html.escape(fmt(v))}</td>" for v in row)
        body.append(f"<tr>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


# --------------------------------------------------------------------------- sections


def _profile_used(data: ReportData, profile: dict) -> str | None:
    """The profile the results were computed with: the run's summary, else the sweep's
    points, else the scenario's own key (an omitted key means the GPU's default profile, so the
    scenario alone cannot tell)."""
    if profile.get("name"):
        return profile["name"]
    sweep = data.sweep
    names = sweep["profile.name"].dropna() if isinstance(sweep, pd.DataFrame) \
        and "profile.name" in sweep else None
    if names is not None and len(names):
        return str(names.iloc[0])
    return (data.scenario or {}).get("profile")


def provenance(data: ReportData) -> str:
    """Scenario and provenance: trace, model, GPU, profile and step-time sources, seed."""
    sc, summary = data.scenario or {}, data.summary or {}
    trace = sc.get("trace") or {}
    profile = summary.get("profile") if isinstance(summary.get("profile"), dict) else {}
    rows = [["kind of result", data.kind],
            ["scenario", sc.get("name", summary.get("scenario"))],
            ["trace", trace.get("path", "not recorded (no scenario.yaml in this folder)")],
            ["trace window (s)", trace.get("window")],
            ["trace time scale", trace.get("time_scale")],
            ["model", sc.get("model", summary.get("model"))],
            ["GPU", sc.get("gpu", summary.get("gpu"))],
            ["calibration profile", _profile_used(data, profile) or "none (roofline)"],
            ["seed", sc.get("seed", summary.get("seed"))],
            ["router policy", (sc.get("router") or {}).get("policy")
             or (summary.get("router") or {}).get("policy")],
            ["cost model", sc.get("cost_model", summary.get("cost_model"))]]
    for what, source in (summary.get("sources") or {}).items():
        rows.append([f"{what} comes from", source])
    for name, tier in (summary.get("tiers") or {}).items():
        if isinstance(tier, dict) and tier.get("step_time_source"):
            rows.append([f"step time of tier {name}", tier["step_time_source"]])
    rows.append(["written by", f"tiersim {tiersim.__version__}, "
                 f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}"])
    rows = [[k, _text(v)] for k, v in rows if v not in (None, "", [])]
    text = html.escape(yaml.safe_dump(sc, sort_keys=False)) if sc else ""
    details = f"<details><summary>full scenario</summary><pre>{text}</pre></details>" if sc \
        else ""
    return ("<h2>Scenario and provenance</h2>" + table(["item", "value"], rows)
            + _profile_sources(profile.get("sources") or {}) + details)


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


RUN_ROWS = (("requests", "requests", ""), ("completed", "completed", ""),
            ("dropped", "dropped", ""), ("duration_s", "simulated duration", "s"),
            ("ttft_p50_s", "TTFT p50", "s"), ("ttft_p99_s", "TTFT p99", "s"),
            ("tpot_p50_s", "TPOT p50", "s"), ("tpot_p99_s", "TPOT p99", "s"),
            ("e2e_p99_s", "end-to-end p99", "s"), ("slo_attainment", "SLO attainment", "fraction"),
            ("throughput_tok_s", "throughput", "output tokens/s"),
            ("cost_usd", "cost", "USD"), ("cost_per_1m_output_tokens", "cost per 1M output tokens",
                                          "USD"),
            ("gpu_hours", "GPU-hours provisioned", "h"), ("accuracy", "expected accuracy",
                                                          "fraction"))
TIER_COLS = (("requests", "requests"), ("share", "share"), ("ttft_p99_s", "TTFT p99 (s)"),
             ("tpot_p99_s", "TPOT p99 (s)"), ("utilization", "utilization"),
             ("kv_peak_frac", "KV peak (fraction)"), ("cost_usd", "cost (USD)"))


def run_headline(summary: dict) -> str:
    """Headline table of one run, per-tier table, router figures."""
    rows = [[label, summary.get(key), unit] for key, label, unit in RUN_ROWS if key in summary]
    out = "<h2>Headline</h2>" + table(["metric", "value", "unit"], rows)
    tiers = summary.get("tiers") or {}
    if tiers:
        out += "<h3>Per tier</h3>" + table(
            ["tier", *[label for _, label in TIER_COLS]],
            [[name, *[t.get(k) for k, _ in TIER_COLS]] for name, t in tiers.items()])
    router = summary.get("router") or {}
    if router:
        out += "<h3>Router</h3>" + table(["metric", "value"], [[k, v] for k, v in router.items()
                                                               if not isinstance(v, dict)])
    return out


SWEEP_METRICS = ("accuracy", "cost_usd", "cost_per_1m_output_tokens", "ttft_p99_s", "tpot_p99_s",
                 "slo_attainment", "router.silent_failure_rate")


def sweep_headline(data: ReportData, limit: int = 200) -> str:
    """Sweep overview and a table of its points (first ``limit``)."""
    sweep = data.sweep
    ok = int((sweep["status"] == "ok").sum()) if "status" in sweep else len(sweep)
    rows = [["points", len(sweep)], ["finished", ok], ["failed", len(sweep) - ok]]
    rows += [[f"axis {a}", ", ".join(map(fmt, sorted(sweep[a].dropna().unique(), key=str)))]
             for a in data.sweep_axes]
    metrics = [m for m in SWEEP_METRICS if m in sweep]
    cols = [*data.sweep_axes, *metrics, "status", "error"]
    cols = [c for c in cols if c in sweep]
    shown = sweep.head(limit)
    points = table(cols, shown[cols].astype(object).where(shown[cols].notna(), None)
                   .values.tolist())
    more = f"<p class='muted'>first {limit} of {len(sweep)} points shown</p>" \
        if len(sweep) > limit else ""
    return ("<h2>Sweep</h2>" + table(["item", "value"], rows)
            + "<h3>Points</h3>" + points + more)


def plan_section(plan: dict) -> str:
    """The capacity plan: chosen replicas, constraint margins, the one-fewer check."""
    chosen = plan.get("plan")
    if not chosen:
        return ("<h2>Capacity plan</h2><p class='bad'>No fleet met every constraint: "
                f"{html.escape(str(plan.get('reason', '')))}</p>")
    rows = [[t, n] for t, n in chosen["replicas"].items()]
    rows += [[f"setting {k}", v] for k, v in (chosen.get("settings") or {}).items()]
    rows.append(["provisioned cost (USD per hour)", chosen.get("cost_per_hour_usd")])
    margins = [[name, m.get("limit"), m.get("value"), m.get("margin"), m.get("met")]
               for name, m in chosen.get("margins", {}).items()]
    fewer = [[t, c.get("replicas"), c.get("verdict")] for t, c in plan.get("one_fewer", {}).items()]
    return ("<h2>Capacity plan</h2><p>Cheapest fleet that meets every constraint on this trace "
            f"({plan.get('runs', '?')} simulations):</p>"
            + table(["tier / setting", "replicas / value"], rows)
            + "<h3>Margin on each constraint</h3>"
            + table(["constraint", "limit", "value", "margin (limit side, + is slack)", "met"],
                    margins)
            + "<h3>One replica fewer</h3>"
            + table(["tier", "replicas tried", "verdict"], fewer))


def figure_html(panel: Panel) -> str:
    """A figure's div and script (plotly.js itself is inlined once in the head)."""
    div = panel.fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"fig-{panel.key}",
                            config={"displaylogo": False, "responsive": True})
    return (f'<div class="figure" data-key="{panel.key}">{div}'
            f'<p class="caption">{html.escape(panel.caption)}</p></div>')


def render(data: ReportData) -> str:
    """The whole page as a string."""
    name = (data.scenario or {}).get("name") or (data.summary or {}).get("scenario") or ""
    parts = [provenance(data)]
    if data.summary:
        parts.append(run_headline(data.summary))
    if data.sweep is not None:
        parts.append(sweep_headline(data))
    if data.plan:
        parts.append(plan_section(data.plan))
    panels = build_panels(data)
    if panels:
        parts.append("<h2>Figures</h2>" + "".join(figure_html(p) for p in panels))
    title = html.escape(f"tiersim {data.kind} report {name}".strip())
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"<style>{CSS}</style><script type='text/javascript'>{plotly.offline.get_plotlyjs()}"
            f"</script></head><body><h1>{title}</h1>"
            f"<p class='muted'>{html.escape(str(data.directory))}</p>{''.join(parts)}"
            "</body></html>")


def write_report(directory: str | Path) -> Path:
    """Write ``directory/report.html`` for the run, sweep or plan found there; return its path."""
    data = load_dir(directory)
    path = Path(directory) / "report.html"
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(render(data), encoding="utf-8")
    tmp.replace(path)
    return path
