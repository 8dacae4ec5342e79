"""Decode step time of Qwen3-Coder-30B-A3B on one H200, per precision: tiersim vs the tables.

For each precision (bf16, fp8, w4a16, nvfp4) and batch (1, 8, 32, 128) at 2,048 tokens of
context per sequence, prints a Markdown table of

- ``tiersim``: the decode step time of ``build_step_model(..., profile=<shipped H200 profile>)``;
- ``table sum``: the same iteration added up here by hand, straight from the profile's imported
  operator tables (48 layers x (QKV + O + router GEMMs + MoE + decode attention) + LM head),
  counting only the operators the profile measures;
- ``roofline part``: what the step spends in operators the profile has no table for (answered
  by the roofline, listed in the last column) and in the per-iteration overhead;
- ``roofline model``: the pure roofline model's step time, for comparison.

``tiersim = table sum + roofline part`` is the consistency check; the last column says which
tables were roofline. Run: ``python benchmarks/decode_table.py`` (used in docs/fidelity.md).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tiersim.hardware import get_model  # noqa: E402
from tiersim.perf import build_step_model, default_profile_name, resolve_profile  # noqa: E402

MODEL = "qwen3-coder-30b-a3b"
PRECISIONS = ("bf16", "fp8", "w4a16", "nvfp4")
BATCHES = (1, 8, 32, 128)
CONTEXT = 2048


def table_sum(profile, precision: str, batch: int, context: int) -> tuple[float, list[str]]:
    """Seconds of the measured operators of one decode iteration, and the missing tables."""
    m = get_model(MODEL)
    qkv = ((m.heads + 2 * m.kv_heads) * m.head_dim, m.hidden)
    lookups = [
        ("gemm", precision, {"n": qkv[0], "k": qkv[1]}, m.layers, (batch,)),
        ("gemm", precision, {"n": m.hidden, "k": m.heads * m.head_dim}, m.layers, (batch,)),
        ("gemm", "bf16", {"n": m.num_experts, "k": m.hidden}, m.layers, (batch,)),
        (
            "moe",
            precision,
            {
                "hidden": m.hidden,
                "inter": m.expert_intermediate,
                "num_experts": m.num_experts,
                "top_k": m.top_k,
                "ep": 1,
                "tp": 1,
            },
            m.layers,
            (batch,),
        ),
        (
            "attn_decode",
            "bf16",
            {"heads": m.heads, "kv_heads": m.kv_heads, "head_dim": m.head_dim},
            m.layers,
            (batch, context),
        ),
        ("gemm", "bf16", {"n": math.ceil(m.vocab), "k": m.hidden}, 1, (batch,)),
    ]
    total, missing = 0.0, []
    for op, dtype, key, count, coords in lookups:
        table = profile.find(op, dtype, key)
        if table is None:
            missing.append(f"{op} {dtype}" + (f" n={key['n']}" if op == "gemm" else ""))
            continue
        total += count * float(np.asarray(table.lookup(*coords)).reshape(-1)[0])
    return total, missing


def rows():
    """One dict per (precision, batch)."""
    profile = resolve_profile(default_profile_name())
    out = []
    for precision in PRECISIONS:
        tiersim = build_step_model(MODEL, precision, "h200", profile=profile)
        roofline = build_step_model(MODEL, precision, "h200")
        for batch in BATCHES:
            ctx = np.array([float(batch * CONTEXT)])
            step = float(tiersim.decode_times(batch, ctx)[0])
            measured, missing = table_sum(profile, precision, batch, CONTEXT)
            out.append(
                {
                    "precision": precision,
                    "batch": batch,
                    "tiersim_ms": step * 1e3,
                    "table_ms": measured * 1e3,
                    "rest_ms": (step - measured) * 1e3,
                    "roofline_ms": float(roofline.decode_times(batch, ctx)[0]) * 1e3,
                    "roofline_tables": ", ".join(missing) or "none (overhead only)",
                }
            )
    return out


def markdown(table: list[dict]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| precision | batch | tiersim step (ms) | table sum (ms) | roofline part + overhead (ms)"
        " | roofline model (ms) | tables on roofline |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in table:
        lines.append(
            f"| {r['precision']} | {r['batch']} | {r['tiersim_ms']:.2f} | {r['table_ms']:.2f} | "
            f"{r['rest_ms']:.2f} | {r['roofline_ms']:.2f} | {r['roofline_tables']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(
        f"Qwen3-Coder-30B-A3B decode step on 1x H200, {CONTEXT} tokens of context per sequence,"
        f" profile {default_profile_name()}\n"
    )
    print(markdown(rows()))
