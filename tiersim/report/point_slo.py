"""A sweep point's "meets SLOs" verdict with the figures that missed: ``no (TTFT p99 3.63 s
over its 2 s)``, as ``tiersim run`` names them in its saving row
(:meth:`tiersim.results.RunResult.missed_words`). Before, the console's verdict line and the
report's Points table read a bare "no", and which SLO a point missed, and by how much, had to
be found in sweep.parquet. A point that missed only a tier's own p99 (``slo.scope: tier``)
or the task limit (``slo.session_p99_s``) read a bare "no" until round 56; those misses are
named too, as the run names them."""

from __future__ import annotations

from tiersim.results_figures import missed_figure, within_limit

SLO_COLUMNS = (
    "ttft_p99_s",
    "slo_ttft_p99_s",
    "tpot_p99_s",
    "slo_tpot_p99_s",
    "e2e_p99_s",
    "slo_e2e_p99_s",
    "dropped",
    "slo_scope",
    "sessions.task_latency_p99_s",
    "slo_session_p99_s",
)
"""The sweep table's columns :func:`slo_cell` reads, beside each tier's p99s
(:func:`tier_p99_columns`)."""

_HELD = (
    ("TTFT", "ttft_p99_s", "slo_ttft_p99_s"),
    ("TPOT", "tpot_p99_s", "slo_tpot_p99_s"),
    ("end-to-end", "e2e_p99_s", "slo_e2e_p99_s"),
)


def tier_p99_columns(columns) -> list[str]:
    """Each tier's p99 columns among a sweep table's ``columns``
    (``tiers.<name>.ttft_p99_s`` ...), which :func:`slo_cell` reads under ``slo.scope:
    tier``, in the table's order."""
    ends = tuple(f".{column}" for _, column, _ in _HELD)
    return [c for c in columns if c.startswith("tiers.") and c.endswith(ends)]


def slo_cell(met: bool | None, row: dict) -> str | None:
    """The cell: "yes"; "no" with what the point missed, as ``tiersim run`` words it: the
    fleet's p99s, each tier's own under ``slo.scope: tier`` ("tier fp8's TTFT p99 ..."), the
    task latency p99 (``slo.session_p99_s``) and the drops; a bare "no" only where the row
    holds none of them; None where it was not checked."""
    if met is None:
        return None
    if met:
        return "yes"
    missed = [*_p99s_over(row), *_tiers_over(row), *_task_over(row), *_dropped(row)]
    return f"no ({'; '.join(missed)})" if missed else "no"


def _p99s_over(row: dict, whose: str = "", prefix: str = "") -> list[str]:
    out = []
    for name, column, slo in _HELD:
        p99, limit = _number(row.get(prefix + column)), _number(row.get(slo))
        if p99 is None or limit is None or within_limit(p99, limit):
            continue
        out.append(f"{whose}{name} p99 {missed_figure(p99, limit)} s over its "
                   f"{limit:.10g} s")
    return out


def _tiers_over(row: dict) -> list[str]:
    """Each tier's own p99s over the SLOs, where the point holds each tier to them."""
    if row.get("slo_scope") != "tier":
        return []
    names = dict.fromkeys(c[len("tiers."):c.rindex(".")] for c in tier_p99_columns(row))
    return [miss for name in names
            for miss in _p99s_over(row, f"tier {name}'s ", f"tiers.{name}.")]


def _task_over(row: dict) -> list[str]:
    """The task latency p99 over ``slo.session_p99_s``."""
    p99 = _number(row.get("sessions.task_latency_p99_s"))
    limit = _number(row.get("slo_session_p99_s"))
    if p99 is None or limit is None or within_limit(p99, limit):
        return []
    return [f"task latency p99 {missed_figure(p99, limit)} s over its {limit:.10g} s"]


def _dropped(row: dict) -> list[str]:
    count = _number(row.get("dropped"))
    if not count:
        return []
    return [f"{int(count):,} request{'s' if count != 1 else ''} dropped"]


def _number(value) -> float | None:
    """A sweep cell as a float, None where missing (None or NaN)."""
    return None if value is None or value != value else float(value)
