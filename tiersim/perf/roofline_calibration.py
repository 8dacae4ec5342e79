"""The roofline's calibration for runs with no profile: kernel efficiencies per weight format
and the serving engine's host time, both set on NVIDIA's measured H200 data, never typed.

A run with no profile (``profile: null``, or a GPU no profile ships for) times every operator on
the roofline (:mod:`tiersim.perf.roofline`). Bare, the roofline is fast on every GPU with
measured serving rows (docs/fidelity.md, "The roofline alone, per GPU"), for two reasons this
module corrects:

- **Kernels.** Its BF16 constants were set on NVIDIA's H200 BF16 tables and track them, but the
  formats it credits with faster math do not: FP8 GEMMs and MoE, and weight-only 4-bit MoE, run
  well short of the speed-up their bytes and peaks promise. Each such family is divided by the
  median roofline / measured ratio over the H200 vLLM profile's tables of that format. GEMMs are
  split by rows (up to :data:`SMALL_ROWS`, above) and by weight size ``n x k`` (the edges
  :data:`WEIGHT_EDGES`): a large FP8 GEMM runs near its peak, a small one with many rows far
  from it (0.36 against 0.83 on H200, and alike on H100 and B200), and a step's time sits in the
  large ones. BF16 keeps its own constants. Block-FP8
  GEMMs take per-tensor FP8's factors: NVIDIA timed their tables eagerly, launch floor included,
  and inside CUDA graphs a block-FP8 GEMM runs no faster than a per-tensor one (docs/fidelity.md,
  section 4). A factor applies only where the format computes in the dtype it computed in on
  the H200 (native FP4 on a GPU with FP4 tensor cores keeps the bare roofline: no H200 table
  times that path).
- **Host time.** The roofline's assumed overhead (1 ms + 10 us a layer) is replaced by vLLM's
  per-iteration overhead and eager cost fitted on H200's measured serving runs (the shipped H200
  profile's). A MoE layer's eager rate depends on how its experts' kernels launch; with no MoE
  table to name the kernel, it is the usual kernel of the experts' format on that kind of GPU
  and split: the majority of the shipped profiles' MoE tables of the format on GPUs with FP4
  tensor cores (Blackwell) or without (Hopper), with the experts on one expert-parallel rank or
  spread over several (vLLM's FP8 MoE on Hopper is Triton at EP 1 and FlashInfer CUTLASS above).

``python benchmarks/roofline_ratios.py --write`` derives all of it (:func:`derive`) from the
shipped profiles into ``tiersim/data/roofline_calibration.json``; ``tests/test_roofline_
calibration.py`` derives it again and compares. A profile's own fallback (a table the profile
lacks) reads the bare roofline: its records were fitted with it.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import numpy as np

CALIBRATION_FILE = Path(__file__).resolve().parents[1] / "data" / "roofline_calibration.json"
"""The shipped calibration (package data)."""

SCHEMA = "tiersim.roofline_calibration/1"
#: GEMMs with at most this many rows get their own factor (decode steps sit below).
SMALL_ROWS = 256
#: Edges of the weight-size (``n x k``) bins of the GEMM factors: 4096^2 and 8192^2.
WEIGHT_EDGES = (4096 ** 2, 8192 ** 2)
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

    ``gemm``: format -> (factors up to :data:`SMALL_ROWS` rows, factors above), each one per
    weight-size bin of :data:`WEIGHT_EDGES`; ``moe``: experts' format -> factor (each the
    measured median roofline / measured ratio, so a time is divided by it); ``compute``: format
    -> the dtype its math ran in where the factors were measured; ``host``: a
    :class:`~tiersim.perf.profile_data.Profile` with no tables holding the fitted overhead and
    eager cost; ``cpp_moe``: (GPU has FP4 tensor cores, experts over several EP ranks) -> the
    experts' formats whose usual MoE kernel launches from C++ alone; ``source_gpu``: where the
    factors were set.
    """

    gemm: dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
    moe: dict[str, float]
    compute: dict[str, str]
    host: Any
    cpp_moe: dict[tuple[bool, bool], frozenset[str]]
    source_gpu: str

    def applies(self, precision, gpu) -> bool:
        """Whether ``precision``'s factors hold on ``gpu``: it computes there in the dtype it
        computed in on the GPU the factors were set on."""
        return self.compute.get(precision.name) == precision.compute_dtype_on(gpu)

    def gemm_factor(self, precision, gpu, rows: np.ndarray, weights: int) -> np.ndarray | float:
        """The divisor of a GEMM of ``rows`` rows and ``weights`` (``n x k``) weights in
        ``precision`` on ``gpu`` (1: none)."""
        pair = self.gemm.get(precision.name)
        if pair is None or not self.applies(precision, gpu):
            return 1.0
        size = _weight_bin(weights)
        return np.where(rows <= SMALL_ROWS, pair[0][size], pair[1][size])

    def moe_factor(self, precision, gpu) -> float:
        """The divisor of a MoE layer whose experts are in ``precision`` on ``gpu``."""
        if precision.name not in self.moe or not self.applies(precision, gpu):
            return 1.0
        return self.moe[precision.name]

    def gemm_source(self, precision, gpu) -> str:
        """The source label of ``precision``'s GEMMs on ``gpu``'s roofline: plain "roofline",
        or, where :meth:`gemm_factor` divides them, by what (the range of its factors)."""
        pair = self.gemm.get(precision.name)
        if pair is None or not self.applies(precision, gpu):
            return "roofline"
        like = GEMM_AS.get(precision.name, precision.name)
        factors = pair[0] + pair[1]
        taken = f" ({precision.name} takes {like}'s factors)" if like != precision.name else ""
        return (f"roofline; calibrated: divided by {min(factors):.2f}-{max(factors):.2f} (by "
                f"rows and weight size), the median ratio of bare-roofline to measured time "
                f"over NVIDIA's {self.source_gpu} {like} GEMM tables{taken}")

    def moe_source(self, precision, gpu) -> str:
        """The source label of a MoE layer whose experts are in ``precision`` on ``gpu``'s
        roofline: plain "roofline", or, where :meth:`moe_factor` divides it, by what."""
        factor = self.moe_factor(precision, gpu)
        if factor == 1.0:
            return "roofline"
        return (f"roofline; calibrated: divided by {factor:.2f}, the median ratio of "
                f"bare-roofline to measured time over NVIDIA's {self.source_gpu} "
                f"{precision.name} MoE tables")

    def cpp_moe_on(self, precision, gpu, ep: int) -> bool:
        """Whether experts in ``precision`` on ``gpu``, over ``ep`` expert-parallel ranks,
        usually run a kernel path launched from C++ alone (they then pay the fitted C++ eager
        rate)."""
        return precision.name in self.cpp_moe.get(_path(gpu, ep), frozenset())


def _weight_bin(weights: int) -> int:
    """The :data:`WEIGHT_EDGES` bin of a GEMM's ``n x k``."""
    return sum(weights >= edge for edge in WEIGHT_EDGES)


def _fp4_cores(gpu) -> bool:
    """Whether ``gpu``'s tensor cores compute FP4 (Blackwell), the split of kernel paths."""
    return "nvfp4" in gpu.native


#: The calibration file's names of the kernel-path splits: (FP4 tensor cores, experts over
#: several EP ranks).
PATH_NAMES = {(False, False): "hopper_ep1", (False, True): "hopper_ep",
              (True, False): "blackwell_ep1", (True, True): "blackwell_ep"}


def _path(gpu, ep: int) -> tuple[bool, bool]:
    """The kernel-path split of experts on ``gpu`` over ``ep`` expert-parallel ranks."""
    return _fp4_cores(gpu), int(ep) > 1


#: What a fault in the shipped calibration file tells its reader to do (it is package data that
#: a script writes, never a user's file).
FIX = ("reinstall tiersim, or rewrite it with python benchmarks/roofline_ratios.py --write in "
       "tiersim's source repository")
#: The range a factor (bare roofline / measured time) may take.
FACTOR_RANGE = (0.01, 100.0)


@functools.lru_cache(maxsize=1)
def shipped() -> Calibration:
    """The calibration the package ships. A missing or malformed file is a broken install: a
    :class:`~tiersim.errors.TiersimError` that says so (a run must not fall back to the bare
    roofline while its fidelity line quotes the calibrated one's record), and so is a value
    :func:`derive` would not write (:func:`_check`: a factor of 0, NaN or text, another schema,
    an unknown format), never a traceback mid-run or a run on what it made of it."""
    from tiersim.errors import ProfileError, TiersimError
    from tiersim.jsonio import read_json

    if not CALIBRATION_FILE.is_file():
        raise TiersimError(f"{CALIBRATION_FILE}: missing, and a run with no profile reads the "
                           f"roofline's calibration from it; {FIX}")
    try:
        raw = read_json(CALIBRATION_FILE, "the roofline calibration")
        _check(raw)
        return from_json(raw)
    except ProfileError as exc:  # the host time, read as a profile's (it names the file)
        raise TiersimError(f"{exc}; {FIX}") from None
    except TiersimError as exc:  # read_json's (it names the file), or _check's
        raise TiersimError(str(exc) if str(exc).endswith(FIX) else f"{exc}; {FIX}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise TiersimError(f"{CALIBRATION_FILE}: not a roofline calibration of schema {SCHEMA} "
                           f"({type(exc).__name__}: {exc}); {FIX}") from None


def _check(raw: Any) -> None:
    """Refuse a value in the calibration file's JSON that :func:`derive` would not write (a key
    it lacks is left to :func:`from_json`, whose KeyError :func:`shipped` reports): one
    :class:`~tiersim.errors.TiersimError` naming the file and the place."""
    _obj(raw, "top level")
    _check_header(raw)
    _check_gemm(raw)
    _check_moe_and_compute(raw)
    _check_paths(raw)


def _bad(where: str, what: str):
    """The one-line error for a bad value at ``where`` of the file."""
    from tiersim.errors import TiersimError

    return TiersimError(f"{CALIBRATION_FILE}: {where}: {what}; {FIX}")


def _said(value: Any) -> str:
    """``value`` as the error line shows it."""
    from tiersim.errors import cut, shown

    return shown(value) if isinstance(value, str) else cut(json.dumps(value), 40)


def _obj(value: Any, where: str) -> dict[str, Any]:
    """``value`` when it is a JSON object, else the error."""
    if not isinstance(value, dict):
        raise _bad(where, f"must be a JSON object (got {_said(value)})")
    return value


def _factor(value: Any, where: str) -> None:
    """Refuse a factor outside :data:`FACTOR_RANGE` (NaN, text and booleans too)."""
    low, high = FACTOR_RANGE
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not low <= value <= high):  # NaN fails the comparison too
        raise _bad(where, f"must be a ratio from {low:g} to {high:g} (got {_said(value)})")


def _formats(names: Any, where: str) -> None:
    """Refuse a name that is no precision format."""
    from tiersim.hardware.precisions import PRECISIONS

    for name in names:
        if name not in PRECISIONS:
            raise _bad(where, f"{_said(name)} is no format; formats: {', '.join(PRECISIONS)}")


def _check_header(raw: dict[str, Any]) -> None:
    """The schema, the row split and the source GPU."""
    from tiersim.errors import TiersimError
    from tiersim.hardware import get_gpu

    if raw.get("schema") != SCHEMA:
        raise _bad("schema", f"must be {SCHEMA!r} (got {_said(raw.get('schema'))})")
    if raw.get("small_rows", SMALL_ROWS) != SMALL_ROWS:
        raise _bad("small_rows", f"must be {SMALL_ROWS}, the rows this tiersim splits a GEMM's "
                   f"factors at (got {_said(raw['small_rows'])})")
    gpu = raw.get("source_gpu", "H200")
    try:
        known = isinstance(gpu, str) and get_gpu(gpu).name == gpu
    except TiersimError:
        known = False
    if not known:
        raise _bad("source_gpu", f"must be a catalogue GPU's name, such as 'H200' (got "
                   f"{_said(gpu)})")


def _check_gemm(raw: dict[str, Any]) -> None:
    """Each GEMM format's two lists of one factor per weight-size bin."""
    bins = len(WEIGHT_EDGES) + 1
    _formats(_obj(raw.get("gemm", {}), "gemm"), "gemm")
    for fmt, entry in raw.get("gemm", {}).items():
        for rows in ("small", "large"):
            found = _obj(entry, f"gemm.{fmt}").get(rows, [1.0] * bins)
            if not isinstance(found, list) or len(found) != bins:
                raise _bad(f"gemm.{fmt}.{rows}", f"must be a list of {bins} factors, one per "
                           f"weight-size bin (got {_said(found)})")
            for i, value in enumerate(found):
                _factor(value, f"gemm.{fmt}.{rows}[{i}]")


def _check_moe_and_compute(raw: dict[str, Any]) -> None:
    """Each MoE format's factor and each format's compute dtype, which must be the dtype the
    format computes in on the file's ``source_gpu`` as tiersim's GPU catalogue describes it
    (what :func:`derive` writes): a hand-edited ``compute.fp8: "bf16"`` turned FP8's factors
    off without a word (:meth:`Calibration.applies` compares it with each run's GPU)."""
    from tiersim.hardware import get_gpu
    from tiersim.hardware.precisions import PRECISIONS

    _formats(_obj(raw.get("moe", {}), "moe"), "moe")
    for fmt, entry in raw.get("moe", {}).items():
        _factor(_obj(entry, f"moe.{fmt}").get("factor", 1.0), f"moe.{fmt}.factor")
    _formats(_obj(raw.get("compute", {}), "compute"), "compute")
    dtypes = sorted({p.native_compute for p in PRECISIONS.values()})
    gpu = get_gpu(raw.get("source_gpu", "H200"))  # a catalogue GPU (_check_header)
    for fmt, dtype in raw.get("compute", {}).items():
        if dtype not in dtypes:
            raise _bad(f"compute.{fmt}", f"must be one of {', '.join(dtypes)} (got "
                       f"{_said(dtype)})")
        computes = PRECISIONS[fmt].compute_dtype_on(gpu)
        if dtype != computes:  # Calibration.applies would never (or wrongly) match it
            raise _bad(f"compute.{fmt}", f"must be {computes!r}, the dtype "
                       f"{PRECISIONS[fmt].label} computes in on {gpu.name} (tiersim's GPU "
                       f"catalogue), where the factors were set (got {_said(dtype)})")
    factored = sorted((set(raw.get("gemm", {})) | set(raw.get("moe", {})))
                      - set(raw.get("compute", {})))
    if factored:  # Calibration.applies compares None with the GPU's dtype: never applied
        fmt = factored[0]
        raise _bad("compute", f"names no dtype for {fmt}, whose factors then never apply; "
                   f"add \"{fmt}\": \"{PRECISIONS[fmt].compute_dtype_on(gpu)}\", the dtype "
                   f"{PRECISIONS[fmt].label} computes in on {gpu.name}")


def _check_paths(raw: dict[str, Any]) -> None:
    """Every kernel-path split of :data:`PATH_NAMES`, each a list of formats."""
    names = list(PATH_NAMES.values())
    paths = _obj(raw.get("cpp_moe", dict.fromkeys(names, [])), "cpp_moe")
    for name in names:
        if name not in paths:
            raise _bad("cpp_moe", f"{name!r} is missing (each of {', '.join(names)} lists its "
                       "formats, [] for none)")
    for name, found in paths.items():
        if name not in names:
            raise _bad("cpp_moe", f"{_said(name)} is no kernel path; paths: {', '.join(names)}")
        if not isinstance(found, list):
            raise _bad(f"cpp_moe.{name}", f"must be a list of format names (got {_said(found)})")
        _formats(found, f"cpp_moe.{name}")


def from_json(raw: dict[str, Any]) -> Calibration:
    """A :class:`Calibration` from the file's JSON (its host time parsed as a profile's)."""
    from tiersim.perf.profile_json import profile_from_json

    host = profile_from_json({
        "schema": "tiersim.profile/1", "name": f"roofline_host_{raw['source_profile']}",
        "gpu": raw["source_gpu"], "provenance": {"source": "roofline"},
        "overhead_s": raw["host"]["overhead_s"], "eager_s": raw["host"]["eager_s"],
        "tables": []}, str(CALIBRATION_FILE))
    names = {name: key for key, name in PATH_NAMES.items()}
    return Calibration(
        gemm={f: (tuple(v["small"]), tuple(v["large"])) for f, v in raw["gemm"].items()},
        moe={f: v["factor"] for f, v in raw["moe"].items()},
        compute=dict(raw["compute"]), host=host,
        cpp_moe={names[key]: frozenset(v) for key, v in raw["cpp_moe"].items()},
        source_gpu=raw["source_gpu"])


def gemm_ratios(table, gpu: str) -> dict[str, np.ndarray]:
    """Bare roofline / measured of one GEMM table, by row range."""
    from tiersim.hardware import get_model
    from tiersim.perf.roofline import RooflineOps

    m = table.axes["m"]
    ops = RooflineOps(get_model(BASE_MODEL), "bf16", gpu)
    ratio = ops.gemm(m, table.key["n"], table.key["k"], table.dtype) / table.latency
    return {f"m<={SMALL_ROWS}": ratio[m <= SMALL_ROWS], f"m>{SMALL_ROWS}": ratio[m > SMALL_ROWS]}


def weight_bin_name(table) -> str:
    """The weight-size bin of a GEMM table, as :func:`family_ratios` keys it."""
    names = [f"nk<{WEIGHT_EDGES[0]}"] + [f"nk>={edge}" for edge in WEIGHT_EDGES]
    return names[_weight_bin(table.key["n"] * table.key["k"])]


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
    """(op, format, rows and weight-size bin) -> the bare roofline / measured ratios of every
    table of that family in ``profile`` (a loaded :class:`~tiersim.perf.profile_data.Profile`)."""
    out: dict[tuple[str, str, str], list[np.ndarray]] = collections.defaultdict(list)
    for table in profile.tables:
        if table.op == "gemm":
            for rows, ratio in gemm_ratios(table, gpu).items():
                out[("gemm", table.dtype, f"{rows} {weight_bin_name(table)}")].append(ratio)
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
    moe, compute = {}, {}
    for (op, fmt, _), found in sorted(ratios.items()):
        if fmt == "bf16" or not found:
            continue
        compute[fmt] = get_precision(fmt).compute_dtype_on(gpu)
        if op == "moe":
            moe[fmt] = {"factor": _median(found), "tables": len(found)}
    gemm = {fmt: _gemm_bins(ratios, fmt) for fmt in sorted({f for op, f, _ in ratios
                                                             if op == "gemm" and f != "bf16"})
            if fmt not in GEMM_AS}
    for fmt, like in GEMM_AS.items():
        if like in gemm and fmt in compute:
            gemm[fmt] = {**gemm[like], "as": like}
    return {
        "schema": SCHEMA,
        "command": "python benchmarks/roofline_ratios.py --write (in tiersim's source repository)",
        "source_profile": SOURCE_PROFILE, "source_gpu": source.gpu, "small_rows": SMALL_ROWS,
        "weight_edges": list(WEIGHT_EDGES),
        "gemm": gemm, "moe": moe, "compute": compute,
        "host": {"overhead_s": source._overhead_json(), "eager_s": source.eager.to_json()},
        "cpp_moe": _usual_kernels([profiles[name] for name in KERNEL_PROFILES]),
    }


def _gemm_bins(ratios: dict, fmt: str) -> dict[str, Any]:
    """One format's GEMM factors: per row range, one median per weight-size bin (a bin with no
    table takes the row range's median over every bin), and the tables behind each."""
    out: dict[str, Any] = {}
    for rows, name in ((f"m<={SMALL_ROWS}", "small"), (f"m>{SMALL_ROWS}", "large")):
        found = {key[2].split(" ", 1)[1]: v for key, v in ratios.items()
                 if key[:2] == ("gemm", fmt) and key[2].startswith(rows + " ")}
        every = [r for v in found.values() for r in v]
        bins = [f"nk<{WEIGHT_EDGES[0]}"] + [f"nk>={edge}" for edge in WEIGHT_EDGES]
        out[name] = [_median(found[b]) if found.get(b) else _median(every) for b in bins]
        out["tables"] = [len(found.get(b, [])) for b in bins]
    return out


def _usual_kernels(profiles: list) -> dict[str, list[str]]:
    """Each kernel-path split (:data:`PATH_NAMES`) -> the experts' formats whose MoE tables, in
    ``profiles``, mostly name a kernel path launched from C++ alone."""
    from tiersim.hardware import get_gpu
    from tiersim.perf.profile_data import cpp_launched

    votes: dict[tuple[tuple[bool, bool], str], list[bool]] = collections.defaultdict(list)
    for prof in profiles:
        gpu = get_gpu(prof.gpu)
        for table in prof.tables:
            if table.op == "moe":
                path = _path(gpu, table.key.get("ep", 1))
                votes[(path, table.dtype)].append(cpp_launched(table.extra.get("kernel", "")))
    out: dict[str, list[str]] = {name: [] for name in PATH_NAMES.values()}
    for (path, fmt), cpp in sorted(votes.items()):
        if sum(cpp) * 2 > len(cpp):
            out[PATH_NAMES[path]].append(fmt)
    return out
