"""The calibration profile JSON (``tiersim.profile/1``, docs/CONTRACTS.md) as the harness writes it.

Builders for each table kind, a structural validator (``problems``) that needs no third-party
package, and an atomic writer so that a run stopped part-way leaves the last complete file.
Harness tables carry two optional fields beyond the contract: ``kernel`` (what ran) and
``notes``; some also carry ``parts`` (sub-timings, e.g. NVFP4 dequantisation alone).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

SCHEMA = "tiersim.profile/1"
OPS = {"gemm": ("m",), "moe": ("tokens",), "attn_prefill": ("tokens", "context"),
       "attn_decode": ("batch", "context"), "allreduce": ("bytes",)}
KEYS = {"gemm": {"n", "k"}, "moe": {"hidden", "inter", "num_experts", "top_k", "ep", "tp"},
        "attn_prefill": {"heads", "kv_heads", "head_dim"},
        "attn_decode": {"heads", "kv_heads", "head_dim"}, "allreduce": {"tp"}}
SOURCES = {"harness", "public", "roofline"}
PRECISIONS = {"bf16", "fp8", "fp8_block", "w4a16", "nvfp4"}
KV_DTYPES = {"bf16", "fp8"}


def table(op: str, key: dict, axes: dict, latency_s: list, kernel: str, *,
          precision: str | None = None, kv_dtype: str | None = None,
          source: str = "harness", notes: str = "", parts: dict | None = None) -> dict:
    """One table in the contract's layout (plus ``kernel``, ``notes``, optional ``parts``)."""
    out: dict = {"op": op}
    if precision is not None:
        out["precision"] = precision
    if kv_dtype is not None:
        out["kv_dtype"] = kv_dtype
    out.update(source=source, key=key, axes=axes, latency_s=latency_s, kernel=kernel)
    if notes:
        out["notes"] = notes
    if parts:
        out["parts"] = parts
    return out


def profile(name: str, gpu: str, provenance: dict, overhead: dict | None,
            tables: list[dict]) -> dict:
    """A whole profile document."""
    doc = {"schema": SCHEMA, "name": name, "gpu": gpu, "provenance": provenance}
    if overhead is not None:
        doc["overhead_s"] = overhead
    doc["tables"] = tables
    return doc


def _positive_ascending(values: object) -> bool:
    """True for a non-empty list of finite, strictly increasing numbers > 0."""
    if not isinstance(values, list) or not values:
        return False
    if not all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in values):
        return False
    return all(a < b for a, b in zip(values, values[1:], strict=False))


def _latency_ok(lat: object, shape: tuple[int, ...]) -> bool:
    """True when ``lat`` is nested lists of that shape of finite positive numbers."""
    if len(shape) == 1:
        return (isinstance(lat, list) and len(lat) == shape[0]
                and all(isinstance(v, int | float) and math.isfinite(v) and v > 0 for v in lat))
    return (isinstance(lat, list) and len(lat) == shape[0]
            and all(_latency_ok(row, shape[1:]) for row in lat))


def _table_problems(i: int, t: dict) -> list[str]:
    """What is wrong with table ``i``."""
    where, op = f"tables[{i}]", t.get("op")
    if op not in OPS:
        return [f"{where}: op {op!r} not one of {sorted(OPS)}"]
    out = []
    if t.get("source") not in SOURCES:
        out.append(f"{where}: source {t.get('source')!r} not one of {sorted(SOURCES)}")
    if op in ("gemm", "moe") and t.get("precision") not in PRECISIONS:
        out.append(f"{where}: precision {t.get('precision')!r} not one of {sorted(PRECISIONS)}")
    if op.startswith("attn") and t.get("kv_dtype") not in KV_DTYPES:
        out.append(f"{where}: kv_dtype {t.get('kv_dtype')!r} not one of {sorted(KV_DTYPES)}")
    key = t.get("key")
    if not isinstance(key, dict) or set(key) != KEYS[op]:
        out.append(f"{where}: key must have exactly {sorted(KEYS[op])}")
    axes = t.get("axes")
    if not isinstance(axes, dict) or list(axes) != list(OPS[op]):
        return out + [f"{where}: axes must be {list(OPS[op])} in that order"]
    for name, values in axes.items():
        if not _positive_ascending(values):
            out.append(f"{where}: axes.{name} must be ascending positive numbers")
    if not out and not _latency_ok(t.get("latency_s"), tuple(len(v) for v in axes.values())):
        out.append(f"{where}: latency_s must be positive numbers shaped like the axes")
    return out


def problems(doc: dict) -> list[str]:
    """Every structural problem of a profile document ([] when it is valid)."""
    if not isinstance(doc, dict):
        return ["profile must be a JSON object"]
    out = []
    if doc.get("schema") != SCHEMA:
        out.append(f"schema must be {SCHEMA!r}")
    for field in ("name", "gpu"):
        if not isinstance(doc.get(field), str) or not doc.get(field):
            out.append(f"{field} must be a non-empty string")
    if not isinstance(doc.get("provenance"), dict):
        out.append("provenance must be an object")
    over = doc.get("overhead_s")
    if over is not None and not (isinstance(over, dict) and isinstance(over.get("value"), float)
                                 and over["value"] > 0 and over.get("source") in SOURCES):
        out.append("overhead_s must be {value: seconds > 0, source}")
    tables = doc.get("tables")
    if not isinstance(tables, list):
        return out + ["tables must be a list"]
    for i, t in enumerate(tables):
        out += _table_problems(i, t) if isinstance(t, dict) else [f"tables[{i}] not an object"]
    return out


def partial_path(out: str | Path) -> Path:
    """Where a run that does not finish writes what it measured: ``P.partial.json`` for
    ``P.json`` (``P.partial`` for a name without a suffix), beside ``out``."""
    path = Path(out)
    return path.with_name(f"{path.stem}.partial{path.suffix}")


TEMP_NAME_CHARS = 50
"""Characters of a file's name its temporary file keeps (at most 4 bytes each in UTF-8, so the
temporary name stays within the system's 255 bytes a name)."""


def write(path: str | Path, doc: dict) -> None:
    """Write ``doc`` as indented JSON atomically (temporary file, then rename); a write that
    fails leaves no temporary file behind. The temporary file is this process's own
    (``P.json.<pid>.tmp``): two runs writing one ``--out`` shared ``P.json.tmp``, one renamed
    the other's away, and the other's failed rename was recorded as a skipped section. The
    temporary name keeps the first :data:`TEMP_NAME_CHARS` characters of ``path``'s: a long
    name the system takes (up to 255 bytes) ran past that limit once ``.<pid>.tmp`` was added,
    and the measured profile was lost."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name[:TEMP_NAME_CHARS]}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
