"""Round 27 polish: counts a user reads carry thousands separators; the trace converter
refuses to write into an installed package; the address-space guard's stop exits fast."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from tiersim.cli.analytic import _estimate_lines
from tiersim.cli.run import prefix_lines
from tiersim.sweep.progress import ProgressLines
from tiersim.trace.formats import dropped_notes


def _offload_tier() -> SimpleNamespace:
    """A tier with prefix caching and offload levels, with counts above a thousand."""
    return SimpleNamespace(name="t", prefix_hit_rate=0.5, prefix_hit_by_level={"gpu": 0.5},
                           prefix_hit_bound=0.6, offload_loads=1061, offload_recomputes=1234,
                           prefix_recompute_rate=0.001)


def test_offloaded_prefix_counts_have_separators():
    (line,) = prefix_lines(SimpleNamespace(tiers=[_offload_tier()]))
    assert "offloaded prefixes 1,061 loaded, 1,234 recomputed" in line


def test_analytic_estimate_count_has_separators():
    (line,) = _estimate_lines({"source": "s.yaml", "n": 2867, "cheap": "a", "top": "b"})
    assert line.startswith("estimated from s.yaml (2,867 requests, a vs b)")


def test_sweep_progress_counts_have_separators():
    lines = ProgressLines(Console(quiet=True))
    lines.total, lines.done = 12000, 1500
    assert lines.line(1.0).startswith("sweep: 1,500/12,000 points (12%)")


def test_dropped_row_counts_have_separators():
    (note,) = dropped_notes(1500, 12000, 0, 0, 0.0, ("output tokens", "", "not served"))
    assert note.startswith("dropped 1,500 of 12,000 rows with 0 output tokens")
    (note,) = dropped_notes(1500, 12000, 0, 0, 0.0, ("output tokens", "", "x"), whole=False)
    assert "of the first 12,000 (read up to the window's end) rows" in note


CONVERT = Path(__file__).resolve().parents[1] / "tiersim" / "traces" / "convert.py"


def _installed_convert(tmp_path: Path) -> Path:
    """A copy of the trace converter as a wheel installs it: site-packages/tiersim/traces,
    with no pyproject.toml above the package."""
    folder = tmp_path / "site-packages" / "tiersim" / "traces"
    folder.mkdir(parents=True)
    return Path(shutil.copy(CONVERT, folder / "convert.py"))


def _convert(script: Path, *args: str) -> subprocess.CompletedProcess:
    """Run a converter copy (tiersim imported from this checkout)."""
    env = {**os.environ, "PYTHONPATH": str(CONVERT.parents[2])}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True,
                          text=True, env=env, cwd=script.parent, timeout=120)


def test_installed_converter_refuses_to_write_into_the_package(tmp_path):
    script = _installed_convert(tmp_path)
    done = _convert(script, str(tmp_path))  # the source folder's files do not matter here
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{script.parent}: is the installed tiersim package")
    assert "source checkout" in line and "--out" in line
    assert sorted(p.name for p in script.parent.iterdir()) == ["convert.py"]


def test_installed_converter_needs_its_source_folder(tmp_path):
    script = _installed_convert(tmp_path)
    done = _convert(script, "--out", str(tmp_path / "out"))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert "no SOURCE_DIR given" in line and "source checkout" in line


def test_converter_names_every_missing_source_before_writing(tmp_path):
    out = tmp_path / "out"
    done = _convert(CONVERT, str(tmp_path), "--out", str(out))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{tmp_path}: lacks AzureLLMInferenceTrace_code.csv, ")
    assert "sharegpt_8k_filtered_stats_llama2_tokenizer.csv" in line
    assert not out.exists() or not any(out.iterdir())


FILL = """
import atexit, sys
sys.argv = ["tiersim", "run", sys.argv[2], "--out", sys.argv[1], "--no-baselines", "--no-report"]
exec(GROW_SETUP)


class Witness:
    '''An object Python's own exit frees (printing so); the fast exit skips that.'''

    def __del__(self):
        print("freed one by one", flush=True)


witness = Witness()
atexit.register(lambda: print("exit functions ran", flush=True))
app(prog_name="tiersim")  # the console script: the process ends next
"""
"""A ``tiersim run`` the address-space guard stops (the oomfast test's growing simulation), run
as the console script runs it, with an object Python's exit would free and an exit function."""


def test_a_command_the_guard_stopped_exits_at_once_after_its_cleanup(tmp_path):
    """Stopped by the guard, the process went through Python's exit, freeing every object the
    simulation held (about 6 s at 10^7 requests); it now ends through the fast exit a signal's
    stop uses: the lock and output folder it made are removed first, what it printed is
    flushed, exit functions run, and nothing is freed one by one."""
    from test_round27_oomfast import GROW

    setup = GROW.split("tiny = str(")[0]  # the growing run and the limit, not its call
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-c", f"GROW_SETUP = {setup!r}\n" + FILL, str(out),
                           str(bundled_tiny())], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.startswith("Error: out of memory (stopped with 128 MiB left")
    assert "exit functions ran" in done.stdout
    assert "freed one by one" not in done.stdout
    assert not out.exists()  # the folder it made, and its .lock, are gone


def bundled_tiny() -> Path:
    """The bundled tiny scenario."""
    from tiersim.paths import bundled

    return bundled("scenarios", "tiny.yaml")


def test_fidelity_row_counts_have_separators():
    from tiersim.fidelity import describe

    model = {"name": "m", "rows": 1500, "held_out_rows": 300, "tpot_abs_median_pct": 5.0,
             "ttft_abs_median_pct": 6.0}
    line = describe({"engine": "vllm", "gpu": "H200", "rows": 12000, "models_checked": ["m"],
                     "tpot_abs_median_pct": 5.0, "ttft_abs_median_pct": 6.0,
                     "this_model": model, "command": "c"})
    assert "(12,000 rows, 1 model)" in line, line  # one model, not "1 models"
    assert "on its 1,500 rows, 1,200 of which the fit was made on" in line
