"""A short text summary of a profile: what was measured, a few values, what was skipped."""

from __future__ import annotations


def _us(seconds: float) -> str:
    """Seconds as microseconds with three significant figures."""
    return f"{seconds * 1e6:.3g} us"


def _row(t: dict) -> str:
    """One line for one table: op, precision or KV dtype, key, first and last latency."""
    label = t.get("precision") or t.get("kv_dtype") or ""
    key = ",".join(f"{k}={v}" for k, v in t["key"].items())
    axes = t["axes"]
    lat = t["latency_s"]
    first, last = (lat[0], lat[-1]) if not isinstance(lat[0], list) else (lat[0][0], lat[-1][-1])
    lo = ",".join(str(v[0]) for v in axes.values())
    hi = ",".join(str(v[-1]) for v in axes.values())
    return (f"{t['op']:<12} {label:<6} {key:<40} "
            f"@{lo}: {_us(first)}  @{hi}: {_us(last)}")


def summarize(doc: dict) -> str:
    """Lines describing the profile for a terminal."""
    prov = doc["provenance"]
    lines = [f"profile {doc['name']} on {prov.get('device', doc['gpu'])}, torch {prov['torch']}"
             f" ({prov.get('status', '?')}, {prov.get('elapsed_s', '?')} s)"]
    if "overhead_s" in doc:
        lines.append(f"overhead     {_us(doc['overhead_s']['value'])}: "
                     f"{doc['overhead_s'].get('kernel', '')}")
    lines += [_row(t) for t in doc["tables"]]
    for c in prov.get("cut", []):
        lines.append(f"cut {c['table']}: {c['points']} points kept ({c['reason']})")
    for s in prov.get("skipped", []):
        lines.append(f"skipped {s['table']}: {s['reason']}")
    return "\n".join(lines)
