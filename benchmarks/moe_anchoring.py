"""How far a profile's MoE answers are from NVIDIA's own rows, shape by shape (docs/fidelity.md,
"MoE shapes NVIDIA measured, and how far anchoring is off at the others").

    python benchmarks/moe_anchoring.py [--profile PATH] [--leave-one-out]

Needs aiconfigurator-core (the ``aic`` extra). For every expert shape the H200 vLLM rows of a
format measured, at each measured split among TP 1/2/4/8 and EP 2/4/8 (``SHIPPED_MOE_SPLITS``),
the importer's own table (what a rebuild would ship there) is set beside what ``--profile``
(default: the shipped H200 profile; another is read on its own GPU, beside NVIDIA's rows of
its GPU and engine) answers for a model of that shape: its own table, or
another shape's anchored by the roofline. Each format prints how many shape-splits were
anchored, the range of answer / own table and the median |error| at 1, 32, 256, 2048 and 8192
tokens. ``--leave-one-out`` instead withholds each shape from a profile of one folder's tables
and anchors it on the rest (the profile's rule: nearest whole expert shape, then nearest split).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from tiersim.hardware import get_model
from tiersim.perf import aiconfigurator as aic
from tiersim.perf.profile import Profile, ProfileOps, load_profile
from tiersim.perf.roofline import RooflineOps

TOKENS = np.array([1.0, 32.0, 256.0, 2048.0, 8192.0])
FORMATS = ("w4a16", "nvfp4", "fp8_block", "fp8", "mxfp4", "bf16")
SHIPPED = Path(aic.__file__).resolve().parent.parent / "profiles" / "h200_aiconfigurator_vllm.json"
SHAPE_COLS = ["hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size"]


def measured(imp: aic.Importer, precision: str, folder: aic.Source | None = None):
    """``{(hidden, inter, experts, top_k): {(tp, ep), ...}}`` the rows of ``precision`` hold
    at the listed splits (one ``folder``, or every folder of the engine)."""
    out: dict[tuple, set] = {}
    for source in [folder] if folder else imp._sources("moe", "moe_perf.parquet"):
        df = imp._frame(source)
        rows = df[(df["moe_dtype"] == aic.MOE_DTYPES[precision])
                  & (df["distribution"] == aic.MOE_DISTRIBUTION)]
        for *shape, tp, ep in {tuple(int(v) for v in r) for r in rows[SHAPE_COLS].to_numpy()}:
            if (tp, ep) in aic.SHIPPED_MOE_SPLITS:
                out.setdefault(tuple(shape), set()).add((tp, ep))
    return out


def importer_of(profile: Profile) -> aic.Importer:
    """NVIDIA's tables of ``profile``'s GPU and engine (its ``gpu`` and provenance ``engine``;
    the shipped profile's: H200, vLLM)."""
    return aic.Importer(profile.gpu.lower(), profile.provenance.get("engine", "vllm"))


def model_of(shape):
    """A stand-in model of ``shape``: a MoE table reads only the expert shape."""
    hidden, inter, experts, top_k = shape
    return dataclasses.replace(get_model("qwen3-coder-30b-a3b"), hidden=hidden,
                               expert_intermediate=inter, num_experts=experts, top_k=top_k)


def answer(profile: Profile, precision: str, shape, tp: int, ep: int):
    """(seconds at :data:`TOKENS`, source label) of ``profile`` for ``shape`` split ``tp x ep``."""
    model, dp = model_of(shape), ep  # EP splits: tp 1 x dp ep GPUs, expert-parallel
    gpu = profile.gpu
    ops = ProfileOps(profile, model, precision, gpu, tp=tp, dp=dp, ep=ep,
                     fallback=RooflineOps(model, precision, gpu, tp=tp, dp=dp, ep=ep))
    value = ops.moe(TOKENS)
    (label,) = [v for k, v in ops.sources().items() if k.startswith("moe")]
    return value, label


def report(precision: str, pairs, unit: str = "shape-splits", how: str = "anchored") -> None:
    """One line: count of answers read ``how`` (anchored, interpolated), ratio range and median
    |error| per point (token count)."""
    ratios = np.array([value / own for value, own in pairs])
    if not len(ratios):
        print(f"{precision:10s} nothing {how}")
        return
    err = np.abs(ratios - 1.0) / np.minimum(ratios, 1.0)  # symmetric: 0.5x and 2x are both 100%
    per_token = " ".join(f"{np.median(err[:, j]):.0%}" for j in range(ratios.shape[1]))
    print(f"{precision:10s} {len(ratios):3d} {how} {unit}: {ratios.min():.2f}-"
          f"{ratios.max():.2f}x its own rows, median |error| {np.median(err):.0%} "
          f"(by tokens {per_token})")


def against_profile(imp: aic.Importer, profile: Profile) -> None:
    """Each format's anchored answers of ``profile`` against the importer's own tables; then
    those it answers from the roofline (no table of that format to anchor on), where any."""
    for precision in FORMATS:
        pairs: dict[str, list] = {"anchored": [], "roofline": []}
        for shape, splits in sorted(measured(imp, precision).items()):
            for tp, ep in sorted(splits):
                value, label = answer(profile, precision, shape, tp, ep)
                how = "anchored" if label.startswith("anchored") else label
                if how in pairs:
                    own = imp.moe(precision, model_of(shape), tp, ep)
                    pairs[how].append((value, own.lookup(TOKENS)))
        report(precision, pairs["anchored"])
        if pairs["roofline"]:
            report(precision, pairs["roofline"], how="on the roofline")


def leave_one_out(imp: aic.Importer) -> None:
    """Each folder's shapes withheld one at a time and anchored on the folder's others."""
    for folder in imp._sources("moe", "moe_perf.parquet"):
        for precision in ("w4a16", "fp8_block", "mxfp4", "bf16"):
            dtype = aic.MOE_DTYPES[precision]
            shapes = measured(imp, precision, folder)
            tables = {(s, tp, ep): table(imp, folder, dtype, precision, s, tp, ep)
                      for s, splits in shapes.items() for tp, ep in splits}
            pairs = []
            for (shape, tp, ep), own in tables.items():
                rest = [t for (s, *_), t in tables.items() if s != shape]
                if rest:
                    value, _ = answer(Profile("loo", "H200", {}, 0.0, "roofline", rest),
                                      precision, shape, tp, ep)
                    pairs.append((value, own.lookup(TOKENS)))
            report(f"{precision} {folder.version}", pairs)


def table(imp: aic.Importer, folder: aic.Source, dtype: str, precision: str, shape, tp, ep):
    """The table of ``folder``'s rows alone at ``shape`` split ``tp x ep`` (no bridging)."""
    tokens, lat, kernel = aic.moe_latency(imp._frame(folder), dtype, *shape, tp, ep)
    key = dict(zip(("hidden", "inter", "num_experts", "top_k"), shape, strict=True))
    key.update(ep=ep, tp=tp)
    return aic._table("moe", precision, key, {"tokens": tokens}, lat, folder, imp.aic, kernel)


def main(argv=None) -> int:
    """Print, per MoE format, how far the profile's answers are from NVIDIA's rows (module doc)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=str(SHIPPED))
    parser.add_argument("--leave-one-out", action="store_true")
    args = parser.parse_args(argv)
    profile = load_profile(args.profile)
    imp = importer_of(profile)
    if args.leave_one_out:
        leave_one_out(imp)
    else:
        against_profile(imp, profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
