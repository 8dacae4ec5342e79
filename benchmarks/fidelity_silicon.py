"""Fidelity against measured serving: replay NVIDIA's H200 Llama-3.1 FP8 end-to-end results.

``aiconfigurator-core`` ships ``systems/silicon_sample.csv``: mean TTFT and TPOT measured by NVIDIA
on real servers (vLLM, TensorRT-LLM, SGLang) at a given tensor parallelism, client concurrency,
input and output length. This script replays every H200 row for Llama-3.1-8B and -70B at FP8
through tiersim's engine and reports the error per row and the median absolute error per engine.

Each row is a closed loop through :func:`tiersim.engine.simulate`: ``concurrency`` clients, each
sending ``--per-client`` requests back to back (``Workload.follows``), to ONE replica of ``tp``
H200s with vLLM V1's API-server limits (8,192 batched tokens, ``max_num_seqs`` at least the
concurrency), its KV cache sized by ``tiersim.perf.memory`` and its iterations timed by
``tiersim.perf.build_step_model`` on the engine's imported profile (vLLM: the shipped
``profiles/h200_aiconfigurator_vllm.json``; TensorRT-LLM and SGLang: the same importer run on
their folders, ``benchmarks/data/``).

Clients are staggered over one estimated request cycle (identical requests that all start at 0
stay in lock-step cohorts for the whole run; ``--no-stagger`` shows that). TTFT and TPOT are means
over the steady-state rounds: each client's first request (warm-up) and last one (cool-down, as
the batch drains) are left out; ``--all-rounds`` averages over every request instead, as a load
generator does. TPOT of a request is ``(finish - first token) / (osl - 1)``, as ``vllm bench
serve`` defines it. ``--loadgen`` runs a load generator's protocol instead: all clients start at
0, every request counts, 10 per client, lengths within +-10% (``--length-spread``, ``--seed``).

Run ``python benchmarks/fidelity_silicon.py`` (no network, aiconfigurator not needed: the rows
and profiles are copied into ``benchmarks/data/``, see its README). ``--refresh-data`` rebuilds
those copies from an installed aiconfigurator-core. Results and the worst rows are discussed in
``docs/fidelity.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
ROWS_CSV = DATA / "silicon_h200_llama31_fp8.csv"
sys.path.insert(0, str(HERE.parent))  # run from a checkout, installed or not

from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate  # noqa: E402
from tiersim.hardware import get_gpu, get_model  # noqa: E402
from tiersim.perf import build_step_model, default_profile_name  # noqa: E402
from tiersim.perf.base import StepShape  # noqa: E402
from tiersim.perf.memory import kv_capacity_blocks  # noqa: E402

MODELS = {"8B": "llama-3.1-8b", "70B": "llama-3.1-70b"}
ENGINE_PROFILES = {
    "vllm": default_profile_name(),
    "trtllm": str(DATA / "h200_aiconfigurator_trtllm_llama.json"),
    "sglang": str(DATA / "h200_aiconfigurator_sglang_llama.json"),
}
MAX_BATCHED_TOKENS = 8192  # vLLM V1's default for an API server on an 80+ GB GPU
MAX_NUM_SEQS = 1024  # vLLM V1's default there; never binds (at most `concurrency` requests)
BLOCK_SIZE = 16
KEEP_COLUMNS = [
    "id",
    "backend",
    "backend_version",
    "model_path",
    "system",
    "precision",
    "mode",
    "gemm_quant_mode",
    "isl",
    "osl",
    "batch_size",
    "tp_size",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
    "silicon_data_source",
]


def refresh_data() -> None:
    """Copy the rows and build the TensorRT-LLM / SGLang profiles from aiconfigurator-core."""
    import aiconfigurator_core

    from tiersim.perf.aiconfigurator import import_aiconfigurator

    csv = Path(aiconfigurator_core.__file__).parent / "systems" / "silicon_sample.csv"
    df = pd.read_csv(csv)
    rows = df[
        (df["system"] == "h200_sxm")
        & df["model_path"].str.contains("Llama-3.1-(?:8|70)B", regex=True)
        & (df["precision"] == "fp8")
        & (df["mode"] == "agg")
    ]
    DATA.mkdir(exist_ok=True)
    rows[KEEP_COLUMNS].to_csv(ROWS_CSV, index=False)
    llama = {m: (("fp8",), (1, 2, 4, 8)) for m in MODELS.values()}
    for engine in ("trtllm", "sglang"):
        profile, missing = import_aiconfigurator(
            "h200",
            engine,
            out=ENGINE_PROFILES[engine],
            models=llama,
            name=f"h200_aiconfigurator_{engine}_llama",
        )
        print(f"{engine}: {len(profile.tables)} tables; missing: {missing or 'none'}")
    print(f"{len(rows)} rows -> {ROWS_CSV}")


def load_rows() -> pd.DataFrame:
    """The measured rows with the model key each maps to."""
    df = pd.read_csv(ROWS_CSV)
    df["model"] = np.where(df["model_path"].str.contains("70B"), "70B", "8B")
    df["tp_size"] = df["tp_size"].astype(int)
    df["batch_size"] = df["batch_size"].astype(int)
    return df.sort_values(["backend", "model", "tp_size", "isl", "osl", "batch_size"])


def replica_tier(model: str, tp: int, backend: str, concurrency: int, kv_dtype: str) -> TierSpec:
    """ONE replica of ``tp`` H200s as the measured server ran it (vLLM-V1-like limits)."""
    step = build_step_model(
        model, "fp8", "h200", tp=tp, kv_dtype=kv_dtype, profile=ENGINE_PROFILES[backend]
    )
    blocks = kv_capacity_blocks(
        get_model(model), "fp8", get_gpu("h200"), tp, BLOCK_SIZE, kv_dtype=kv_dtype,
        max_num_batched_tokens=MAX_BATCHED_TOKENS,
    )
    limits = SchedulerLimits(
        max_num_seqs=max(MAX_NUM_SEQS, concurrency),
        max_num_batched_tokens=MAX_BATCHED_TOKENS,
        block_size=BLOCK_SIZE,
    )
    return TierSpec(backend, replicas=1, num_blocks=blocks, step_model=step, limits=limits)


def cycle_estimate(
    step, isl: int, osl: int, concurrency: int, max_tokens: int = MAX_BATCHED_TOKENS
) -> float:
    """One request's time in service at full batch: its prefill (as ``max_tokens``-token chunks)
    plus ``osl`` decode steps; it only spaces the clients' first requests."""
    chunk = min(isl, max_tokens)
    prefill = step.step_time(StepShape(((chunk, 0),))) * -(-isl // max_tokens)
    ctx = concurrency * (isl + osl / 2)
    return prefill + osl * float(step.decode_times(concurrency, np.array([ctx]))[0])


@dataclass(frozen=True)
class Protocol:
    """How the simulated load generator drives a row.

    ``per_client`` requests per client; ``stagger``: client ``c`` starts at ``c / concurrency`` of
    an estimated request cycle (else all at 0); ``all_rounds``: average over every request (else
    leave out each client's first and last); ``spread``: each request's prompt and output
    lengths are drawn uniformly from ``[(1 - spread) L, (1 + spread) L]`` (numpy Generator seeded
    by ``seed``; 0 = every request exactly ``isl`` / ``osl``).
    """

    stagger: bool = True
    per_client: int = 6
    all_rounds: bool = False
    spread: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.spread < 1.0:
            raise ValueError(f"--length-spread must be in [0, 1) (got {self.spread})")
        if self.per_client < (1 if self.all_rounds else 3):
            raise ValueError(
                f"--per-client must be >= 3 to leave out warm-up and cool-down "
                f"(got {self.per_client}); or pass --all-rounds"
            )

    def rounds(self) -> slice:
        """The rounds averaged."""
        return slice(0, self.per_client) if self.all_rounds else slice(1, self.per_client - 1)

    def lengths(self, length: int, n: int, stream: int) -> np.ndarray:
        """``n`` request lengths around ``length`` (``stream`` 0: prompts, 1: outputs)."""
        if self.spread == 0.0:
            return np.full(n, length, dtype=np.int64)
        rng = np.random.default_rng([self.seed, stream])
        drawn = np.rint(length * rng.uniform(1 - self.spread, 1 + self.spread, n))
        return np.maximum(drawn, min(length, 2)).astype(np.int64)


def closed_loop_workload(
    isl: int, osl: int, concurrency: int, proto: Protocol, gap_s: float
) -> Workload:
    """``concurrency`` clients, ``proto.per_client`` requests each, sent back to back.

    Request ``r * concurrency + c`` is client ``c``'s ``r``-th: round 0 arrives at ``c * gap_s``,
    every later one when the same client's previous request finishes.
    """
    n = concurrency * proto.per_client
    idx = np.arange(n)
    follows = np.where(idx < concurrency, -1, idx - concurrency)
    arrival = np.where(idx < concurrency, idx * gap_s, 0.0)
    return Workload(
        arrival_s=arrival.astype(np.float64),
        input_tokens=proto.lengths(isl, n, 0),
        output_tokens=proto.lengths(osl, n, 1),
        tier=np.zeros(n, dtype=np.int64),
        follows=follows,
    )


def replay(tier: TierSpec, isl: int, osl: int, concurrency: int, proto: Protocol) -> dict:
    """Closed-loop replay of one replica: mean TTFT and TPOT (ms) over the measured rounds."""
    gap = 0.0
    if proto.stagger:
        budget = tier.limits.max_num_batched_tokens
        gap = cycle_estimate(tier.step_model, isl, osl, concurrency, budget) / concurrency
    work = closed_loop_workload(isl, osl, concurrency, proto, gap)
    res = simulate([tier], work, sample_every=1e9)  # no time series needed
    if res.dropped.any():
        raise RuntimeError(f"a request of about {isl}+{osl} tokens exceeds the replica's KV cache")

    def measured(a: np.ndarray) -> np.ndarray:
        return a.reshape(proto.per_client, concurrency)[proto.rounds()]

    first, finish = measured(res.first_token_s), measured(res.finish_s)
    decodes = np.maximum(measured(work.output_tokens) - 1, 1)
    return {
        "sim_ttft_ms": float(np.mean(first - measured(res.arrival_s))) * 1e3,
        "sim_tpot_ms": float(np.mean((finish - first) / decodes)) * 1e3,
        "preemptions": int(res.preemptions.sum()),
    }


def simulate_row(row: dict, kv_dtype: str, proto: Protocol) -> dict:
    """TTFT and TPOT (ms, means over the measured rounds) tiersim predicts for one row."""
    conc, isl, osl = int(row["batch_size"]), int(row["isl"]), int(row["osl"])
    tier = replica_tier(MODELS[row["model"]], int(row["tp_size"]), row["backend"], conc, kv_dtype)
    return replay(tier, isl, osl, conc, proto)


def run(df: pd.DataFrame, kv_dtype: str, proto: Protocol, jobs: int) -> pd.DataFrame:
    """Simulate every row (in ``jobs`` processes); adds predictions and signed errors."""
    rows = df.to_dict("records")
    args = [(r, kv_dtype, proto) for r in rows]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            out = list(pool.map(_simulate_star, args, chunksize=4))
    else:
        out = [_simulate_star(a) for a in args]
    res = pd.concat([df.reset_index(drop=True), pd.DataFrame(out)], axis=1)
    res["ttft_err"] = res["sim_ttft_ms"] / res["silicon_ttft_ms"] - 1
    res["tpot_err"] = res["sim_tpot_ms"] / res["silicon_tpot_ms"] - 1
    return res


def _simulate_star(args):
    return simulate_row(*args)


def report(res: pd.DataFrame) -> list[str]:
    """Per-row lines, then one summary line per engine."""
    lines = [
        f"{'engine':7} {'model':5} {'tp':>2} {'conc':>4} {'isl':>5} {'osl':>5} "
        f"{'TTFT ms':>9} {'sim':>9} {'err':>7}  {'TPOT ms':>7} {'sim':>7} {'err':>7}"
    ]
    for r in res.itertuples():
        lines.append(
            f"{r.backend:7} {r.model:5} {r.tp_size:>2} {r.batch_size:>4} {r.isl:>5} {r.osl:>5} "
            f"{r.silicon_ttft_ms:9.1f} {r.sim_ttft_ms:9.1f} {r.ttft_err:+7.1%}  "
            f"{r.silicon_tpot_ms:7.2f} {r.sim_tpot_ms:7.2f} {r.tpot_err:+7.1%}"
        )
    lines.append("")
    lines += summary_lines(res)
    return lines


def summary_lines(res: pd.DataFrame) -> list[str]:
    """``<engine> median |TPOT error| = x%, |TTFT error| = y% (n=N)`` per engine."""
    out = []
    for engine, g in res.groupby("backend"):
        tpot = np.median(np.abs(g["tpot_err"])) * 100
        ttft = np.median(np.abs(g["ttft_err"])) * 100
        out.append(
            f"{engine} median |TPOT error| = {tpot:.1f}%, |TTFT error| = {ttft:.1f}% (n={len(g)})"
        )
    return out


def protocol_from_args(args: argparse.Namespace) -> Protocol:
    """The :class:`Protocol` the command line asks for (``--loadgen`` fills unset options)."""
    spread, per_client = args.length_spread, args.per_client
    if args.loadgen:
        spread = 0.1 if spread is None else spread
        per_client = 10 if per_client is None else per_client
    return Protocol(
        stagger=not (args.no_stagger or args.loadgen),
        per_client=6 if per_client is None else per_client,
        all_rounds=args.all_rounds or args.loadgen,
        spread=0.0 if spread is None else spread,
        seed=args.seed,
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line (see module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--refresh-data",
        action="store_true",
        help="rebuild benchmarks/data from an installed aiconfigurator-core",
    )
    ap.add_argument(
        "--kv-dtype",
        default="fp8",
        choices=["fp8", "bf16"],
        help="KV-cache dtype assumed for the measured servers (default fp8)",
    )
    ap.add_argument(
        "--no-stagger", action="store_true", help="start all clients at time 0 (lock-step cohorts)"
    )
    ap.add_argument(
        "--per-client", type=int, help="requests per client (default 6; 10 with --loadgen)"
    )
    ap.add_argument(
        "--all-rounds",
        action="store_true",
        help="average over every request (default: leave out each client's first and last)",
    )
    ap.add_argument(
        "--length-spread",
        type=float,
        help="draw lengths uniformly within +-this fraction of isl/osl (default 0; 0.1 with "
        "--loadgen)",
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the length draws")
    ap.add_argument(
        "--loadgen",
        action="store_true",
        help="a load generator's run: all clients start at 0, every request counted, "
        "10 per client, lengths +-10%%",
    )
    ap.add_argument("--engine", action="append", help="only these engines (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--csv", help="also write per-row results to this CSV")
    return ap


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see module docstring)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        proto = protocol_from_args(args)
    except ValueError as exc:
        ap.error(str(exc))
    if args.refresh_data:
        refresh_data()
    df = load_rows()
    if args.engine:
        df = df[df["backend"].isin(args.engine)]
    res = run(df, args.kv_dtype, proto, args.jobs)
    print("\n".join(report(res)))
    if args.csv:
        res.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
