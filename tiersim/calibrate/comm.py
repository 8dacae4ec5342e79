"""All-reduce across tensor-parallel ranks and the fixed per-iteration overhead.

All-reduce: ``tp`` processes (torch.multiprocessing spawn), NCCL on CUDA with one GPU per rank,
gloo on a CPU; a bf16 tensor of each size is summed in place. Each rank times its calls (CUDA
events on GPU, perf_counter on CPU; a barrier before each repeat so ranks start together), takes
the median, and the slowest rank's median is the table value. No L2 flush: the data is produced
just before in a real step.

Overhead: on CUDA, the host-observed time to replay a CUDA graph holding one minimal kernel and
synchronise (the fixed cost of launching a graph-captured step and waiting for it); the notes
also give the per-kernel cost inside a graph of many minimal kernels and of an eager launch. On a
CPU, the time of one minimal eager torch op. Engine host work (scheduling, sampling,
detokenisation) is not included.
"""

from __future__ import annotations

import json
import signal
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist


def _time_allreduce(t: torch.Tensor, warmup: int, repeats: int) -> float:
    """Median seconds of an in-place all-reduce of ``t`` on this rank."""
    for _ in range(warmup):
        dist.all_reduce(t)
    times = []
    for _ in range(repeats):
        dist.barrier()
        if t.is_cuda:
            torch.cuda.synchronize(t.device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_reduce(t)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        else:
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _in_time(deadline: float, device: torch.device) -> bool:
    """Whether rank 0's clock is before ``deadline`` (time.monotonic, one clock for every
    process of the machine), agreed by every rank so that all stop after the same size."""
    go = torch.tensor([time.monotonic() < deadline], dtype=torch.int32, device=device)
    dist.broadcast(go, src=0)
    return bool(go.item())


def _worker(rank: int, world: int, backend: str, sizes: list[int], warmup: int, repeats: int,
            folder: str, deadline: float = float("inf")) -> None:
    """One rank: join the group, time each size until ``deadline`` (checked before every
    size, as a table's grid points are), rank 0 writes the slowest rank's medians.
    Ctrl-C and SIGTERM end a rank quietly: the parent reports the stop on its own line (a
    forked rank inherited its handler and printed a traceback each)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    dist.init_process_group(backend, init_method=f"file://{folder}/store", rank=rank,
                            world_size=world)
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    medians = []
    for nbytes in sizes:
        if not _in_time(deadline, device):
            break
        t = torch.ones(max(1, nbytes // 2), dtype=torch.bfloat16, device=device)
        medians.append(_time_allreduce(t, warmup, repeats))
    slowest = torch.tensor(medians, dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    if rank == 0:
        Path(folder, "result.json").write_text(json.dumps(slowest.cpu().tolist()))
    dist.barrier()
    dist.destroy_process_group()


def allreduce_latencies(tp: int, sizes: list[int], device_type: str, warmup: int = 3,
                        repeats: int = 10, deadline: float = float("inf")
                        ) -> tuple[list[float], str]:
    """Seconds of an all-reduce of each size in bytes over ``tp`` ranks, and the method used.
    Sizes not started by ``deadline`` (time.monotonic: the time budget) are left out, so the
    list may be shorter than ``sizes`` (a first part of them).

    Raises ``RuntimeError`` with the reason when it cannot run (too few GPUs).
    """
    if tp < 2:
        raise RuntimeError("tp=1: no all-reduce in a one-GPU replica")
    if device_type == "cuda" and torch.cuda.device_count() < tp:
        raise RuntimeError(f"tp={tp} needs {tp} GPUs, this machine has "
                           f"{torch.cuda.device_count()}")
    backend = "nccl" if device_type == "cuda" else "gloo"
    with tempfile.TemporaryDirectory() as folder:
        # NOTE: fork is fast on a CPU; CUDA needs spawn (a forked child cannot use CUDA).
        method = "spawn" if backend == "nccl" else "fork"
        torch.multiprocessing.start_processes(
            _worker, args=(tp, backend, list(sizes), warmup, repeats, folder, deadline),
            nprocs=tp,
            join=True, start_method=method)
        values = json.loads(Path(folder, "result.json").read_text())
    kernel = (f"torch.distributed.all_reduce (sum, bf16) over {tp} ranks, backend {backend}, "
              f"slowest rank's median")
    return values, kernel


def _minimal_chain(x: torch.Tensor, n: int) -> None:
    """``n`` minimal kernels: in-place add on a one-element tensor."""
    for _ in range(n):
        x.add_(1)


def _host_median(fn, device: torch.device, repeats: int) -> float:
    """Median host-observed seconds of ``fn`` followed by a device synchronise."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _graph(x: torch.Tensor, n: int) -> torch.cuda.CUDAGraph:
    """A CUDA graph of ``n`` minimal kernels (warmed up on a side stream, as torch requires)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _minimal_chain(x, n)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _minimal_chain(x, n)
    return graph


def per_iteration_overhead(device: torch.device, chain: int = 480,
                           repeats: int = 50) -> tuple[float, str, dict]:
    """(seconds, what was measured, parts) of the fixed per-iteration overhead; see module doc."""
    x = torch.zeros(1, device=device)
    eager = _host_median(lambda: _minimal_chain(x, chain), device, repeats) / chain
    if device.type != "cuda":
        one = _host_median(lambda: _minimal_chain(x, 1), device, repeats * 10)
        return one, "one minimal eager torch op on the CPU (host dispatch cost)", {
            "eager_per_kernel_s": eager}
    one_graph, long_graph = _graph(x, 1), _graph(x, chain)
    for g in (one_graph, long_graph):
        g.replay()
    torch.cuda.synchronize(device)
    launch = _host_median(one_graph.replay, device, repeats)
    long = _host_median(long_graph.replay, device, repeats)
    parts = {"graph_launch_s": launch, "graph_per_kernel_s": (long - launch) / (chain - 1),
             "eager_per_kernel_s": eager}
    what = ("host-observed replay of a one-kernel CUDA graph plus synchronise; engine host work "
            "(scheduling, sampling) not included")
    return launch, what, parts
