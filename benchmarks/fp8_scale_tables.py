"""Put NVIDIA's ``fp8_scale`` tables into the shipped profiles.

``python benchmarks/fp8_scale_tables.py`` (needs aiconfigurator-core, the ``[aic]`` extra): for
every profile imported from NVIDIA's tables (``tiersim/profiles/*_aiconfigurator_vllm.json`` and
``benchmarks/data/*_aiconfigurator_{trtllm,sglang}.json``), the time a per-tensor FP8 GEMM spends
computing its input's scale (NVIDIA's ``compute_scale`` rows of that GPU and engine: dynamic
less static quantisation) at every ``k`` of the profile's per-tensor FP8 GEMM tables. A checkpoint
with static input scales reads its per-tensor FP8 GEMMs without it
(``tiersim.perf.profile.ProfileOps.gemm``, ``static_scale``). Earlier ``fp8_scale`` tables of a
profile are replaced; nothing else in it changes. An import (``tiersim calibrate --from
aiconfigurator``, ``fidelity_silicon.py --refresh-data``) writes the same tables; this adds them
without importing again. ``--check`` writes nothing and exits 1 where a profile's tables differ
from what the import gives now.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tiersim.hardware.gpus import GPUS  # noqa: E402
from tiersim.perf.aic_importer import Importer, scale_tables  # noqa: E402
from tiersim.perf.profile import load_profile  # noqa: E402

PROFILES = (sorted((ROOT / "tiersim" / "profiles").glob("*_aiconfigurator_vllm.json"))
            + sorted((ROOT / "benchmarks" / "data").glob("*_aiconfigurator_*.json")))
#: A profile's ``gpu`` (the catalogue's display name) -> the importer's GPU key, for every
#: catalogue GPU (a new one, such as B300, needs nothing here).
_GPUS = {gpu.name: key for key, gpu in GPUS.items()}


def profile_scale_tables(path: Path, doc: dict) -> list[dict]:
    """The ``fp8_scale`` tables (as the profile JSON writes them) for the profile at ``path``
    (its GPU and engine, its per-tensor FP8 GEMMs' widths), as an import writes them
    (``tiersim.perf.aic_importer.scale_tables``)."""
    imp = Importer(_GPUS[doc["gpu"]], doc["provenance"]["engine"])
    return [t.to_json() for t in scale_tables(imp, load_profile(path).tables)]


def with_scale_tables(path: Path, doc: dict) -> dict:
    """``doc`` (the profile at ``path``) with its ``fp8_scale`` tables replaced by
    :func:`profile_scale_tables`."""
    kept = [t for t in doc["tables"] if t["op"] != "fp8_scale"]
    return {**doc, "tables": kept + profile_scale_tables(path, doc)}


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) every shipped profile's ``fp8_scale`` tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare, write nothing")
    args = ap.parse_args(argv)
    stale = 0
    for path in PROFILES:
        doc = json.loads(path.read_text())
        new = with_scale_tables(path, doc)
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
