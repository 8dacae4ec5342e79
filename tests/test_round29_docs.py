"""Round 29, docs: the commands the documents show name flags, scripts and bundled scenarios
that exist (a flag renamed in the code but not in a doc sends its reader to an error)."""

from __future__ import annotations

import functools
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
