"""The docs' example tables, regenerated from the bundled scenarios so that they cannot go stale.

Each table in the docs that is the output of simulating a bundled scenario (and variants of it)
sits between two markers, ``<!-- doc_tables: NAME -->`` and ``<!-- /doc_tables -->``; this
script computes every such table and either checks the docs against it (the default: exit 1,
naming each table that differs) or writes it in (``--write``):

    python benchmarks/doc_tables.py [--write] [--only NAME]

Tables: ``kv_offload`` and ``spec_decode`` and ``disagg`` in docs/serving.md. About 15 s.
``tests/test_docs_figures.py`` runs the check.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tiersim.disagg import compare_splits  # noqa: E402
from tiersim.paths import bundled  # noqa: E402
from tiersim.runner import run_scenario  # noqa: E402
from tiersim.scenario import scenario_from_dict  # noqa: E402

MARK = re.compile(r"(<!-- doc_tables: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)(<!-- /doc_tables -->)",
                  re.S)


def _scenario(name: str, change: Callable[[dict], None] | None = None):
    """A bundled scenario, changed by ``change`` (which edits its YAML document in place)."""
    path = bundled("scenarios", f"{name}.yaml")
    doc = yaml.safe_load(path.read_text())
    if change is not None:
        change(doc)
    return scenario_from_dict(doc, str(path)), path


def _run(name: str, change: Callable[[dict], None] | None = None) -> dict:
    """summary.json of a bundled scenario's run, changed by ``change``."""
    scenario, path = _scenario(name, change)
    return run_scenario(scenario, scenario_path=path).to_json()


def _sig(value: float | None, digits: int = 3) -> str:
    """A number to ``digits`` significant figures (``-`` when missing)."""
    return "-" if value is None else f"{value:.{digits}g}"


def _pct(value: float) -> str:
    """A fraction as a percentage with one decimal."""
    return f"{100 * value:.1f}"


def _scheduler(doc: dict) -> dict:
    """The first tier's scheduler block of a scenario document."""
    return doc["tiers"][0]["scheduler"]


def kv_offload() -> str:
    """Prefix caching with and without offload levels (docs/serving.md)."""
    def host_only(doc):
        _scheduler(doc)["kv_offload"] = _scheduler(doc)["kv_offload"][:1]

    def no_overlap(doc):
        _scheduler(doc)["kv_offload_overlap"] = False

    rows = [("GPU cache only (`prefix_cache.yaml`)", _run("prefix_cache")),
            ("+ host 200 GB", _run("kv_offload", host_only)),
            ("+ host 200 GB + SSD 2 TB, overlap", _run("kv_offload")),
            ("the same, no overlap", _run("kv_offload", no_overlap))]
    out = ["| setting | hit rate (gpu / host / ssd) | bound | TTFT p50 / p99 | TPOT p99 |",
           "|---|---|---|---|---|"]
    for label, s in rows:
        t = s["tiers"]["bf16"]
        levels = list(t["prefix_hit_by_level"].values())
        split = f" ({' / '.join(_pct(v) for v in levels)})" if len(levels) > 1 else ""
        out.append(f"| {label} | {_pct(t['prefix_hit_rate'])}%{split} | "
                   f"{_pct(t['prefix_hit_bound'])}% | {_sig(s['ttft_p50_s'])} s / "
                   f"{_sig(s['ttft_p99_s'])} s | {_sig(1e3 * s['tpot_p99_s'])} ms |")
    return "\n".join(out)


def spec_decode() -> str:
    """Speculative decoding on and off at two loads (docs/serving.md)."""
    def at(scale: float, spec: bool):
        def change(doc):
            doc["trace"]["time_scale"] = scale
            if not spec:
                doc["tiers"][0].pop("speculative")
        return change

    out = ["| load | TPOT p50 off / on | TTFT p50 off / on |", "|---|---|---|"]
    for label, scale in (("0.05x rate (small batches)", 0.05),
                         ("4x rate (256-sequence batches)", 4.0)):
        off, on = (_run("spec_decode", at(scale, spec)) for spec in (False, True))
        out.append(f"| {label} | {1e3 * off['tpot_p50_s']:.1f} / {1e3 * on['tpot_p50_s']:.1f} "
                   f"ms | {_sig(off['ttft_p50_s'])} / {_sig(on['ttft_p50_s'])} s |")
    return "\n".join(out)


def disagg() -> str:
    """Every prefill/decode split of the bundled disagg scenario (docs/serving.md)."""
    scenario, _ = _scenario("disagg")
    out = ["| split | TTFT p50 / p99 | TPOT p50 / p99 | score |", "|---|---|---|---|"]
    for r in compare_splits(scenario):
        out.append(f"| {r.label} | {_sig(r.ttft_p50_s)} / {_sig(r.ttft_p99_s)} s | "
                   f"{_sig(1e3 * r.tpot_p50_s)} / {_sig(1e3 * r.tpot_p99_s)} ms | "
                   f"{_sig(r.score)} |")
    return "\n".join(out)


TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "kv_offload": ("docs/serving.md", kv_offload),
    "spec_decode": ("docs/serving.md", spec_decode),
    "disagg": ("docs/serving.md", disagg),
}


def stale(names: list[str], write: bool) -> list[str]:
    """The tables whose docs text differs from what the code computes now (rewritten in place
    with ``write``); a table whose markers are missing counts as differing."""
    out = []
    for name in names:
        doc_path, make = TABLES[name]
        path = ROOT / doc_path
        text = path.read_text()
        found = {m.group("name"): m for m in MARK.finditer(text)}
        if name not in found:
            out.append(f"{doc_path}: no <!-- doc_tables: {name} --> markers")
            continue
        table = make() + "\n"
        m = found[name]
        if m.group("body") == table:
            continue
        out.append(f"{doc_path}: table {name} differs from what the code computes now")
        if write:
            path.write_text(text[:m.start("body")] + table + text[m.end("body"):])
    return out


def main(argv: list[str] | None = None) -> int:
    """Check (or ``--write``) the docs' tables; 1 when one differs and was not written."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the tables in the docs")
    ap.add_argument("--only", action="append", choices=sorted(TABLES),
                    help="only this table (repeatable)")
    args = ap.parse_args(argv)
    differing = stale(args.only or list(TABLES), args.write)
    for line in differing:
        print(("wrote " if args.write else "stale: ") + line)
    return 1 if differing and not args.write else 0


if __name__ == "__main__":
    sys.exit(main())
