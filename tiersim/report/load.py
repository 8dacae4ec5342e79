"""Read what a run, sweep or plan directory holds, for the report.

A directory may hold any of: ``summary.json``, ``requests.parquet``, ``timeseries.parquet`` (a
run), ``sweep.parquet`` (a sweep), ``plan.json`` (a capacity plan) and ``scenario.yaml``. Missing
files leave their part of the report out; a directory with none of them is an error. A run's
summary is read back as a typed :class:`~tiersim.results.RunResult`; a run folder's
``manifest.json`` is checked first, so files from two different runs (an interrupted rerun) are
refused. Every malformed file is a one-line error naming it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from tiersim.errors import TiersimError
from tiersim.jsonio import read_json
from tiersim.manifest import check_manifest
from tiersim.results import PlanResult, RunResult

KNOWN = ("summary.json", "requests.parquet", "timeseries.parquet", "sweep.parquet", "plan.json")


@dataclass
class ReportData:
    """Everything found in a result directory (None where a file is absent)."""

    directory: Path
    run: RunResult | None = None
    requests: pd.DataFrame | None = None
    timeseries: pd.DataFrame | None = None
    sweep: pd.DataFrame | None = None
    sweep_axes: list[str] = field(default_factory=list)
    plan: PlanResult | None = None
    scenario: dict[str, Any] | None = None
    run_id: str | None = None
    shown_as: Path | None = None

    @property
    def kind(self) -> str:
        """``plan``, ``sweep`` or ``run``: the most specific thing the directory holds."""
        return "plan" if self.plan else "sweep" if self.sweep is not None else "run"

    def tier_names(self) -> list[str]:
        """Tier names, cheapest first, from the summary or the scenario."""
        if self.run is not None:
            return [t.name for t in self.run.tiers]
        tiers = (self.scenario or {}).get("tiers") or []
        return [str(t.get("name", i)) for i, t in enumerate(tiers) if isinstance(t, dict)]


def _json(path: Path) -> dict[str, Any] | None:
    """A JSON file's content, or None if it is absent; malformed is an error naming the file."""
    if not path.exists():
        return None
    try:
        return read_json(path, "a results file")
    except TiersimError as error:
        raise TiersimError(f"{error}; rerun the command that wrote it") from None


def _parquet(path: Path) -> pd.DataFrame | None:
    """A Parquet file as a DataFrame, or None if absent."""
    if not path.exists():
        return None
    if not path.is_file():
        raise TiersimError(f"{path}: not a regular file; rerun the command that wrote it")
    try:
        return pd.read_parquet(path)
    except Exception as error:  # noqa: BLE001 - arrow raises many kinds
        raise TiersimError(f"{path}: cannot read Parquet ({error}); rerun the command that "
                           "wrote it") from error


def _scenario(directory: Path) -> dict[str, Any] | None:
    """The scenario dict from ``scenario.yaml`` in the directory (None when absent)."""
    for name in ("scenario.yaml", "scenario.yml"):
        path = directory / name
        if path.exists():
            try:
                doc = yaml.safe_load(path.read_text())
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
                what = " ".join(str(error).split())[:200]
                raise TiersimError(f"{path}: not a readable scenario ({what}); rerun the "
                                   "command that wrote it") from None
            if not isinstance(doc, dict):
                raise TiersimError(f"{path}: not a scenario (expected a YAML mapping); rerun the "
                                   "command that wrote it")
            return doc
    return None


def _plan(path: Path) -> PlanResult | None:
    """The capacity plan, typed; None when absent."""
    data = _json(path)
    return None if data is None else PlanResult.from_json(data, str(path))


def _run(path: Path) -> RunResult | None:
    """The run summary, typed; None when absent."""
    return RunResult.read(path) if path.exists() else None


def read_axes(path: Path) -> list[str]:
    """The axis columns recorded in a ``sweep.parquet`` file's metadata (written by the sweep
    store under ``tiersim.sweep.axes``)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_schema(path).metadata or {}
        return json.loads(meta.get(b"tiersim.sweep.axes", b"[]"))
    except (OSError, ValueError) as error:
        raise TiersimError(f"{path}: cannot read its axes ({error}); rerun the sweep") from None


def load_dir(directory: str | Path, shown_as: str | Path | None = None) -> ReportData:
    """Load a run, sweep or plan directory for :func:`tiersim.report.write_report`.

    ``shown_as``: the folder to name on the page (a run writes its report in a temporary folder
    before moving it into place)."""

    directory = Path(directory)
    if not directory.is_dir():
        raise TiersimError(f"{directory}: not a directory; give the --out folder of a run, "
                           "sweep or plan")
    if not any((directory / name).exists() for name in KNOWN):
        raise TiersimError(f"{directory}: no results here (expected one of {', '.join(KNOWN)}); "
                           "run `tiersim run/sweep/plan --out` into it first")
    run_id = check_manifest(directory)
    run = _run(directory / "summary.json")
    sweep = _parquet(directory / "sweep.parquet")
    axes = read_axes(directory / "sweep.parquet") if sweep is not None else []
    return ReportData(directory, run, _parquet(directory / "requests.parquet"),
                      _parquet(directory / "timeseries.parquet"), sweep, axes,
                      _plan(directory / "plan.json"), _scenario(directory), run_id,
                      Path(shown_as) if shown_as is not None else None)
