"""``run_calibration``: measure every table of a profile on one device and write the JSON.

Sections run in this order, each table guarded so that a kernel that fails on the device at hand
is recorded in ``provenance.skipped`` with its reason instead of stopping the run: overhead,
dense GEMMs, MoE layer, decode attention, prefill attention, all-reduce. The file is rewritten
after every section, so a run stopped by a time limit leaves a valid profile of what finished.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from tiersim.calibrate import attention, comm, grids, moe, provenance, quant, schema, shapes
from tiersim.calibrate.errors import CalibrateError
from tiersim.calibrate.timing import Timer, synchronize

SECTIONS = ("overhead", "gemm", "moe", "attn_decode", "attn_prefill", "allreduce")
KV_DTYPES = ("bf16", "fp8")


@dataclass
class Run:
    """State of one calibration run: options, device, timer, and what has been measured."""

    device: torch.device
    model: shapes.ModelShapes
    tp: int
    grid: grids.Grid
    timer: Timer
    gen: torch.Generator
    prov: dict
    name: str
    out: str | None
    log: Callable[[str], None]
    deadline: float
    compile_dequant: bool = False
    tables: list[dict] = field(default_factory=list)
    overhead: dict | None = None
    notes: list[str] = field(default_factory=list)

    def skip(self, what: str, reason: str) -> None:
        """Record that table ``what`` was not measured, and why."""
        self.prov["skipped"].append({"table": what, "reason": reason})
        self.log(f"  skipped {what}: {reason}")

    def out_of_time(self, what: str) -> bool:
        """True (and the table recorded as skipped) once the time budget is spent."""
        if time.monotonic() < self.deadline:
            return False
        self.skip(what, "time budget (--budget-s) spent")
        return True

    def document(self) -> dict:
        """The profile as it stands."""
        gpu = provenance.gpu_short_name(self.prov["gpu_name"])
        prov = {**self.prov, "notes": "; ".join(self.notes)}
        return schema.profile(self.name, gpu, prov, self.overhead, self.tables)

    def save(self) -> None:
        """Rewrite the output file with what has been measured so far."""
        if self.out:
            schema.write(self.out, self.document())


def _guard(run: Run, what: str, measure: Callable[[], None]) -> None:
    """Run one table's measurement; on any error record the skip and free the device memory."""
    if run.out_of_time(what):
        return
    try:
        measure()
    except Exception as exc:  # noqa: BLE001 - a failing kernel must not lose the other tables
        first = (str(exc).splitlines() or [""])[0][:200]
        run.skip(what, f"{type(exc).__name__}: {first}")
    finally:
        if run.device.type == "cuda":
            torch.cuda.empty_cache()


# ---- sections -------------------------------------------------------------------------------

def measure_overhead(run: Run) -> None:
    """The fixed per-iteration overhead (see comm.per_iteration_overhead)."""
    def go():
        chain = run.model.layers * 10
        value, what, parts = comm.per_iteration_overhead(run.device, chain=chain)
        run.overhead = {"value": float(value), "source": "harness", "kernel": what,
                        "notes": f"parts from a chain of {chain} minimal kernels", "parts": parts}
    _guard(run, "overhead", go)


def _gemm_table(run: Run, precision: str, shape: shapes.GemmShape, x: torch.Tensor) -> None:
    """One dense GEMM table: latency vs m at (n, k) in ``precision``."""
    lin = quant.make_linear(precision, shape.n, shape.k, run.device, run.gen, run.compile_dequant)
    err = quant.check_linear(lin, shape.k, run.device, run.gen)
    run.prov["checks"][f"gemm/{precision}/{shape.n}x{shape.k}"] = round(err, 6)
    lat, quant_s = [], []
    for m in run.grid.gemm_m:
        xin = lin.prepare(x[:m])
        lat.append(run.timer.measure(lambda xin=xin: lin.run(xin)))
        if precision == "fp8":
            quant_s.append(run.timer.measure(lambda m=m: lin.prepare(x[:m])))
    parts = {"dequant_s": run.timer.measure(lin.dequant)} if lin.dequant else None
    notes = f"layers: {', '.join(shape.layers)}; relative error vs float32 {err:.2e}"
    if precision == "fp8":
        parts = {"act_quant_s": quant_s}
        notes += ("; dynamic per-token activation quantisation not included (eager torch, "
                  "timed alone in parts.act_quant_s)")
    if lin.dequant:
        notes += "; latency includes dequantising the weight on every call (parts.dequant_s)"
    run.tables.append(schema.table(
        "gemm", {"n": shape.n, "k": shape.k}, {"m": list(run.grid.gemm_m)}, lat, lin.kernel,
        precision=precision, notes=notes, parts=parts))


def measure_gemm(run: Run, precisions: tuple[str, ...]) -> None:
    """Dense GEMM tables for every distinct (n, k) of the model, per precision."""
    gemms = shapes.gemm_shapes(run.model, run.tp)
    kmax = max(s.k for s in gemms)
    x = quant.randn((max(run.grid.gemm_m), kmax), run.device, run.gen)
    for precision in precisions:
        for shape in gemms:
            xs = x[:, :shape.k].contiguous()
            _guard(run, f"gemm/{precision}/{shape.n}x{shape.k}",
                   lambda p=precision, s=shape, xs=xs: _gemm_table(run, p, s, xs))
            run.log(f"  gemm {precision} n={shape.n} k={shape.k} done")


def measure_moe(run: Run, precisions: tuple[str, ...]) -> None:
    """One MoE layer's latency vs tokens, per precision (MoE models only)."""
    m = run.model
    if not m.is_moe:
        run.notes.append("dense model: no MoE tables")
        return
    local = shapes.shard(m, run.tp)
    key = {"hidden": m.hidden, "inter": m.expert_intermediate, "num_experts": m.num_experts,
           "top_k": m.top_k, "ep": 1, "tp": run.tp}
    x = quant.randn((max(run.grid.moe_tokens), m.hidden), run.device, run.gen)

    def table(precision: str) -> None:
        layer = moe.make_moe(precision, m.hidden, local.expert_intermediate, m.num_experts,
                             m.top_k, run.device, run.gen)
        lat = []
        for t in run.grid.moe_tokens:
            logits = layer.router(x[:t])
            lat.append(run.timer.measure(lambda t=t, g=logits: layer.run(x[:t], g)))
        notes = (f"key.inter is the model's expert width; each GPU runs inter/tp = "
                 f"{local.expert_intermediate}; tokens routed by random router weights")
        run.tables.append(schema.table("moe", key, {"tokens": list(run.grid.moe_tokens)}, lat,
                                       layer.kernel, precision=precision, notes=notes))

    for precision in precisions:
        _guard(run, f"moe/{precision}", lambda p=precision: table(p))
        run.log(f"  moe {precision} done")


def _attn_table(run: Run, op: str, kv_dtype: str) -> None:
    """One attention table (decode: batch x context; prefill: tokens x context)."""
    s = shapes.shard(run.model, run.tp)
    g = run.grid
    rows, cols = (g.decode_batch, g.decode_context) if op == "attn_decode" else (
        g.prefill_tokens, g.prefill_context)
    make = attention.make_decode if op == "attn_decode" else attention.make_prefill
    backends, lat = set(), []
    for r in rows:
        row = []
        for c in cols:
            fn, backend = make(r, c, s.heads, s.kv_heads, s.head_dim, kv_dtype, run.device,
                               run.gen)
            backends.add(backend)
            row.append(run.timer.measure(fn))
            del fn
        lat.append(row)
        synchronize(run.device)
        if run.device.type == "cuda":
            torch.cuda.empty_cache()  # K/V sizes change every row: return them to the device
    first = "batch" if op == "attn_decode" else "tokens"
    kernel = f"torch SDPA ({'/'.join(sorted(backends))} backend), GQA via enable_gqa"
    if kv_dtype == "fp8":
        kernel += "; KV stored e4m3, dequantised to bf16 by eager cast-and-scale inside the timing"
    notes = "heads and kv_heads are per GPU" + (
        "; causal mask aligned bottom-right over context + tokens" if op == "attn_prefill" else "")
    run.tables.append(schema.table(
        op, {"heads": s.heads, "kv_heads": s.kv_heads, "head_dim": s.head_dim},
        {first: list(rows), "context": list(cols)}, lat, kernel, kv_dtype=kv_dtype, notes=notes))


def measure_attention(run: Run, op: str, kv_dtypes: tuple[str, ...]) -> None:
    """Decode or prefill attention tables per KV dtype."""
    for kv in kv_dtypes:
        _guard(run, f"{op}/{kv}", lambda kv=kv: _attn_table(run, op, kv))
        run.log(f"  {op} kv={kv} done")


def measure_allreduce(run: Run) -> None:
    """All-reduce vs bytes over ``tp`` ranks (skipped, with the reason, when it cannot run)."""
    if run.tp < 2:
        run.skip("allreduce", "tp=1: a one-GPU replica does no all-reduce (use --tp N on N GPUs)")
        return

    def go():
        sizes = list(run.grid.allreduce_bytes)
        lat, kernel = comm.allreduce_latencies(run.tp, sizes, run.device.type,
                                               run.grid.warmup, run.grid.min_repeats * 2)
        run.tables.append(schema.table("allreduce", {"tp": run.tp}, {"bytes": sizes}, lat,
                                       kernel))
    _guard(run, "allreduce", go)


# ---- entry point ----------------------------------------------------------------------------

def _device(name: str) -> torch.device:
    """The torch device for --device, checked."""
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise CalibrateError("--device cuda: no CUDA GPU visible to torch; use --device cpu")
        return torch.device("cuda", torch.cuda.current_device())
    raise CalibrateError(f"--device {name!r}: must be cuda or cpu")


def _choose(what: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> tuple[str, ...]:
    """Validate a comma list option against its allowed values."""
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise CalibrateError(f"--{what} {','.join(values)!r}: each must be one of "
                             f"{','.join(allowed)}")
    return tuple(values)


DEFAULT_MODEL = "Qwen3-Coder-30B-A3B"


def _model(model: str | None, config: str | None, quick: bool) -> shapes.ModelShapes:
    """The shapes to measure: tiny for --quick, else the config file (named by ``model`` if
    given) or the built-in model (Qwen3-Coder-30B-A3B by default)."""
    if quick:
        return shapes.TINY
    if config:
        return shapes.from_config(config, name=model)
    return shapes.resolve_model(model or DEFAULT_MODEL)


def _slug(text: str) -> str:
    """Lower-case name safe for a profile name."""
    return "".join(c if c.isalnum() or c in "-." else "-" for c in text.lower()).strip("-")


def run_calibration(device: str = "cpu", model: str | None = None,
                    precisions: tuple[str, ...] = quant.PRECISIONS, *, quick: bool = False,
                    tp: int = 1, out: str | None = None, config: str | None = None,
                    kv_dtypes: tuple[str, ...] = KV_DTYPES, ops: tuple[str, ...] = SECTIONS,
                    seed: int = 0, budget_s: float | None = None, compile_dequant: bool = False,
                    log: Callable[[str], None] | None = None) -> dict:
    """Measure the profile tables on ``device`` and return (and write to ``out``) the profile.

    ``quick`` uses tiny shapes and a few points so a CPU finishes in seconds; the file format is
    the same. ``ops`` selects sections (see SECTIONS); ``budget_s`` stops starting new tables
    after that many seconds.
    """
    t0 = time.monotonic()
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    precisions = _choose("precisions", tuple(precisions), quant.PRECISIONS)
    kv_dtypes = _choose("kv-dtypes", tuple(kv_dtypes), KV_DTYPES)
    ops = _choose("ops", tuple(ops), SECTIONS)
    dev = _device(device)
    shapes_ = _model(model, config, quick)
    shapes.shard(shapes_, tp)  # validates tp against the model
    grid = grids.grid_for(quick, dev.type)
    timer = Timer(dev, grid.warmup, grid.min_repeats, grid.max_repeats, grid.target_s,
                  grid.flush_bytes)
    prov = provenance.collect(dev)
    gpu = provenance.gpu_short_name(prov["gpu_name"])
    asked = model or (config and "--config") or DEFAULT_MODEL
    prov.update(model=shapes_.name + (f" (--quick tiny shapes; asked for {asked})" if quick
                                      else ""),
                tp=tp, grid="quick" if quick else "full", seed=seed, checks={}, skipped=[])
    name = f"{_slug(gpu)}_harness_{_slug(shapes_.name)}_tp{tp}" + ("_quick" if quick else "")
    run = Run(dev, shapes_, tp, grid, timer, quant.generator(dev, seed), prov, name, out, log,
              deadline=t0 + budget_s if budget_s else float("inf"),
              compile_dequant=compile_dequant)
    run.notes.append(f"timer: warmup {grid.warmup}, {grid.min_repeats}-{grid.max_repeats} "
                     f"repeats, median; L2 flush {grid.flush_bytes >> 20} MB between repeats")
    threads = torch.get_num_threads()
    if quick and dev.type == "cpu":
        torch.set_num_threads(1)  # NOTE: tiny ops; avoids OpenMP stalls on a shared machine
        prov["device"] = prov["device"].replace(f"{threads} torch threads", "1 torch thread")
    try:
        _sections(run, ops, precisions, kv_dtypes, t0)
    finally:
        torch.set_num_threads(threads)
    prov["elapsed_s"] = round(time.monotonic() - t0, 1)
    if dev.type == "cuda":
        prov["clocks_after"] = provenance.clocks_now(dev.index or 0)
    prov["status"] = "complete"
    run.save()
    return run.document()


def _sections(run: Run, ops: tuple[str, ...], precisions: tuple[str, ...],
              kv_dtypes: tuple[str, ...], t0: float) -> None:
    """Measure the selected sections in order, saving after each."""
    steps = {
        "overhead": lambda: measure_overhead(run),
        "gemm": lambda: measure_gemm(run, precisions),
        "moe": lambda: measure_moe(run, precisions),
        "attn_decode": lambda: measure_attention(run, "attn_decode", kv_dtypes),
        "attn_prefill": lambda: measure_attention(run, "attn_prefill", kv_dtypes),
        "allreduce": lambda: measure_allreduce(run),
    }
    for section in SECTIONS:
        if section not in ops:
            continue
        run.log(f"[{time.monotonic() - t0:6.1f}s] {section}")
        steps[section]()
        run.prov["status"] = f"partial: finished {section}"
        run.save()
