"""A sweep point's "meets SLOs" verdict with the figures that missed: ``no (TTFT p99 3.63 s
over its 2 s)``, as ``tiersim run`` names them in its saving row
(:meth:`tiersim.results.RunResult.missed_words`). Before, the console's verdict line and the
report's Points table read a bare "no", and which SLO a point missed, and by how much, had to
be found in sweep.parquet."""

from __future__ import annotations

from tiersim.results_figures import over_digits, within_limit

SLO_COLUMNS = (
    "ttft_p99_s",
    "slo_ttft_p99_s",
    "tpot_p99_s",
    "slo_tpot_p99_s",
    "e2e_p99_s",
    "slo_e2e_p99_s",
    "dropped",
)
"""The sweep table's columns :func:`slo_cell` reads."""

_HELD = (
    ("TTFT", "ttft_p99_s", "slo_ttft_p99_s"),
    ("TPOT", "tpot_p99_s", "slo_tpot_p99_s"),
    ("end-to-end", "e2e_p99_s", "slo_e2e_p99_s"),
)


def slo_cell(met: bool | None, row: dict) -> str | None:
    """The cell: "yes"; "no" with what the fleet's p99s and drops missed (none named where the
    miss is a tier's own p99, under ``slo.scope: tier``, or a task's); None where it was not
    checked."""
    if met is None:
        return None
    if met:
        return "yes"
    missed = [*_p99s_over(row), *_dropped(row)]
    return f"no ({'; '.join(missed)})" if missed else "no"


def _p99s_over(row: dict) -> list[str]:
    out = []
    for name, column, slo in _HELD:
        p99, limit = _number(row.get(column)), _number(row.get(slo))
        if p99 is None or limit is None or within_limit(p99, limit):
            continue
        out.append(f"{name} p99 {p99:.{over_digits(p99, limit, 3)}g} s over its {limit:.10g} s")
    return out


def _dropped(row: dict) -> list[str]:
    count = _number(row.get("dropped"))
    if not count:
        return []
    return [f"{int(count):,} request{'s' if count != 1 else ''} dropped"]


def _number(value) -> float | None:
    """A sweep cell as a float, None where missing (None or NaN)."""
    return None if value is None or value != value else float(value)
