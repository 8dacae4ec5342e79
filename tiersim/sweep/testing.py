"""A synthetic point runner for tests and the overhead benchmark (no simulation at all).

``synthetic_runner(doc, source)`` turns a scenario-shaped dict into a summary shaped like
DESIGN.md section 6 from closed-form queueing formulas, in microseconds, optionally burning
``synthetic.cpu_s`` seconds of CPU time (a busy loop, so parallel speed-up is real) or sleeping
``synthetic.sleep_s``. Latency falls as replicas grow (monotone, as the planner assumes); accuracy
depends only on routing settings. Recognised keys, all optional::

    tiers: [{name, replicas, gpus_per_replica, cost_per_gpu_hour, base_ttft_s, base_tpot_s,
             capacity_rps, accuracy}]
    router: {confusion: {fpr}}       workload: {difficulty: {p_easy}, rate_rps}
    trace: {time_scale}              synthetic: {cpu_s, sleep_s, fail_if: {path: value},
                                                 kill_if: {path: value}, kill_once: FILE}

``kill_if`` kills the worker process running a matching point (SIGKILL, as the out-of-memory
killer does); with ``kill_once`` only while the file FILE does not exist yet (the point makes
it before it dies), so the point runs when tried again.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

DEFAULT_TIERS = [
    {"name": "w4a16", "replicas": 2, "cost_per_gpu_hour": 3.0, "capacity_rps": 6.0,
     "base_ttft_s": 0.10, "base_tpot_s": 0.010, "accuracy": 0.70},
    {"name": "bf16", "replicas": 2, "cost_per_gpu_hour": 3.0, "capacity_rps": 3.0,
     "base_ttft_s": 0.15, "base_tpot_s": 0.020, "accuracy": 0.90},
]


def _get(doc: dict, path: str, default: Any) -> Any:
    """Value at a dotted path of nested dicts, or ``default``."""
    node: Any = doc
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return default
        node = node[key]
    return node


def _burn(cpu_s: float) -> None:
    """Busy-loop until this process has used ``cpu_s`` more seconds of CPU (a CPU-bound
    stand-in for a simulation: on a busy machine it takes longer, as a simulation would)."""
    end = time.process_time() + cpu_s
    x = 0
    while time.process_time() < end:
        x += 1


def _tier_metrics(tier: dict, rate_rps: float, duration_s: float) -> dict[str, float]:
    """Closed-form latency and cost of one tier given the requests per second sent to it."""
    replicas = int(tier.get("replicas", 1))
    rho = rate_rps / (replicas * float(tier.get("capacity_rps", 5.0)))
    slow = 1.0 / (1.0 - rho) if rho < 0.98 else 50.0 * rho
    gpu_hours = replicas * int(tier.get("gpus_per_replica", 1)) * duration_s / 3600.0
    return {"ttft_p99_s": float(tier.get("base_ttft_s", 0.1)) * slow,
            "tpot_p99_s": float(tier.get("base_tpot_s", 0.01)) * (1.0 + rho),
            "utilization": min(rho, 1.0), "kv_peak_frac": min(0.9 * rho, 1.0),
            "cost_usd": _attributed_cost(tier, rate_rps * duration_s),
            "gpu_hours": gpu_hours}


def _attributed_cost(tier: dict, requests: float) -> float:
    """USD of the GPU time the tier's requests use: one replica serves capacity_rps."""
    usd_per_s = int(tier.get("gpus_per_replica", 1)) * float(tier.get("cost_per_gpu_hour", 3.0))
    return requests * usd_per_s / 3600.0 / float(tier.get("capacity_rps", 5.0))


def _check_fail(doc: dict) -> None:
    """Raise if the scenario asks this point to fail (tests of error recording)."""
    for path, value in (_get(doc, "synthetic.fail_if", {}) or {}).items():
        if _get(doc, path, object()) == value:
            raise RuntimeError(f"synthetic failure at {path}={value}")


def _matches(doc: dict, condition: dict | None) -> bool:
    """Whether ``doc`` holds every ``{path: value}`` of ``condition`` (None: no condition)."""
    return bool(condition) and all(_get(doc, path, object()) == value
                                   for path, value in condition.items())


def _check_kill(doc: dict) -> None:
    """Kill this process if the scenario asks it at this point (tests of a worker that dies:
    ``synthetic.kill_if``, once only with ``synthetic.kill_once``)."""
    if not _matches(doc, _get(doc, "synthetic.kill_if", None)):
        return
    once = _get(doc, "synthetic.kill_once", None)
    if once is not None:
        if Path(once).exists():
            return
        Path(once).touch()
    os.kill(os.getpid(), signal.SIGKILL)


def synthetic_runner(doc: dict, source: str = "scenario") -> dict[str, Any]:
    """Summary of a scenario from closed forms (see the module docstring)."""
    _check_fail(doc)
    _check_kill(doc)
    _burn(float(_get(doc, "synthetic.cpu_s", 0.0)))
    time.sleep(float(_get(doc, "synthetic.sleep_s", 0.0)))
    tiers = doc.get("tiers") or DEFAULT_TIERS
    p_easy = float(_get(doc, "workload.difficulty.p_easy", 0.5))
    fpr = float(_get(doc, "router.confusion.fpr", 0.0))
    rate = float(_get(doc, "workload.rate_rps", 4.0)) * float(_get(doc, "trace.time_scale", 1.0))
    duration_s, requests = 600.0, int(round(rate * 600.0))
    cheap_share = p_easy + (1.0 - p_easy) * fpr
    shares = [cheap_share, 1.0 - cheap_share] + [0.0] * (len(tiers) - 2)
    per_tier = {t["name"]: {"requests": int(round(requests * s)), "share": s,
                            **_tier_metrics(t, rate * s, duration_s)}
                for t, s in zip(tiers, shares, strict=False)}
    accs = [float(t.get("accuracy", 0.8)) for t in tiers]
    accuracy = p_easy * accs[-1] + (1 - p_easy) * ((1 - fpr) * accs[-1] + fpr * accs[0])
    used = [m for m in per_tier.values() if m["share"] > 0]
    cost = sum(m["cost_usd"] for m in per_tier.values())
    return {"requests": requests, "completed": requests, "dropped": 0, "duration_s": duration_s,
            "cost_usd": cost, "gpu_hours": sum(m["gpu_hours"] for m in per_tier.values()),
            "cost_per_1m_output_tokens": cost / max(requests * 200, 1) * 1e6,
            "accuracy": accuracy, "ttft_p99_s": max(m["ttft_p99_s"] for m in used),
            "tpot_p99_s": max(m["tpot_p99_s"] for m in used),
            "tiers": per_tier,
            "router": {"fpr": fpr, "fnr": 0.0, "escalation_rate": 0.0,
                       "silent_failure_rate": (1 - p_easy) * fpr * (accs[-1] - accs[0])}}
