"""``run_calibration``: measure every table of a profile on one device and write the JSON.

Sections run in this order, each table guarded so that a kernel that fails on the device at hand
is recorded in ``provenance.skipped`` with its reason instead of stopping the run: overhead,
dense GEMMs, MoE layer, decode attention, prefill attention, all-reduce.

``out`` only ever receives a complete profile, so an earlier good file is never replaced by
less. While the run goes, what it has measured is rewritten after every table to the partial
name (``P.partial.json`` for ``P.json``, see ``partial_path``); a run stopped by a signal, by
``--budget-s`` or by a kill leaves its tables there, with a ``partial: ...`` status, and a
complete run removes that file. The time budget is checked before every grid point, so a run
ends within about the budget plus one measurement.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tiersim.calibrate import attention, comm, grids, moe, provenance, quant, schema, shapes
from tiersim.calibrate.errors import CalibrateError, Stopped, raise_if_stopped
from tiersim.calibrate.options import DEFAULT_MODEL, KV_DTYPES, SECTIONS
from tiersim.calibrate.options import choose as _choose
from tiersim.calibrate.options import model_shapes as _model
from tiersim.calibrate.schema import partial_path
from tiersim.calibrate.timing import Timer, synchronize
from tiersim.errors import shown

BUDGET_REASON = "time budget (--budget-s) spent"


class PartialProfile(CalibrateError):
    """The time budget ran out before every table was measured: ``doc`` holds what was (also
    written to the partial name), and the message says so in one line."""

    def __init__(self, message: str, doc: dict):
        super().__init__(message)
        self.doc = doc


class _OutOfTime(Exception):
    """A table's first grid point was not reached before the time budget ended."""


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
    left_out: list[str] = field(default_factory=list)
    section: str = ""
    save_failed: bool = False
    saved: str = ""
    """What the last partial save that succeeded held, in words ('' before one)."""

    def skip(self, what: str, reason: str) -> None:
        """Record that table ``what`` was not measured, and why."""
        self.prov["skipped"].append({"table": what, "reason": reason})
        self.log(f"  skipped {what}: {reason}")

    def leave_out(self, why: str, loud: bool) -> None:
        """Record that tables the options selected are not attempted, and why: a note in the
        profile, and with ``loud`` a ``note:`` line now (the summary lists only tables that
        were tried and failed), for what a user would not expect to be left out."""
        self.notes.append(why)
        self.left_out.append(why)
        if loud:
            self.log(f"note: {why}")

    def time_up(self) -> bool:
        """True once the time budget (--budget-s) is spent; raises Stopped for a signal that
        did not stop the run where it came (see ``errors.RECEIVED``)."""
        raise_if_stopped()
        return time.monotonic() >= self.deadline

    def out_of_time(self, what: str) -> bool:
        """True (and the table recorded as skipped) once the time budget is spent."""
        if not self.time_up():
            return False
        self.skip(what, BUDGET_REASON)
        return True

    def kept(self, what: str, done: int, total: int) -> str:
        """After a grid loop that measured ``done`` of ``total`` points: '' when all were,
        else a note for the table (and the cut recorded in ``provenance.cut``); raises
        _OutOfTime when none was."""
        if done == 0:
            raise _OutOfTime
        if done == total:
            return ""
        self.prov["cut"].append({"table": what, "points": f"{done} of {total}",
                                 "reason": BUDGET_REASON})
        self.log(f"  cut {what}: {done:,} of {total:,} points ({BUDGET_REASON})")
        return (f"; PARTIAL: cut short by the time budget (--budget-s) after {done} of "
                f"{total} grid points")

    def measured(self) -> str:
        """What has been measured, in words: '3 tables and the overhead'."""
        return (_count(len(self.tables), "table") if self.tables else "") + (
            (" and the overhead" if self.tables else "the overhead") if self.overhead else "")

    def measured_anything(self) -> bool:
        """True when at least one table or the overhead was measured."""
        return bool(self.tables) or self.overhead is not None

    def document(self) -> dict:
        """The profile as it stands."""
        gpu = provenance.gpu_short_name(self.prov["gpu_name"])
        prov = {**self.prov, "notes": "; ".join(self.notes)}
        return schema.profile(self.name, gpu, prov, self.overhead, self.tables)

    def save(self, strict: bool = False) -> None:
        """Rewrite the partial file (never ``out``) with what has been measured so far.

        A write that fails (the folder removed, the disk full) was recorded as the section's
        failure, then ended the run in a traceback, losing what was measured. Now it is one
        ``note:`` line, once, and the run goes on (what it measures is kept for the final
        write); with ``strict`` (the run's outcome is this file) a one-line CalibrateError.
        """
        if not (self.out and self.measured_anything()):
            return
        try:
            write_profile(partial_path(self.out), self.document())
            self.saved = self.measured()
        except CalibrateError as err:
            if strict:
                raise
            if not self.save_failed:
                self.save_failed = True
                self.log(f"note: {err}; measuring on, the profile is written at the end")


def write_profile(path: str | Path, doc: dict) -> None:
    """``schema.write``; a system error (a missing folder, a full disk) is one CalibrateError
    line that names the file."""
    try:
        schema.write(path, doc)
    except OSError as err:
        why = err.strerror or type(err).__name__
        where = str(err.filename or "")
        if where and not where.startswith(str(path)):  # the folder, not the file or its .tmp
            why += f": {where}"
        raise CalibrateError(f"cannot write {path} ({why})") from None


def _guard(run: Run, what: str, measure: Callable[[], None]) -> bool:
    """Run one table's measurement; on any error record the skip and free the device memory.
    True when the table was measured (in full or cut short by the budget)."""
    if run.out_of_time(what):
        return False
    try:
        measure()
    except _OutOfTime:
        run.skip(what, BUDGET_REASON)
        return False
    except Exception as exc:  # noqa: BLE001 - a failing kernel must not lose the other tables
        first = (str(exc).splitlines() or [""])[0][:200]
        run.skip(what, f"{type(exc).__name__}: {first}")
        return False
    finally:
        if run.device.type == "cuda":
            torch.cuda.empty_cache()
    run.prov["status"] = f"partial: the run stopped after {what}"
    run.save()
    return True


# ---- sections -------------------------------------------------------------------------------

def measure_overhead(run: Run) -> None:
    """The fixed per-iteration overhead (see comm.per_iteration_overhead)."""
    def go():
        chain = run.model.layers * 10
        value, what, parts = comm.per_iteration_overhead(run.device, chain=chain)
        run.overhead = {"value": float(value), "source": "harness", "kernel": what,
                        "notes": f"parts from a chain of {chain} minimal kernels", "parts": parts}
    _guard(run, "overhead", go)


def _gemm_table(run: Run, what: str, precision: str, shape: shapes.GemmShape,
                x: torch.Tensor) -> None:
    """One dense GEMM table: latency vs m at (n, k) in ``precision``."""
    lin = quant.make_linear(precision, shape.n, shape.k, run.device, run.gen, run.compile_dequant)
    err = quant.check_linear(lin, shape.k, run.device, run.gen)
    run.prov["checks"][f"gemm/{precision}/{shape.n}x{shape.k}"] = round(err, 6)
    lat, quant_s = [], []
    for m in run.grid.gemm_m:
        if run.time_up():
            break
        xin = lin.prepare(x[:m])
        lat.append(run.timer.measure(lambda xin=xin: lin.run(xin)))
        if lin.act_quant:
            quant_s.append(run.timer.measure(lambda m=m: lin.prepare(x[:m])))
    cut = run.kept(what, len(lat), len(run.grid.gemm_m))
    parts = ({"dequant_s": run.timer.measure(lin.dequant)}
             if lin.dequant and not run.time_up() else None)
    notes = f"layers: {', '.join(shape.layers)}; relative error vs float32 {err:.2e}"
    if lin.act_quant:
        parts = {"act_quant_s": quant_s}
        notes += (f"; {lin.act_quant} activation quantisation not included (eager torch, "
                  f"timed alone in parts.act_quant_s)")
    if lin.dequant:
        notes += ("; latency includes dequantising the weight on every call"
                  + (" (parts.dequant_s)" if parts else ""))
    run.tables.append(schema.table(
        "gemm", {"n": shape.n, "k": shape.k}, {"m": list(run.grid.gemm_m[:len(lat)])}, lat,
        lin.kernel, precision=precision, notes=notes + cut, parts=parts))


def measure_gemm(run: Run, precisions: tuple[str, ...]) -> None:
    """Dense GEMM tables for every distinct (n, k) of the model, per precision."""
    gemms = shapes.gemm_shapes(run.model, run.tp)
    kmax = max(s.k for s in gemms)
    x = quant.randn((max(run.grid.gemm_m), kmax), run.device, run.gen)
    for precision in precisions:
        for shape in _quantised_shapes(run, precision, gemms):
            what = f"gemm/{precision}/{shape.n}x{shape.k}"
            if run.out_of_time(what):
                continue
            xs = x[:, :shape.k].contiguous()
            if _guard(run, what, lambda w=what, p=precision, s=shape, xs=xs:
                      _gemm_table(run, w, p, s, xs)):
                run.log(f"  gemm {precision} n={shape.n} k={shape.k} done")


def _quantised_shapes(run: Run, precision: str,
                      gemms: list[shapes.GemmShape]) -> list[shapes.GemmShape]:
    """The GEMMs a checkpoint in ``precision`` quantises: every one, except that block-FP8
    checkpoints keep the router and lm_head in bf16 (their ``modules_to_not_convert``) and
    can only block a shape whose n and k are multiples of 128; what is left out is noted."""
    if precision != "fp8_block":
        return gemms
    kept, out, unaligned = [], [], False
    for shape in gemms:
        layers = tuple(name for name in shape.layers if name not in ("router", "lm_head"))
        aligned = not (shape.n % quant.BLOCK or shape.k % quant.BLOCK)
        if layers and aligned:
            kept.append(shapes.GemmShape(shape.n, shape.k, layers))
        unaligned = unaligned or bool(layers and not aligned)
        if not aligned or layers != shape.layers:
            out.append(f"{'+'.join(shape.layers)} n={shape.n} k={shape.k}")
    if out:  # loud when a layer a checkpoint quantises is left out (not just router, lm_head)
        run.leave_out(f"fp8_block gemm: left out {', '.join(out)} (block-FP8 checkpoints "
                      f"keep the router and lm_head in bf16; blocks need n and k multiples "
                      f"of {quant.BLOCK})", loud=unaligned)
    return kept


def measure_moe(run: Run, precisions: tuple[str, ...]) -> None:
    """One MoE layer's latency vs tokens, per precision (MoE models only)."""
    m = run.model
    if not m.is_moe:
        run.leave_out("dense model: no MoE tables", loud=False)
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
            if run.time_up():
                break
            logits = layer.router(x[:t])
            lat.append(run.timer.measure(lambda t=t, g=logits: layer.run(x[:t], g)))
        cut = run.kept(f"moe/{precision}", len(lat), len(run.grid.moe_tokens))
        notes = (f"key.inter is the model's expert width; each GPU runs inter/tp = "
                 f"{local.expert_intermediate}; tokens routed by random router weights")
        run.tables.append(schema.table(
            "moe", key, {"tokens": list(run.grid.moe_tokens[:len(lat)])}, lat, layer.kernel,
            precision=precision, notes=notes + cut))

    if "fp8_block" in precisions:
        run.leave_out("fp8_block moe: not measured (the harness times block-FP8 dense "
                      "GEMMs; a per-expert loop of them would time the host, not the layer)",
                      loud=not any(p in moe.PRECISIONS for p in precisions))
    for precision in (p for p in precisions if p in moe.PRECISIONS):
        if _guard(run, f"moe/{precision}", lambda p=precision: table(p)):
            run.log(f"  moe {precision} done")


def _attn_table(run: Run, op: str, kv_dtype: str) -> None:
    """One attention table (decode: batch x context; prefill: tokens x context)."""
    s = shapes.shard(run.model, run.tp)
    g = run.grid
    rows, cols = (g.decode_batch, g.decode_context) if op == "attn_decode" else (
        g.prefill_tokens, g.prefill_context)
    make = attention.make_decode if op == "attn_decode" else attention.make_prefill
    total = len(rows) * len(cols)
    backends, lat, row = set(), [], []
    for r in rows:
        row = []
        for c in cols:
            if run.time_up():
                break
            fn, backend = make(r, c, s.heads, s.kv_heads, s.head_dim, kv_dtype, run.device,
                               run.gen)
            backends.add(backend)
            row.append(run.timer.measure(fn))
            del fn
        synchronize(run.device)
        if run.device.type == "cuda":
            torch.cuda.empty_cache()  # K/V sizes change every row: return them to the device
        if len(row) < len(cols):
            break
        lat.append(row)
    if lat:  # the table keeps whole rows; cut inside the first row, it keeps that row's start
        rows = rows[:len(lat)]
    elif row:
        rows, cols, lat = rows[:1], cols[:len(row)], [row]
    cut = run.kept(f"{op}/{kv_dtype}", len(rows) * len(cols), total)
    first = "batch" if op == "attn_decode" else "tokens"
    kernel = f"torch SDPA ({'/'.join(sorted(backends))} backend), GQA via enable_gqa"
    if kv_dtype == "fp8":
        kernel += "; KV stored e4m3, dequantised to bf16 by eager cast-and-scale inside the timing"
    notes = "heads and kv_heads are per GPU" + (
        "; causal mask aligned bottom-right over context + tokens" if op == "attn_prefill" else "")
    run.tables.append(schema.table(
        op, {"heads": s.heads, "kv_heads": s.kv_heads, "head_dim": s.head_dim},
        {first: list(rows), "context": list(cols)}, lat, kernel, kv_dtype=kv_dtype,
        notes=notes + cut))


def measure_attention(run: Run, op: str, kv_dtypes: tuple[str, ...]) -> None:
    """Decode or prefill attention tables per KV dtype."""
    for kv in kv_dtypes:
        if _guard(run, f"{op}/{kv}", lambda kv=kv: _attn_table(run, op, kv)):
            run.log(f"  {op} kv={kv} done")


def measure_allreduce(run: Run) -> None:
    """All-reduce vs bytes over ``tp`` ranks (skipped, with the reason, when it cannot run)."""
    if run.tp < 2:
        run.skip("allreduce", "tp=1: a one-GPU replica does no all-reduce (use --tp N on N GPUs)")
        return

    def go():
        sizes = list(run.grid.allreduce_bytes)
        lat, kernel = comm.allreduce_latencies(run.tp, sizes, run.device.type,
                                               run.grid.warmup, run.grid.min_repeats * 2,
                                               deadline=run.deadline)
        cut = run.kept("allreduce", len(lat), len(sizes))
        run.tables.append(schema.table("allreduce", {"tp": run.tp}, {"bytes": sizes[:len(lat)]},
                                       lat, kernel, notes=cut.removeprefix("; ")))
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
    raise CalibrateError(f"--device {shown(name, 64)}: must be cuda or cpu")


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
    the same. ``ops`` selects sections (see SECTIONS); ``budget_s`` stops the run after that
    many seconds (checked before every grid point).

    Only a complete profile is written to ``out``. CalibrateError (one line) when nothing was
    measured (nothing is written) or when SIGINT/SIGTERM (``Stopped``) ends the run;
    PartialProfile, holding the document, when the budget ran out first. In both of those
    cases what was measured is in ``partial_path(out)`` and ``out`` is left as it was.
    """
    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    precisions = _choose("precisions", tuple(precisions), quant.PRECISIONS)
    kv_dtypes = _choose("kv-dtypes", tuple(kv_dtypes), KV_DTYPES)
    ops = _choose("ops", tuple(ops), SECTIONS)
    dev = _device(device)
    shapes_ = _model(model, config, quick)
    shapes.shard(shapes_, tp)  # validates tp against the model
    _start_up(dev, ops, precisions, compile_dequant)
    t0 = time.monotonic()
    grid = grids.grid_for(quick, dev.type)
    timer = Timer(dev, grid.warmup, grid.min_repeats, grid.max_repeats, grid.target_s,
                  grid.flush_bytes)
    prov = provenance.collect(dev)
    gpu = provenance.gpu_short_name(prov["gpu_name"])
    asked = model or (config and "--config") or DEFAULT_MODEL
    prov.update(model=shapes_.name + (f" (--quick tiny shapes; asked for {asked})" if quick
                                      else ""),
                tp=tp, grid="quick" if quick else "full", seed=seed, checks={}, skipped=[],
                cut=[])
    name = f"{_slug(gpu)}_harness_{_slug(shapes_.name)}_tp{tp}" + ("_quick" if quick else "")
    run = Run(dev, shapes_, tp, grid, timer, quant.generator(dev, seed), prov, name, out, log,
              deadline=t0 + budget_s if budget_s else float("inf"),
              compile_dequant=compile_dequant)
    timer.deadline = run.deadline
    run.notes.append(f"timer: warmup {grid.warmup}, {grid.min_repeats}-{grid.max_repeats} "
                     f"repeats, median; L2 flush {grid.flush_bytes >> 20} MB between repeats")
    for note in shapes_.notes:  # what the config left out and the shapes took (class defaults)
        log(f"note: {config}: {note}")
        run.notes.append(f"config: {note}")
    threads = torch.get_num_threads()
    if quick and dev.type == "cpu":
        torch.set_num_threads(1)  # NOTE: tiny ops; avoids OpenMP stalls on a shared machine
        prov["device"] = prov["device"].replace(f"{threads} torch threads", "1 torch thread")
    existed = bool(out) and Path(out).is_file()
    stopped = None
    try:
        _sections(run, ops, precisions, kv_dtypes, t0)
    except (KeyboardInterrupt, Stopped) as exc:
        stopped = exc.args[0] if isinstance(exc, Stopped) and exc.args else "SIGINT"
    finally:
        torch.set_num_threads(threads)
    prov["elapsed_s"] = round(time.monotonic() - t0, 1)
    if dev.type == "cuda" and stopped is None:
        prov["clocks_after"] = provenance.clocks_now(dev.index or 0)
    with _signals_ignored():  # the files are being written: let them be written whole
        return _finish(run, out, existed, stopped, budget_s)


def _start_up(dev: torch.device, ops: tuple[str, ...], precisions: tuple[str, ...],
              compile_dequant: bool) -> None:
    """Pay the one-time costs of the selected tables before the time budget's clock starts,
    like torch's import: inside a table, after the budget was checked, they overran
    ``--budget-s`` by seconds on a CPU (the prefill mask's torch._dynamo import, 3-4 s; the
    first torch.compile of --compile-dequant, about 3.5 s more than a later one)."""
    if "attn_prefill" in ops:
        attention.preload()
    if compile_dequant and "nvfp4" in precisions and "gemm" in ops:
        quant.warm_compile(dev)


@contextmanager
def _signals_ignored():
    """SIGINT, SIGTERM and SIGHUP ignored inside (main thread only; elsewhere nothing
    changes)."""
    saved = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            saved[sig] = signal.signal(sig, signal.SIG_IGN)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for sig, old in saved.items():
            signal.signal(sig, old)


def _count(n: int, what: str) -> str:
    """'1 table', '3 tables'."""
    return f"{n} {what}" + ("" if n == 1 else "s")


def _finish(run: Run, out: str | None, existed: bool, stopped: str | None,
            budget_s: float | None) -> dict:
    """Write the result where it belongs and return it, or raise the one-line error.

    Complete: ``out`` (atomically), and the partial file of this run removed. Anything less
    (interrupted, budget spent) goes to the partial name only; nothing measured writes nothing.
    """
    prov = run.prov
    kept = (f"{out} left as it was" if existed else f"{out} not written") if out else ""
    measured = _count(len(run.tables), "table") + (" and the overhead" if run.overhead else "")
    if stopped is not None:
        prov["status"] = f"partial: interrupted by {stopped} during {run.section}"
        if not run.measured_anything():
            raise CalibrateError(f"interrupted by {stopped} before anything was measured"
                                 + (f"; {kept}" if out else ""))
        raise CalibrateError(f"interrupted by {stopped} during {run.section}: {measured} "
                             f"measured; {_keep(run, kept)}")
    budget = f"time budget (--budget-s {budget_s:g})" if budget_s else "time budget"
    unmeasured = sum(s["reason"] == BUDGET_REASON for s in prov["skipped"])
    if not run.measured_anything():
        if unmeasured:
            raise CalibrateError(f"--budget-s {budget_s:g}: spent before any table was "
                                 f"measured; {kept or 'nothing written'}; allow more seconds")
        if not prov["skipped"] and run.left_out:  # nothing was even attempted: say why
            raise CalibrateError(f"nothing measured: {'; '.join(run.left_out)}; "
                                 f"{kept or 'nothing written'}; choose other --ops or "
                                 f"--precisions")
        first = prov["skipped"][0] if prov["skipped"] else {"table": "-", "reason": "-"}
        raise CalibrateError(f"nothing measured: every selected table was skipped (first "
                             f"{first['table']}: {first['reason']}); "
                             f"{kept or 'nothing written'}; choose other --ops")
    if unmeasured or prov["cut"]:
        prov["status"] = (f"partial: {budget} spent; {_count(len(prov['cut']), 'table')} cut "
                          f"short, {unmeasured} not measured")
        raise PartialProfile(
            f"{budget} spent: {measured} kept ({len(prov['cut'])} cut short), {unmeasured} "
            f"not measured; {_keep(run, kept)}; allow more seconds", run.document())
    prov["status"] = "complete"
    if out:
        try:
            write_profile(out, run.document())
        except CalibrateError as err:
            raise CalibrateError(f"{err}; {_not_written(run, measured, kept)}") from None
        partial_path(out).unlink(missing_ok=True)
    return run.document()


def _not_written(run: Run, measured: str, kept: str) -> str:
    """Where a complete profile that ``out`` could not take now is, in words: written whole
    to the partial name instead, or lost, naming the earlier partial save left there (the
    line said lost while that file held every table, or some)."""
    partial = partial_path(run.out)
    try:
        run.save(strict=True)
    except CalibrateError:
        earlier = (f"; {partial} holds what was saved before ({run.saved})" if run.saved
                   and partial.is_file() else "")
        if not earlier and not Path(run.out).is_file():
            kept = ""  # nothing of this run's is left anywhere
        return (f"the complete profile ({measured}) is lost{f', {kept}' if kept else ''}"
                f"{earlier}; write it where a file can be created, and run again")
    return (f"the complete profile ({measured}) is in {partial} instead, {kept}; rename it "
            f"to {run.out} once there is room")


def _keep(run: Run, kept: str) -> str:
    """Write the partial file of a run that did not finish; where what it measured now is, in
    words: ``partial profile in P.partial.json, P.json not written``, or why it is lost."""
    if not run.out:
        return "nothing written"
    try:
        run.save(strict=True)
    except CalibrateError as err:
        return f"{err}, so it is lost; {kept}"
    return f"partial profile in {partial_path(run.out)}, {kept}"


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
        raise_if_stopped()
        run.section = section
        run.log(f"[{time.monotonic() - t0:6.1f}s] {section}")
        try:
            steps[section]()
        except Exception as exc:  # noqa: BLE001 - e.g. the section's shared input allocation
            first = (str(exc).splitlines() or [""])[0][:200]
            run.skip(section, f"{type(exc).__name__}: {first}")
        run.prov["status"] = f"partial: the run stopped after section {section}"
        run.save()
