"""The importer of one engine's tables for one GPU: requested shapes in, profile tables out.

Part of the aiconfigurator importer (:mod:`tiersim.perf.aiconfigurator`, whose docstring says
what is taken from each table). :class:`Importer` reads the frames (:mod:`tiersim.perf.aic_data`)
at the rows each tiersim format stands for (:mod:`tiersim.perf.aic_formats`), turns them into
curves and grids (:mod:`tiersim.perf.aic_tables`) and writes each as a
:class:`~tiersim.perf.profile.Table` with its kernel, origin and notes; :func:`build_profile`
imports every requested table into a :class:`~tiersim.perf.profile.Profile`. Its MoE tables
are read by :class:`~tiersim.perf.aic_moe.MoeTables`, its MLA and DSA attention tables by
:class:`~tiersim.perf.aic_mla.MlaTables`, the two mixins it is built from.
"""

from __future__ import annotations

import datetime

from tiersim.errors import ProfileError, TiersimError
from tiersim.hardware import get_gpu
from tiersim.hardware.precisions import get_precision
from tiersim.perf.aic_data import (
    _GPU_NAMES,
    AIC_PACKAGE,
    Source,
    _read,
    aic_version,
    data_root,
    find_sources,
)
from tiersim.perf.aic_formats import (
    EAGER_GEMMS,
    GEMM_DTYPES,
    GEMM_KERNELS,
    KV_DTYPES,
    MLA_SHAPE,
    MOE_PROXIES,
    NATIVE_GEMM_DTYPES,
)
from tiersim.perf.aic_mla import MlaTables
from tiersim.perf.aic_moe import MoeTables, _moe_roofline  # noqa: F401 - re-exported
from tiersim.perf.aic_tables import (
    ATTENTION_FILES,
    GDN_KERNELS,
    GemmGrid,
    _table,
    allreduce_latency,
    decode_table,
    fp8_scale_latency,
    gdn_latency,
    prefill_table,
)
from tiersim.perf.profile import (
    DSA_SHAPES,
    OP_AXES,
    Profile,
    Table,
    table_name,
)


class Importer(MoeTables, MlaTables):
    """Reads one engine's tables for one GPU and turns requested shapes into profile tables."""

    def __init__(self, gpu: str = "h200", engine: str = "vllm"):
        self.gpu, self.engine = gpu.lower(), engine.lower()
        self.root = data_root(self.gpu)
        self.aic = aic_version()
        self._frames: dict = {}
        self._gemm: dict[str, GemmGrid] = {}
        self.versions: dict[str, str] = {}

    def _sources(self, family: str, filename: str, engine: str | None = None) -> list[Source]:
        found = find_sources(self.root, family, engine or self.engine, filename)
        if not found:
            raise ProfileError(
                f"{self.root}/{family}/{engine or self.engine}: no {filename}; "
                f"choose another --engine for {self.gpu}"
            )
        return found

    def _frame(self, source: Source):
        if source.path not in self._frames:
            self._frames[source.path] = _read(source)
            self.versions.setdefault(source.family, source.version)
        return self._frames[source.path]

    def _native(self, precision: str) -> bool:
        """Whether this GPU's tensor cores run ``precision`` itself (NVFP4 on Blackwell), by the
        same rule as the roofline (:meth:`~tiersim.hardware.precisions.Precision.is_native_on`)."""
        gpu = get_gpu(self.gpu)
        try:
            return get_precision(precision).is_native_on(gpu)
        except TiersimError:  # a table dtype that is no scenario precision
            return precision in gpu.native

    def _with_proxy(self, note: str, precision: str) -> str:
        """``note`` plus, for a format measured through another format's rows, why."""
        proxy = "" if self._native(precision) else MOE_PROXIES.get(precision, "")
        return f"{note}; {proxy}" if proxy else note

    def gemm_grid(self, precision: str) -> GemmGrid | None:
        """The measured GEMM grid :meth:`gemm` reads for ``precision`` (``None``: no rows)."""
        dtype = GEMM_DTYPES.get(precision)
        if self._native(precision):
            dtype = NATIVE_GEMM_DTYPES.get(precision, dtype)
        if dtype is None:
            return None
        if precision not in self._gemm:
            df = self._frame(self._sources("gemm", "gemm_perf.parquet")[0])
            kernel = GEMM_KERNELS if self.engine == "vllm" else {}
            self._gemm[precision] = GemmGrid(df, dtype, kernel.get(precision))
        return self._gemm[precision]

    def gemm(self, precision: str, n: int, k: int) -> Table | None:
        """The ``gemm`` table at ``n x k``, or ``None`` where the data has no such precision."""
        grid = self.gemm_grid(precision)
        if grid is None:
            return None
        source = self._sources("gemm", "gemm_perf.parquet")[0]
        m, lat, note = grid.latency(n, k)
        key = {"n": n, "k": k}
        table = _table("gemm", precision, key, {"m": m}, lat, source, self.aic, grid.kernel, note)
        if self.engine in EAGER_GEMMS and precision in EAGER_GEMMS[self.engine]:
            table.extra["timing"] = "eager"
        return table

    def attention(self, op: str, kv_dtype: str, heads: int, kv_heads: int, head_dim: int):
        """The ``attn_prefill`` or ``attn_decode`` table, or ``None`` where the data lacks it."""
        dtype = KV_DTYPES.get(kv_dtype)
        if dtype is None:
            return None
        source = self._sources("attention", ATTENTION_FILES[op])[0]
        if op == "attn_prefill":
            kv_bytes = 2 * kv_heads * head_dim * (1 if kv_dtype == "fp8" else 2)
            read = kv_bytes / get_gpu(self.gpu).hbm_bw_bytes_s
            found = prefill_table(self._frame(source), heads, kv_heads, head_dim, dtype, read)
            names, note = ("tokens", "context"), ("cached context by equal-work prompt length, "
                                                  "floored at one read of the KV at HBM bandwidth")
        else:
            found = decode_table(self._frame(source), heads, kv_heads, head_dim, dtype)
            names, note = ("batch", "context"), "beyond the measured triangle: linear in batch"
        if found is None:
            return None
        ax0, ax1, grid, kernel = found
        key = {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim}
        axes = dict(zip(names, (ax0, ax1), strict=True))
        return _table(op, kv_dtype, key, axes, grid, source, self.aic, kernel, note)

    def gdn(self, op: str, key: dict[str, int]) -> Table | None:
        """The ``gdn_decode`` or ``gdn_prefill`` table at a per-GPU delta-net shape, or
        ``None`` where the data lacks it (:func:`gdn_latency`)."""
        found = find_sources(self.root, "linear_attention", self.engine, "gdn_perf.parquet")
        if not found:
            return None
        source = found[0]
        got = gdn_latency(self._frame(source), op, key)
        if got is None:
            return None
        axis, lat, kernel, note = got
        name = OP_AXES[op][0]
        return _table(op, None, key, {name: axis}, lat, source, self.aic, kernel, note)

    def allreduce(self, tp: int) -> Table | None:
        """The ``allreduce`` table for ``tp`` GPUs, or ``None``."""
        source = self._sources("comm", "custom_allreduce_perf.parquet")[0]
        found = allreduce_latency(self._frame(source), tp)
        if found is None:
            return None
        nbytes, lat, kernel = found
        return _table(
            "allreduce",
            None,
            {"tp": tp},
            {"bytes": nbytes},
            lat,
            source,
            self.aic,
            kernel,
            "bf16 elements x 2 bytes",
        )

    def fp8_scale(self, k: int) -> Table | None:
        """The ``fp8_scale`` table at ``k`` (:func:`fp8_scale_latency`), or ``None`` where the
        engine's data has no ``compute_scale`` rows."""
        found = find_sources(self.root, "quantize", self.engine, "computescale_perf.parquet")
        got = fp8_scale_latency(self._frame(found[0]), k) if found else None
        if got is None:
            return None
        m, lat, kernel, note = got
        return _table("fp8_scale", None, {"k": k}, {"m": m}, lat, found[0], self.aic, kernel,
                      "dynamic less static per-tensor FP8 quantisation of the input; " + note)

    def provenance(self, notes: str) -> dict[str, str]:
        """Profile-level provenance for tables read by this importer."""
        version = self.versions.get("gemm") or next(iter(self.versions.values()), "")
        return {
            "source": "public",
            "gpu_name": f"NVIDIA {_GPU_NAMES.get(self.gpu, self.gpu.upper())}",
            "date": datetime.date.today().isoformat(),
            "engine": self.engine,
            "engine_version": version,
            "tool": f"{AIC_PACKAGE} {self.aic}",
            "license": "Apache-2.0 (NVIDIA aiconfigurator); see profiles/README.md",
            "notes": notes,
        }


def build_profile(
    name: str, gpu: str, engine: str, requests, overhead: tuple[float, float], notes: str = ""
) -> tuple[Profile, list[str]]:
    """Import every requested table; returns the profile and the tables the data lacks.

    ``requests`` is an iterable of ``(op, dtype, key, model, tp)`` (see :func:`table_requests`);
    ``overhead`` is ``(seconds per iteration, seconds per layer)``, labelled ``roofline``: the
    data has no per-iteration overhead.
    """
    imp = Importer(gpu, engine)
    tables: dict[str, Table] = {}
    missing: set[str] = set()
    for op, dtype, key, model, tp in requests:
        table = _import_one(imp, op, dtype, key, model, tp)
        if table is None and op != "fp8_scale":  # no such table takes nothing off, no roofline
            missing.add(table_name(op, dtype, key))
        elif table is not None:
            tables.setdefault(table.name, table)
    for table in scale_tables(imp, tables.values()):
        tables.setdefault(table.name, table)
    profile = Profile(
        name=name,
        gpu=_GPU_NAMES.get(gpu.lower(), gpu.upper()),
        provenance=imp.provenance(notes),
        overhead_s=overhead[0],
        overhead_source="roofline",
        tables=list(tables.values()),
        overhead_per_layer_s=overhead[1],
    )
    return profile, sorted(missing)


def scale_tables(imp: Importer, tables) -> list[Table]:
    """The ``fp8_scale`` tables (:meth:`Importer.fp8_scale`) at every ``k`` of the per-tensor FP8
    GEMM tables among ``tables``, where the engine's data has them: a profile carries them for
    any checkpoint with static input scales at its shapes, whichever models it was imported
    for."""
    widths = sorted({t.key["k"] for t in tables if t.op == "gemm" and t.dtype == "fp8"})
    found = (imp.fp8_scale(k) for k in widths)
    return [t for t in found if t is not None]


def _import_one(imp: Importer, op, dtype, key, model, tp):
    if op == "gemm":
        return imp.gemm(dtype, key["n"], key["k"])
    if op == "moe":
        return imp.moe(dtype, model, key["tp"], key["ep"])
    if op in ("attn_prefill", "attn_decode") and " dsa-" in str(dtype):
        kv, fmt = str(dtype).split(" dsa-")
        names = [n for n, shape in DSA_SHAPES.items()
                 if all(getattr(model, f) == v for f, v in shape.items())]
        return imp.dsa(op, kv, key, fmt, names) if names else None  # another shape: roofline
    if op in ("attn_prefill", "attn_decode") and " mla-" in str(dtype):
        kv, fmt = str(dtype).split(" mla-")
        if any(getattr(model, f) != v for f, v in MLA_SHAPE.items()):
            return None  # NVIDIA measured the modules at DeepSeek-V3's shapes only
        return imp.mla(op, kv, key["heads"], fmt)
    if op in ("attn_prefill", "attn_decode"):
        return imp.attention(op, dtype, key["heads"], key["kv_heads"], key["head_dim"])
    if op == "allreduce":
        return imp.allreduce(key["tp"])
    if op in GDN_KERNELS:
        return imp.gdn(op, key)
    if op == "fp8_scale":
        return imp.fp8_scale(key["k"])
    raise ValueError(f"unknown op {op!r}")
