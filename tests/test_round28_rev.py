"""Round 28 (rev): review of round 27's changes; each test failed before its fix."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario

GUARD_TWICE = """
import gc, os, resource
from tiersim import memory

mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
limit = mapped + 300 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
assert memory.arm_guard()

def point():
    held = []
    try:
        while True:
            held.append([len(held)])
    except MemoryError as err:  # a failed point is recorded, the next one runs
        del held
        return str(err)

for _ in range(2):
    print(point() or "(empty)", flush=True)
    gc.collect()
memory.disarm_guard()
"""
"""Two "points" run in one guarded process, as ``tiersim sweep --workers 1`` runs them (its
points.py records a MemoryError as a failed point and goes on), each filling the address space
with small objects under a limit 300 MiB above what the process maps."""


def test_the_memory_guard_stops_a_second_point_after_a_first_it_stopped():
    """The guard raised once per process: the first point was stopped with 128 MiB left, the
    second ran on to the limit itself (an empty MemoryError here; CPython's spin where the
    failure meets a ``with`` block's unwinding, the hang the guard exists to prevent). Now it
    is armed again once the address space is back under its ceiling."""
    done = subprocess.run([sys.executable, "-c", GUARD_TWICE], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2, lines
    assert all(line.startswith("stopped with 128 MiB left") for line in lines), lines


def test_memory_running_out_while_routing_stops_the_plan_not_one_design():
    """The planner read any exception from fitting a design's router as that design's miss:
    a MemoryError there (the address-space guard's, or numpy's) became the runner-up
    'w4+bf16: router: stopped with 128 MiB left ...' and the plan went on to choose uniform
    bf16, status 0, the routed designs never judged. Now it stops the command."""
    class OutOfMemory(FakeEvaluator):
        def routing(self, design):
            if len(design.tiers) > 1:
                raise MemoryError("stopped with 128 MiB left")
            return super().routing(design)

    tiers = [FakeTier("w4", accuracy=0.80), FakeTier("bf16", accuracy=0.90)]
    scenario = fake_scenario(tiers, floor=0.82)
    planner = Planner(scenario, Constraints.of(scenario), OutOfMemory(tiers))
    with pytest.raises(MemoryError):
        planner.plan()


PROFILED = """
import resource, signal
from tiersim.cli import app

resource.setrlimit(resource.RLIMIT_AS, (16 * 2**30, 16 * 2**30))  # the guard's condition
samples = []
signal.signal(signal.SIGPROF, lambda signum, frame: samples.append(1))  # a sampling profiler
signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
try:
    app(prog_name="tiersim", args=["--help"])
except SystemExit:
    pass
before = len(samples)
sum(i * i for i in range(3_000_000))  # CPU time, which a running profiler samples
print(signal.getitimer(signal.ITIMER_PROF)[1], len(samples) - before)
signal.setitimer(signal.ITIMER_PROF, 0)  # the profiler stops before Python's exit
"""
"""A command run in a process whose SIGPROF timer a profiler (vmprof's kind) runs: its
interval after the command, and the samples it took of CPU time spent after it."""


def test_the_memory_guard_leaves_a_profilers_timer_running():
    """The guard took SIGPROF and its CPU-time timer whatever held them, and its disarming set
    the timer to 0: after any command under an address-space limit, a profiler sampling the
    process by that timer sampled nothing more (interval 0.0, 0 samples). Now the guard stays
    off where the signal or its timer is another's, and the profiler goes on."""
    done = subprocess.run([sys.executable, "-c", PROFILED], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    interval, samples = done.stdout.splitlines()[-1].split()
    assert float(interval) == 0.001 and int(samples) > 0, done.stdout
