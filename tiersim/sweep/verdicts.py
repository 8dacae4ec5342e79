"""What each point of a finished sweep says of itself, on the console: one line per point with
the verdicts the report's Points table gives it (:func:`tiersim.report.page.point_verdicts`:
the router's FPR as counts, whether it met its SLOs and accuracy floor, its saving against
uniform), after its USD/hour and cost over the run where it is provisioned
(:func:`cost_text`). Before, ``tiersim sweep`` printed none of them, and a sweep whose every
point missed its floor read as a set of plans until the report was opened."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from tiersim.arrowfile import arrow_file
from tiersim.errors import escaped
from tiersim.sweep.messages import clipped

POINTS_SHOWN = 20
"""The most points whose verdicts the console prints; the rest are named (sweep.parquet, and
the report's Points table, which shows the first
:data:`~tiersim.report.page.POINTS_IN_REPORT`)."""


SPEC_FIGURES = ("tpot_p50_s",)
"""The figures each point's line gives first where a sweep axis sets a ``speculative`` key:
p50 TPOT, the figure speculative decoding moves most (fresh54's acceptance sweep printed the
verdicts alone, and the report's Points table only the p99s)."""


def _figures(axes: list[str]) -> tuple[str, ...]:
    """The figures (:data:`SPEC_FIGURES`) a sweep over ``axes`` gives on each point's line:
    those where an axis sets a key of a tier's ``speculative`` block, else none."""
    return SPEC_FIGURES if any("speculative" in axis.split(".") for axis in axes) else ()


COST_COLUMNS = ("cost_model", "cost_per_hour_usd", "cost_usd")
"""The sweep table's columns a point's cost on its line is read from (:func:`cost_text`)."""


def cost_text(row: dict) -> str | None:
    """A provisioned point's cost on its line, per hour first as ``tiersim run`` and
    ``tiersim plan`` give it, then over the run: ``cost 7.00 USD/hour (provisioned; 0.234
    USD over the run)``; None for a point costed another way (its ``cost_usd`` is no rate of
    a fleet) or a table without the columns. Before, the line gave no cost, and sweep.parquet
    and the report's Points table the cost over the run alone, while run and plan speak per
    hour."""
    from tiersim.results import figure_text

    rate = row.get("cost_per_hour_usd")
    if row.get("cost_model") != "provisioned" or rate is None or rate != rate:
        return None
    return (f"cost {figure_text(rate)} USD/hour (provisioned; "
            f"{figure_text(row.get('cost_usd'))} USD over the run)")


def _figure_text(column: str, value) -> str:
    """One point's figure in words: ``p50 TPOT 17.1 ms (modelled)``, "-" where unknown."""
    from tiersim.results import figure_text

    return f"p50 TPOT {figure_text(value, ' ms', 1e3)} (modelled)"


def verdict_lines(out: Path, axes: list[str], report: bool,
                  shown: int | None = None) -> list[str]:
    """The console's verdict lines for the sweep in ``out`` (its ``sweep.parquet``, whose
    ``axes`` name each point): a heading, then one line per point of the first ``shown``
    (default :data:`POINTS_SHOWN`) in grid order (``seed 2: router FPR as counts: 1 of 4;
    meets SLOs: yes; ...``), and where there are more, where the rest are (``report``:
    whether report.html was written). Only those rows, and the columns the verdicts need,
    are read. No lines where no point has a verdict (a sweep table written before them)."""
    from tiersim.report.page import POINTS_IN_REPORT, VERDICT_COLUMNS, _axis_cell, point_verdicts
    from tiersim.report.point_slo import tier_p99_columns

    shown = POINTS_SHOWN if shown is None else shown
    path = Path(out) / "sweep.parquet"
    with arrow_file(path) as handle:
        table = pq.ParquetFile(handle)
        total = table.metadata.num_rows
        have = set(table.schema_arrow.names)
        figures = [c for c in _figures(axes) if c in have]
        wanted = [c for c in dict.fromkeys(("point_id", "status", *axes, *figures,
                                            *COST_COLUMNS, *VERDICT_COLUMNS,
                                            *tier_p99_columns(table.schema_arrow.names)))
                  if c in have]
        batches, count = [], 0
        for batch in table.iter_batches(batch_size=shown, columns=wanted):
            batches.append(batch.to_pandas())
            count += batch.num_rows
            if count >= shown:
                break
    points = (pd.concat(batches, ignore_index=True) if batches
              else pd.DataFrame(columns=wanted)).head(shown)
    verdicts = point_verdicts(points)
    if not verdicts or points.empty:
        return []
    lines = ["each point's verdicts (as the report's Points table gives them):"]
    rows = points.to_dict("records")
    for n, row in enumerate(rows):
        named = [f"{axis} {_axis_cell(row[axis])}" for axis in axes if axis in row]
        label = clipped(escaped(", ".join(named) or f"point {row.get('point_id', n)}"), 120)
        if row.get("status", "ok") != "ok":
            lines.append(f"  {label}: failed (no verdict)")
            continue
        said = "; ".join([*(_figure_text(c, row[c]) for c in figures),
                          *filter(None, [cost_text(row)]),
                          *(f"{header}: {cells[n]}" for header, cells in verdicts.items())])
        lines.append(f"  {label}: {said}")
    if total > len(rows):
        where = escaped(path) + (f", and report.html's Points table shows the first "
                                 f"{POINTS_IN_REPORT:,}" if report else "")
        lines.append(f"  ... first {len(rows):,} of {total:,} points shown; every point's "
                     f"figures are in {where}")
    return lines
