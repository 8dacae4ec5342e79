"""Round 29, docs: the commands the documents show name flags, scripts and bundled scenarios
that exist (a flag renamed in the code but not in a doc sends its reader to an error)."""

from __future__ import annotations

import functools
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md",
        ROOT / "tiersim" / "profiles" / "README.md", ROOT / "benchmarks" / "data" / "README.md",
        ROOT / "tiersim" / "traces" / "README.md"]

#: A command as the docs write it (in a code block or in running text), then its arguments.
COMMAND = re.compile(
    r"(?P<cmd>tiersim (?:run|sweep|plan|report|disagg|analytic|calibrate|trace inspect)"
    r"|python3? (?:benchmarks/\w+\.py|-m tiersim\.calibrate|tiersim/traces/convert\.py))"
    r"(?P<args>(?:[ \t]+(?:\\\n[ \t]*)?(?:--[a-z][a-z0-9-]*|[\w./<>$=,|\[\]-]+))*)")


@functools.cache
def _flags(cmd: str) -> frozenset[str]:
    """The long options ``cmd --help`` lists."""
    words = cmd.split()
    if words[0] == "tiersim":
        argv = [sys.executable, "-m", "tiersim", *words[1:]]
    else:
        argv = [sys.executable, *words[1:]]
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*argv, "--help"], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)
    assert proc.returncode == 0, f"{cmd} --help: {proc.stderr[-500:]}"
    return frozenset(re.findall(r"--[a-z][a-z0-9-]*", proc.stdout))


def unknown_flags(text: str) -> list[str]:
    """Each ``command --flag`` in ``text`` whose command does not take that flag, and each
    ``python benchmarks/NAME.py`` whose script is not there."""
    bad = []
    for match in COMMAND.finditer(text):
        cmd = match["cmd"]
        script = cmd.split()[-1]
        if script.endswith(".py") and not (ROOT / script).is_file():
            bad.append(f"{cmd}: no such script")
            continue
        bad += [f"{cmd} {flag}" for flag in re.findall(r"--[a-z][a-z0-9-]*", match["args"])
                if flag not in _flags(cmd)]
    return bad


def test_the_check_finds_a_flag_a_command_lacks():
    assert unknown_flags("run `tiersim sweep s.yaml --out o --max-point 3` then "
                         "`python benchmarks/decode_table.py --weight`") == [
        "tiersim sweep --max-point", "python benchmarks/decode_table.py --weight"]
    assert unknown_flags("`python benchmarks/no_such.py --x`") == [
        "python benchmarks/no_such.py: no such script"]
    assert unknown_flags("`tiersim plan s.yaml --max-replicas 12 --out p`") == []


def test_every_command_in_the_docs_takes_the_flags_shown():
    bad = {doc.relative_to(ROOT).as_posix(): unknown_flags(doc.read_text())
           for doc in DOCS}
    assert {doc: flags for doc, flags in bad.items() if flags} == {}


def test_every_bundled_scenario_the_docs_name_exists():
    """``scenarios/NAME.yaml`` names a bundled file (a one-letter name, ``X``, is a
    placeholder)."""
    named = {(doc.relative_to(ROOT).as_posix(), name) for doc in DOCS
             for name in re.findall(r"scenarios/(\w\w+)\.yaml", doc.read_text())}
    assert sorted((doc, name) for doc, name in named
                  if not (ROOT / "tiersim" / "scenarios" / f"{name}.yaml").is_file()) == []


def test_fidelity_doc_quotes_the_decode_tables_as_printed():
    """docs/fidelity.md section 4 quotes ``python benchmarks/decode_table.py`` and its
    ``--precisions`` table row by row. The profile's round-28 tables moved Qwen3-235B-FP8's
    decode step from 33.25 / 37.64 / 42.69 ms to 37.56 / 41.92 / 46.97 ms at batch 1 / 32 /
    128 while the doc kept the old rows."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import decode_table

    doc = (ROOT / "docs" / "fidelity.md").read_text()
    printed = (decode_table.model_markdown(decode_table.model_rows()) + "\n"
               + decode_table.precision_markdown(decode_table.precision_rows()))
    assert [row for row in printed.splitlines() if row not in doc] == []


#: Names the docs quote that are not this repository's: a file of another repository
#: (splitwise-sim's ``traces/test_trace.csv``), a profile's schema (``tiersim.profile/1``) and
#: the bundled traces' Parquet metadata keys.
NOT_OURS = {"traces/test_trace.csv", "tiersim.profile", "tiersim.source",
            "tiersim.source_sha256"}


def _quoted(pattern: str) -> list[tuple[str, int, str]]:
    """(doc, line, match) for each match of ``pattern`` in the docs, less :data:`NOT_OURS`."""
    found = []
    for doc in DOCS:
        text = doc.read_text()
        found += [(doc.relative_to(ROOT).as_posix(), text.count("\n", 0, m.start()) + 1,
                   m.group(1)) for m in re.finditer(pattern, text)
                  if m.group(1) not in NOT_OURS]
    return found


def test_every_repository_path_the_docs_name_exists():
    """``tiersim/...``, ``tests/...``, ``benchmarks/...`` (a module may be named without
    ``.py``); a one-letter name, ``scenarios/X.yaml``, is a placeholder."""
    paths = _quoted(r"(?<![\w/.$-])((?:tiersim|tests|benchmarks|docs|scenarios|traces|profiles)"
                    r"/[\w./-]*\w)")
    assert [(doc, line, path) for doc, line, path in paths
            if not re.search(r"/\w\.yaml$", path) and not (ROOT / path).exists()
            and not (ROOT / f"{path}.py").exists()] == []


def _resolves(name: str) -> bool:
    """Whether a dotted ``tiersim.module.attribute`` name is importable."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(obj, part):
                return False
            obj = getattr(obj, part)
        return True
    return False


def test_every_python_name_the_docs_quote_exists():
    """A quoted ``tiersim.x.y`` (a module, function, class or constant) is importable."""
    assert not _resolves("tiersim.sweep.axes.NO_SUCH_LIMIT")
    assert [found for found in _quoted(r"`(tiersim(?:\.\w+)+)") if not _resolves(found[2])] == []


def test_an_interpolated_gemm_is_not_called_a_measured_table():
    """A dense GEMM off NVIDIA's grid is read between the grid tables around it (ab5bd18);
    its step-time source read 'public measured', the words of a table measured at its very
    shape (before ab5bd18 the same GEMM, anchored, read 'public measured, rescaled to the
    shape'). Qwen3-30B-A3B BF16 at TP 8 reads one GEMM so."""
    from tiersim.hardware import get_model
    from tiersim.paths import bundled
    from tiersim.perf import build_step_model
    from tiersim.perf.profile import load_profile
    from tiersim.summary import source_counts, source_kind

    label = ("interpolated:measured:aiconfigurator vllm 0.24.0 (between grid tables gemm bf16 "
             "n=1024..1536 k=5120)")
    words = "public measured, interpolated between measured shapes"
    assert source_kind(label) == words
    assert source_kind("measured:aiconfigurator vllm 0.24.0") == "public measured"
    profile = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
    step = build_step_model(get_model("Qwen3-30B-A3B"), "bf16", "H200", tp=8, profile=profile)
    assert source_counts(step).get(words) == 1


def test_metrics_doc_explains_every_step_time_source_phrase():
    """docs/metrics.md lists the words ``step_time_source`` can print; the DeepGEMM reading
    ('GEMM table at DeepGEMM's worst-case rows (vLLM 0.12 MoE)') was printed but not listed."""
    from tiersim.summary import SOURCE_ORIGINS, SOURCE_READINGS

    doc = " ".join((ROOT / "docs" / "metrics.md").read_text().split())
    assert [words for words in [*SOURCE_ORIGINS.values(), *SOURCE_READINGS.values()]
            if f"`{words}" not in doc and f"`, {words}`" not in doc] == []
