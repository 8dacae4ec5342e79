"""The files of ``tiersim run --out DIR``, written so a reader never sees half a run.

Every file (``requests.parquet``, ``timeseries.parquet``, ``summary.json``, ``scenario.yaml``,
``manifest.json`` and, when asked, ``report.html``) is first written into a private temporary
folder inside DIR (``.tiersim-run-*.tmp``), then renamed into place one by one, the manifest
last. The manifest names the run (``run_id``, a hash of the data files' bytes, so the same
scenario and seed give the same id) and the SHA-256 of each data file (requests, time series,
summary); the report embeds the run id. A failed or interrupted rerun leaves the previous run's
files, and a reader that checks the manifest (:func:`tiersim.manifest.check_manifest`, which
``tiersim report`` calls) notices files from two different runs. A rerun without a report
removes the earlier run's ``report.html``. A full disk or read-only folder ends with one line
naming DIR and no temporary folder left behind.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from tiersim.errors import TiersimError
from tiersim.manifest import MANIFEST, manifest
from tiersim.results import RunResult

DATA_FILES = ("requests.parquet", "timeseries.parquet", "summary.json", "scenario.yaml")
"""The files of a run, in the order they are renamed into place."""

MANIFEST_FILES = ("requests.parquet", "timeseries.parquet", "summary.json")
"""The files the manifest vouches for (the scenario copy is a record that may be edited)."""

TEMP_PREFIX = ".tiersim-run-"


def make_out_dir(out: Path) -> None:
    """Create the output folder (before simulating, so a bad --out fails at once)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise TiersimError(f"{out}: --out must be a folder, and a file is in the way") from None
    except OSError as err:
        raise TiersimError(f"{out}: cannot create the folder ({err.strerror}); choose another "
                           "--out folder") from None


def parquet_bytes(table: pd.DataFrame) -> bytes:
    """A table as Parquet file bytes."""
    buffer = io.BytesIO()
    table.to_parquet(buffer, index=False)
    return buffer.getvalue()


def run_files(run: RunResult, requests: pd.DataFrame, timeseries: pd.DataFrame,
              scenario_text: str) -> dict[str, bytes]:
    """The data files' bytes by name."""
    return {"requests.parquet": parquet_bytes(requests),
            "timeseries.parquet": parquet_bytes(timeseries),
            "summary.json": run.dumps().encode(),
            "scenario.yaml": scenario_text.encode()}


def remove_stale_temps(out: Path) -> None:
    """Delete temporary folders a killed run left in ``out``."""
    for path in out.glob(f"{TEMP_PREFIX}*.tmp"):
        shutil.rmtree(path, ignore_errors=True)


def write_run(out: Path, run: RunResult, requests: pd.DataFrame, timeseries: pd.DataFrame,
              scenario_text: str, report: bool = False) -> dict:
    """Write a run's files into ``out`` atomically (see the module docstring); return the
    manifest."""
    make_out_dir(out)
    remove_stale_temps(out)
    files = run_files(run, requests, timeseries, scenario_text)
    info = manifest({k: v for k, v in files.items() if k in MANIFEST_FILES})
    temp = None
    try:
        temp = Path(tempfile.mkdtemp(prefix=TEMP_PREFIX, suffix=".tmp", dir=out))
        for name, data in files.items():
            (temp / name).write_bytes(data)
        (temp / MANIFEST).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        names = list(files)
        if report:
            from tiersim.report import write_report

            write_report(temp, shown_as=out)
            names.append("report.html")
        stale = out / "report.html"
        if not report and stale.exists():
            stale.unlink()  # it describes an earlier run, not this one
        for name in [*names, MANIFEST]:
            os.replace(temp / name, out / name)
    except OSError as err:
        raise TiersimError(f"{out}: cannot write results ({err.strerror or err}); free space or "
                           "choose another --out folder") from None
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    return info
