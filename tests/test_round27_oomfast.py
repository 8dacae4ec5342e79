"""Round 27 (oomfast): running out of address space ends a command with one line and status 1,
not minutes of CPython 3.11 retrying a failed allocation while it unwinds the MemoryError."""

from __future__ import annotations

import subprocess
import sys

from tiersim.cli.app import memory_line
from tiersim.paths import bundled

GROW = """
import os, resource
import tiersim.cli.run, tiersim.runner
from tiersim.cli import app
from tiersim.paths import bundled

PAD = "\\n".join(f"    x{i} = {i}" for i in range(300))  # the handler past instruction 256
LOOP = "held = (held, x2)\\n            x2 = x1 + 1000"  # a new int fails last: none is freed
exec("def grow(*args, **kwargs):\\n" + PAD + "\\n    held = None\\n    with open('/dev/null'):\\n"
     "        while True:\\n            " + LOOP + "\\n", globals())
tiersim.runner.run_into = grow  # a run whose objects fill the address space
mapped = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
limit = mapped + 300 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
print(limit, flush=True)
tiny = str(bundled("scenarios", "tiny.yaml"))
app(prog_name="tiersim", args=["run", tiny, "--no-baselines", "--no-report"])
"""
"""A ``tiersim run`` whose simulation (``run_into``, replaced) grows small objects inside a
``with`` block whose handler sits past instruction 256 (its offset is then a new int, which
cannot be made once memory is gone), under a limit 300 MiB above what the process maps.
Unguarded it spins (killed after 60 s: status 137, nothing printed); a list would not (its
array's growth is the allocation that fails, leaving room), nor a loop whose failure frees
an int."""


def test_a_run_that_fills_the_address_space_ends_with_one_line():
    """Unguarded, the run reached the limit and CPython spun in the ``with`` block's unwinding
    for as long as it was let (a 10^7-request burst under ``prlimit --as=4000000000``: 12
    minutes, deaf to SIGTERM, until killed); the guard stops it with 128 MiB left, and the
    command ends with the one out-of-memory line and status 1."""
    done = subprocess.run([sys.executable, "-c", GROW], capture_output=True, text=True,
                          timeout=120)
    limit = int(done.stdout.split()[0])
    said = (f"stopped with 128 MiB left of the {limit / 1e9:,.1f} GB address-space limit, "
            "ulimit -v")
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.splitlines() == [f"Error: {memory_line(MemoryError(said))}"]


def test_a_run_under_a_limit_it_fits_is_not_stopped(tmp_path):
    """The guard is armed under any address-space limit, and a run that fits with room to spare
    runs as before (the tiny scenario under 4 GB) and writes its results."""
    import resource

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (4_000_000_000, 4_000_000_000))

    tiny = str(bundled("scenarios", "tiny.yaml"))
    done = subprocess.run([sys.executable, "-m", "tiersim", "run", tiny, "--out",
                           str(tmp_path / "out"), "--no-baselines", "--no-report"],
                          capture_output=True, text=True, preexec_fn=limited, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out" / "summary.json").exists()


REFUSE = """
import sys
from tiersim import inputs
from tiersim.cli import app

inputs.memory_room = lambda: (float(sys.argv[1]), "its address-space limit, ulimit -v")
app(prog_name="tiersim", args=["run", sys.argv[2], "--no-baselines", "--no-report"])
"""
"""``tiersim run`` of a scenario with the room left for the run set to ``argv[1]`` bytes."""


def _tiny_requests() -> tuple[str, int]:
    """The tiny scenario's trace file and how many of its requests the run simulates."""
    from tiersim.inputs import load_scenario_trace
    from tiersim.scenario import load_scenario

    tiny = str(bundled("scenarios", "tiny.yaml"))
    loaded = load_scenario_trace(load_scenario(tiny), tiny)
    return loaded.origin.path, len(loaded.table)


def test_a_trace_run_too_big_for_the_room_left_is_refused_before_the_engine():
    """A trace whose requests cannot fit in what the process may still take, at the engine's
    104 bytes a request at least, is refused before the engine is built: one line naming the
    trace, the estimate and the fix, status 1 (a 10^7-request trace ran until memory was
    gone). One byte more room and the same run goes ahead."""
    path, n = _tiny_requests()
    need = n * 104
    tiny = str(bundled("scenarios", "tiny.yaml"))
    refused = subprocess.run([sys.executable, "-c", REFUSE, str(need - 1), tiny],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1, refused.stderr[-2000:]
    assert refused.stderr.splitlines() == [
        f"Error: {path}: its {n:,} requests to simulate need at least about 0.0 GB at about 104 "
        "bytes a request, more than the 0.0 GB this process may still use (its address-space "
        "limit, ulimit -v); replay a part of it (a shorter trace.window, or a sample of its "
        "rows), or run where more memory is allowed"]
    ran = subprocess.run([sys.executable, "-c", REFUSE, str(need), tiny],
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
