"""Put NVIDIA's ``fp8_scale`` tables into the shipped profiles.

``python benchmarks/fp8_scale_tables.py`` (needs aiconfigurator-core, the ``[aic]`` extra): for
every profile imported from NVIDIA's tables (``tiersim/profiles/*_aiconfigurator_vllm.json`` and
``benchmarks/data/*_aiconfigurator_{trtllm,sglang}.json``), the time a per-tensor FP8 GEMM spends
computing its input's scale (NVIDIA's ``compute_scale`` rows of that GPU and engine: dynamic
less static quantisation) at every ``k`` of the profile's per-tensor FP8 GEMM tables. A checkpoint
with static input scales reads its per-tensor FP8 GEMMs without it
(``tiersim.perf.profile.ProfileOps.gemm``, ``static_scale``). Earlier ``fp8_scale`` tables of a
profile are replaced; nothing else in it changes. ``--check`` writes nothing and exits 1 where a
profile's tables differ from what the import gives now.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tiersim.perf.aic_importer import Importer  # noqa: E402

PROFILES = (sorted((ROOT / "tiersim" / "profiles").glob("*_aiconfigurator_vllm.json"))
            + sorted((ROOT / "benchmarks" / "data").glob("*_aiconfigurator_*.json")))
_GPUS = {"H200": "h200", "H100": "h100", "B200": "b200"}


def fp8_widths(doc: dict) -> list[int]:
    """Every ``k`` of the profile's per-tensor FP8 GEMM tables."""
    return sorted({int(t["key"]["k"]) for t in doc["tables"]
                   if t["op"] == "gemm" and t.get("precision") == "fp8"})


def scale_tables(doc: dict) -> list[dict]:
    """The ``fp8_scale`` tables (as the profile JSON writes them) for ``doc``'s GPU and engine."""
    imp = Importer(_GPUS[doc["gpu"]], doc["provenance"]["engine"])
    tables = (imp.fp8_scale(k) for k in fp8_widths(doc))
    return [t.to_json() for t in tables if t is not None]


def with_scale_tables(doc: dict) -> dict:
    """``doc`` with its ``fp8_scale`` tables replaced by :func:`scale_tables`."""
    kept = [t for t in doc["tables"] if t["op"] != "fp8_scale"]
    return {**doc, "tables": kept + scale_tables(doc)}


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every shipped profile's ``fp8_scale`` tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args(argv)
    stale = 0
    for path in PROFILES:
        doc = json.loads(path.read_text())
        new = with_scale_tables(doc)
        count = sum(t["op"] == "fp8_scale" for t in new["tables"])
        if args.check:
            same = json.dumps(new) == json.dumps(doc)
            stale += not same
            print(f"{path.relative_to(ROOT)}: {count} fp8_scale tables, "
                  f"{'as shipped' if same else 'DIFFERENT from the shipped file'}")
            continue
        path.write_text(json.dumps(new, separators=(",", ":")) + "\n")
        print(f"{path.relative_to(ROOT)}: {count} fp8_scale tables")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
