"""Decode step times on H200: tiersim beside aiconfigurator, and tiersim's weight memory.

Default (``python benchmarks/decode_table.py``): for each model of NVIDIA's measured vLLM H200
runs (the silicon sample that ``benchmarks/fidelity_silicon.py`` replays), at the layout of its
runs (:data:`LAYOUTS`), one decode iteration at batch 1, 32 and 128 with 2,048 tokens of context
per sequence and an FP8 KV cache:

- ``tiersim``: ``build_step_model(..., profile=<shipped vLLM profile>)`` as the benchmark builds
  it (checkpoint formats, TP x DP / EP), ``decode_times``;
- ``aiconfigurator``: aiconfigurator-core's decode-step estimate for the same model, layout,
  quant modes and batch (its generation-only step, vLLM database), cached in
  ``benchmarks/data/aic_decode_h200.csv`` (``--refresh-aic`` recomputes it; needs the package);
- the tables the tiersim step answered with the roofline (none = all measured).

``--precisions``: the earlier table of Qwen3-Coder-30B-A3B on one H200 per precision (tiersim
against the profile's tables summed by hand, and the pure roofline).

``--unseen``: the same decode step (batch 1, 32, 128) for every other config aiconfigurator-core
ships, models no silicon-sample row covers: each at the smallest tensor parallelism of 1, 2, 4,
8 whose checkpoint weights take at most 75% of an H200, its experts tensor-parallel; tiersim
beside aiconfigurator's estimate (cached in ``benchmarks/data/aic_decode_unseen_h200.csv``,
``--refresh-aic`` recomputes it), or the one line saying why either cannot serve it. Neither
column is a measurement: this shows where tiersim and NVIDIA's estimator agree on models
nobody fitted, and where they part by design (docs/fidelity.md).

``--weights``: ``docs/models.md``'s table: for every config aiconfigurator-core ships
(``benchmarks/data/published_sizes.csv`` lists them with the published size and its source;
the configs are read from the installed package), tiersim's checkpoint weight memory
(``tiersim.perf.memory.checkpoint_bytes``) and parameter count against the published ones.
"""

from __future__ import annotations

import argparse
import datetime
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0]))
sys.path.insert(0, str(HERE))

import fidelity_silicon as fs  # noqa: E402

from tiersim.hardware import get_model  # noqa: E402
from tiersim.perf import build_step_model, default_profile_name, resolve_profile  # noqa: E402

AIC_DECODE_CSV = fs.DATA / "aic_decode_h200.csv"
AIC_UNSEEN_CSV = fs.DATA / "aic_decode_unseen_h200.csv"
SIZES_CSV = fs.DATA / "published_sizes.csv"
BATCHES = (1, 32, 128)
CONTEXT = 2048
#: The layout each model is tabled at: the tensor parallelism most of its vLLM rows ran.
LAYOUTS = {
    "Llama-3.1-8B": 1, "Llama-3.1-70B": 4, "MiniMax-M2.5": 4, "Kimi-K2.5": 8,
    "Qwen3-235B-FP8": 4, "gpt-oss-120b": 2,
}


def layout_rows() -> dict[str, dict]:
    """Per model, the first vLLM row at its :data:`LAYOUTS` tensor parallelism."""
    rows = fs.load_rows()
    rows = rows[(rows["backend"] == "vllm") & (rows["mode"] == "agg")]
    out = {}
    for model, tp in LAYOUTS.items():
        pick = rows[(rows["model"] == model) & (rows["tp_size"] == tp)]
        out[model] = pick.iloc[0].to_dict()
    return out


def tiersim_decode_ms(row: dict, batch: int) -> tuple[float, list[str]]:
    """tiersim's decode step (ms) for ``row``'s model and layout at ``batch``, and the tables
    it answered on the roofline (raises :class:`fs.Unrepresentable`)."""
    tier, sources = fs.replica_tier(fs.case_of(row), batch, "fp8")
    ctx = np.array([float(batch * CONTEXT)])
    return float(tier.step_model.decode_times(batch, ctx)[0]) * 1e3, fs.on_roofline(sources)


def aic_decode_ms(row: dict, batch: int) -> float:
    """aiconfigurator-core's decode-step estimate (ms), FP8 KV cache, quant modes chosen as in
    :func:`fs.aic_estimate` (the checkpoint's where it declares formats, else the row's; the
    other where the first fails)."""
    from aiconfigurator_core.sdk.config import RuntimeConfig

    rc = RuntimeConfig(isl=CONTEXT, osl=2, batch_size=batch, prefix=0)
    first, second = fs.aic_quant_order(fs.row_spec(row))
    try:
        backend, model, db, _ = fs.aic_setup(row, first, kv_quant="fp8")
    except Exception:  # noqa: BLE001 -- the other quant modes, as fs.aic_estimate does
        backend, model, db, _ = fs.aic_setup(row, second, kv_quant="fp8")
    return float(backend._get_genonly_step_latency(model, db, rc, batch, CONTEXT, 2)[0])


def refresh_aic() -> pd.DataFrame:
    """Recompute aiconfigurator's decode steps; write :data:`AIC_DECODE_CSV`."""
    import logging

    logging.disable(logging.WARNING)
    out = []
    for model, row in layout_rows().items():
        for batch in BATCHES:
            out.append({"model": model, "tp": int(row["tp_size"]), "batch": batch,
                        "context": CONTEXT, "aic_ms": aic_decode_ms(row, batch)})
    return write_aic_csv(out, AIC_DECODE_CSV)


def write_aic_csv(rows: list[dict], path) -> pd.DataFrame:
    """``rows`` of aiconfigurator figures written to ``path`` with the package version and the
    date they were computed."""
    import importlib.metadata

    df = pd.DataFrame(rows)
    df["aic_version"] = "aiconfigurator-core " + importlib.metadata.version("aiconfigurator-core")
    df["computed_on"] = datetime.date.today().isoformat()
    df.to_csv(path, index=False)
    return df


def model_rows() -> list[dict]:
    """One dict per (model, batch): tiersim, aiconfigurator and the roofline tables."""
    aic = pd.read_csv(AIC_DECODE_CSV) if AIC_DECODE_CSV.exists() else pd.DataFrame()
    out = []
    for model, row in layout_rows().items():
        for batch in BATCHES:
            entry = {"model": model, "tp": int(row["tp_size"]), "batch": batch}
            try:
                entry["tiersim_ms"], roofline = tiersim_decode_ms(row, batch)
                entry["roofline"] = ", ".join(roofline) or "none"
            except fs.Unrepresentable as exc:
                entry["tiersim_ms"], entry["roofline"] = float("nan"), f"not representable: {exc}"
            hit = aic[(aic["model"] == model) & (aic["batch"] == batch)] if len(aic) else aic
            entry["aic_ms"] = float(hit["aic_ms"].iloc[0]) if len(hit) else float("nan")
            out.append(entry)
    return out


def model_markdown(table: list[dict]) -> str:
    """The per-model rows as a Markdown table."""
    lines = [
        "| model | TP | batch | tiersim step (ms) | aiconfigurator (ms) | tiersim / aic |"
        " tables on roofline |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in table:
        ratio = r["tiersim_ms"] / r["aic_ms"]
        lines.append(
            f"| {r['model']} | {r['tp']} | {r['batch']} | {r['tiersim_ms']:.2f} | "
            f"{r['aic_ms']:.2f} | {ratio:.2f} | {r['roofline']} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------- models no row covers

#: Share of one H200's memory an unseen model's weights may take at the TP it is tabled at.
WEIGHT_SHARE = 0.75


def unseen_configs() -> list[str]:
    """Model ids of the configs aiconfigurator-core ships that no silicon-sample row ran."""
    sampled = {s.aic for s in fs.MODELS.values()}
    folder = fs._aic_root() / "model_configs"
    ids = (p.name.removesuffix("_config.json").replace("--", "/")
           for p in folder.glob("*_config.json") if not p.name.endswith("hf_quant_config.json"))
    return sorted(i for i in ids if i not in sampled)


def unseen_row(model_path: str) -> dict:
    """A vLLM H200 row of ``model_path`` at the smallest TP its weights fit (see
    :data:`WEIGHT_SHARE`); raises :class:`fs.Unrepresentable` where tiersim cannot read it."""
    from tiersim.hardware import get_gpu
    from tiersim.perf.memory import checkpoint_bytes

    spec = fs.spec_for(model_path)
    if spec is None:
        raise fs.Unrepresentable(f"no config for {model_path}")
    try:
        arch = get_model(fs.model_source(spec))
    except Exception as exc:  # noqa: BLE001 -- the reason is the error's line
        raise fs.Unrepresentable(fs._reason(exc)) from None
    memory = get_gpu("h200").hbm_bytes
    tp = next((t for t in (1, 2, 4, 8) if checkpoint_bytes(arch) / t <= WEIGHT_SHARE * memory), 8)
    moe = float(tp) if arch.is_moe else float("nan")
    return {"id": model_path, "mode": "agg", "backend": "vllm", "backend_version": "0.19.0",
            "model_path": model_path, "system": fs.FIT_SYSTEM, "precision": float("nan"),
            "gemm_quant_mode": float("nan"), "moe_quant_mode": float("nan"),
            "isl": CONTEXT, "osl": 2, "batch_size": 1, "tp_size": tp, "pp_size": 1,
            "attention_dp_size": float("nan"), "moe_tp_size": moe,
            "moe_ep_size": 1.0 if arch.is_moe else float("nan")}


def aic_note(exc: Exception) -> str:
    """aiconfigurator's reason in a table cell: its error's first line, paths and the list of
    what it has cut off."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    text = text.split(" at /", 1)[0].split("; available", 1)[0].split(" from HuggingFace", 1)[0]
    return f"{type(exc).__name__}: {text.removeprefix('perf database error: ')}"[:120]


def refresh_unseen_aic() -> pd.DataFrame:
    """Recompute aiconfigurator's decode steps of the unseen models; write
    :data:`AIC_UNSEEN_CSV` (``aic_ms`` empty and ``aic_note`` its one-line reason where it
    cannot estimate one)."""
    import logging

    logging.disable(logging.WARNING)
    out = []
    for model_path in unseen_configs():
        try:
            row = unseen_row(model_path)
        except fs.Unrepresentable:
            continue
        for batch in BATCHES:
            entry = {"model": model_path, "tp": int(row["tp_size"]), "batch": batch,
                     "context": CONTEXT, "aic_ms": float("nan"), "aic_note": ""}
            try:
                entry["aic_ms"] = aic_decode_ms(row, batch)
            except Exception as exc:  # noqa: BLE001 -- recorded as the row's note
                entry["aic_note"] = aic_note(exc)
            out.append(entry)
    return write_aic_csv(out, AIC_UNSEEN_CSV)


def unseen_rows() -> list[dict]:
    """One dict per unseen model and batch (one per model where tiersim cannot read it)."""
    aic = pd.read_csv(AIC_UNSEEN_CSV, keep_default_na=False) if AIC_UNSEEN_CSV.exists() else None
    out = []
    for model_path in unseen_configs():
        why = "tiersim cannot read it"
        try:
            row = unseen_row(model_path)
            why = "tiersim cannot serve it on one 8-GPU node"
            steps = [tiersim_decode_ms(row, batch) for batch in BATCHES]
        except fs.Unrepresentable as exc:
            out.append({"model": model_path, "tp": None, "batch": None,
                        "tiersim_ms": float("nan"), "aic_ms": float("nan"),
                        "roofline": f"{why}: {exc}"})
            continue
        for batch, (step_ms, roofline) in zip(BATCHES, steps, strict=True):
            entry = {"model": model_path, "tp": int(row["tp_size"]), "batch": batch}
            entry["tiersim_ms"] = step_ms
            entry["roofline"] = ", ".join(roofline) or "none"
            hit = None if aic is None else aic[(aic["model"] == model_path)
                                               & (aic["batch"] == batch)]
            entry["aic_ms"] = float("nan")
            if hit is not None and len(hit):
                value, note = hit["aic_ms"].iloc[0], hit["aic_note"].iloc[0]
                entry["aic_ms"] = float(value) if value != "" else float("nan")
                if note:
                    entry["roofline"] += f"; aiconfigurator: {note}"
            out.append(entry)
    return out


def unseen_markdown(table: list[dict]) -> str:
    """The unseen models as a Markdown table, one line per config: tiersim and aiconfigurator
    at each of :data:`BATCHES` (ms), their ratio, and what either lacks."""
    batches = "/".join(str(b) for b in BATCHES)
    lines = [
        f"| config | TP | tiersim step, batch {batches} (ms) | aiconfigurator (ms) |"
        " tiersim / aic | tables on roofline / note |",
        "|---|---:|---|---|---|---|",
    ]
    for model in dict.fromkeys(r["model"] for r in table):
        rows = [r for r in table if r["model"] == model]
        if rows[0]["tp"] is None:
            lines.append(f"| {model} | | | | | {rows[0]['roofline']} |")
            continue
        ts = " / ".join(f"{r['tiersim_ms']:.2f}" for r in rows)
        aic = " / ".join(_num(r["aic_ms"], ".2f") for r in rows)
        ratio = " / ".join(_num(r["tiersim_ms"] / r["aic_ms"], ".2f") for r in rows)
        lines.append(f"| {model} | {rows[0]['tp']} | {ts} | {aic} | {ratio} | "
                     f"{rows[0]['roofline']} |")
    return "\n".join(lines)


# ---------------------------------------------------------------- per precision (Qwen3-Coder)

PRECISION_MODEL = "qwen3-coder-30b-a3b"
PRECISIONS = ("bf16", "fp8", "w4a16", "nvfp4")
PRECISION_BATCHES = (1, 8, 32, 128)


def table_sum(profile, precision: str, batch: int, context: int) -> tuple[float, list[str]]:
    """Seconds of the measured operators of one decode iteration, and the missing tables."""
    m = get_model(PRECISION_MODEL)
    qkv = ((m.heads + 2 * m.kv_heads) * m.head_dim, m.hidden)
    moe_key = {"hidden": m.hidden, "inter": m.expert_intermediate, "num_experts": m.num_experts,
               "top_k": m.top_k, "ep": 1, "tp": 1}
    attn_key = {"heads": m.heads, "kv_heads": m.kv_heads, "head_dim": m.head_dim}
    lookups = [
        ("gemm", precision, {"n": qkv[0], "k": qkv[1]}, m.layers, (batch,)),
        ("gemm", precision, {"n": m.hidden, "k": m.heads * m.head_dim}, m.layers, (batch,)),
        ("gemm", "bf16", {"n": m.num_experts, "k": m.hidden}, m.layers, (batch,)),
        ("moe", precision, moe_key, m.layers, (batch,)),
        ("attn_decode", "bf16", attn_key, m.layers, (batch, context)),
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


def precision_rows() -> list[dict]:
    """One dict per (precision, batch) of Qwen3-Coder-30B-A3B on one H200."""
    profile = resolve_profile(default_profile_name())
    out = []
    for precision in PRECISIONS:
        tiersim = build_step_model(PRECISION_MODEL, precision, "h200", profile=profile)
        roofline = build_step_model(PRECISION_MODEL, precision, "h200")
        for batch in PRECISION_BATCHES:
            ctx = np.array([float(batch * CONTEXT)])
            step = float(tiersim.decode_times(batch, ctx)[0])
            measured, missing = table_sum(profile, precision, batch, CONTEXT)
            out.append({
                "precision": precision, "batch": batch, "tiersim_ms": step * 1e3,
                "table_ms": measured * 1e3, "rest_ms": (step - measured) * 1e3,
                "roofline_ms": float(roofline.decode_times(batch, ctx)[0]) * 1e3,
                "roofline_tables": ", ".join(missing) or "none (overhead only)",
            })
    return out


def precision_markdown(table: list[dict]) -> str:
    """The per-precision rows as a Markdown table."""
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


# ---------------------------------------------------------------- weight memory (docs/models.md)


def weight_rows() -> list[dict]:
    """Per config aiconfigurator-core ships: tiersim's checkpoint bytes and parameters against
    the published ones (NaN where none was found)."""
    from tiersim.perf.memory import checkpoint_bytes

    sizes = pd.read_csv(SIZES_CSV)
    out = []
    for r in sizes.to_dict("records"):
        entry = {"config": r["config"], "published_gb": r["published_bytes"] / 1e9,
                 "published_params_b": r["published_params_b"],
                 "source": r["source"] if isinstance(r["source"], str) else ""}
        path = fs._aic_root() / "model_configs" / f"{r['config'].replace('/', '--')}_config.json"
        try:
            arch = get_model(path)
            entry["tiersim_gb"] = checkpoint_bytes(arch) / 1e9
            entry["tiersim_params_b"] = arch.total_params / 1e9
            entry["note"] = ""
        except Exception as exc:  # noqa: BLE001 -- the reason is the error's line
            entry["tiersim_gb"] = entry["tiersim_params_b"] = float("nan")
            entry["note"] = fs._reason(exc)
        out.append(entry)
    return out


def _num(x: float, fmt: str = ".1f") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def _err(a: float, b: float) -> str:
    e = a / b - 1
    return "n/a" if math.isnan(e) else f"{e:+.1%}"


def weight_markdown(table: list[dict]) -> str:
    """The weight rows as a Markdown table (error = tiersim / published - 1)."""
    lines = ["| config | tiersim weights (GB) | published (GB) | error | tiersim params (B) |"
             " published params (B) | error | source / note |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in table:
        source = r["source"] or "no published size found"
        if r["note"]:
            source = f"tiersim cannot read it: {r['note']}" + (f"; {r['source']}" if r["source"]
                                                                 else "")
        lines.append(
            f"| {r['config']} | {_num(r['tiersim_gb'])} | {_num(r['published_gb'])} | "
            f"{_err(r['tiersim_gb'], r['published_gb'])} | {_num(r['tiersim_params_b'])} | "
            f"{_num(r['published_params_b'])} | "
            f"{_err(r['tiersim_params_b'], r['published_params_b'])} | {source} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refresh-aic", action="store_true",
                    help="recompute aiconfigurator's decode steps (needs aiconfigurator-core)")
    ap.add_argument("--precisions", action="store_true",
                    help="Qwen3-Coder-30B-A3B per precision instead")
    ap.add_argument("--weights", action="store_true", help="the weight-memory table instead")
    ap.add_argument("--unseen", action="store_true",
                    help="every other config aiconfigurator-core ships instead (no row covers)")
    args = ap.parse_args(argv)
    needs = [flag for flag, on in (("--weights", args.weights), ("--unseen", args.unseen),
                                   ("--refresh-aic", args.refresh_aic)) if on]
    if needs and not fs.aic_installed():  # they read aiconfigurator-core's configs or model
        print(f"decode_table.py: {needs[0]} needs aiconfigurator-core, which is not installed; "
              "pip install -e '.[aic]'", file=sys.stderr)
        return 1
    if args.weights:
        print(weight_markdown(weight_rows()))
        return 0
    if args.precisions:
        print(f"{PRECISION_MODEL} decode step on 1x H200, {CONTEXT} tokens of context per "
              f"sequence, profile {default_profile_name()}\n")
        print(precision_markdown(precision_rows()))
        return 0
    if args.refresh_aic:
        (refresh_unseen_aic if args.unseen else refresh_aic)()
    which = " of models no silicon-sample row covers" if args.unseen else ""
    print(f"Decode step on H200 (vLLM){which}, {CONTEXT} tokens of context per sequence, FP8 KV "
          f"cache, profile {default_profile_name()}\n")
    print(unseen_markdown(unseen_rows()) if args.unseen else model_markdown(model_rows()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
