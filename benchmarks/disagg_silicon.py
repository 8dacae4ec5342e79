"""Cross-check tiersim's prefill/decode disaggregation against NVIDIA's disaggregated H200 rows.

aiconfigurator-core's ``systems/silicon_sample.csv`` holds TensorRT-LLM (Dynamo) runs of
DeepSeek-V3/R1 FP8 on H200 with ``mode == disagg``: ``prefill_num_workers`` prefill servers and
``decode_num_workers`` decode servers, closed-loop clients (``silicon_concurrency`` in the
source column). This replays the rows whose prefill and decode servers share one layout (TP 8,
experts over the 8 GPUs, no attention DP): one tiersim tier of ``x + y`` replicas split
``x`` prefill / ``y`` decode, the same TRT-LLM profile and load generator as
``benchmarks/fidelity_silicon.py`` (mean TTFT and TPOT over the clients' requests), the KV moved
over 400 Gb/s InfiniBand per GPU (50 GB/s, 10 us). Rows with attention-DP decode servers are
left out (the split tier has one layout). Prints one line per row and the median |error|.

    python benchmarks/disagg_silicon.py [--link-gb-s 50] [--latency-us 10]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import fidelity_silicon as fs  # noqa: E402

from tiersim.engine import Disagg  # noqa: E402
from tiersim.hardware import get_model  # noqa: E402
from tiersim.perf.memory import kv_bytes_per_token  # noqa: E402


def disagg_rows() -> pd.DataFrame:
    """The H200 TRT-LLM disaggregated rows with one layout on both sides, with concurrency."""
    df = pd.read_csv(fs._aic_root() / "systems" / "silicon_sample.csv")
    d = df[(df["mode"] == "disagg") & (df["system"] == "h200_sxm") & (df["backend"] == "trtllm")]
    d = d.dropna(subset=["prefill_num_workers", "decode_num_workers"])
    same = ((d.prefill_tp_size == 8) & (d.decode_tp_size == 8) &
            (d.prefill_attention_dp_size == 1) & (d.decode_attention_dp_size == 1) &
            (d.prefill_pp_size == 1) & (d.decode_pp_size == 1))
    d = d[same].copy()
    d["concurrency"] = d.silicon_data_source.str.extract(r"silicon_concurrency=(\d+)")[0]
    return d.dropna(subset=["concurrency"]).astype({"concurrency": int}).reset_index(drop=True)


def replay_row(row: dict, link_gb_s: float, latency_us: float, kv_dtype: str = "auto") -> dict:
    """tiersim's mean TTFT and TPOT (ms) for one disaggregated row."""
    conc = int(row["concurrency"])
    agg = dict(row, mode="agg", tp_size=8, pp_size=1, attention_dp_size=1,
               moe_tp_size=row["prefill_moe_tp_size"], moe_ep_size=row["prefill_moe_ep_size"],
               batch_size=conc)
    case = fs.case_of(agg)
    tier, _ = fs.replica_tier(case, conc, kv_dtype)
    x, y = int(row["prefill_num_workers"]), int(row["decode_num_workers"])
    arch = get_model(case.model)
    dtype = kv_dtype if kv_dtype != "auto" else "fp8" if arch.is_mla else "bf16"
    per_token = kv_bytes_per_token(arch, dtype, case.tp)
    split = Disagg(x, y, link_gb_s * 1e9, latency_us * 1e-6, per_token)
    tier = dataclasses.replace(tier, replicas=x + y, disagg=split)
    fit = fs.fitted()  # the load generator fitted on the aggregated vLLM rows
    proto = fs.Protocol(per_client=fit.get("per_client", fs.UNFITTED_PER_CLIENT),
                        spread=fit.get("length_spread", 0.0))
    return fs.replay(tier, int(row["isl"]), int(row["osl"]), conc, proto)


def main(argv: list[str] | None = None) -> int:
    """Replay every row and print the errors."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--link-gb-s", type=float, default=50.0)
    ap.add_argument("--latency-us", type=float, default=10.0)
    args = ap.parse_args(argv)
    rows = disagg_rows()
    errs = []
    print(f"{'model':12} {'isl':>5} {'osl':>5} {'xP':>3} {'yD':>3} {'conc':>5} "
          f"{'TTFT ms':>9} {'sim':>9} {'err':>6} {'TPOT ms':>8} {'sim':>8} {'err':>6}")
    for row in rows.to_dict("records"):
        try:
            sim = replay_row(row, args.link_gb_s, args.latency_us)
        except fs.Unrepresentable as exc:
            print(f"{row['model_path']}: {exc}")
            continue
        e_ttft = sim["sim_ttft_ms"] / row["silicon_ttft_ms"] - 1
        e_tpot = sim["sim_tpot_ms"] / row["silicon_tpot_ms"] - 1
        errs.append((e_ttft, e_tpot))
        print(f"{row['model_path'].split('/')[1]:12} {row['isl']:5d} {row['osl']:5d} "
              f"{int(row['prefill_num_workers']):3d} {int(row['decode_num_workers']):3d} "
              f"{row['concurrency']:5d} {row['silicon_ttft_ms']:9.1f} {sim['sim_ttft_ms']:9.1f} "
              f"{e_ttft:+6.0%} {row['silicon_tpot_ms']:8.2f} {sim['sim_tpot_ms']:8.2f} "
              f"{e_tpot:+6.0%}", flush=True)
    if errs:
        a = np.abs(np.array(errs))
        print(f"\n{len(errs)} rows: median |TTFT error| {np.median(a[:, 0]):.0%}, "
              f"median |TPOT error| {np.median(a[:, 1]):.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
