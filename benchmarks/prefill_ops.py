"""One prefill step, operator by operator: tiersim's step model beside aiconfigurator's.

For a silicon-sample vLLM row's model and layout (one request, ``--isl`` new tokens, nothing
cached), print per whole model (all layers, milliseconds) what tiersim's assembled step model,
as the row's replay builds it (layout, attention-DP ranks, MoE kernel), charges for each
operator group and what aiconfigurator-core's static context estimate charges
(``_run_static_breakdown(..., "static_ctx")``, its own per-op dictionary). Diagnostic only:
used to locate where the MoE rows' TTFT gap comes from (docs/fidelity.md). Needs
aiconfigurator-core (the ``aic`` extra); no network.

Run: ``python benchmarks/prefill_ops.py [--isl 8192 1024]``; ``--system h100_sxm`` (or
``b200_sxm``) reads that GPU's rows and the profile their replay runs on, ``--case NAME:TP[:DP]``
(repeatable) picks other rows than :data:`CASES`, e.g. ``--system h100_sxm --case Qwen3-32B:2``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity_silicon as fs  # noqa: E402

#: (label, tp, dp) of the rows compared: vLLM layouts, attention-DP ranks ``dp`` (experts
#: tensor-parallel over all ``tp x dp`` GPUs).
CASES = (
    ("MiniMax-M2.5", 4, 1),
    ("Qwen3-235B-FP8", 2, 1),
    ("Qwen3-235B-FP8", 4, 1),
    ("Qwen3-235B-FP8", 1, 2),
    ("gpt-oss-120b", 1, 1),
    ("gpt-oss-120b", 4, 1),
    ("Llama-3.1-70B", 4, 1),
    ("Kimi-K2.5", 8, 1),
)


def vllm_rows(system: str = fs.FIT_SYSTEM):
    """The vLLM rows of ``system``, each with its report label as ``name`` (:func:`fs.row_label`:
    a model :data:`fs.MODELS` does not list, such as H100's Qwen3-32B, is named from its
    config)."""
    rows = fs.load_rows(system)
    rows = rows[rows.backend == "vllm"].copy()
    rows["name"] = [fs.row_label(r) for r in rows.to_dict("records")]
    return rows


def pick_row(rows, name: str, tp: int, dp: int = 1) -> dict:
    """The first vLLM row of ``name`` replayed as ``tp`` x ``dp`` (:func:`fs.parallel_layout`),
    experts tensor-parallel over its GPUs (no expert parallelism); rows that cannot be replayed
    (:func:`fs.shape_problem`: a parallel size of 0, say) are passed over."""
    for _, row in rows[rows.name == name].iterrows():
        if row["mode"] != "agg" or fs.shape_problem(row.to_dict()):
            continue
        if fs.parallel_layout(row.to_dict()) == (tp, dp, 1):
            return row.to_dict()
    raise LookupError(f"no vLLM row of {name} at TP {tp} x DP {dp}")


def parse_case(text: str) -> tuple[str, int, int]:
    """``NAME:TP[:DP]`` -> ``(name, tp, dp)`` (``--case``)."""
    name, *sizes = text.split(":")
    if not name or len(sizes) not in (1, 2) or not all(x.isdigit() and int(x) > 0 for x in sizes):
        raise argparse.ArgumentTypeError(f"--case {text!r}: write NAME:TP or NAME:TP:DP, "
                                         "e.g. Qwen3-32B:2")
    return name, int(sizes[0]), int(sizes[1]) if len(sizes) > 1 else 1


def tiersim_ops(row: dict, isl: int) -> dict[str, float]:
    """tiersim's per-op milliseconds of one ``isl``-token prefill chunk (whole model) on the
    step model the row's replay runs (:func:`fs.replica_tier`: its layout, its engine's MoE
    kernel, the tables imported for it); at ``dp`` > 1 one rank's step, the other ranks
    padded to its tokens as vLLM pads them, so the experts see ``isl x dp`` tokens."""
    step = fs.replica_tier(fs.case_of(row), 1, "auto")[0].step_model
    m, ops, t = step.model, step.ops, np.array([float(isl)])
    fmt = step._fmt("attention")
    mla = 0.0 if m.is_mla else 1.0  # MLA: the attention op is the whole block
    out = {
        "qkv_gemm": mla * m.layers * ops.gemm(t, *step._qkv, fmt)[0],
        "proj_gemm": mla * m.layers * ops.gemm(t, *step._o, fmt)[0],
        "attention": step._attn_prefill(isl, 0),
        "comm (all-reduce)": step._communication(t)[0],
        "lm_head": step._lm_head_time(1),
        "overhead": ops.overhead_s,
        "eager host": ops.eager_s(t)[0],  # host launches of an iteration run outside CUDA graphs
    }
    if m.moe_layers:
        out["router_gemm"] = m.moe_layers * ops.gemm(t, *step._router, "bf16")[0]
        out["moe"] = m.moe_layers * step._routed_experts(t * step.dp, step_tokens=t)[0]
        if m.shared_intermediate:
            layer = m.moe_layers * step._moe_layer(t)[0]
            out["shared_experts"] = layer - out["router_gemm"] - out["moe"]
    if m.dense_mlp_layers:
        out["dense_mlp"] = m.dense_mlp_layers * step._dense_mlp(t)[0]
    total = step.step_time(fs.StepShape(((isl, 0),)))
    out = {k: 1e3 * float(v) for k, v in out.items()}
    out["TOTAL"] = 1e3 * total
    return out


def aic_ops(row: dict, isl: int) -> dict[str, float]:
    """aiconfigurator-core's per-op milliseconds of one ``isl``-token context step."""
    from aiconfigurator_core.sdk.config import RuntimeConfig

    for row_quant in fs.aic_quant_order(fs.row_spec(row)):
        try:
            backend, model, db, _ = fs.aic_setup(row, row_quant)
            break
        except Exception:  # noqa: BLE001 -- the other quant mode is tried, as the benchmark does
            continue
    rc = RuntimeConfig(isl=isl, osl=2, batch_size=1, prefix=0)
    lat = backend._run_static_breakdown(model, db, rc, "static_ctx")[0]
    out = {k.removeprefix("context_"): float(v) for k, v in lat.items()}
    out["TOTAL"] = sum(lat.values())
    return out


#: Operator groups of the summary table: group -> (tiersim keys, aiconfigurator keys).
GROUPS = {
    "attn GEMMs": (("qkv_gemm", "proj_gemm"), ("qkv_gemm", "proj_gemm")),
    "attention": (("attention",), ("attention", "mla_block")),
    "MoE + router": (
        ("moe", "router_gemm", "shared_experts"),
        ("moe", "router_gemm", "shared_gate_up_gemm", "shared_act_gate", "shared_ffn2_gemm"),
    ),
    "dense MLP": (("dense_mlp",), ("gate_ffn1_gemm", "act_gate", "ffn2_gemm")),
    "collectives": (
        ("comm (all-reduce)",),
        (
            "moe_pre_dispatch",
            "moe_post_dispatch",
            "ar_1",
            "ar_2",
            "tp_allreduce",
            "embedding_ar",
            "p2p",
        ),
    ),
    "norms, other": (
        ("lm_head", "overhead"),
        ("add_norm_1", "add_norm_2", "embedding", "logits_gemm"),
    ),
    "eager host": (("eager host",), ()),
}


def grouped(ops: dict[str, float], side: int) -> dict[str, float]:
    """``ops`` summed into :data:`GROUPS` (``side`` 0: tiersim keys, 1: aiconfigurator's)."""
    return {g: sum(ops.get(k, 0.0) for k in keys[side]) for g, keys in GROUPS.items()}


def markdown_row(label: str, ts: dict[str, float], ai: dict[str, float]) -> str:
    """One ``| label | tiersim / aic ... |`` line of the summary table (ms)."""
    gt, ga = grouped(ts, 0), grouped(ai, 1)
    cells = [f"{gt[g]:.1f} / {ga[g]:.1f}" for g in GROUPS if g != "eager host"]
    kernels = (ts["TOTAL"] - gt["eager host"]) / ai["TOTAL"]
    return (
        f"| {label} | "
        + " | ".join(cells)
        + f" | {gt['eager host']:.1f} | {ts['TOTAL']:.1f} / {ai['TOTAL']:.1f} | {kernels:.2f} | "
        + f"{ts['TOTAL'] / ai['TOTAL']:.2f} |"
    )


def main(argv=None) -> None:
    """Print the op-by-op tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isl", type=int, nargs="+", default=[8192, 1024])
    ap.add_argument("--markdown", action="store_true", help="one grouped table row per case")
    ap.add_argument("--system", choices=sorted(fs.SYSTEM_GPU), default=fs.FIT_SYSTEM,
                    help="whose rows (default h200_sxm)")
    ap.add_argument("--case", type=parse_case, action="append",
                    help="NAME:TP[:DP] of a row to compare (repeatable; default: CASES)")
    args = ap.parse_args(argv)
    rows = vllm_rows(args.system)
    if args.markdown:
        shared = [g for g in GROUPS if g != "eager host"]
        print("| model, prompt | " + " | ".join(shared) + " | eager host (tiersim) | total | "
              "tiersim / aic without eager host | with it |")
        print("|---" * (len(shared) + 5) + "|")
    for name, tp, dp in args.case or CASES:
        try:
            row = pick_row(rows, name, tp, dp)
        except LookupError as exc:
            sys.exit(f"prefill_ops.py: --case {name}:{tp}:{dp}: {exc} on {args.system}; "
                     "name a model and layout the rows hold")
        layout = f"TP{tp}" + (f" x DP{dp}" if dp > 1 else "")
        for isl in args.isl:
            ts, ai = tiersim_ops(row, isl), aic_ops(row, isl)
            if args.markdown:
                print(markdown_row(f"{name} {layout}, {isl}", ts, ai))
                continue
            print(f"\n{name} {layout} prefill {isl} tokens (ms, whole model)")
            print("  tiersim: " + ", ".join(f"{k} {v:.2f}" for k, v in ts.items()))
            print("  aic:     " + ", ".join(f"{k} {v:.2f}" for k, v in ai.items()))


if __name__ == "__main__":
    main()
