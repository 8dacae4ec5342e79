"""Where one model's TPOT error sits: its measured vLLM rows, tiersim's replay, and the decode
step alone.

``python benchmarks/tpot_breakdown.py`` (default ``--model Llama-3.1-8B``) replays the model's
vLLM rows of NVIDIA's H200 silicon sample exactly as ``benchmarks/fidelity_silicon.py --engine
vllm --model M`` does (same load generator, prompt pool, profile and fits; nothing is fitted
here) and prints one line per row, then the median errors by output length, tensor parallelism
and client count:

- ``decode``: tiersim's pure decode step at the row's clients (per DP rank) and mean context
  (``isl + osl / 2`` a sequence), no prefill in it: the floor of a TPOT;
- ``measured / decode`` and ``tiersim / decode``: measured and replayed TPOT over that step;
- ``extra/req``: what each request's prefill adds to the decodes it shares steps with,
  ``(TPOT - decode) x (osl - 1) / clients`` in ms (in a closed loop, about ``clients`` new
  prompts arrive while one request decodes), measured and replayed;
- ``fresh``: the least time one fresh prompt of ``isl`` tokens takes on the profile's tables
  (``fidelity_silicon.prompt_prefill_s``), host time left out;
- ``first``: where the row replays with a prompt pool (a campaign that reused its prompts),
  the share of its requests that send a prompt for the first time (distinct prompts over
  requests, the load generator's draw); a prompt evicted from the free pool and sent again
  misses too, so this is a lower bound of the replay's misses.

``--csv PATH`` reads the rows of an earlier ``fidelity_silicon.py --csv`` run instead of
replaying. Nothing here is a measurement but the measured columns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0]))
sys.path.insert(0, str(HERE))

import fidelity_silicon as fs  # noqa: E402


def replayed(model: str, jobs: int) -> pd.DataFrame:
    """The model's vLLM H200 rows replayed with the benchmark's defaults."""
    rows = fs.load_rows()
    rows = rows[(rows["backend"] == "vllm") & (rows["model"] == model)]
    rows = fs.with_aic(rows.reset_index(drop=True))
    args = fs.build_parser().parse_args([])
    return fs.run(rows, args.kv_dtype, fs.protocol_from_args(args), jobs)


def first_share(row: dict, proto: fs.Protocol) -> float:
    """Share of the row's requests that send a pool prompt for the first time (NaN: every
    prompt is fresh)."""
    pool = row.get("prompt_pool")
    if not isinstance(pool, (int, float, np.integer)) or not pool or np.isnan(pool):
        return float("nan")
    n = proto.per_client * fs.clients(row)
    drawn = fs.dataclasses.replace(proto, pool=int(pool)).prompts(n)
    return len(set(drawn.tolist())) / n


def breakdown(res: pd.DataFrame) -> pd.DataFrame:
    """One line per replayed row of ``res`` (a ``fidelity_silicon.run`` result)."""
    proto = fs.protocol_from_args(fs.build_parser().parse_args([]))
    out = []
    for row in res[res["sim_tpot_ms"].notna()].to_dict("records"):
        case = fs.case_of(row)
        tier, _ = fs.replica_tier(case, fs.clients(row), "auto")
        step = tier.step_model
        isl, osl = int(row["isl"]), int(row["osl"])
        per_rank = -(-fs.clients(row) // case.dp)
        dec = float(step.decode_times(per_rank, np.array([per_rank * (isl + osl / 2)]))[0]) * 1e3
        meas, sim = float(row["silicon_tpot_ms"]), float(row["sim_tpot_ms"])
        spread = (osl - 1) / fs.clients(row)
        out.append({
            "tp": case.tp, "isl": isl, "osl": osl, "clients": fs.clients(row),
            "meas": meas, "sim": sim, "err_pct": 100 * (sim / meas - 1), "decode": dec,
            "meas_dec": meas / dec, "sim_dec": sim / dec,
            "extra_meas": (meas - dec) * spread, "extra_sim": (sim - dec) * spread,
            "fresh": fs.prompt_prefill_s(step, isl, tier.limits.max_num_batched_tokens) * 1e3,
            "first": first_share(row, proto),
        })
    return pd.DataFrame(out).sort_values(["osl", "tp", "isl", "clients"]).reset_index(drop=True)


def table_lines(b: pd.DataFrame) -> list[str]:
    """The per-row table as Markdown."""
    lines = ["| TP | isl | osl | clients | TPOT measured / tiersim, ms (error) | decode step "
             "alone, ms | measured / decode | tiersim / decode | extra per request, ms: "
             "measured / tiersim | fresh prompt, ms | first sends |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in b.itertuples():
        first = "" if np.isnan(r.first) else f"{100 * r.first:.0f}%"
        lines.append(
            f"| {r.tp} | {r.isl} | {r.osl} | {r.clients} | {r.meas:.2f} / {r.sim:.2f} "
            f"({r.err_pct:+.0f}%) | {r.decode:.2f} | {r.meas_dec:.2f} | {r.sim_dec:.2f} | "
            f"{r.extra_meas:.1f} / {r.extra_sim:.1f} | {r.fresh:.1f} | {first} |")
    return lines


def group_line(label: str, g: pd.DataFrame) -> str:
    """One group's count, median |error| and median signed error."""
    err = g["err_pct"]
    return (f"{label:<15} n={len(g):>3}  median |TPOT error| {err.abs().median():5.1f}%  "
            f"signed {err.median():+5.1f}%")


def group_lines(b: pd.DataFrame) -> list[str]:
    """Median |error| and median signed error by output length, TP and client count."""
    b = b.assign(regime=np.where(b["osl"] <= 100, "osl 100", "osl 500-2000"),
                 band=pd.cut(b["clients"], [0, 32, 80, 1 << 20],
                             labels=["clients <= 32", "clients 33-80", "clients > 80"]))
    lines = []
    for key in ("regime", "tp", "band"):
        for name, g in b.groupby(key, observed=True):
            lines.append(group_line(f"TP {name}" if key == "tp" else str(name), g))
    return [*lines, group_line("all", b)]


def main(argv: list[str] | None = None) -> int:
    """Print the breakdown; 1 with one line on a bad input."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="Llama-3.1-8B", help="the model's label in the report "
                                                          "(default Llama-3.1-8B)")
    p.add_argument("--csv", help="rows of an earlier fidelity_silicon.py --csv run")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args(argv)
    if args.csv:
        try:
            res = pd.read_csv(args.csv)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            print(f"error: --csv {args.csv}: {reason} (write one with python "
                  f"benchmarks/fidelity_silicon.py --engine vllm --csv PATH)", file=sys.stderr)
            return 1
        if not {"backend", "model", "sim_tpot_ms"} <= set(res.columns):
            print(f"error: --csv {args.csv}: not a fidelity_silicon.py --csv file (needs the "
                  f"backend, model and sim_tpot_ms columns)", file=sys.stderr)
            return 1
        res = res[(res["backend"] == "vllm") & (res["model"] == args.model)]
    else:
        res = replayed(args.model, max(1, args.jobs))
    if not res["sim_tpot_ms"].notna().any():
        rows = fs.load_rows()
        print(f"error: --model {args.model}: no replayed vLLM H200 row of that model (give one "
              f"of {', '.join(fs.ordered_models(set(rows[rows['backend'] == 'vllm']['model'])))})",
              file=sys.stderr)
        return 1
    b = breakdown(res)
    print("\n".join(table_lines(b)))
    print()
    print("\n".join(group_lines(b)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
