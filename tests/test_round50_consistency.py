"""Round 50 (consistency audit of the serving techniques): the bundled spec_decode, disagg,
response_cache, agentic and kv_offload scenarios (kv_offload and prefix_cache on their trace's
first 400 s) are run as a user runs them, and every figure they print is recomputed from what
the run simulated: the console, summary.json, report.html and ``tiersim report`` re-rendered
against each other; requests.parquet's percentiles, counts, throughput and SLO attainment
(round 49's checks); the prefix-cache hit rates from the rows' ``prefix_hit_tokens``; the
response cache's block from the rows the fleet served and the hits at their lookup time; each
TTFT against the modelled prefill of its uncached prompt alone; the KV series under capacity;
the load series against the requests by Little's law (on a disaggregated tier, less the KV
transfers, which docs/metrics.md now says); each task's steps. And physical sense: TPOT falls
as acceptance rises, in proportion to the tokens a step emits; prefix caching cuts TTFT; a
larger host level holds more of the prefixes the GPU evicts, with the GPU's KV capacity
unchanged.

Found: the disagg example's comment said its 5 x 2 GPUs were what ``tiersim plan`` sized,
where plan (and the run's own uniform fleets table, which prints "costs 25 % more per hour"
against it) sizes 4 x 2 split 3P 1D; and docs/metrics.md said the load series are Little's
law on requests.parquet, which a disaggregated tier misses by its KV transfers' seconds; and a
response cache run's headline "cost per 1M output tokens" (over the tokens the fleet generated)
and a response cache sweep's points table (TTFT, TPOT, SLO attainment, accuracy, cost per
token) did not say they cover the requests the fleet served, where the run's other headline
rows do.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO, run_cli
from test_round49_consistency import (
    _Page,
    console_problems,
    console_table,
    fleet_problems,
    page_text,
    parquet_problems,
)

SCENARIOS = REPO / "tiersim" / "scenarios"
TRACES = REPO / "tiersim" / "traces"

close = dict(rel_tol=1e-8, abs_tol=1e-12)

# --------------------------------------------------------------------------- reading figures

_NUMBER = re.compile(r"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*(ms|s|%)?")
_UNIT = {"ms": 1e-3, "s": 1.0, "%": 0.01, None: 1.0}


def reads(text: str, *values: float | None) -> bool:
    """``text``'s first numbers (each with its unit: ms, s or %) are ``values`` to the digits
    shown; a None value is not checked."""
    found = []
    for m in _NUMBER.finditer(text):
        digits = m.group(1).replace(",", "")
        places = len(digits.split(".")[1]) if "." in digits else 0
        scale = _UNIT[m.group(2)]
        found.append((float(digits) * scale, 0.5 * 10 ** -places * scale * (1 + 1e-9) + 1e-15))
    return len(found) >= len(values) and all(
        v is None or abs(got - v) <= half for (got, half), v in zip(found, values, strict=False))


def headline_wants(s: dict) -> dict[str, tuple]:
    """What each headline row (console label or report metric, before any " (") shows."""
    hits = (s.get("response_cache") or {}).get("hits", 0)
    return {
        "requests": (s["requests"] + hits, s["completed"], s["dropped"]),
        "completed": (s["completed"],), "dropped": (s["dropped"],),
        "answered by the response cache": (hits,),
        "duration": (s["duration_s"],), "simulated duration": (s["duration_s"],),
        "TTFT p50 / p99": (s["ttft_p50_s"], s["ttft_p99_s"]),
        "TPOT p50 / p99": (s["tpot_p50_s"], s["tpot_p99_s"]),
        "TTFT p50": (s["ttft_p50_s"],), "TTFT p99": (s["ttft_p99_s"],),
        "TPOT p50": (s["tpot_p50_s"],), "TPOT p99": (s["tpot_p99_s"],),
        "end-to-end p99": (s["e2e_p99_s"],), "SLO attainment": (s["slo_attainment"],),
        "throughput": (s["throughput_tok_s"],), "cost": (s["cost_usd"],),
        "attributed": (s["attributed_cost_usd"],),
        "cost per 1M output tokens": (s["cost_per_1m_output_tokens"],),
        # round 51: the fleet's provisioned USD/hour, a row of the console and the report
        "cost per hour": (s["cost_per_hour_usd"],),
        "GPU-hours provisioned": (s["gpu_hours"],), "expected accuracy": (s["accuracy"],)}


def printed_problems(folder: Path, console: str | None) -> list[str]:
    """The console's headline, tier table and prefix-cache lines and the report's headline,
    tier and prefix-cache tables against summary.json, to the digits each shows."""
    s = json.loads((folder / "summary.json").read_text())
    want = headline_wants(s)
    out = []
    tier_cols = {"reqs": "requests", "requests": "requests", "share": "share",
                 "TTFT p99": "ttft_p99_s", "TTFT p99 (s)": "ttft_p99_s",
                 "TPOT p99": "tpot_p99_s", "TPOT p99 (s)": "tpot_p99_s",
                 "util": "utilization", "utilization": "utilization", "KV peak": "kv_peak_frac",
                 "cost $": "cost_usd", "attrib. $": "attributed_cost_usd",
                 "attributed (USD)": "attributed_cost_usd"}
    tables = []
    if console is not None:
        for label, value, *_ in console_table(console, "tiersim run")[1:]:
            key = label.split(" (")[0]
            if key in want and not reads(value, *want[key]):
                out.append(f"console {label}: {value}, summary {want[key]}")
        tables.append(("console", console_table(console, "tiers (")))
        flat = " ".join(console.split())
        for name, rate, levels, bound in re.findall(
                r"prefix cache (\S+): (\S+ %) of prompt tokens \((.*?)\); unbounded cache (\S+ %)",
                flat):
            t = s["tiers"][name]
            if not (reads(rate, t["prefix_hit_rate"]) and reads(bound, t["prefix_hit_bound"])):
                out.append(f"console prefix cache {name}: {rate}, {bound}")
            for part in levels.split(", "):
                level, value = part.split(" ", 1)
                if not reads(value, t["prefix_hit_by_level"][level]):
                    out.append(f"console prefix cache {name} {level}: {value}")
    if (folder / "report.html").exists():
        page = _Page((folder / "report.html").read_text(encoding="utf-8"))
        for label, value, *_ in page.table("Headline", "metric")[1:]:
            key = label.split(" (")[0]
            if key not in want:
                out.append(f"report headline row {label} not checked")
            elif not reads(value, *want[key][:1] if key == "requests" else want[key]):
                out.append(f"report {label}: {value}, summary {want[key]}")
        tables.append(("report", page.table("Per tier")))
        for row in next((rows for head, rows in page.tables if head == "Prefix cache"), [])[1:]:
            t = s["tiers"][row[0]]
            for cell, key in ((row[1], "prefix_hit_rate"), (row[3], "prefix_hit_bound"),
                              (row[4], "offload_loads"), (row[5], "offload_recomputes"),
                              (row[6], "prefix_recompute_rate")):
                value = t.get(key)
                if (value is None) != (cell == "-") or (value is not None
                                                         and not reads(cell, value)):
                    out.append(f"report prefix cache {row[0]} {key}: {cell}, summary {value}")
    for where, table in tables:
        for row in table[1:]:
            t = s["tiers"][row[0]]
            for col, cell in zip(table[0], row, strict=True):
                if col in tier_cols and not reads(cell, t[tier_cols[col]]):
                    out.append(f"{where} tier {row[0]} {col}: {cell}, summary "
                               f"{t[tier_cols[col]]}")
    return out


# --------------------------------------------------------------------------- recomputing


def little_gap_s(folder: Path) -> tuple[float, float]:
    """Little's law on the run: (sum of e2e - queue) - (the ``running`` series integrated)
    and the same for ``waiting`` against the sum of queue_s, in request-seconds (each row
    holds until its replica's next)."""
    s = json.loads((folder / "summary.json").read_text())
    rq = pd.read_parquet(folder / "requests.parquet")
    ts = pd.read_parquet(folder / "timeseries.parquet")
    running = waiting = 0.0
    for _, g in ts.groupby(["tier", "replica"]):
        t = g.time_s.to_numpy()
        held = np.diff(np.append(t, max(t[-1], s["duration_s"])))
        running += float((g.running.to_numpy() * held).sum())
        waiting += float((g.waiting.to_numpy() * held).sum())
    done = rq[rq.completed]
    return (float((done.e2e_s - done.queue_s).sum()) - running,
            float(done.queue_s.sum()) - waiting)


def recomputed_problems(folder: Path) -> list[str]:
    """Hit rates, KV, TTFT floor, sessions and the response cache recomputed from the rows."""
    from tiersim.fleet import step_model
    from tiersim.perf.base import StepShape
    from tiersim.scenario import load_scenario

    s = json.loads((folder / "summary.json").read_text())
    rq = pd.read_parquet(folder / "requests.parquet")
    ts = pd.read_parquet(folder / "timeseries.parquet")
    done = rq[rq.completed]
    out = []
    if (ts.kv_blocks > ts.kv_capacity).any():
        out.append("the KV series goes over capacity")
    for name, t in s["tiers"].items():
        mine = ts[ts.tier == name]
        if len(mine) and (mine.kv_blocks / mine.kv_capacity).max() > t["kv_peak_frac"] + 1e-9:
            out.append(f"tier {name}: the KV series over kv_peak_frac")
        if not 0 <= t["utilization"] <= 1:
            out.append(f"tier {name}: utilization {t['utilization']}")
        if t.get("prefix_hit_rate") is not None:
            rows = rq[rq.tier == name]
            rate = rows.prefix_hit_tokens.sum() / rows.input_tokens.sum()
            if not math.isclose(rate, t["prefix_hit_rate"], rel_tol=1e-8):
                out.append(f"tier {name}: prefix_hit_rate {t['prefix_hit_rate']}, rows {rate}")
            if not math.isclose(sum(t["prefix_hit_by_level"].values()), t["prefix_hit_rate"],
                                rel_tol=1e-8):
                out.append(f"tier {name}: the levels do not sum to the hit rate")
            if t["prefix_hit_rate"] > t["prefix_hit_bound"] + 1e-9:
                out.append(f"tier {name}: the hit rate over its unbounded cache's")
    for key, want in (("throughput_tok_s", done.output_tokens.sum() / s["duration_s"]),
                      ("throughput_req_s", len(done) / s["duration_s"]),
                      ("slo_attainment", (done.ttft_s.le(s["slo_ttft_p99_s"]) & (
                          done.tpot_s.le(s["slo_tpot_p99_s"]) | done.tpot_s.isna())).sum()
                       / len(rq))):
        if not math.isclose(s[key], want, rel_tol=1e-8):
            out.append(f"{key} {s[key]}, rows {want}")
    # each TTFT at least its uncached prompt's prefill alone, chunked at the step budget
    scenario = load_scenario(folder / "scenario.yaml")
    for tier in scenario.tiers:
        model, budget = step_model(scenario, tier), tier.scheduler.max_num_batched_tokens
        rows = done[done.tier == tier.name]
        for r in rows.sample(min(200, len(rows)), random_state=0).itertuples():
            cached, left, floor = int(r.prefix_hit_tokens), int(r.input_tokens
                                                               - r.prefix_hit_tokens), 0.0
            while left > 0:
                chunk = min(left, budget)
                floor += model.step_time(StepShape(prefill_chunks=((chunk, cached),)))
                cached, left = cached + chunk, left - chunk
            if r.ttft_s < floor * (1 - 1e-9):
                out.append(f"request {r.request_id}: TTFT {r.ttft_s} under its prefill {floor}")
    if "session_id" in rq:
        for sid, g in rq.sort_values("step").groupby("session_id"):
            if list(g.step) != list(range(len(g))) or g.step_type.iloc[0] != "planning" or (
                    g.step_type.iloc[-1] != "final"):
                out.append(f"task {sid}: steps {list(g.step_type)}")
            if (g.arrival_s.to_numpy()[1:] < g.finish_s.to_numpy()[:-1]).any():
                out.append(f"task {sid}: a step arrives before the one before it finished")
            if (np.diff(g.input_tokens.to_numpy()) <= 0).any():
                out.append(f"task {sid}: a step's prompt does not carry the context so far")
    rc = s.get("response_cache")
    if rc:
        if rc["requests"] - rc["hits"] != len(rq) or not math.isclose(
                rc["hit_rate"], rc["hits"] / rc["requests"], **close):
            out.append(f"response cache {rc['hits']} of {rc['requests']}, {len(rq)} rows")
        assert rc["mode"] == "top_n"  # every hit answered in lookup_s
        e2e = np.append(done.e2e_s.to_numpy(), np.full(rc["hits"], rc["lookup_s"]))
        ttft = np.append(done.ttft_s.to_numpy(), np.full(rc["hits"], rc["lookup_s"]))
        for key, want in (("e2e_mean_s", e2e.mean()), ("e2e_p50_s", np.percentile(e2e, 50)),
                          ("e2e_p99_s", np.percentile(e2e, 99)),
                          ("ttft_p50_s", np.percentile(ttft, 50)),
                          ("gpu_hours_busy", s["gpu_hours_busy"]), ("cost_usd", s["cost_usd"]),
                          ("gpu_hours_saved", rc["gpu_hours_busy_without"] - rc["gpu_hours_busy"]),
                          ("cost_saved_usd", rc["cost_without_usd"] - rc["cost_usd"])):
            if not math.isclose(rc[key], want, rel_tol=1e-7):  # summary keeps 10 digits
                out.append(f"response cache {key} {rc[key]}, rows {want}")
    return out


# --------------------------------------------------------------------------- fixtures


def scenario_copy(folder: Path, name: str, **changes) -> Path:
    """A bundled scenario written to ``folder`` with its trace path absolute and ``changes``
    (dotted keys) applied."""
    doc = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    doc["trace"]["path"] = str(TRACES / doc["trace"]["path"])
    for path, value in changes.items():
        *keys, last = path.split(".")
        node = doc
        for key in keys:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
    out = folder / f"{name}.yaml"
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """``tiersim run`` of each technique's scenario (report written; uniform fleets simulated
    where the run is short): its folder and its console."""
    base = tmp_path_factory.mktemp("r50")
    out = {}
    for name, extra in (("spec_decode", []), ("disagg", []), ("response_cache", []),
                        ("agentic", []), ("kv_offload", ["--no-baselines"])):
        source = name if name != "kv_offload" else str(
            scenario_copy(base, name, **{"trace.window": [0, 400]}))
        done = run_cli("run", source, "--out", str(base / name), *extra)
        assert done.returncode == 0, done.stderr
        out[name] = (base / name, done.stdout)
    return out


TECHNIQUES = ["spec_decode", "disagg", "response_cache", "agentic", "kv_offload"]


# --------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("name", TECHNIQUES)
def test_every_printed_figure_is_the_runs(runs, name, tmp_path):
    """Each technique's console, summary.json and report.html agree to the digits shown, with
    requests.parquet, the fleet and its prices, and (where simulated) the uniform fleets
    (round 49's checks); ``tiersim report`` on a copy of the folder writes the same page."""
    folder, console = runs[name]
    assert parquet_problems(folder) == []
    assert fleet_problems(folder) == []
    assert printed_problems(folder, console) == []
    if name != "kv_offload":  # run without baselines
        assert console_problems(folder, console) == []
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    (copy / "report.html").unlink()
    done = run_cli("report", str(copy))
    assert done.returncode == 0, done.stderr
    assert page_text(copy) == page_text(folder)


@pytest.mark.parametrize("name", TECHNIQUES)
def test_the_technique_figures_are_the_rows(runs, name):
    """Prefix-cache hit rates are the rows' prefix_hit_tokens over their prompt tokens (the
    levels summing to it, under the unbounded bound); the response cache's block is the rows
    the fleet served and its hits at lookup_s; no TTFT is under the modelled prefill of its
    uncached prompt alone (several requests sit at it exactly); the KV series stays under
    capacity and under kv_peak_frac; each task plans first, answers last, and each step
    waits for the one before it and carries its context."""
    assert recomputed_problems(runs[name][0]) == []


def test_the_load_series_are_littles_law_less_the_kv_transfers(runs):
    """The time-weighted ``running`` and ``waiting`` integrate to the rows' sum of e2e - queue
    and of queue_s to float error on every technique but disaggregation, where ``running``
    falls short by exactly the KV transfers' seconds (latency + prompt x KV bytes per token
    per GPU / link bandwidth, for each request of more than one output token): a request is
    in neither pool while its KV moves. docs/metrics.md said the series were Little's law
    without that exception; it now quotes disagg's figures, 1.140 against 1.149."""
    for name in TECHNIQUES:
        folder = runs[name][0]
        run_gap, wait_gap = little_gap_s(folder)
        assert wait_gap == pytest.approx(0, abs=1e-6), name
        if name != "disagg":
            assert run_gap == pytest.approx(0, abs=1e-6), name
    folder = runs["disagg"][0]
    s = json.loads((folder / "summary.json").read_text())
    rq = pd.read_parquet(folder / "requests.parquet")
    doc = yaml.safe_load((folder / "scenario.yaml").read_text())
    link = doc["tiers"][0]["disaggregation"]
    per_token = s["tiers"]["bf16"]["model_read"]["kv_bytes_per_token"]
    moved = rq[rq.completed & (rq.output_tokens > 1)]
    transfers = float((link["latency_us"] * 1e-6
                       + moved.input_tokens * per_token / (link["link_gb_s"] * 1e9)).sum())
    run_gap, _ = little_gap_s(folder)
    assert transfers > 1.0
    assert run_gap == pytest.approx(transfers, rel=1e-6)
    text = " ".join((REPO / "docs" / "metrics.md").read_text().split())
    quoted = re.search(r"on `scenarios/disagg\.yaml` `running` integrates to (\d\.\d{3}) against "
                       r"(\d\.\d{3}) from requests\.parquet, the (\d\.\d{3}) between them the "
                       r"transfers' seconds over `D`", text)
    assert quoted, "docs/metrics.md does not say a disaggregated tier's transfers are in neither"
    done = rq[rq.completed]
    d = s["duration_s"]
    little = float((done.e2e_s - done.queue_s).sum())
    assert quoted.groups() == (f"{(little - run_gap) / d:.3f}", f"{little / d:.3f}",
                               f"{transfers / d:.3f}")


def test_the_disagg_comment_says_what_plan_sizes(runs, tmp_path):
    """disagg.yaml said its 5 x 2 GPUs were "what `tiersim plan` sized"; plan sizes 4 x 2 split
    3P 1D (TTFT p99 1.96 s against the 2 s SLO), and the run's own uniform fleets table sizes
    the same fleet and reads the example as costing 25 % more per hour. The comment now says
    the scenario runs one replica more than plan sizes, quoting that fleet as the run sizes it
    and that fleet's TTFT p99 as a run of it gives it."""
    folder, console = runs["disagg"]
    text = " ".join(" ".join(line.lstrip("#") for line in (
        SCENARIOS / "disagg.yaml").read_text().splitlines()).split())
    quoted = re.search(r"replicas of (\d+) H200s each, one more than `tiersim plan` sizes "
                       r"\((\d+) x (\d+) GPUs split (\d+)P (\d+)D, TTFT p99 ([\d.]+) s against "
                       r"the ([\d.]+) s SLO", text)
    assert quoted, "disagg.yaml does not say what tiersim plan sizes"
    s = json.loads((folder / "summary.json").read_text())
    uniform = s["savings"]["uniform"]["bf16"]
    tier = s["tiers"]["bf16"]
    reps, gpus, prefill, decode = (int(quoted.group(k)) for k in (2, 3, 4, 5))
    assert int(quoted.group(1)) == tier["gpus_per_replica"] == gpus
    assert (reps, gpus, prefill) == (uniform["replicas"], uniform["gpus_per_replica"],
                                     uniform["prefill_replicas"]) == (tier["replicas"] - 1, 2, 3)
    assert prefill + decode == reps
    assert float(quoted.group(7)) == s["slo_ttft_p99_s"]
    row = {r[0]: r for r in console_table(console, "uniform fleets")[1:]}
    assert row["all bf16"][1] == f"{reps} x {gpus} ({prefill}P {decode}D)"
    planned = scenario_copy(tmp_path, "disagg", **{"tiers.0.replicas": reps,
                                                   "tiers.0.disaggregation.prefill_replicas":
                                                   prefill,
                                                   "tiers.0.disaggregation.decode_replicas":
                                                   decode})
    done = run_cli("run", str(planned), "--out", str(tmp_path / "planned"), "--no-baselines",
                   "--no-report")
    assert done.returncode == 0, done.stderr
    ttft = json.loads((tmp_path / "planned" / "summary.json").read_text())["ttft_p99_s"]
    assert quoted.group(6) == f"{ttft:.2f}" and ttft < s["slo_ttft_p99_s"]


def test_tiersim_disagg_prints_what_each_split_runs(runs, tmp_path):
    """``tiersim disagg`` on the example: its 4P 1D row is the example's run (p50s and p99s to
    the digits printed), its aggregated row a run of the tier without its disaggregation
    block, and each score the worse of p99 TTFT and TPOT over their SLOs."""
    done = run_cli("disagg", str(SCENARIOS / "disagg.yaml"))
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        m = re.match(r"\s*(\dP \dD|aggregated)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)"
                     r"\s+([\d.]+)", line)
        if m:
            rows[m.group(1)] = m.groups()[1:]
    assert len(rows) == 5
    path = scenario_copy(tmp_path, "disagg")
    doc = yaml.safe_load(path.read_text())
    doc["tiers"][0].pop("disaggregation")
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    agg = run_cli("run", str(path), "--out", str(tmp_path / "agg"), "--no-baselines",
                  "--no-report")
    assert agg.returncode == 0, agg.stderr
    for label, folder in (("4P 1D", runs["disagg"][0]), ("aggregated", tmp_path / "agg")):
        s = json.loads((folder / "summary.json").read_text())
        printed = rows[label]
        for cell, value in zip(printed[:4], (s["ttft_p50_s"], s["ttft_p99_s"], s["tpot_p50_s"],
                                             s["tpot_p99_s"]), strict=True):
            assert reads(cell, value), (label, cell, value)
        assert int(printed[4]) == s["dropped"]
        assert reads(printed[5], max(s["ttft_p99_s"] / s["slo_ttft_p99_s"],
                                     s["tpot_p99_s"] / s["slo_tpot_p99_s"])), label


@pytest.fixture(scope="module")
def acceptance_sweep(tmp_path_factory) -> Path:
    """``tiersim sweep`` of spec_decode over acceptance 0.3, 0.6 and 0.9 (no baselines)."""
    base = tmp_path_factory.mktemp("r50spec")
    path = scenario_copy(base, "spec_decode")
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = {"tiers.bf16.speculative.acceptance": [0.3, 0.6, 0.9]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("sweep", str(path), "--out", str(base / "sweep"), "--workers", "1",
                   "--no-baselines", "--no-report")
    assert done.returncode == 0, done.stderr
    return base / "sweep"


def test_tpot_falls_with_acceptance_as_the_tokens_a_step_emits(acceptance_sweep, tmp_path):
    """At spec_decode's light load a verify step costs about the same whatever the acceptance,
    so TPOT p50 x the expected tokens per step, (1 - a^(k+1)) / (1 - a), stays within 2 %
    (25.0 to 25.2 ms) while TPOT p50 falls from 17.8 to 7.3 ms; and the sweep's row at 0.6 is
    a ``tiersim run`` of that point, figure for figure."""
    table = pd.read_parquet(acceptance_sweep / "sweep.parquet").sort_values(
        "tiers.bf16.speculative.acceptance")
    a = table["tiers.bf16.speculative.acceptance"].to_numpy()
    tpot = table["tpot_p50_s"].to_numpy()
    assert (np.diff(tpot) < 0).all()
    per_step = tpot * (1 - a ** 4) / (1 - a)
    assert per_step.max() / per_step.min() < 1.02
    path = scenario_copy(tmp_path, "spec_decode", **{"tiers.0.speculative.acceptance": 0.6})
    done = run_cli("run", str(path), "--out", str(tmp_path / "p"), "--no-baselines",
                   "--no-report")
    assert done.returncode == 0, done.stderr
    s = json.loads((tmp_path / "p" / "summary.json").read_text())
    row = table[table["tiers.bf16.speculative.acceptance"] == 0.6].iloc[0]
    for key, value in pd.json_normalize(s, sep=".").iloc[0].to_dict().items():
        if key.startswith(("profile.", "notes")) or key not in row.index:
            continue
        if isinstance(value, float):
            assert math.isclose(value, row[key], rel_tol=1e-12), key
        elif value is not None and not isinstance(value, list):
            assert value == row[key], key


def test_prefix_caching_and_a_host_level_cut_ttft_at_the_same_gpu_memory(tmp_path):
    """prefix_cache on its first 400 s: caching off, on, and on above a host level of 50 or
    800 GB (kv_offload's, without its SSD). Caching cuts TTFT p50; a host level finds more
    of the prompt cached and cuts TTFT further, the more the larger, with the GPU's KV
    capacity unchanged (the memory added is the host's; the price is the read time, which
    the level's 50 GB/s hides beneath compute, docs/serving.md)."""
    folder = tmp_path / "in"
    folder.mkdir()
    path = scenario_copy(folder, "prefix_cache", **{"trace.window": [0, 400]})
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = {"tiers.bf16.scheduler.enable_prefix_caching": [False, True]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("sweep", str(path), "--out", str(tmp_path / "pc"), "--workers", "1",
                   "--no-baselines", "--no-report")
    assert done.returncode == 0, done.stderr
    pc = pd.read_parquet(tmp_path / "pc" / "sweep.parquet").set_index(
        "tiers.bf16.scheduler.enable_prefix_caching")
    assert pc.loc[True, "ttft_p50_s"] < 0.9 * pc.loc[False, "ttft_p50_s"]
    path = scenario_copy(folder, "kv_offload", **{"trace.window": [0, 400]})
    doc = yaml.safe_load(path.read_text())
    doc["tiers"][0]["scheduler"]["kv_offload"] = doc["tiers"][0]["scheduler"]["kv_offload"][:1]
    doc["sweep"] = {"tiers.bf16.scheduler.kv_offload.0.capacity_gb": [50, 800]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("sweep", str(path), "--out", str(tmp_path / "off"), "--workers", "1",
                   "--no-baselines", "--no-report")
    assert done.returncode == 0, done.stderr
    off = pd.read_parquet(tmp_path / "off" / "sweep.parquet").set_index(
        "tiers.bf16.scheduler.kv_offload.0.capacity_gb")
    small, large = off.loc[50], off.loc[800]
    assert (pc.loc[True, "tiers.bf16.prefix_hit_rate"] < small["tiers.bf16.prefix_hit_rate"]
            < large["tiers.bf16.prefix_hit_rate"])
    assert small["tiers.bf16.prefix_hit_by_level.host"] < large[
        "tiers.bf16.prefix_hit_by_level.host"]
    assert small["tiers.bf16.kv_capacity_blocks"] == large["tiers.bf16.kv_capacity_blocks"] == (
        pc.loc[True, "tiers.bf16.kv_capacity_blocks"])
    assert (large["ttft_p50_s"] < small["ttft_p50_s"] < pc.loc[True, "ttft_p50_s"])


def test_the_response_caches_without_column_is_a_run_without_it(runs, tmp_path):
    """The response cache table's "without" column is a run of the scenario with the cache
    taken out, figure for figure (its end-to-end mean, p50 and p99 and TTFT p50 over every
    request, its busy GPU-hours and cost); and the headline's cost per 1M output tokens, over
    the tokens the fleet generated (the cached answers' are not in ``output_tokens``), says
    whose it is as the latency rows beside it do: it read "cost per 1M output tokens 2.16
    USD" with no scope where every neighbouring row said "(requests the fleet served)"."""
    folder, console = runs["response_cache"]
    rc = json.loads((folder / "summary.json").read_text())["response_cache"]
    path = scenario_copy(tmp_path, "response_cache")
    doc = yaml.safe_load(path.read_text())
    doc["router"].pop("response_cache")
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("run", str(path), "--out", str(tmp_path / "without"), "--no-baselines",
                   "--no-report")
    assert done.returncode == 0, done.stderr
    s = json.loads((tmp_path / "without" / "summary.json").read_text())
    rq = pd.read_parquet(tmp_path / "without" / "requests.parquet")
    assert len(rq) == rc["requests"]
    for key, value in (("e2e_mean_without_s", rq.e2e_s[rq.completed].mean()),
                       ("e2e_p50_without_s", s["e2e_p50_s"]),
                       ("e2e_p99_without_s", s["e2e_p99_s"]),
                       ("ttft_p50_without_s", s["ttft_p50_s"]),
                       ("gpu_hours_busy_without", s["gpu_hours_busy"]),
                       ("cost_without_usd", s["cost_usd"])):
        assert math.isclose(rc[key], value, rel_tol=1e-8), key
    scoped = "cost per 1M output tokens (requests the fleet served)"
    labels = [row[0] for row in console_table(console, "tiersim run")]
    assert scoped in labels
    page = _Page((folder / "report.html").read_text(encoding="utf-8"))
    assert scoped in [row[0] for row in page.table("Headline", "metric")]
    labels = [row[0] for row in console_table(runs["spec_decode"][1], "tiersim run")]
    assert "cost per 1M output tokens" in labels  # no cache, no scope


def test_the_unbounded_bound_is_the_traces_prefix_hashes(runs):
    """kv_offload's ``prefix_hit_bound`` (on its first 400 s) is one unbounded cache over the
    trace's ``prefix_hashes`` in arrival order, each request finding its leading hashes seen
    before, 512 tokens each, in whole 16-token blocks before its last token; and each row's
    ``prefix_hit_tokens`` keeps to the same whole blocks."""
    folder = runs["kv_offload"][0]
    s = json.loads((folder / "summary.json").read_text())
    rq = pd.read_parquet(folder / "requests.parquet")
    trace = pd.read_parquet(TRACES / "mooncake_synthetic.parquet")
    trace = trace[trace.arrival_s < 400].sort_values("arrival_s", kind="stable")
    assert len(trace) == len(rq)
    seen: set = set()
    found = prompts = 0
    for prompt, hashes in zip(trace.input_tokens, trace.prefix_hashes, strict=True):
        leading = next((k for k, h in enumerate(hashes) if h not in seen), len(hashes))
        found += min(leading * 512, (prompt - 1) // 16 * 16)
        prompts += prompt
        seen.update(hashes)
    assert s["tiers"]["bf16"]["prefix_hit_bound"] == pytest.approx(found / prompts, rel=1e-9)
    assert (rq.prefix_hit_tokens % 16 == 0).all()
    assert (rq.prefix_hit_tokens <= (rq.input_tokens - 1) // 16 * 16).all()


def test_tiersim_analytic_reads_the_agentic_run(runs):
    """``tiersim analytic --scenario agentic --json`` prices and estimates as the run does: its
    p, eps, delta, c0, dc and dC* are the run's ``analytic`` block, c0 and c0 + dc the uniform
    fleets' costs; its kink is the oracle's at 1 - p on the top tier (cost c0 + (1 - p) dc,
    accuracy a_top - p eps), and dC* the static split's extra cost at that accuracy."""
    s = json.loads((runs["agentic"][0] / "summary.json").read_text())
    done = run_cli("analytic", "--scenario", str(SCENARIOS / "agentic.yaml"), "--json")
    assert done.returncode == 0, done.stderr
    a = json.loads(done.stdout)
    m, run = a["params"], s["analytic"]["params"]
    for key, mine in (("p", "p"), ("eps", "eps"), ("delta", "delta"), ("c0", "c0_usd"),
                      ("dc", "dc_usd")):
        assert math.isclose(m[key], run[mine], rel_tol=1e-8), key
    assert math.isclose(a["dC_star"], run["dC_star_usd"], rel_tol=1e-8)
    uniform = s["savings"]["uniform"]
    assert math.isclose(m["c0"], uniform["fp8"]["cost_usd"], rel_tol=1e-8)
    assert math.isclose(m["c0"] + m["dc"], uniform["bf16"]["cost_usd"], rel_tol=1e-8)
    assert math.isclose(m["a_top"], uniform["bf16"]["accuracy"], rel_tol=1e-8)
    kink = a["kink"]
    assert math.isclose(kink["top_share"], 1 - m["p"], rel_tol=1e-9)
    assert math.isclose(kink["cost"], m["c0"] + (1 - m["p"]) * m["dc"], rel_tol=1e-9)
    assert math.isclose(kink["accuracy"], m["a_top"] - m["p"] * m["eps"], rel_tol=1e-9)
    a_cheap = m["a_top"] - m["p"] * m["eps"] - (1 - m["p"]) * m["delta"]
    share = (kink["accuracy"] - a_cheap) / (m["a_top"] - a_cheap)  # static split, same accuracy
    assert math.isclose(a["dC_star"], m["c0"] + share * m["dc"] - kink["cost"], rel_tol=1e-8)


def test_a_response_cache_sweeps_columns_say_whose_requests_they_cover(tmp_path):
    """A sweep of response_cache's size (its first 120 s): each point's TTFT, TPOT, SLO
    attainment, accuracy and cost per output token cover the requests the fleet served, as its
    run's headline says; the sweep's points table named them "TTFT p99 (s)" and "cost per 1M
    output tokens (USD, attributed)" with no scope (a larger cache raised the cost per output
    token, on fewer tokens, with nothing saying so). The sweep names them as the run does; the
    cost of the run, which covers every request, stays unscoped."""
    path = scenario_copy(tmp_path, "response_cache", **{"trace.window": [0, 120]})
    doc = yaml.safe_load(path.read_text())
    doc["sweep"] = {"router.response_cache.size": [5, 200]}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_cli("sweep", str(path), "--out", str(tmp_path / "sweep"), "--workers", "1",
                   "--no-baselines")
    assert done.returncode == 0, done.stderr
    table = pd.read_parquet(tmp_path / "sweep" / "sweep.parquet")
    assert (table["response_cache.hits"] > 0).all()
    page = _Page((tmp_path / "sweep" / "report.html").read_text(encoding="utf-8"))
    header = page.table("Points")[0]
    assert header[1:9] == [  # p50 TPOT beside the p99s since round 54 (spec54)
        "expected accuracy (requests the fleet served)", "cost of the run (USD, attributed)",
        "cost per 1M output tokens (USD, attributed; requests the fleet served)",
        "TTFT p99 (s; requests the fleet served)", "TPOT p50 (s; requests the fleet served)",
        "TPOT p99 (s; requests the fleet served)",
        "SLO attainment (fraction; requests the fleet served)", "silent failure rate (fraction)"]
