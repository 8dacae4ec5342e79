"""The roofline's calibration for runs with no profile: kernel efficiencies per weight format
and the serving engine's host time, both set on NVIDIA's measured H200 data, never typed.

A run with no profile (``profile: null``, or a GPU no profile ships for) times every operator on
the roofline (:mod:`tiersim.perf.roofline`). Bare, the roofline is fast on every GPU with
measured serving rows (docs/fidelity.md, "The roofline alone, per GPU"), for two reasons this
module corrects:

- **Kernels.** Its BF16 constants were set on NVIDIA's H200 BF16 tables and track them, but the
  formats it credits with faster math do not: FP8 GEMMs and MoE, and weight-only 4-bit MoE, run
  well short of the speed-up their bytes and peaks promise. Each such family is divided by the
  median roofline / measured ratio over the H200 vLLM profile's tables of that format (GEMMs
  apart above and below :data:`SMALL_ROWS` rows). BF16 keeps its own constants. Block-FP8
  GEMMs take per-tensor FP8's factors: NVIDIA timed their tables eagerly, launch floor included,
  and inside CUDA graphs a block-FP8 GEMM runs no faster than a per-tensor one (docs/fidelity.md,
  section 4). A factor applies only where the format computes in the dtype it computed in on
  the H200 (native FP4 on a GPU with FP4 tensor cores keeps the bare roofline: no H200 table
  times that path).
- **Host time.** The roofline's assumed overhead (1 ms + 10 us a layer) is replaced by vLLM's
  per-iteration overhead and eager cost fitted on H200's measured serving runs (the shipped H200
  profile's). A MoE layer's eager rate depends on how its experts' kernels launch; with no MoE
  table to name the kernel, it is the usual kernel of the experts' format on that kind of GPU:
  the majority of the shipped profiles' MoE tables of the format on GPUs with FP4 tensor cores
  (Blackwell) or without (Hopper).

``python benchmarks/roofline_ratios.py --write`` derives all of it (:func:`derive`) from the
shipped profiles into ``tiersim/data/roofline_calibration.json``; ``tests/test_roofline_
calibration.py`` derives it again and compares. A profile's own fallback (a table the profile
lacks) reads the bare roofline: its records were fitted with it.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from pathlib import Path
from typing import Any

import numpy as np

CALIBRATION_FILE = Path(__file__).resolve().parents[1] / "data" / "roofline_calibration.json"
"""The shipped calibration (package data)."""

SCHEMA = "tiersim.roofline_calibration/1"
#: GEMMs with at most this many rows get their own factor (decode steps sit below).
SMALL_ROWS = 256
#: The profile whose tables set the efficiencies and whose fit sets the host time.
SOURCE_PROFILE = "h200_aiconfigurator_vllm"
#: The shipped profiles whose MoE tables' kernels give each format's usual kernel path.
KERNEL_PROFILES = ("h200_aiconfigurator_vllm", "h100_aiconfigurator_vllm",
                   "b200_aiconfigurator_vllm")
#: Formats whose GEMM tables are read through another format's factors, and why.
GEMM_AS = {"fp8_block": "fp8"}
#: The architecture a table's shape is put into (its GEMM and expert shapes replace these).
BASE_MODEL = "Qwen3-Coder-30B-A3B"


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What :class:`~tiersim.perf.roofline.RooflineOps` applies for a run with no profile.

    ``gemm``: format -> (factor up to :data:`SMALL_ROWS` rows, factor above); ``moe``: experts'
    format -> factor (each the measured median roofline / measured ratio, so a time is divided
    by it); ``compute``: format -> the dtype its math ran in where the factors were measured;
    ``host``: a :class:`~tiersim.perf.profile_data.Profile` with no tables holding the fitted
    overhead and eager cost; ``cpp_moe``: (GPU has FP4 tensor cores) -> the experts' formats
    whose usual MoE kernel launches from C++ alone; ``source_gpu``: where the factors were set.
    """

    gemm: dict[str, tuple[float, float]]
    moe: dict[str, float]
    compute: dict[str, str]
    host: Any
    cpp_moe: dict[bool, frozenset[str]]
    source_gpu: str

    def applies(self, precision, gpu) -> bool:
        """Whether ``precision``'s factors hold on ``gpu``: it computes there in the dtype it
        computed in on the GPU the factors were set on."""
        return self.compute.get(precision.name) == precision.compute_dtype_on(gpu)

    def gemm_factor(self, precision, gpu, rows: np.ndarray) -> np.ndarray | float:
        """The divisor of a GEMM of ``rows`` rows in ``precision`` on ``gpu`` (1: none)."""
        pair = self.gemm.get(precision.name)
        if pair is None or not self.applies(precision, gpu):
            return 1.0
        return np.where(rows <= SMALL_ROWS, pair[0], pair[1])

    def moe_factor(self, precision, gpu) -> float:
        """The divisor of a MoE layer whose experts are in ``precision`` on ``gpu``."""
        if precision.name not in self.moe or not self.applies(precision, gpu):
            return 1.0
        return self.moe[precision.name]

    def cpp_moe_on(self, precision, gpu) -> bool:
        """Whether experts in ``precision`` on ``gpu`` usually run a kernel path launched from
        C++ alone (they then pay the fitted C++ eager rate)."""
        return precision.name in self.cpp_moe.get(_fp4_cores(gpu), frozenset())


def _fp4_cores(gpu) -> bool:
    """Whether ``gpu``'s tensor cores compute FP4 (Blackwell), the split of kernel paths."""
    return "nvfp4" in gpu.native


@functools.lru_cache(maxsize=1)
def shipped() -> Calibration | None:
    """The calibration the package ships (None when the file is absent)."""
    from tiersim.jsonio import read_json

    if not CALIBRATION_FILE.is_file():
        return None
    return from_json(read_json(CALIBRATION_FILE, "the roofline calibration"))


def from_json(raw: dict[str, Any]) -> Calibration:
    """A :class:`Calibration` from the file's JSON (its host time parsed as a profile's)."""
    from tiersim.perf.profile_json import profile_from_json

    host = profile_from_json({
        "schema": "tiersim.profile/1", "name": f"roofline_host_{raw['source_profile']}",
        "gpu": raw["source_gpu"], "provenance": {"source": "roofline"},
        "overhead_s": raw["host"]["overhead_s"], "eager_s": raw["host"]["eager_s"],
        "tables": []}, str(CALIBRATION_FILE))
    return Calibration(
        gemm={f: (v["small"], v["large"]) for f, v in raw["gemm"].items()},
        moe={f: v["factor"] for f, v in raw["moe"].items()},
        compute=dict(raw["compute"]), host=host,
        cpp_moe={key == "fp4_tensor_cores": frozenset(v) for key, v in raw["cpp_moe"].items()},
        source_gpu=raw["source_gpu"])


def gemm_ratios(table, gpu: str) -> dict[str, np.ndarray]:
    """Bare roofline / measured of one GEMM table, by row range."""
    from tiersim.hardware import get_model
    from tiersim.perf.roofline import RooflineOps

    m = table.axes["m"]
    ops = RooflineOps(get_model(BASE_MODEL), "bf16", gpu)
    ratio = ops.gemm(m, table.key["n"], table.key["k"], table.dtype) / table.latency
    return {f"m<={SMALL_ROWS}": ratio[m <= SMALL_ROWS], f"m>{SMALL_ROWS}": ratio[m > SMALL_ROWS]}


def moe_ratios(table, gpu: str) -> np.ndarray:
    """Bare roofline / measured of one MoE table at its expert shape, MoE TP and EP."""
    from tiersim.hardware import get_model
    from tiersim.perf.roofline import RooflineOps

    key = table.key
    arch = dataclasses.replace(get_model(BASE_MODEL), hidden=key["hidden"],
                               expert_intermediate=key["inter"],
                               num_experts=key["num_experts"], top_k=key["top_k"])
    ep = key.get("ep", 1)
    ops = RooflineOps(arch, table.dtype, gpu, tp=key["tp"], dp=ep, ep=ep)
    return ops.moe(table.axes["tokens"]) / table.latency


def family_ratios(profile, gpu: str) -> dict[tuple[str, str, str], list[np.ndarray]]:
    """(op, format, rows) -> the bare roofline / measured ratios of every table of that
    family in ``profile`` (a loaded :class:`~tiersim.perf.profile_data.Profile`)."""
    out: dict[tuple[str, str, str], list[np.ndarray]] = collections.defaultdict(list)
    for table in profile.tables:
        if table.op == "gemm":
            for rows, ratio in gemm_ratios(table, gpu).items():
                out[("gemm", table.dtype, rows)].append(ratio)
        elif table.op == "moe":
            out[("moe", table.dtype, "")].append(moe_ratios(table, gpu))
    return out


def _median(found: list[np.ndarray]) -> float:
    """The median over every grid point of a family's tables, to two places."""
    return round(float(np.median(np.concatenate([np.ravel(r) for r in found]))), 2)


def derive(profiles: dict[str, Any]) -> dict[str, Any]:
    """The calibration file's JSON from the shipped profiles (``name -> Profile``): the
    :data:`SOURCE_PROFILE`'s FP8 and 4-bit families' medians and host time, and each format's
    usual MoE kernel path over :data:`KERNEL_PROFILES`."""
    from tiersim.hardware import get_gpu
    from tiersim.hardware.precisions import get_precision

    source = profiles[SOURCE_PROFILE]
    gpu = get_gpu(source.gpu)
    ratios = family_ratios(source, source.gpu)
    gemm, moe, compute = {}, {}, {}
    for (op, fmt, rows), found in sorted(ratios.items()):
        if fmt == "bf16" or not found:
            continue
        compute[fmt] = get_precision(fmt).compute_dtype_on(gpu)
        if op == "moe":
            moe[fmt] = {"factor": _median(found), "tables": len(found)}
        elif fmt not in GEMM_AS:
            gemm.setdefault(fmt, {"tables": len(found)})["small" if "<=" in rows else "large"] = (
                _median(found))
    for fmt, like in GEMM_AS.items():
        if like in gemm and ("gemm", fmt, f"m<={SMALL_ROWS}") in ratios:
            gemm[fmt] = {**gemm[like], "as": like}
    return {
        "schema": SCHEMA,
        "command": "python benchmarks/roofline_ratios.py --write (in tiersim's source repository)",
        "source_profile": SOURCE_PROFILE, "source_gpu": source.gpu, "small_rows": SMALL_ROWS,
        "gemm": gemm, "moe": moe, "compute": compute,
        "host": {"overhead_s": source._overhead_json(), "eager_s": source.eager.to_json()},
        "cpp_moe": _usual_kernels([profiles[name] for name in KERNEL_PROFILES]),
    }


def _usual_kernels(profiles: list) -> dict[str, list[str]]:
    """(GPU has FP4 tensor cores) -> the experts' formats whose MoE tables, in ``profiles``,
    mostly name a kernel path launched from C++ alone."""
    from tiersim.hardware import get_gpu
    from tiersim.perf.profile_data import cpp_launched

    votes: dict[tuple[bool, str], list[bool]] = collections.defaultdict(list)
    for prof in profiles:
        fp4 = _fp4_cores(get_gpu(prof.gpu))
        for table in prof.tables:
            if table.op == "moe":
                votes[(fp4, table.dtype)].append(cpp_launched(table.extra.get("kernel", "")))
    out: dict[str, list[str]] = {"fp4_tensor_cores": [], "no_fp4_tensor_cores": []}
    for (fp4, fmt), cpp in sorted(votes.items()):
        if sum(cpp) * 2 > len(cpp):
            out["fp4_tensor_cores" if fp4 else "no_fp4_tensor_cores"].append(fmt)
    return out
