"""Run one scenario end to end: trace -> workload -> routing -> engine -> metrics -> files.

:func:`run_scenario` is the only public entry point. It turns the validated
:class:`~tiersim.scenario.Scenario` into plain engine objects (the engine knows nothing about
YAML), simulates, and returns the summary of DESIGN.md §6. With ``out_dir`` it also writes
``requests.parquet`` (one row per trace request), ``summary.json`` and ``timeseries.parquet``.

Determinism: the scenario seed feeds one ``numpy.random.SeedSequence`` whose children drive the
workload draws and the router, so the same scenario gives the same ``summary.json`` byte for byte
(keys sorted, floats rounded to :data:`SIG_DIGITS` significant digits, no timestamps or
machine-specific paths in it).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tiersim import metrics
from tiersim.engine import SchedulerLimits, TierSpec, Workload
from tiersim.engine import simulate as engine_simulate
from tiersim.errors import TiersimError
from tiersim.hardware import get_gpu, get_model, get_precision
from tiersim.paths import resolve_trace_path
from tiersim.perf import build_step_model
from tiersim.perf.base import StepShape
from tiersim.perf.memory import kv_capacity_blocks
from tiersim.routing import Assignment, TierInfo, build_router, prepare_workload, savings, score
from tiersim.routing.accuracy import expected_matrix
from tiersim.scenario import Scenario
from tiersim.trace import load_trace

SIG_DIGITS = 10
"""Significant digits kept for floats in summary.json."""

REQUEST_COLUMNS = [
    "request_id", "tier", "final_tier", "replica", "arrival_s", "first_token_s", "finish_s",
    "ttft_s", "tpot_s", "e2e_s", "queue_s", "preemptions", "escalated", "cache_hit",
    "expected_accuracy", "cost_usd", "input_tokens", "output_tokens", "completed",
]
"""Columns of requests.parquet, in order (DESIGN.md §6 first, then tokens and status)."""

REFERENCE_STEP = {"prefill_tokens": 512, "decode_seqs": 32, "decode_context": 32 * 2048}
"""The iteration whose cost ranks tiers for routing (one prefill chunk beside 32 decodes)."""


def run_scenario(scenario: Scenario, out_dir: str | Path | None = None,
                 scenario_path: str | Path | None = None, baselines: bool = False) -> dict:
    """Simulate ``scenario`` and return its summary; write the result files into ``out_dir``.

    ``baselines=True`` also simulates, per tier, the same trace with every request on that tier
    and the fleet's GPUs all serving it (:func:`uniform_baselines`); savings are then quoted
    against those runs instead of per-token estimates.
    """
    source = str(scenario_path) if scenario_path is not None else scenario.source
    if out_dir is not None:
        make_out_dir(Path(out_dir))
    workload_rng, train_rng, router_rng, score_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(scenario.seed).spawn(4))
    models = [step_model(scenario, t) for t in scenario.tiers]
    infos = tier_infos(scenario, models)
    trace = load_scenario_trace(scenario, source)
    prepared = prepare(trace, infos, scenario, workload_rng, source)
    df = prepared.df
    assignment = route(scenario, df, infos, (train_rng, router_rng), source)
    specs = tier_specs(scenario, models)
    result = simulate(specs, df, assignment)
    requests = request_table(df, result, scenario, infos, assignment.basis)
    summary = build_summary(scenario, requests, result, models, prepared.accuracy_source)
    summary["router"] = router_summary(scenario, df, result, infos, score_rng, assignment.basis)
    uniform = uniform_baselines(scenario, specs, df) if baselines else None
    summary["savings"] = savings_summary(scenario, df, result, infos, uniform, assignment.basis)
    summary["analytic"] = analytic_summary(df, infos, summary["savings"], assignment.basis)
    if uniform is not None:
        summary["baselines"] = uniform
    if out_dir is not None:
        write_outputs(Path(out_dir), requests, summary, timeseries_table(result, scenario))
    return summary


# ---------------------------------------------------------------------------------------------
# Inputs


def load_scenario_trace(scenario: Scenario, source: str) -> pd.DataFrame:
    """The scenario's trace as the canonical table; a relative path starts at the scenario's
    folder, then the bundled ``traces/``."""
    cfg = scenario.trace
    folder = Path(source).parent if Path(source).is_file() else None
    path = resolve_trace_path(cfg.path, folder)
    window = tuple(cfg.window) if cfg.window is not None else None
    return load_trace(path, format=cfg.format, window=window, time_scale=cfg.time_scale)


def step_model(scenario: Scenario, tier) -> Any:
    """The step-time model of one tier (a calibration profile where one fits, else roofline)."""
    return build_step_model(scenario.model_ref, tier.precision, scenario.gpu,
                            tp=tier.gpus_per_replica, kv_dtype=tier.kv_dtype,
                            profile=scenario.profile)


def tier_infos(scenario: Scenario, models: list) -> list[TierInfo]:
    """What routing needs per tier; ``cost_weight`` is the tier's price for a reference step."""
    return [
        TierInfo(name=t.name, precision=t.precision, accuracy=t.accuracy,
                 cost_weight=cost_weight(t, m), output_length_multiplier=t.output_length_multiplier)
        for t, m in zip(scenario.tiers, models, strict=True)
    ]


def cost_weight(tier, model) -> float:
    """Relative cost of serving a request on a tier: its fixed price per request when set, else
    replica price x the time of :data:`REFERENCE_STEP` on the tier's step model."""
    if tier.cost_per_request_usd is not None:
        return tier.cost_per_request_usd
    shape = StepShape(prefill_chunks=((REFERENCE_STEP["prefill_tokens"], 0),),
                      decode_seqs=REFERENCE_STEP["decode_seqs"],
                      decode_context=REFERENCE_STEP["decode_context"])
    return tier.gpus_per_replica * tier.cost_per_gpu_hour * model.step_time(shape)


def prepare(trace: pd.DataFrame, infos: list[TierInfo], scenario: Scenario,
            rng: np.random.Generator, source: str):
    """Per-tier correctness (labels, or drawn from the workload's difficulty model)."""
    return prepare_workload(trace, infos, scenario.workload, rng=rng, source=source)


def route(scenario: Scenario, df: pd.DataFrame, infos: list[TierInfo],
          rngs: tuple[np.random.Generator, np.random.Generator], source: str):
    """The router's per-request first tier and escalation tier (decided before simulating).

    ``rngs``: one generator for training the router's classifier, one for its decisions.
    """
    router = build_router(scenario.router, infos, train_df=df, rng=rngs[0], source=source)
    return router.assign(df, rngs[1])


# ---------------------------------------------------------------------------------------------
# Engine


def tier_specs(scenario: Scenario, models: list) -> list:
    """One engine TierSpec per scenario tier, with its KV capacity in blocks."""
    specs = []
    for tier, model in zip(scenario.tiers, models, strict=True):
        sched = tier.scheduler
        limits = SchedulerLimits(
            max_num_seqs=sched.max_num_seqs, max_num_batched_tokens=sched.max_num_batched_tokens,
            block_size=sched.block_size, watermark=sched.watermark,
            enable_prefix_caching=sched.enable_prefix_caching,
            prefix_cache_fraction=sched.prefix_cache_fraction,
        )
        specs.append(TierSpec(name=tier.name, replicas=tier.replicas,
                              num_blocks=num_blocks(scenario, tier), limits=limits,
                              step_model=model, balancer=tier.balancer,
                              output_multiplier=tier.output_length_multiplier))
    return specs


def num_blocks(scenario: Scenario, tier) -> int:
    """KV-cache blocks per replica of a tier (memory fit was checked when the scenario loaded)."""
    return kv_capacity_blocks(
        get_model(scenario.model_ref), get_precision(tier.precision), get_gpu(scenario.gpu),
        tp=tier.gpus_per_replica, block_size=tier.scheduler.block_size,
        gpu_memory_utilization=tier.gpu_memory_utilization, kv_dtype=tier.kv_dtype,
        max_num_batched_tokens=tier.scheduler.max_num_batched_tokens,
    )


def simulate(specs: list, df: pd.DataFrame, assignment):
    """Run the engine over the routed trace (tier output multipliers are applied inside it).

    The trace's ``prefix_hashes`` (512-token blocks) reach tiers with prefix caching on.
    """
    hashes = list(df["prefix_hashes"]) if "prefix_hashes" in df.columns else None
    work = Workload(
        arrival_s=df["arrival_s"].to_numpy(np.float64),
        input_tokens=df["input_tokens"].to_numpy(np.int64),
        output_tokens=df["output_tokens"].to_numpy(np.int64),
        tier=np.asarray(assignment.tier, dtype=np.int64),
        escalate_to=np.asarray(assignment.escalate_to, dtype=np.int64),
        prefix_hashes=hashes,
    )
    return engine_simulate(specs, work, fast_forward=True)


# ---------------------------------------------------------------------------------------------
# Results


def request_table(df: pd.DataFrame, result, scenario: Scenario,
                  infos: list[TierInfo], basis: str = "expected") -> pd.DataFrame:
    """One row per request: the columns of DESIGN.md §6 plus tokens, tier indices and status.

    ``output_tokens`` are those emitted on the final tier (its length multiplier applied);
    ``expected_accuracy`` is the final tier's expected correctness, 0 for a dropped request.
    """
    names = np.array([t.name for t in scenario.tiers], dtype=object)
    first = np.asarray(result.first_tier, dtype=np.int64)
    final = np.asarray(result.final_tier, dtype=np.int64)
    done = ~np.asarray(result.dropped, dtype=bool)
    expected = expected_matrix(df, infos, basis)[np.arange(len(df)), final]
    table = pd.DataFrame({
        "request_id": df["request_id"].to_numpy(np.int64),
        "tier": names[first],
        "final_tier": names[final],
        "replica": np.asarray(result.replica, dtype=np.int64),
        "arrival_s": df["arrival_s"].to_numpy(np.float64),
        "first_token_s": np.asarray(result.first_token_s, dtype=np.float64),
        "finish_s": np.asarray(result.finish_s, dtype=np.float64),
        "queue_s": np.where(done, np.asarray(result.queue_s, dtype=np.float64), np.nan),
        "input_tokens": df["input_tokens"].to_numpy(np.int64),
        "output_tokens": np.asarray(result.output_tokens, dtype=np.int64),
        "preemptions": np.asarray(result.preemptions, dtype=np.int64),
        "escalated": np.asarray(result.escalated, dtype=bool),
        "cache_hit": np.asarray(result.cache_hit_tokens) > 0,
        "expected_accuracy": np.where(done, expected, 0.0),
        "completed": done,
    })
    table = metrics.add_latencies(table)
    table["cost_usd"] = request_costs(scenario, result, first, final, table)
    return table[REQUEST_COLUMNS]


def escalations_run(result) -> np.ndarray:
    """The tier each request escalated to, -1 where no second pass ran (a planned escalation
    whose first pass was dropped never happens; one dropped on arrival never ran)."""
    ran = np.asarray(result.escalated) & ~np.asarray(result.dropped)
    return np.where(ran, np.asarray(result.final_tier), -1)


def first_pass_ran(result) -> np.ndarray:
    """Whether each request's first pass was admitted (not dropped on arrival)."""
    return ~np.asarray(result.dropped) | np.asarray(result.escalated)


def request_costs(scenario: Scenario, result, first: np.ndarray, final: np.ndarray,
                  table: pd.DataFrame) -> np.ndarray:
    """USD per request under the scenario's cost model.

    attributed: each pass's replica-seconds (the engine's token share of every iteration it was
    in) times its tier's replica price. provisioned: each tier's provisioned cost (replicas x
    price x duration) spread over the passes it served in proportion to their attributed cost
    (an idle tier's cost is carried by no request). fixed_per_request: the price of each pass
    that ran.
    """
    if scenario.cost_model == "fixed_per_request":
        fixed = np.array([t.cost_per_request_usd or 0.0 for t in scenario.tiers])
        second = escalations_run(result) >= 0
        return np.where(first_pass_ran(result), fixed[first], 0.0) + np.where(second,
                                                                              fixed[final], 0.0)
    if scenario.cost_model == "provisioned":
        return provisioned_costs(scenario, result, metrics.duration_s(table))
    return attributed_costs(scenario, result)


def provisioned_costs(scenario: Scenario, result, duration_s: float) -> np.ndarray:
    """USD per request: each pass's share of its own tier's provisioned cost, by attributed
    cost (so requests never pay for another tier's idle replicas)."""
    price = np.array([t.gpus_per_replica * t.cost_per_gpu_hour / 3600.0 for t in scenario.tiers])
    first = np.asarray(result.first_tier, dtype=np.int64)
    final = np.asarray(result.final_tier, dtype=np.int64)
    att_first = np.asarray(result.gpu_s_first) * price[first]
    att_final = np.asarray(result.gpu_s_final) * price[final]
    k = len(scenario.tiers)
    attributed = (np.bincount(first, weights=att_first, minlength=k)
                  + np.bincount(final, weights=att_final, minlength=k))
    provisioned = np.array([t.replicas for t in scenario.tiers]) * price * duration_s
    per_usd = np.divide(provisioned, attributed, out=np.zeros(k), where=attributed > 0)
    return att_first * per_usd[first] + att_final * per_usd[final]


def attributed_costs(scenario: Scenario, result) -> np.ndarray:
    """USD per request: each pass's attributed replica-seconds times its tier's replica price."""
    price = np.array([t.gpus_per_replica * t.cost_per_gpu_hour / 3600.0 for t in scenario.tiers])
    first = np.asarray(result.first_tier, dtype=np.int64)
    final = np.asarray(result.final_tier, dtype=np.int64)
    return (np.asarray(result.gpu_s_first) * price[first]
            + np.asarray(result.gpu_s_final) * price[final])


def tier_usage(scenario: Scenario, result) -> list[metrics.TierUsage]:
    """Per tier: size, price and the engine's busy time and KV peak."""
    return [
        metrics.TierUsage(
            name=t.name, replicas=t.replicas, gpus_per_replica=t.gpus_per_replica,
            cost_per_gpu_hour=t.cost_per_gpu_hour, busy_s=float(sum(result.busy_s[t.name])),
            kv_peak_blocks=int(max(result.kv_peak_blocks[t.name])),
            num_blocks=int(result.num_blocks[t.name]), cost_per_request_usd=t.cost_per_request_usd,
        )
        for t in scenario.tiers
    ]


def build_summary(scenario: Scenario, requests: pd.DataFrame, result, models: list,
                  acc_source: dict[str, str]) -> dict:
    """The summary dict: metrics plus router scores, profile and provenance of every number."""
    index = {t.name: i for i, t in enumerate(scenario.tiers)}
    numeric = requests.assign(tier=requests["tier"].map(index),
                              final_tier=requests["final_tier"].map(index),
                              escalate_to=escalations_run(result),
                              first_ran=first_pass_ran(result))
    slo = metrics.Slo(ttft_s=scenario.slo.ttft_p99_s, tpot_s=scenario.slo.tpot_p99_s)
    summary = metrics.summarize(numeric, tier_usage(scenario, result), slo, scenario.cost_model)
    for tier, model in zip(scenario.tiers, models, strict=True):
        summary["tiers"][tier.name].update({
            "precision": tier.precision,
            "kv_capacity_blocks": int(result.num_blocks[tier.name]),
            "step_time_source": source_label(model),
            "accuracy_source": acc_source.get(tier.name),
        })
    summary["scenario"] = scenario.name
    summary["seed"] = scenario.seed
    summary["model"], summary["gpu"] = scenario.model, scenario.gpu
    summary["slo"] = {"ttft_s": slo.ttft_s, "tpot_s": slo.tpot_s}
    summary["accuracy_floor"] = scenario.accuracy_floor
    summary["profile"] = {"name": scenario.profile,
                          "sources": {t.name: dict(sorted(m.sources().items()))
                                      for t, m in zip(scenario.tiers, models, strict=True)}}
    by_name = {t.name: m for t, m in zip(scenario.tiers, models, strict=True)}
    summary["sources"] = provenance(summary, by_name, acc_source)
    return summary


def source_label(model) -> str:
    """Where a tier's step times come from, in words: "measured profile", "public measured",
    "roofline", or a mix with how many operator tables each, e.g.
    "public measured (7 ops) + roofline (1 op)"."""
    counts = source_counts(model)
    if not counts:
        return str(model.source)
    if len(counts) == 1:
        return next(iter(counts))
    return " + ".join(f"{k} ({n} op{'s' if n > 1 else ''})" for k, n in sorted(counts.items()))


def source_counts(model) -> dict[str, int]:
    """Operator tables of a step model per kind of source."""
    words = {"harness": "measured profile", "measured:": "public measured",
             "roofline": "roofline"}
    counts: dict[str, int] = {}
    for value in model.sources().values():
        kind = next((w for key, w in words.items() if key in str(value)), str(value))
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def router_summary(scenario: Scenario, df: pd.DataFrame, result, infos: list[TierInfo],
                   rng: np.random.Generator, basis: str = "expected") -> dict:
    """Policy; realised FPR/FNR against the tier each request needed; escalation and silent
    failure rates; accuracy with its bootstrap 95% interval (tiersim.routing.score)."""
    scores = score(df, result.final_tier, result.first_tier, result.escalated, infos, rng=rng,
                   dropped=result.dropped, basis=basis)
    keys = ("fpr", "fnr", "escalation_rate", "silent_failure_rate", "accuracy_ci95",
            "first_tier_shares")
    return {"policy": scenario.router.policy, **{k: scores.get(k) for k in keys}}


def savings_summary(scenario: Scenario, df: pd.DataFrame, result, infos: list[TierInfo],
                    uniform: dict | None = None, basis: str = "expected") -> dict:
    """Attributed cost of the routed run against the cheapest uniform tier meeting the accuracy
    floor and against a static split of equal accuracy (tiersim.routing.savings); uniform costs
    come from ``uniform`` baseline runs when given, else are estimated from this run."""
    costs = None if uniform is None else np.array([uniform[t.name]["cost_usd"] for t in infos])
    return savings(df, result.final_tier, attributed_costs(scenario, result), infos,
                   accuracy_floor=scenario.accuracy_floor, first_tier=result.first_tier,
                   escalated=result.escalated, uniform_costs=costs, dropped=result.dropped,
                   basis=basis)


def analytic_summary(df: pd.DataFrame, infos: list[TierInfo], savings: dict,
                     basis: str = "expected") -> dict:
    """The two-type closed form for the cheapest and the top tier, in this run's cost units.

    p, eps and delta are estimated from the trace's per-request correctness on the two tiers
    (:func:`tiersim.analytic.estimate`); c0 and dc are the uniform runs' costs (simulated with
    ``--baselines``, else estimated). Returns ``{}`` with fewer than two tiers. The report draws
    ``oracle``/``static split`` as the analytic frontier; ``dC_star`` is the largest saving
    routing can have over a static split under that model.
    """
    from tiersim.analytic import (
        TwoType,
        estimate,
        max_saving,
        oracle_frontier,
        static_frontier,
    )
    from tiersim.routing.accuracy import expected_matrix, realised_matrix

    uniform = savings.get("uniform") or {}
    if len(infos) < 2 or infos[0].name not in uniform or infos[-1].name not in uniform:
        return {}
    pair = [infos[0], infos[-1]]
    easy = None
    if "difficulty_class" in df and df["difficulty_class"].notna().any():
        easy = (df["difficulty_class"] != "hard").to_numpy()
    est = estimate(expected_matrix(df, pair, basis), realised_matrix(df, pair), easy)
    c0 = float(uniform[pair[0].name]["cost_usd"])
    dc = float(uniform[pair[1].name]["cost_usd"]) - c0
    if dc <= 0:
        return {"note": f"{pair[1].name} is not dearer than {pair[0].name}: no trade to model"}
    model = TwoType(est["p"], est["eps"], est["delta"], dc=dc, c0=c0, a_top=est["a_top"])
    return {
        f"oracle ({pair[0].name} vs {pair[1].name})": oracle_frontier(model).tolist(),
        f"static split ({pair[0].name} vs {pair[1].name})": static_frontier(model).tolist(),
        "params": {"cheap": pair[0].name, "top": pair[1].name, "p": est["p"],
                   "eps": est["eps"], "delta": est["delta"], "c0_usd": c0, "dc_usd": dc,
                   "dC_star_usd": max_saving(model.p, model.eps, model.delta, dc)},
    }


def uniform_baselines(scenario: Scenario, specs: list, df: pd.DataFrame) -> dict:
    """Per tier: the trace served entirely on that tier by the fleet's GPUs (as many replicas
    of the tier as the whole fleet's GPUs make), with its attributed cost and latencies."""
    gpus = sum(t.replicas * t.gpus_per_replica for t in scenario.tiers)
    n = len(df)
    out = {}
    for k, tier in enumerate(scenario.tiers):
        replicas = max(1, gpus // tier.gpus_per_replica)
        alone = [dataclasses.replace(spec, replicas=replicas) if i == k else spec
                 for i, spec in enumerate(specs)]
        everyone = Assignment(tier=np.full(n, k, dtype=np.int64),
                              escalate_to=np.full(n, -1, dtype=np.int64))
        result = simulate(alone, df, everyone)
        table = metrics.add_latencies(pd.DataFrame({
            "arrival_s": df["arrival_s"].to_numpy(np.float64),
            "first_token_s": np.asarray(result.first_token_s, dtype=np.float64),
            "finish_s": np.asarray(result.finish_s, dtype=np.float64),
            "output_tokens": np.asarray(result.output_tokens, dtype=np.int64),
        }))
        out[tier.name] = {
            "replicas": replicas,
            "cost_usd": float(attributed_costs(scenario, result).sum()),
            "dropped": int(np.sum(result.dropped)),
            "ttft_p99_s": metrics.percentile(table["ttft_s"], 99),
            "tpot_p99_s": metrics.percentile(table["tpot_s"], 99),
            "e2e_p99_s": metrics.percentile(table["e2e_s"], 99),
        }
    return out


def provenance(summary: dict, models: dict, accuracy_source: dict) -> dict:
    """One word per group of numbers: where latency, cost and accuracy come from."""
    kinds = {kind for name, model in models.items() if summary["tiers"][name]["passes"]
             for kind in source_counts(model)}
    latency = sorted(kinds) or ["none (no requests served)"]
    accuracy = sorted({str(v) for v in accuracy_source.values()}) or ["scenario"]
    cost_word = {"attributed": "modelled GPU time x $/GPU-hour",
                 "provisioned": "replicas x duration x $/GPU-hour",
                 "fixed_per_request": "price per request"}
    return {"latency": " + ".join(latency), "accuracy": " + ".join(accuracy),
            "cost": cost_word[summary["cost_model"]]}


def timeseries_table(result, scenario: Scenario) -> pd.DataFrame:
    """The engine's per-replica samples: time, running, waiting and KV blocks in use."""
    rows = [
        (tier.name, replica, t, running, waiting, kv, result.num_blocks[tier.name])
        for tier in scenario.tiers
        for replica, samples in enumerate(result.samples[tier.name])
        for t, running, waiting, kv in samples
    ]
    columns = ["tier", "replica", "time_s", "running", "waiting", "kv_blocks", "kv_capacity"]
    return pd.DataFrame(rows, columns=columns)


# ---------------------------------------------------------------------------------------------
# Files


def write_outputs(out: Path, requests: pd.DataFrame, summary: dict,
                  timeseries: pd.DataFrame) -> None:
    """requests.parquet, summary.json and timeseries.parquet in ``out`` (created if needed)."""
    make_out_dir(out)
    try:
        requests.to_parquet(out / "requests.parquet", index=False)
        timeseries.to_parquet(out / "timeseries.parquet", index=False)
        (out / "summary.json").write_text(summary_json(summary))
    except OSError as err:
        raise TiersimError(f"{out}: cannot write results ({err.strerror}); choose another "
                           "--out folder") from None


def make_out_dir(out: Path) -> None:
    """Create the output folder (before simulating, so a bad --out fails at once)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise TiersimError(f"{out}: --out must be a folder, and a file is in the way") from None
    except OSError as err:
        raise TiersimError(f"{out}: cannot create the folder ({err.strerror}); choose another "
                           "--out folder") from None


def summary_json(summary: dict) -> str:
    """The summary as stable JSON text: sorted keys, rounded floats, NaN as null."""
    return json.dumps(_stable(summary), sort_keys=True, indent=2) + "\n"


def _stable(value: Any) -> Any:
    """Plain JSON values with floats rounded to SIG_DIGITS significant digits."""
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_stable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return _round(float(value))
    return value


def _round(x: float) -> float | None:
    """x to SIG_DIGITS significant digits; None for NaN or infinity."""
    if not math.isfinite(x):
        return None
    return float(f"{x:.{SIG_DIGITS}g}")
