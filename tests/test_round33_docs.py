"""Round 33, docs: the call signatures the documents quote name the parameters the code takes.

docs/CONTRACTS.md quoted ``tiersim.report.write_report(dir)``, ``kv_blocks(model, gpu, tier)``,
``hits(keys, cfg)`` and ``ledger(cost_model, fleet, result, duration)`` after the code's
parameters had become ``directory``, ``model_ref``, ``key`` and ``duration_s``; a reader calling
them by keyword got a TypeError. tests/test_round29_docs.py checks that a quoted name exists;
this checks what is quoted between its brackets.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tiersim

ROOT = Path(__file__).resolve().parents[1]
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

#: A quoted call: `name(arguments)`, perhaps followed by `-> result`, in one code span.
CALL = re.compile(r"`((?:tiersim\.)?[A-Za-z_][\w.]*)\(([^`]*?)\)(?:\s*->[^`]*)?`")

#: The one document that quotes calls by their bare names (the section names the module);
#: elsewhere a bare ``run(...)`` or ``max(...)`` is another program's or a formula.
BARE_NAMES_IN = "docs/CONTRACTS.md"

#: Calls quoted in a form the signature does not spell: ``score`` takes a router's
#: ``Assignment`` in place of ``final_tier`` (its docstring gives the same form).
OTHER_FORMS = {("score", "df, assignment, tiers")}


@functools.cache
def _modules() -> tuple:
    """Every tiersim module but the ``__main__`` ones (importing those runs the CLI)."""
    names = [info.name for info in pkgutil.walk_packages(tiersim.__path__, "tiersim.")
             if not info.name.endswith("__main__")]
    return tuple(importlib.import_module(name) for name in names)


def _attribute(obj, dotted: str):
    """``obj.a.b`` for ``dotted`` "a.b", or None."""
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def resolve(name: str) -> list:
    """The callables a quoted name can mean: the one a full ``tiersim.x.y`` name imports, else
    every distinct public callable of that (dotted) name in tiersim's modules."""
    if name.startswith("tiersim."):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                module = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            found = _attribute(module, ".".join(parts[cut:])) if parts[cut:] else module
            return [found] if callable(found) else []
        return []
    found = {}
    for module in _modules():
        obj = _attribute(module, name)
        if callable(obj) and not inspect.ismodule(obj):
            found[id(obj)] = obj
    return list(found.values())


def quoted_parameters(arguments: str) -> tuple[list[str], bool]:
    """The parameter names in a quoted argument list (``a, b=1, *, c=None``) and whether it
    says it leaves some out (``...``). Anything else quoted there (a value, an expression)
    is not a name and is skipped by the caller."""
    text = " ".join(arguments.split())
    names = [piece.split("=")[0].strip() for piece in re.split(r",(?![^()\[\]]*[)\]])", text)]
    return [n for n in names if n and n != "*"], "..." in text


def signature_problem(name: str, arguments: str) -> str | None:
    """Why the quoted ``name(arguments)`` does not match the code, or None (also where the name
    means no one callable: tests/test_round29_docs.py checks the full names exist)."""
    if not arguments.strip() or (name, " ".join(arguments.split())) in OTHER_FORMS:
        return None  # `f()` names the function; OTHER_FORMS are checked by their own tests
    found = resolve(name)
    if len(found) != 1:
        return None
    try:
        actual = [p for p in inspect.signature(found[0]).parameters if p not in ("self", "cls")]
    except (TypeError, ValueError):
        return None
    if not actual or all(inspect.signature(found[0]).parameters[p].kind in
                         (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
                         for p in actual):
        return None  # a wrapper taking (*args, **kwargs): nothing to compare
    quoted, partial = quoted_parameters(arguments)
    names = [n for n in quoted if re.fullmatch(r"\w+", n)]
    if len(names) != len(quoted) and not partial:
        return None  # an example call with values, not a signature
    unknown = [n for n in names if n not in actual]
    if unknown:
        return f"{name}: no parameter {', '.join(unknown)} (it takes {', '.join(actual)})"
    if [n for n in actual if n in names] != names:
        return f"{name}: parameters out of order (it takes {', '.join(actual)})"
    required = [p.name for p in inspect.signature(found[0]).parameters.values()
                if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.name not in ("self", "cls")]
    missing = [n for n in required if n not in names]
    if missing and not partial:
        return f"{name}: leaves out required {', '.join(missing)}"
    return None


def test_the_check_finds_a_renamed_or_missing_parameter():
    assert signature_problem("tiersim.report.write_report", "dir") == (
        "tiersim.report.write_report: no parameter dir (it takes directory, shown_as)")
    assert signature_problem("tiersim.costs.ledger", "cost_model, fleet, result") == (
        "tiersim.costs.ledger: leaves out required duration_s")
    assert signature_problem("tiersim.costs.ledger", "fleet, cost_model, result, duration_s") == (
        "tiersim.costs.ledger: parameters out of order "
        "(it takes cost_model, fleet, result, duration_s)")
    assert signature_problem("tiersim.costs.ledger", "cost_model, ...") is None
    assert signature_problem("tiersim.trace.trace_stats", "df, window_s=None, starts=None") is None


def test_every_signature_the_docs_quote_matches_the_code():
    bad = []
    for doc in DOCS:
        text = doc.read_text()
        bare = doc.relative_to(ROOT).as_posix() == BARE_NAMES_IN
        for match in CALL.finditer(text):
            if not bare and not match[1].startswith("tiersim."):
                continue
            problem = signature_problem(match[1], match[2])
            if problem:
                line = text.count("\n", 0, match.start()) + 1
                bad.append(f"{doc.relative_to(ROOT).as_posix()}:{line}: {problem}")
    assert bad == []


#: Every command whose options a reader looks up in the docs, as typed after ``tiersim``.
COMMANDS = ["run", "sweep", "plan", "report", "disagg", "analytic", "calibrate",
            "calibrate --from aiconfigurator", "trace inspect"]


def _help_flags(command: str) -> set[str]:
    """The long options ``tiersim COMMAND --help`` lists (both forms of an on/off pair)."""
    env = {**os.environ, "COLUMNS": "250", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "tiersim", *command.split(), "--help"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, f"tiersim {command} --help: {proc.stderr[-500:]}"
    return set(re.findall(r"--[a-z][a-z0-9-]*", proc.stdout)) - {"--help", "--from"}


def undocumented(flags: set[str], text: str) -> list[str]:
    """The flags ``text`` never names; an on/off pair (``--report`` / ``--no-report``) is
    documented by either form."""
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])", text))
    named_pairs = {_switch(flag) for flag in named}
    return sorted(flag for flag in flags if flag not in named
                  and not (_switch(flag) in named_pairs and f"--no-{_switch(flag)}" in flags))


def _switch(flag: str) -> str:
    """The setting an on/off flag turns: ``report`` for ``--report`` and ``--no-report``."""
    return flag[len("--no-"):] if flag.startswith("--no-") else flag[2:]


def test_the_option_check_sees_a_missing_option_and_takes_either_form_of_a_pair():
    assert undocumented({"--out", "--workers"}, "`--out DIR`, `--workers-max`") == ["--workers"]
    assert undocumented({"--report", "--no-report"}, "`--no-report` skips it") == []


def test_every_option_of_every_command_is_documented():
    """Each option ``tiersim COMMAND --help`` lists is named in README.md or docs/*.md (the
    README's command list named neither ``trace inspect --format`` nor ``analytic``'s
    ``--p``, ``--eps``, ``--delta``, ``--floor``, ``--cheap`` and ``--top``)."""
    text = "\n".join(doc.read_text() for doc in DOCS)
    missing = {command: undocumented(_help_flags(command), text) for command in COMMANDS}
    assert {command: flags for command, flags in missing.items() if flags} == {}


#: Keys of summary.json that are names the scenario gives (tiers, cache levels), not metrics.
NAMED_BY_SCENARIO = {"tiers", "uniform", "tier_shares", "first_tier_shares", "uniform_accuracy",
                     "prefix_hit_by_level", "sources", "scenario", "analytic", "step_types",
                     "final_tier_shares"}

#: Maps keyed by the profile's operator tables (``profile.sources.<tier>.<table>``).
KEYED_BY_TABLE = {("profile", "sources", "*")}


def summary_keys(data, found: set[str] | None = None, path: tuple = ()) -> set[str]:
    """Every key of a summary.json map, nested maps included; under a key whose keys are the
    scenario's names (:data:`NAMED_BY_SCENARIO`) only the keys of the maps they hold, and
    under one keyed by operator tables (:data:`KEYED_BY_TABLE`) none."""
    found = set() if found is None else found
    if not isinstance(data, dict) or path[-3:] in KEYED_BY_TABLE:
        return found
    for key, value in data.items():
        found.add(key)
        if key in NAMED_BY_SCENARIO and isinstance(value, dict):
            for inner in value.values():
                summary_keys(inner, found, (*path, key, "*"))
        else:
            summary_keys(value, found, (*path, key))
    return found


def quoted_words(text: str) -> set[str]:
    """The words in ``text``'s code: fenced blocks and inline code spans (a fence's three
    backticks are taken out first, so they cannot pair with an inline one)."""
    fences = re.findall(r"^```.*?^```", text, flags=re.M | re.S)
    rest = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    code = fences + re.findall(r"`([^`]+)`", rest)
    return {word for span in code for word in re.findall(r"\w+", span)}


def test_quoted_words_keeps_inline_spans_paired_after_a_fence():
    text = "```yaml\nsweep: {a: 1}\n```\n\nthe `copy_digest` (of it) and not this\n"
    assert quoted_words(text) == {"yaml", "sweep", "a", "1", "copy_digest"}


@pytest.mark.parametrize(("scenario", "baselines"), [("tiny", True), ("response_cache", False),
                                                    ("agentic", False)])
def test_every_key_of_a_runs_summary_is_in_the_metrics_doc(scenario, baselines):
    """docs/metrics.md gives every summary.json key its formula. The savings map's
    ``vs_uniform_over_trace_frac`` (the share over the trace beside a saving per hour),
    ``profile.checked``'s signed and aiconfigurator medians, ``analytic.params``' ``cheap`` and
    ``top`` and the response cache's ``mode`` and ``size`` were written by every such run but
    not named there (the sessions' and the cache's ``_p99_s``, ``_without`` only as suffixes)."""
    from tiersim.paths import bundled
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = bundled("scenarios", f"{scenario}.yaml")
    data = run_scenario(load_scenario(path), scenario_path=path, baselines=baselines).to_json()
    doc = (ROOT / "docs" / "metrics.md").read_text()
    quoted = quoted_words(doc)
    assert sorted(summary_keys(data) - quoted) == []


def test_every_key_of_a_plan_is_in_the_planning_doc():
    """docs/planning.md ("What a plan holds") names each plan.json key. A plan's
    ``constraints``, ``reason``, ``feasible``, ``duration_s``, ``gpus_per_replica_tried``, its
    margins' ``limit``, ``margin_frac`` and ``met``, ``one_fewer``'s ``verdict`` and a split's
    ``label``, ``prefill_replicas`` and ``decode_replicas`` were written but not named."""
    from tiersim.cli.plan import plan_capacity
    from tiersim.paths import bundled

    data = plan_capacity(bundled("scenarios", "disagg.yaml"), report=False).to_json()
    assert data["disaggregation"]["splits"]  # the split keys are looked at too
    doc = (ROOT / "docs" / "planning.md").read_text()
    quoted = quoted_words(doc)
    assert sorted(summary_keys(data) - quoted) == []


def test_every_key_of_a_sweeps_files_is_in_the_report_doc(tmp_path):
    """docs/report.md's output table names the keys of ``sweep.json`` and of a point's file;
    ``source``, ``base_digest`` and ``sweep_digest`` (sweep.json) and ``inputs`` (a point's)
    were written but not named, and it listed a ``traceback`` that only a failed point has."""
    import yaml

    from tiersim.paths import bundled
    from tiersim.sweep.run import run_sweep

    doc = yaml.safe_load(bundled("scenarios", "tiny.yaml").read_text())
    doc["trace"]["path"] = str(bundled("traces", "azure2023_code.parquet"))
    doc["sweep"] = {"tiers.bf16.replicas": [1, 2]}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(doc))
    run_sweep(scenario, tmp_path / "out", workers=1, report=False)
    manifest = json.loads((tmp_path / "out" / "sweep.json").read_text())
    points = [json.loads(p.read_text()) for p in (tmp_path / "out" / "points").glob("*.json")]
    assert len(points) == 2 and all(p["status"] == "ok" for p in points)
    quoted = quoted_words((ROOT / "docs" / "report.md").read_text())
    assert sorted(set(manifest) - quoted) == []
    assert sorted({key for point in points for key in point} - quoted) == []


def scenario_keys(model, prefix: str = "", seen: set | None = None) -> list[str]:
    """Every key a scenario may write (``router.cascade.signal_noise``), through the nested
    scenario models; each model once."""
    import typing

    from pydantic import BaseModel

    seen = set() if seen is None else seen
    if model in seen:
        return []
    seen.add(model)

    def models(annotation) -> list:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return [annotation]
        return [m for arg in typing.get_args(annotation) for m in models(arg)]

    keys = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        keys.append(key)
        for inner in models(field.annotation):
            keys += scenario_keys(inner, f"{key}.", seen)
    return keys


def test_every_scenario_key_is_documented():
    """Each key a scenario file may hold is named in README.md or docs/*.md. Seventeen were
    not, among them ``router.lambda``, ``router.cascade.signal_noise``,
    ``router.budget_relative`` and ``workload.difficulty.p_hopeless``: a reader could not
    learn that the ``lagrangian`` policy reads a ``lambda``, nor how to make a cascade's
    confidence signal noisier."""
    from tiersim.scenario import Scenario

    quoted = quoted_words("\n".join(doc.read_text() for doc in DOCS))
    keys = scenario_keys(Scenario)
    assert "router.cascade.signal_noise" in keys
    assert [key for key in keys if key.rsplit(".", 1)[-1] not in quoted] == []
