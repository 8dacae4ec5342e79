"""NVIDIA's vLLM 0.12.0 H200 kernel tables beside the 0.24.0 / 0.19.0 ones tiersim reads.

The two vLLM campaigns that miss the aim (Llama-3.1-8B and Qwen3-235B-A22B-FP8 of the
"aic-auto-gap-analysis" folder) ran vLLM 0.12.0. aiconfigurator-core 0.12.0, which tiersim's
profile is imported from, has no vLLM 0.12.0 tables for H200; the ``aiconfigurator`` package
0.5.0 to 0.8.0 on PyPI does (``aiconfigurator/systems/data/h200_sxm/vllm/0.12.0/*.txt``, added
in ai-dynamo/aiconfigurator PR #199, 2025-12-22; deleted from its main branch by PR #886,
2026-04-22, "clean up outdated or corrupted data"). This script reads them from that wheel
and sets them beside the tables the shipped profile was built from (docs/fidelity.md,
section 2, "NVIDIA's vLLM 0.12.0 tables")::

    pip download aiconfigurator==0.8.0 --no-deps -d DIR
    python benchmarks/vllm012_tables.py --wheel DIR/aiconfigurator-0.8.0-py3-none-any.whl
    python benchmarks/vllm012_tables.py --wheel W --replay --model Llama-3.1-8B [--jobs 2] [--csv P]

The first form prints, from NVIDIA's tables alone (no tiersim model in them), the ratio of
the 0.12.0 time to the 0.24.0 one for: the FP8 (per-tensor) and BF16 GEMMs of one
Llama-3.1-8B layer at each TP; block-FP8 GEMMs at Qwen3-235B-A22B's shapes (0.24.0: the
fastest of its kernels, as the profile reads them); block-FP8 fused MoE at Qwen3-235B-A22B's
shape (0.12.0, 0.19.0, 0.24.0); and context attention at both models' head counts.

``--replay`` writes a copy of the shipped H200 vLLM profile whose FP8 (per-tensor) GEMM tables
are scaled, point by point, by that ratio (log-linear interpolation on both grids, clamped to
their common range; the other tables unchanged), and replays ``--model``'s vLLM rows on it
with ``benchmarks/fidelity_silicon.py``. Nothing is fitted: it asks what the rows say of the
0.12.0 FP8 GEMM tables.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Where the 0.12.0 tables lie in the ``aiconfigurator`` wheel (0.5.0 to 0.8.0).
WHEEL_DIR = "aiconfigurator/systems/data/h200_sxm/vllm/0.12.0/"
#: The tables this script reads from it.
WHEEL_FILES = ("gemm_perf.txt", "moe_perf.txt", "context_attention_perf.txt",
               "generation_attention_perf.txt")
#: Llama-3.1-8B's GEMMs of one layer at TP 1, (n, k, count): qkv, o, gate+up as two
#: 14,336-wide halves (the tables' grids stop at n = 16,384), down.
LLAMA8B_LAYER = ((6144, 4096, 1), (4096, 4096, 1), (14336, 4096, 2), (4096, 14336, 1))
#: Which of :data:`LLAMA8B_LAYER`'s GEMMs split ``n`` under TP (the others split ``k``).
COLUMN_PARALLEL = (True, False, True, False)
#: Qwen3-235B-A22B's block-FP8 GEMM shapes at TP 1 (qkv, o, one expert's gate/up, down).
QWEN3_BLOCK = ((9216, 4096), (4096, 8192), (1536, 4096), (4096, 1536))
#: Qwen3-235B-A22B's MoE: hidden, expert intermediate size, top-k, experts.
QWEN3_MOE = (4096, 1536, 8, 128)
MS = (16, 64, 128, 2048, 8192)


class Unusable(Exception):
    """An input this script cannot use; its text is the one line printed."""


def wheel_tables(wheel: Path) -> dict[str, pd.DataFrame]:
    """The 0.12.0 H200 vLLM tables in an ``aiconfigurator`` wheel, by file name."""
    if not wheel.is_file():
        raise Unusable(f"--wheel {wheel}: no such file; download it with `pip download "
                       f"aiconfigurator==0.8.0 --no-deps -d DIR`")
    try:
        with zipfile.ZipFile(wheel) as zf:
            names = set(zf.namelist())
            missing = [f for f in WHEEL_FILES if WHEEL_DIR + f not in names]
            if missing:
                raise Unusable(f"--wheel {wheel}: has no {WHEEL_DIR}{missing[0]}; give an "
                               f"aiconfigurator wheel of version 0.5.0 to 0.8.0")
            return {f: pd.read_csv(io.BytesIO(zf.read(WHEEL_DIR + f))) for f in WHEEL_FILES}
    except zipfile.BadZipFile:
        raise Unusable(f"--wheel {wheel}: not a wheel (zip) file; give "
                       f"aiconfigurator-0.8.0-py3-none-any.whl") from None


def core_tables() -> dict[str, pd.DataFrame]:
    """The installed aiconfigurator-core's H200 vLLM tables the shipped profile was built from."""
    try:
        import aiconfigurator_core
    except ImportError:
        raise Unusable("aiconfigurator-core is not installed; `pip install "
                       "aiconfigurator-core==0.12.0`") from None
    root = Path(aiconfigurator_core.__file__).parent / "systems" / "data" / "h200_sxm"
    return {
        "gemm": pd.read_parquet(root / "gemm/vllm/0.24.0/gemm_perf.parquet"),
        "moe_0.24.0": pd.read_parquet(root / "moe/vllm/0.24.0/moe_perf.parquet"),
        "moe_0.19.0": pd.read_parquet(root / "moe/vllm/0.19.0/moe_perf.parquet"),
        "attn": pd.read_parquet(root / "attention/vllm/0.24.0/context_attention_perf.parquet"),
        "decode": pd.read_parquet(root / "attention/vllm/0.24.0/generation_attention_perf.parquet"),
    }


class GemmGrid:
    """One dtype's GEMM table on its (m, n, k) grid, read log-linearly, clamped to ``bounds``."""

    def __init__(self, frame: pd.DataFrame, dtype: str):
        from scipy.interpolate import RegularGridInterpolator

        rows = frame[(frame.gemm_dtype == dtype) & (frame.n <= 16384) & (frame.k <= 16384)]
        # the fastest kernel at each point, as the shipped profile reads block FP8
        lat = rows.groupby(["m", "n", "k"]).latency.min()
        self.axes = [sorted(set(lat.index.get_level_values(a))) for a in ("m", "n", "k")]
        cube = lat.unstack("k").reindex(pd.MultiIndex.from_product(self.axes[:2]))
        cube = cube.reindex(columns=self.axes[2]).ffill(axis=1).bfill(axis=1)
        cube = cube.groupby(level=0).ffill().groupby(level=0).bfill()
        values = np.log(cube.to_numpy().reshape([len(a) for a in self.axes]))
        self._f = RegularGridInterpolator([np.log(a) for a in self.axes], values)

    def __call__(self, m: float, n: float, k: float, bounds=None) -> float:
        """The latency (ms) at (m, n, k), each clamped to ``bounds`` (default: this grid's)."""
        bounds = bounds or [(a[0], a[-1]) for a in self.axes]
        point = [np.log(min(max(v, lo), hi)) for v, (lo, hi) in zip((m, n, k), bounds)]
        return float(np.exp(self._f([point])[0]))


def common_bounds(a: GemmGrid, b: GemmGrid) -> list[tuple[float, float]]:
    """The (m, n, k) range both grids cover."""
    return [(max(x[0], y[0]), min(x[-1], y[-1])) for x, y in zip(a.axes, b.axes)]


def layer_shapes(tp: int) -> list[tuple[int, int, int]]:
    """Llama-3.1-8B's per-GPU GEMM shapes of one layer at ``tp``."""
    return [((n // tp, k, c) if col else (n, k // tp, c))
            for (n, k, c), col in zip(LLAMA8B_LAYER, COLUMN_PARALLEL)]


def report(old: dict[str, pd.DataFrame], new: dict[str, pd.DataFrame]) -> None:
    """Print the comparisons the module docstring lists."""
    g12, g24 = old["gemm_perf.txt"], new["gemm"]
    fp8 = (GemmGrid(g12, "fp8"), GemmGrid(g24, "fp8"))
    bf16 = (GemmGrid(g12, "float16"), GemmGrid(g24, "bfloat16"))
    print("NVIDIA's H200 vLLM tables: 0.12.0 (aiconfigurator wheel) / 0.24.0 (aiconfigurator-core "
          "0.12.0)")
    print("\nLlama-3.1-8B, the GEMMs of one layer (qkv, o, gate+up, down), us: FP8 per-tensor "
          "0.12.0 / 0.24.0 (ratio); BF16 ratio")
    for tp in (1, 2, 4, 8):
        cells = []
        for m in MS:
            t = [sum(c * g(m, n, k, common_bounds(*fp8)) for n, k, c in layer_shapes(tp))
                 for g in fp8]
            b = [sum(c * g(m, n, k, common_bounds(*bf16)) for n, k, c in layer_shapes(tp))
                 for g in bf16]
            cells.append(f"m={m}: {1e3 * t[0]:.0f}/{1e3 * t[1]:.0f} (x{t[0] / t[1]:.2f}; "
                         f"BF16 x{b[0] / b[1]:.2f})")
        print(f"  TP {tp}: " + "; ".join(cells))
    blk = (GemmGrid(g12, "fp8_block"), GemmGrid(g24, "fp8_block"))
    print("\nQwen3-235B-A22B block-FP8 GEMMs at TP 1, 0.12.0 / 0.24.0 (fastest kernel):")
    for n, k in QWEN3_BLOCK:
        ratios = [blk[0](m, n, k) / blk[1](m, n, k) for m in (1, *MS)]
        print(f"  n={n} k={k}: " + ", ".join(f"m={m} x{r:.2f}" for m, r in zip((1, *MS), ratios)))
    hidden, inter, topk, experts = QWEN3_MOE
    print(f"\nQwen3-235B-A22B block-FP8 fused MoE (power_law_1.01, no EP), ms: 0.12.0 / 0.19.0 / "
          f"0.24.0 (kernel: {', '.join(sorted(set(old['moe_perf.txt'].kernel_source)))} / "
          f"Triton)")
    moe = {"0.12.0": old["moe_perf.txt"], "0.19.0": new["moe_0.19.0"], "0.24.0": new["moe_0.24.0"]}
    for tp in (1, 2, 4):
        cells = []
        for tokens in (1, 16, 64, 512, 8192):
            vals = []
            for frame in moe.values():
                sel = frame[(frame.hidden_size == hidden) & (frame.inter_size == inter)
                            & (frame.topk == topk) & (frame.num_experts == experts)
                            & (frame.moe_dtype == "fp8_block") & (frame.moe_tp_size == tp)
                            & (frame.moe_ep_size == 1) & (frame.num_tokens == tokens)
                            & (frame.distribution == "power_law_1.01")]
                vals.append(sel.latency.min() if len(sel) else float("nan"))
            cells.append(f"{tokens} tok {vals[0]:.3f}/{vals[1]:.3f}/{vals[2]:.3f}")
        print(f"  MoE TP {tp}: " + "; ".join(cells))
    a12 = old["context_attention_perf.txt"]
    a24 = new["attn"]
    a24 = a24[(a24.window_size.fillna(0) <= 0) & (a24.kernel_source == "vllm_flash_attn_fa3")]
    print("\nContext attention (one prompt, BF16 KV), ms: 0.12.0 / 0.24.0 (FA3)")
    for heads, kv in ((32, 8), (8, 2), (64, 4), (16, 1)):
        cells = []
        for isl in (1024, 2048, 4096, 8192):
            x = a12[(a12.num_heads == heads) & (a12.num_key_value_heads == kv)
                    & (a12.kv_cache_dtype == "float16") & (a12.batch_size == 1) & (a12.isl == isl)]
            y = a24[(a24.num_heads == heads) & (a24.num_key_value_heads == kv)
                    & (a24.kv_cache_dtype == "bfloat16") & (a24.batch_size == 1) & (a24.isl == isl)]
            if len(x) and len(y):
                cells.append(f"{isl}: {x.latency.mean():.3f}/{y.latency.mean():.3f} "
                             f"(x{x.latency.mean() / y.latency.mean():.2f})")
        print(f"  {heads} heads / {kv} KV heads: " + "; ".join(cells))
    print("\nDecode attention (BF16 KV; context = isl + step), 0.12.0 / 0.24.0 (FA3), by batch:")
    d12, d24 = old["generation_attention_perf.txt"], new["decode"]
    d24 = d24[(d24.window_size.fillna(0) <= 0) & (d24.kernel_source == "vllm_flash_attn_fa3")]
    for heads, kv in ((32, 8), (16, 4), (8, 2), (64, 4)):
        means = []
        for frame, kvd in ((d12, "float16"), (d24, "bfloat16")):
            sel = frame[(frame.num_heads == heads) & (frame.num_key_value_heads == kv)
                        & (frame.kv_cache_dtype == kvd)]
            means.append(sel.assign(ctx=sel.isl + sel.step)
                         .groupby(["batch_size", "ctx"]).latency.mean())
        both = pd.concat(means, axis=1, keys=["a", "b"]).dropna()
        cells = []
        for batch in (16, 32, 64, 128):
            at = both[(both.index.get_level_values(0) == batch)
                      & both.index.get_level_values(1).isin([2048, 4096, 8192, 16384])]
            if len(at):
                r = at.a / at.b
                cells.append(f"{batch}: x{r.min():.2f}-{r.max():.2f}")
        print(f"  {heads} heads / {kv} KV heads, context 2-16k: " + "; ".join(cells))


def scaled_profile(profile: dict, old: GemmGrid, new: GemmGrid, precision: str = "fp8") -> int:
    """Scale ``profile``'s ``precision`` GEMM tables in place by ``old / new`` at each point;
    the number of tables scaled."""
    bounds = common_bounds(old, new)
    count = 0
    for table in profile["tables"]:
        if table["op"] != "gemm" or table.get("precision") != precision:
            continue
        n, k = table["key"]["n"], table["key"]["k"]
        table["latency_s"] = [lat * old(m, n, k, bounds) / new(m, n, k, bounds)
                              for m, lat in zip(table["axes"]["m"], table["latency_s"])]
        table["notes"] = (f"{table.get('notes') or ''}; scaled to NVIDIA's vLLM 0.12.0 "
                          f"tables (benchmarks/vllm012_tables.py)").lstrip("; ")
        count += 1
    return count


def replay(old: dict[str, pd.DataFrame], new: dict[str, pd.DataFrame], model: str,
           jobs: int, csv: str | None = None) -> int:
    """Replay ``model``'s vLLM rows on the shipped profile with its FP8 GEMMs at 0.12.0's times."""
    import fidelity_silicon as fs

    shipped = fs.bundled_profile("h200")
    profile = json.loads(shipped.read_text())
    count = scaled_profile(profile, GemmGrid(old["gemm_perf.txt"], "fp8"),
                           GemmGrid(new["gemm"], "fp8"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / shipped.name
        path.write_text(json.dumps(profile))
        print(f"replaying on {shipped.name} with its {count} FP8 GEMM tables scaled to NVIDIA's "
              f"vLLM 0.12.0 tables (every other table unchanged)")
        fs.ENGINE_PROFILES["vllm"] = str(path)  # read by the forked workers too
        return fs.main(["--engine", "vllm", "--model", model, "--jobs", str(jobs),
                        *(["--csv", csv] if csv else [])])


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (or the replay); an unusable input is one line and exit status 1."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wheel", required=True, type=Path,
                   help="an aiconfigurator 0.5.0-0.8.0 wheel (pip download aiconfigurator==0.8.0 "
                        "--no-deps -d DIR)")
    p.add_argument("--replay", action="store_true",
                   help="replay --model's vLLM rows with the FP8 GEMM tables at 0.12.0's times")
    p.add_argument("--model", default="Llama-3.1-8B", help="the rows --replay replays")
    p.add_argument("--jobs", type=int, default=2, help="worker processes for --replay")
    p.add_argument("--csv", help="--replay's per-row results, as fidelity_silicon.py --csv writes")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        old, new = wheel_tables(args.wheel), core_tables()
    except Unusable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.replay:
        return replay(old, new, args.model, args.jobs, args.csv)
    report(old, new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
