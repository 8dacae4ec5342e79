"""Read what a run, sweep or plan directory holds, for the report.

A directory may hold any of: ``summary.json``, ``requests.parquet``, ``timeseries.parquet`` (a
run), ``sweep.parquet`` (a sweep), ``plan.json`` (a capacity plan) and ``scenario.yaml``. Missing
files leave their part of the report out; a directory with none of them is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tiersim.errors import TiersimError

KNOWN = ("summary.json", "requests.parquet", "timeseries.parquet", "sweep.parquet", "plan.json")


@dataclass
class ReportData:
    """Everything found in a result directory (None where a file is absent)."""

    directory: Path
    summary: dict[str, Any] | None = None
    requests: pd.DataFrame | None = None
    timeseries: pd.DataFrame | None = None
    sweep: pd.DataFrame | None = None
    sweep_axes: list[str] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    scenario: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        """``plan``, ``sweep`` or ``run``: the most specific thing the directory holds."""
        return "plan" if self.plan else "sweep" if self.sweep is not None else "run"

    def tier_names(self) -> list[str]:
        """Tier names, cheapest first, from the summary or the scenario."""
        if self.summary and isinstance(self.summary.get("tiers"), dict):
            return list(self.summary["tiers"])
        tiers = (self.scenario or {}).get("tiers") or []
        return [str(t.get("name", i)) for i, t in enumerate(tiers) if isinstance(t, dict)]


def _json(path: Path) -> dict[str, Any] | None:
    """A JSON file's content, or None if it is absent; malformed is an error naming the file."""
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except ValueError as error:
        raise TiersimError(f"{path}: not valid JSON ({error}); rerun the command that wrote it")\
            from error


def _parquet(path: Path) -> pd.DataFrame | None:
    """A Parquet file as a DataFrame, or None if absent."""
    if not path.exists():
        return None
    try:
        return pd.read_parquet(path)
    except Exception as error:  # noqa: BLE001 - arrow raises many kinds
        raise TiersimError(f"{path}: cannot read Parquet ({error}); rerun the command that "
                           "wrote it") from error


def _scenario(directory: Path, summary: dict | None) -> dict[str, Any] | None:
    """The scenario dict: ``scenario.yaml`` in the directory, else one embedded in the summary."""
    for name in ("scenario.yaml", "scenario.yml"):
        path = directory / name
        if path.exists():
            doc = yaml.safe_load(path.read_text())
            return doc if isinstance(doc, dict) else None
    embedded = (summary or {}).get("scenario")
    return embedded if isinstance(embedded, dict) else None


def load_dir(directory: str | Path) -> ReportData:
    """Load a run, sweep or plan directory for :func:`tiersim.report.write_report`."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TiersimError(f"{directory}: not a directory; give the --out folder of a run, "
                           "sweep or plan")
    if not any((directory / name).exists() for name in KNOWN):
        raise TiersimError(f"{directory}: no results here (expected one of {', '.join(KNOWN)}); "
                           "run `tiersim run/sweep/plan --out` into it first")
    summary = _json(directory / "summary.json")
    sweep = _parquet(directory / "sweep.parquet")
    axes: list[str] = []
    if sweep is not None:
        from tiersim.sweep.store import read_axes

        axes = read_axes(directory / "sweep.parquet")
    return ReportData(directory, summary, _parquet(directory / "requests.parquet"),
                      _parquet(directory / "timeseries.parquet"), sweep, axes,
                      _json(directory / "plan.json"), _scenario(directory, summary))
