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
import math
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tiersim.errors import Note, TiersimError, shown
from tiersim.jsonio import read_json
from tiersim.manifest import check_manifest, missing_files
from tiersim.results import PlanResult, RunResult, range_problem
from tiersim.scenario import read_yaml

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
    missing: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        """``plan``, ``sweep`` or ``run``: the most specific thing the directory holds."""
        return "plan" if self.plan else "sweep" if self.sweep is not None else "run"

    def tier_names(self) -> list[str]:
        """Tier names, cheapest first, from the summary or the scenario."""
        return run_tier_names(self.run, self.scenario)


def run_tier_names(run: RunResult | None, scenario: dict[str, Any] | None) -> list[str]:
    """A result folder's tier names, cheapest first: summary.json's, else scenario.yaml's."""
    if run is not None:
        return [t.name for t in run.tiers]
    tiers = (scenario or {}).get("tiers") or []
    return [str(t.get("name", i)) for i, t in enumerate(tiers) if isinstance(t, dict)]


def axis_text(value: Any) -> str:
    """A sweep axis value as the report writes it: every point holds a value on every axis,
    so an empty cell is the axis' ``null`` (``profile: null``, the roofline), written so, not
    left out of the axis' values or shown as a missing ``-`` or ``nan``."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "null"
    return str(value)


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
    from tiersim.arrowfile import arrow_file

    try:
        with arrow_file(path) as handle:
            return pd.read_parquet(handle)
    except Exception as error:  # noqa: BLE001 - arrow raises many kinds
        raise TiersimError(f"{path}: cannot read Parquet ({error}); rerun the command that "
                           "wrote it") from error


TEXT_COLUMNS = ("tier", "final_tier", "step_type")
"""Columns of requests.parquet and timeseries.parquet that hold names; every other column the
tool writes holds numbers (or booleans)."""


WHOLE_COLUMNS = {"timeseries.parquet": ("replica", "time_s")}
"""Columns of a result file that tiersim fills on every row: a replica's load series is keyed
by its replica and time, so an empty cell there is a hand edit (a timeseries.parquet whose
replica column was all empty was a ValueError traceback from the queue figure)."""


def check_numeric(frame: pd.DataFrame | None, path: Path) -> None:
    """One line naming the first column the tool writes as numbers that holds something else
    (a hand-edited file), rather than a traceback from a figure. Columns it does not write pass
    (a user may add their own), and so do columns with no value (an empty table's columns are
    of no type), unless the file types them as text: a ``kv_capacity`` of text cells all empty
    ended the report in "TypeError: operation 'rtruediv' not supported for dtype 'str'". An
    infinite number is refused too (a missing one is NaN), and a missing one in the file's
    :data:`WHOLE_COLUMNS`."""
    if frame is None:
        return
    for column in WHOLE_COLUMNS.get(path.name, ()):
        missing = np.flatnonzero(frame[column].isna()) if column in frame else []
        if len(missing):
            raise TiersimError(f"{path}: column {column!r}, row {int(missing[0]) + 1}: empty, "
                               "which tiersim never writes; rerun the command that wrote it")
    from tiersim.summary import REQUEST_COLUMNS, SESSION_COLUMNS, TIMESERIES_COLUMNS

    written = {*REQUEST_COLUMNS, *SESSION_COLUMNS, *TIMESERIES_COLUMNS} - set(TEXT_COLUMNS)
    for column in frame.columns:
        values = frame[column]
        text = isinstance(values.dtype, pd.StringDtype) and len(values) > 0
        if column in written and (values.notna().any() or text) and not (
                pd.api.types.is_numeric_dtype(values.dtype)
                or pd.api.types.is_bool_dtype(values.dtype)):
            raise TiersimError(f"{path}: column {column!r} holds {frame[column].dtype} values, "
                               "not numbers; rerun the command that wrote it")
        if column in written and pd.api.types.is_float_dtype(values.dtype):
            infinite = np.flatnonzero(np.isinf(values.to_numpy()))
            if len(infinite):
                raise TiersimError(f"{path}: column {column!r}, row {int(infinite[0]) + 1}: an "
                                   "infinite value, which tiersim never writes; rerun the "
                                   "command that wrote it")


def check_tiers(frame: pd.DataFrame | None, names: list[str], path: Path,
                columns: tuple[str, ...] = ("tier",)) -> None:
    """One line naming the first row of a load series (or of requests.parquet, whose
    ``columns`` are ``tier`` and ``final_tier``) whose tier is none of the run's ``names`` (a
    hand edit): each such value was drawn as a tier of its own, one line per value (204
    numeric ones took 51 s). Nothing is checked when the folder names no tiers."""
    if frame is None or not names:
        return
    for column in (c for c in columns if c in frame):
        unknown = np.flatnonzero(~frame[column].isin(names).to_numpy())
        if len(unknown):
            value = frame[column].iloc[unknown[0]]
            value = value.item() if isinstance(value, np.generic) else value
            missing = value is None or (isinstance(value, float) and np.isnan(value))
            shown = "empty" if missing else _shown(value)
            raise TiersimError(f"{path}: column {column!r}, row {int(unknown[0]) + 1}: {shown}, "
                               f"none of the run's tiers ({', '.join(names)}); rerun the "
                               "command that wrote it")


def _scenario(directory: Path) -> dict[str, Any] | None:
    """The scenario dict from ``scenario.yaml`` in the directory (None when absent)."""
    for name in ("scenario.yaml", "scenario.yml"):
        path = directory / name
        if path.exists() or path.is_symlink():
            doc, _ = read_yaml(path)  # the scenario reader's limits: a regular file, 1 MB, depth
            if not isinstance(doc, dict):
                raise TiersimError(f"{path}: not a scenario (expected a YAML mapping); rerun the "
                                   "command that wrote it")
            check_scenario_shape(doc, path)
            return doc
    return None


def baselines_in_scenario_order(run: RunResult | None,
                                scenario: dict[str, Any] | None) -> RunResult | None:
    """``run`` with its uniform fleets (``savings.uniform``) in the order ``tiersim run``
    printed them: the run's tiers (``tier_order``), then its baseline-only tiers in the order
    of scenario.yaml's ``baselines:``. summary.json writes its keys sorted and records no
    order of the baseline-only tiers, so read alone they come sorted by name (``baselines:
    [zfp8, afp8]`` read afp8 above zfp8 in the report, below it on the console); a name
    scenario.yaml does not list keeps its place after those it does."""
    if run is None or run.savings is None or not isinstance(scenario, dict):
        return run
    listed = scenario.get("baselines")
    names = [t["name"] for t in listed if isinstance(t, dict) and isinstance(
        t.get("name"), str)] if isinstance(listed, list) else []  # a hand-edited file: text
    rank = {t.name: k for k, t in enumerate(run.tiers)}
    for name in names:
        rank.setdefault(name, len(rank))
    uniform = sorted(run.savings.uniform, key=lambda u: rank.get(u.tier, len(rank)))
    if uniform == list(run.savings.uniform):
        return run
    return replace(run, savings=replace(run.savings, uniform=tuple(uniform)))


SCENARIO_FIX = "rerun the command that wrote it"
"""The fix a malformed scenario.yaml of a result folder names."""


def check_scenario_shape(doc: dict[str, Any], path: Path) -> None:
    """The parts of a result folder's scenario.yaml the report reads have their kinds (null
    allowed): ``trace``, ``router`` and ``slo`` mappings, the SLOs numbers. The manifest does
    not cover the file, so an edited one was an AttributeError or ValueError traceback."""
    _fields(doc, dict.fromkeys(("trace", "router", "slo"), "a mapping"), "", path, SCENARIO_FIX)
    _fields(doc.get("slo") or {}, dict.fromkeys(("ttft_p99_s", "tpot_p99_s"), "a number"),
            "slo.", path, SCENARIO_FIX)


def _check_plan_run(directory: Path, plan: PlanResult | None, run) -> None:
    """Refuse a run beside a plan.json that holds no plan: a plan that finds none removes the
    earlier plan's run after writing plan.json, so such a run is left by a plan stopped in
    between, and describes another plan. Refuse one whose tiers, replicas or GPUs per replica
    are not the plan's chosen fleet too: plan.json, which the manifest does not cover, of
    another plan (a copied-in or edited file) was reported beside this run's figures."""
    if plan is not None and plan.plan is None and run is not None:
        raise TiersimError(f"{directory / 'summary.json'}: a run beside a plan.json that holds "
                           "no plan, so it is an earlier plan's (left by a plan stopped while "
                           f"removing it); rerun `tiersim plan --out {directory}`")
    if plan is not None and plan.plan is not None and run is not None:
        chosen = plan.plan
        gpus = chosen.get("gpus_per_replica") or {}
        planned = {str(t): (n, gpus.get(t, 1)) for t, n in (chosen.get("replicas") or {}).items()}
        ran = {t.name: (t.replicas, t.gpus_per_replica) for t in run.tiers}
        if planned != ran:
            raise TiersimError(f"{directory / 'plan.json'}: plans {_fleet_text(planned)}, and "
                               f"the run beside it (summary.json) ran {_fleet_text(ran)}: the "
                               "files of two plans (manifest.json does not cover plan.json); "
                               f"rerun `tiersim plan --out {directory}`")


def _fleet_text(fleet: dict[str, tuple[int, int]]) -> str:
    """Replicas and GPUs per replica by tier, in words: ``bf16 1 x 1 GPU, w4a16 2 x 1 GPU``."""
    return ", ".join(f"{name} {n} x {g} GPU" for name, (n, g) in sorted(fleet.items()))


def _plan(path: Path) -> PlanResult | None:
    """The capacity plan, typed; None when absent. A plan.json of JSON's ``null`` is no plan,
    refused as ``[]`` is (it was taken for no plan.json at all, and the report left it out
    without a word)."""
    if not path.exists():
        return None
    data = _json(path)
    if isinstance(data, dict):
        check_plan_shape(data, path)
    return PlanResult.from_json(data, str(path))


def _number(value: Any) -> bool:
    """True for a JSON number (not a flag) that a float holds: a whole number of more than
    308 digits is none a plan writes (the report's float of it raised OverflowError)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, float) or abs(value) <= sys.float_info.max


KINDS = {"a number": _number,
         "a number >= 0": lambda v: _number(v) and v >= 0,
         "a whole number": lambda v: isinstance(v, int) and not isinstance(v, bool),
         "a whole number >= 0": lambda v: isinstance(v, int) and not isinstance(v, bool)
         and v >= 0,
         "a text": lambda v: isinstance(v, str),
         "true or false": lambda v: isinstance(v, bool),
         "an object": lambda v: isinstance(v, dict),
         "a mapping": lambda v: isinstance(v, dict),
         "a list": lambda v: isinstance(v, list)}
"""The kinds plan.json's (JSON) and scenario.yaml's (YAML) fields must have, by name, with
their test."""

PLAN_FIELDS = {"replicas": "an object", "gpus_per_replica": "an object", "router": "an object",
               "margins": "an object", "savings": "an object", "one_fewer": "an object",
               "tiers": "a list", "per_tier": "an object", "accuracy_sources": "an object",
               "design": "a text", "cost_model": "a text", "cost_usd": "a number >= 0",
               "cost_per_hour_usd": "a number >= 0", **dict.fromkeys(
                   ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "session_p99_s"), "a number >= 0")}
"""The chosen plan's fields the report reads, and their kinds (its p99s: the p99 line reads
TPOT beside TTFT, and since round 56 the fleet's end-to-end and task latency where held; as
text each ended the report in a TypeError until review56b)."""

DESIGN_FIELDS = {"replicas": "an object", "router": "an object", "design": "a text",
                 "missed": "a text", "cost_usd": "a number >= 0", "ok": "true or false",
                 "baseline_only": "true or false", **dict.fromkeys(
                     ("ttft_p99_s", "tpot_p99_s", "e2e_p99_s", "session_p99_s"),
                     "a number >= 0")}
"""The fields of a runner-up, uniform fleet or evaluated fleet the report reads (the plan
search figure draws an evaluated fleet by its ``ok`` and ``baseline_only`` flags)."""

MARGIN_FIELDS = {"limit": "a number", "value": "a number", "margin": "a number",
                 "met": "true or false"}
"""The fields of each of the chosen plan's constraint margins the report shows."""

SAVING_FIELDS = {"baseline_uniform_tier": "a text", "baseline_uniform_cost_usd": "a number >= 0",
                 "vs_uniform_usd": "a number", "vs_uniform_frac": "a number",
                 "vs_static_split_usd": "a number", "vs_static_split_frac": "a number",
                 "saving_basis": "a text", "baseline_uniform_cost_per_hour_usd": "a number >= 0"}
"""The fields of the chosen plan's saving the report shows (a saving may be below 0)."""

ONE_FEWER_FIELDS = {"replicas": "a whole number >= 0", "verdict": "a text"}
"""The fields of each tier's one-fewer check the report shows."""

PER_TIER_FIELDS = {"prefill": "a whole number >= 0"}
"""The fields of each tier's own figures the report shows (its prefill replicas: a split)."""

SPLIT_FIELDS = {"tier": "a text", "chosen": "an object", "splits": "a list",
                "wall_s": "a number >= 0"}
"""The fields of a planned tier's prefill/decode splits (``disaggregation`` and each of
``other_splits``) the report reads (``wall_s``, round 56: the head line's split comparison)."""

SPLIT_ROW_FIELDS = {"label": "a text", "ttft_p99_s": "a number >= 0",
                    "tpot_p99_s": "a number >= 0", "e2e_p99_s": "a number >= 0",
                    "score": "a number"}
"""The fields of each split the report shows (a score of null is an infinite one; its p99
end-to-end where the plan holds that limit, round 56)."""


def check_plan_shape(doc: dict[str, Any], path: Path) -> None:
    """Every part of plan.json the report reads has its JSON kind (null allowed), so a hand-edited
    or truncated file is one line naming the key, not a traceback or a wrong figure."""
    _fields(doc, {"simulations": "a whole number", "wall_s": "a number",
                  "constraints": "an object", "plan": "an object"}, "", path)
    if "wall_s" in doc:  # printed as a number of seconds: null is no figure a plan writes
        _kind(doc["wall_s"], "a number", "wall_s", path, null=False)
    _fields(doc.get("constraints") or {}, {"ttft_p99_s": "a number", "tpot_p99_s": "a number",
                                           "accuracy_floor": "a number"}, "constraints.", path)
    chosen = doc.get("plan") or {}
    _fields(chosen, PLAN_FIELDS, "plan.", path)
    _counts(chosen, "plan.", path)
    _fields(chosen.get("savings") or {}, SAVING_FIELDS, "plan.savings.", path)
    _fields(chosen.get("accuracy_sources") or {}, {"basis": "a text"},
            "plan.accuracy_sources.", path)
    for key, fields in (("margins", MARGIN_FIELDS), ("one_fewer", ONE_FEWER_FIELDS),
                        ("per_tier", PER_TIER_FIELDS)):
        entries = chosen.get(key) or {}
        for name, entry in entries.items():  # each is a row of the report: null is none
            _kind(entry, "an object", f"plan.{key}.{name}", path, null=False)
            _fields(entry, fields, f"plan.{key}.{name}.", path)
    _splits_shape(doc, path)
    for i, tier in enumerate(chosen.get("tiers") or []):  # the order its tables list tiers in
        _kind(tier, "a text", f"plan.tiers[{i}]", path, null=False)
    for key in ("runners_up", "uniform", "evaluated"):
        _fields(doc, {key: "a list"}, "", path)
        for i, design in enumerate(doc.get(key) or []):
            _kind(design, "an object", f"{key}[{i}]", path, null=False)
            _fields(design, DESIGN_FIELDS, f"{key}[{i}].", path)
            _counts(design, f"{key}[{i}].", path)


def _splits_shape(doc: dict[str, Any], path: Path) -> None:
    """The planned prefill/decode splits (``disaggregation``, ``other_splits``): objects, each
    split in them an object of :data:`SPLIT_ROW_FIELDS`, as the report's split tables read."""
    _fields(doc, {"disaggregation": "an object", "other_splits": "a list"}, "", path)
    splits = [("disaggregation", doc.get("disaggregation"))] if doc.get("disaggregation") else []
    splits += [(f"other_splits[{i}]", split) for i, split in enumerate(doc.get("other_splits")
                                                                        or [])]
    for where, split in splits:
        _kind(split, "an object", where, path, null=False)
        _fields(split, SPLIT_FIELDS, f"{where}.", path)
        _fields(split.get("chosen") or {}, {"label": "a text"}, f"{where}.chosen.", path)
        for i, row in enumerate(split.get("splits") or []):
            _kind(row, "an object", f"{where}.splits[{i}]", path, null=False)
            _fields(row, SPLIT_ROW_FIELDS, f"{where}.splits[{i}].", path)


def _counts(design: dict[str, Any], prefix: str, path: Path) -> None:
    """A design's replicas and GPUs per replica, each tier's a whole number >= 0."""
    for key in ("replicas", "gpus_per_replica"):
        per_tier = design.get(key) or {}
        _kind(per_tier, "an object", f"{prefix}{key}", path)  # a list has no tiers' counts
        _fields(per_tier, dict.fromkeys(per_tier, "a whole number >= 0"), f"{prefix}{key}.",
                path)


PLAN_FIX = "rerun `tiersim plan` to rewrite it"
"""The fix a malformed plan.json names."""


def _fields(doc: dict[str, Any], kinds: dict[str, str], prefix: str, path: Path,
            fix: str = PLAN_FIX) -> None:
    """Check each of ``kinds``' keys present in ``doc`` (``prefix`` names where doc sits)."""
    for key, kind in kinds.items():
        _kind(doc.get(key), kind, f"{prefix}{key}", path, fix=fix)


def _kind(value: Any, kind: str, where: str, path: Path, null: bool = True,
          fix: str = PLAN_FIX) -> None:
    """One line naming ``where`` in ``path`` and ``fix`` when ``value`` is not of ``kind``;
    null passes where ``null`` allows it (a missing figure), not for a list's entry or a
    figure always written (a null there ended the report in a traceback)."""
    if (value is not None or not null) and not KINDS[kind](value):
        raise TiersimError(f"{path}: {where}: expected {kind}, got {_shown(value)}; {fix}")


def _shown(value: Any) -> str:
    """A JSON value's kind, and the value itself when it is short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, float):
        return f"the number {value:g}"
    if isinstance(value, int):  # a float of one beyond a float's range raised OverflowError
        return f"the number {value:g}" if _number(value) else f"the number {shown(value)}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"


def _run(path: Path) -> RunResult | None:
    """The run summary, typed; None when absent."""
    return RunResult.read(path) if path.exists() else None


def read_axes(path: Path) -> list[str]:
    """The axis columns recorded in a ``sweep.parquet`` file's metadata (written by the sweep
    store under ``tiersim.sweep.axes``): a list of column names, else one line naming it."""
    import pyarrow.parquet as pq

    from tiersim.arrowfile import arrow_file

    try:
        with arrow_file(path) as handle:
            meta = pq.read_schema(handle).metadata or {}
        axes = json.loads(meta.get(b"tiersim.sweep.axes", b"[]"))
    except (OSError, ValueError, RecursionError) as error:
        why = "nested too deep" if isinstance(error, RecursionError) else error
        raise TiersimError(f"{path}: cannot read its axes ({why}); rerun the sweep") from None
    if not isinstance(axes, list) or not all(isinstance(a, str) for a in axes):
        raise TiersimError(f"{path}: its tiersim.sweep.axes metadata is not a list of column "
                           f"names (got {json.dumps(axes)[:60]}); rerun the sweep")
    return axes


SWEEP_COLUMNS = ("point_id", "status")
"""Columns every table the sweep store writes has."""

SWEEP_NUMBERS = ("index", "wall_s", "accuracy", "cost_usd", "cost_per_1m_output_tokens",
                 "ttft_p99_s", "tpot_p99_s", "slo_attainment", "router.silent_failure_rate",
                 "dropped", "slo_ttft_p99_s", "slo_tpot_p99_s", "router.fpr",
                 "router.fpr_among", "accuracy_floor", "router.quality.auroc")
"""Sweep columns the report computes with, which must hold numbers (or be empty): the Points
table's "router FPR as counts" multiplies ``router.fpr`` by ``router.fpr_among``, and its
"meets accuracy floor" header reads ``accuracy_floor``, which as text ended the report in a
traceback. Every ``savings.`` column ending ``_usd``, ``_frac`` or ``.accuracy`` is one too
(the "saved vs uniform" cell reads ``savings.vs_uniform_frac``)."""

SWEEP_FLAGS = ("savings.routed_slo_met", "savings.routed_floor_met", "router.floor_met")
"""Sweep columns that say whether a point missed its SLOs or floor (kept off the Pareto
front), which must hold true or false (or be empty)."""


def check_sweep(sweep: pd.DataFrame, axes: list[str], path: Path) -> None:
    """A table the sweep store wrote: its own columns, a column per axis, numbers where the
    report computes; one line naming ``path`` and what is wrong otherwise."""
    missing = [c for c in SWEEP_COLUMNS if c not in sweep]
    if missing:
        raise TiersimError(f"{path}: not a tiersim sweep table (no {', '.join(missing)} "
                           "column); write it with `tiersim sweep`")
    absent = [a for a in axes if a not in sweep]
    if absent:
        raise TiersimError(f"{path}: axis {absent[0]!r} named in its tiersim.sweep.axes "
                           "metadata has no column; rerun the sweep")
    for axis in axes:
        _check_scalars(sweep[axis], axis, path)
    _check_flat(sweep, axes, path)
    numeric = [c for c in sweep.columns if c in SWEEP_NUMBERS or (  # a saving's share too: an
        str(c).startswith("savings.") and str(c).endswith(("_usd", "_frac", "_s", ".accuracy")))]
    # infinite vs_uniform_frac read "inf % per hour vs bf16" in the Points table
    for column in numeric:
        values = sweep[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            _check_number_column(values, column, path)
            continue
        text = values.dropna()
        if len(text):
            raise TiersimError(f"{path}: column {column!r} holds {text.iloc[0]!r} (row "
                               f"{text.index[0]}), not a number; rerun the sweep")
    for column in (c for c in SWEEP_FLAGS if c in sweep):
        values = sweep[column].dropna()
        other = values[~values.map(lambda v: isinstance(v, (bool, np.bool_)))]
        if len(other):
            value = other.iloc[0]
            shown = repr(value.item() if isinstance(value, np.generic) else value)
            raise TiersimError(f"{path}: column {column!r} holds {shown} (row "
                               f"{other.index[0]}), not true or false; rerun the sweep")


def _check_number_column(values: pd.Series, column: str, path: Path) -> None:
    """One line naming the first number of a sweep column that no summary holds: an infinity
    (the store writes a missing figure as null, NaN here) or one out of its field's range (a
    negative cost, an accuracy above 1: :func:`tiersim.results.range_problem`)."""
    for row, value in values.dropna().items():
        problem = ("a number the sweep never writes" if np.isinf(value)
                   else range_problem(float(value), str(column)))
        if problem:
            raise TiersimError(f"{path}: column {column!r} holds {float(value):g} (row {row}): "
                               f"{problem}; rerun the sweep")


def _check_scalars(values: pd.Series, axis: str, path: Path, label: str = "axis column"
                   ) -> None:
    """An axis column holds one number, text or flag per point (the store writes a list
    value as JSON text); one line naming the first row that holds anything else."""
    if values.dtype != object:
        return
    bad = values[~values.map(lambda v: v is None or isinstance(v, (str, bool, int, float)))]
    if len(bad):
        value = bad.iloc[0]
        kind = ("a list" if isinstance(value, (list, tuple, np.ndarray)) else "an object"
                if isinstance(value, dict) else f"a {type(value).__name__}")
        raise TiersimError(f"{path}: {label} {axis!r} holds {kind} (row {bad.index[0]}), "
                           "where the sweep writes a number or text; rerun the sweep")


def _check_flat(sweep: pd.DataFrame, axes: list[str], path: Path) -> None:
    """Every other column holds numbers, text or flags too (the store writes every list as
    JSON text): a column of lists, such as ``cost_model``, ended the report in "TypeError:
    unhashable type: 'numpy.ndarray'". A Parquet column holds one kind of value, so its first
    value says which (every row of a 10^6-point table is not read again)."""
    for column in sweep.columns:
        if column in axes or sweep[column].dtype != object:
            continue
        values = sweep[column].dropna()
        _check_scalars(values.iloc[:1], str(column), path, "column")


def _check_whole_sweep(directory: Path, sweep: pd.DataFrame, run) -> None:
    """A sweep's table must hold the very points its manifest (``sweep.json``) lists, and its
    folder no run's summary: a sweep extended and stopped keeps its old table, a table of an
    earlier, bigger grid must not be drawn as this one, and a copied
    ``summary.json`` would put another run's headline beside it."""
    if run is not None and not (directory / "plan.json").is_file():
        raise TiersimError(f"{directory}: holds a sweep (sweep.parquet) and a run's "
                           "summary.json; a folder is one run, sweep or plan: move one of "
                           "them out")
    try:
        listed = read_json(directory / "sweep.json", "a sweep manifest").get("points")
        wanted = {str(p["point_id"]) for p in listed}
    except (TiersimError, AttributeError, TypeError, KeyError):
        return  # no readable manifest (a table written by hand): the table is all there is
    have = set(sweep["point_id"].astype(str)) if "point_id" in sweep else set()
    if wanted - have:
        raise TiersimError(f"{directory}: sweep.parquet holds {len(wanted & have):,} of the "
                           f"{len(wanted):,} points sweep.json lists (the sweep was extended or "
                           "stopped before its table was rewritten); run its `tiersim sweep` "
                           "command again to finish it")
    if have - wanted:
        raise TiersimError(f"{directory}: sweep.parquet holds {len(have - wanted):,} "
                           f"point{'s' if len(have - wanted) != 1 else ''} sweep.json does not "
                           "list (the table is of an earlier grid, left by a sweep stopped "
                           "before its table was rewritten); run its `tiersim sweep` command "
                           "again to rewrite it")


def check_one_run(directory: Path, run: RunResult, requests: pd.DataFrame | None,
                  scenario: dict[str, Any] | None) -> None:
    """Without a manifest, nothing proves a run folder's files are one run's: refuse when
    summary.json and scenario.yaml or requests.parquet disagree on what they describe (the
    scenario's name, seed, GPU, SLOs or tiers, their precision, replicas and prices where
    summary.json records them; the request count), and note that nothing stronger checked
    them (a copied-in file from a run of the same scenario passes)."""
    for file, what, theirs, ours in _disagreements(run, requests, scenario)[:1]:
        raise TiersimError(f"{directory}: summary.json and {file} describe different runs "
                           f"({what} {ours!r} in summary.json, {theirs!r} in {file}) and "
                           "there is no manifest.json to tell which is right; rerun "
                           f"`tiersim run --out {directory}` to write one run's files")
    priced = any(t.cost_per_gpu_hour is not None for t in run.tiers)  # recorded since round 49
    checked = "precision, replicas and prices" if priced else "precision and replicas"
    warnings.warn(f"{directory}: no manifest.json, so only the scenario name, seed, GPU, "
                  f"SLOs, cost model, tiers (their {checked}) and request count show that its "
                  "files come from one run; rerun `tiersim run` into it for a checked folder",
                  Note, stacklevel=3)


def check_scenario_of_run(directory: Path, run: RunResult,
                          scenario: dict[str, Any] | None) -> None:
    """manifest.json vouches for summary.json but not for scenario.yaml: refuse a scenario.yaml
    whose name, seed, tiers or settings (:func:`_described`: its GPU, SLOs, cost model, each
    tier's precision, replicas and prices) are not the run's (edited, or copied in from another
    run), whose settings the page would show as the run's provenance."""
    for file, what, theirs, ours in _disagreements(run, None, scenario)[:1]:
        raise TiersimError(f"{directory}: {file} describes another run than summary.json "
                           f"({what} {theirs!r} in {file}, {ours!r} in summary.json, whose "
                           "run manifest.json vouches for); put back the scenario.yaml the "
                           f"run wrote, or rerun `tiersim run --out {directory}`")


def _disagreements(run: RunResult, requests: pd.DataFrame | None,
                   scenario: dict[str, Any] | None) -> list[tuple[str, str, Any, Any]]:
    """The facts of :func:`_described` on which a file states another value than
    summary.json's, in order."""
    return [fact for fact in _described(run, requests, scenario)
            if fact[2] is not None and fact[3] is not None and not _same(fact[2], fact[3])]


def _same(theirs: Any, ours: Any) -> bool:
    """Whether a file's value of a fact is summary.json's: numbers to summary.json's ten
    significant digits; text exactly (a GPU and a format are compared as the scenario reads
    them: :func:`_stated_gpu`, :func:`_stated_format`)."""
    if isinstance(theirs, bool) or isinstance(ours, bool):
        return theirs == ours
    if isinstance(theirs, int | float) and isinstance(ours, int | float):
        try:
            return math.isclose(theirs, ours, rel_tol=1e-9)
        except OverflowError:  # a whole number past a float's range: only itself is the same
            return theirs == ours
    return theirs == ours


def _described(run: RunResult, requests: pd.DataFrame | None, scenario: dict[str, Any] | None):
    """``(file, what, its value, summary.json's value)`` for each fact a run's other files
    state about it (None where that file is absent or does not state it)."""
    doc = scenario or {}
    tiers = doc.get("tiers") if isinstance(doc.get("tiers"), list) else None
    names = ([str(t.get("name")) for t in tiers if isinstance(t, dict)]
             if scenario is not None and tiers else None)
    facts = [("scenario.yaml", "scenario", doc.get("name") if scenario is not None else None,
              run.scenario),
             ("scenario.yaml", "seed", doc.get("seed", 0) if scenario is not None else None,
              run.seed),
             ("scenario.yaml", "tiers", names, [t.name for t in run.tiers]),
             ("requests.parquet", "requests", None if requests is None else len(requests),
              run.requests)]
    # the cost model a scenario.yaml without the key runs under, as its seed is 0: a run
    # writes only the keys the scenario set
    cost_model = ("scenario.yaml", "cost_model",
                  _stated_text(doc.get("cost_model", _default_cost_model()))
                  if scenario is not None else None, run.cost_model)
    return facts[:3] + _settings_described(doc, run) + [cost_model] + facts[3:]


def _default_cost_model() -> str:
    """The cost model of a scenario that names none (the scenario schema's default)."""
    from tiersim.scenario import Scenario

    return Scenario.model_fields["cost_model"].default


def _settings_described(doc: dict[str, Any], run: RunResult) -> list[tuple[str, str, Any, Any]]:
    """The settings a run's scenario.yaml states that summary.json records too (the GPU, the
    SLOs, each tier's precision, replicas and prices), as :func:`_described`'s facts: the page
    shows scenario.yaml as the run's provenance, and an edited SLO or replica count there was
    shown beside results the run made under others."""
    slo = doc.get("slo") if isinstance(doc.get("slo"), dict) else {}
    facts = [("scenario.yaml", "gpu", _stated_gpu(doc.get("gpu")), _stated_gpu(run.gpu)),
             ("scenario.yaml", "slo.ttft_p99_s", _stated_number(slo.get("ttft_p99_s")),
              run.slo_ttft_p99_s),
             ("scenario.yaml", "slo.tpot_p99_s", _stated_number(slo.get("tpot_p99_s")),
              run.slo_tpot_p99_s),
             ("scenario.yaml", "slo.e2e_p99_s", _stated_number(slo.get("e2e_p99_s")),
              run.slo_e2e_p99_s),
             ("scenario.yaml", "slo.session_p99_s", _stated_number(slo.get("session_p99_s")),
              run.slo_session_p99_s)]
    listed = doc.get("tiers") if isinstance(doc.get("tiers"), list) else []  # tiers: 5
    tiers = {str(t.get("name")): t for t in listed if isinstance(t, dict)}
    for tier in run.tiers:
        written = tiers.get(tier.name, {})
        facts += [("scenario.yaml", f"tier {tier.name}'s precision",
                   _stated_format(written.get("precision")), _stated_format(tier.precision)),
                  ("scenario.yaml", f"tier {tier.name}'s replicas",
                   _stated_number(written.get("replicas")), tier.replicas)]
        facts += _prices_described(tier, tiers.get(tier.name))
    return facts


class _NoPrice:
    """A tier without a price per request (``cost_per_request_usd`` unset or null), as a fact's
    value: a price given on one side and not the other is a disagreement (None is "not
    stated")."""

    def __repr__(self) -> str:
        """How a disagreement's message names it: "none"."""
        return "none"


NO_PRICE = _NoPrice()


def _prices_described(tier, written: Any) -> list[tuple[str, str, Any, Any]]:
    """A tier's prices in scenario.yaml (``written``: its entry there) and summary.json, as
    :func:`_described`'s facts: the page shows scenario.yaml's prices beside costs made with
    the run's, and an edited ``cost_per_gpu_hour`` passed. None on both sides for a summary
    written before the prices were recorded (``cost_per_gpu_hour`` None), which reports as
    before; the price per request only where the tier's entry is there to say it has none."""
    if tier.cost_per_gpu_hour is None:
        return []
    entry = written if isinstance(written, dict) else {}
    facts = [("scenario.yaml", f"tier {tier.name}'s cost_per_gpu_hour",
              _stated_number(entry.get("cost_per_gpu_hour")), tier.cost_per_gpu_hour)]
    if isinstance(written, dict):
        stated = written.get("cost_per_request_usd")
        facts.append(("scenario.yaml", f"tier {tier.name}'s cost_per_request_usd",
                      NO_PRICE if stated is None else _stated_number(stated),
                      NO_PRICE if tier.cost_per_request_usd is None
                      else tier.cost_per_request_usd))
    return facts


def _stated_text(value: Any) -> str | None:
    """A setting that is text, else None (not stated)."""
    return value if isinstance(value, str) else None


def _stated_gpu(value: Any) -> str | None:
    """A GPU setting by the catalogue's name for it (``H200-SXM`` and ``h200`` are the
    ``H200`` a run records, as the scenario reads them; a summary.json written before
    tiersim kept that name holds the text as written), else as written; None if not text."""
    from tiersim.hardware import get_gpu

    text = _stated_text(value)
    try:
        return None if text is None else get_gpu(text).name
    except TiersimError:  # no catalogue GPU: compared as written
        return text


def _stated_format(value: Any) -> str | None:
    """A precision setting as the scenario reads it, stripped and in lower case (`` FP8`` is
    ``fp8``; a summary.json written before tiersim kept that spelling holds the text as
    written), else None (not stated)."""
    text = _stated_text(value)
    return None if text is None else text.strip().lower()


def _stated_number(value: Any) -> float | None:
    """A setting that is a number, else None (not stated)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def load_dir(directory: str | Path, shown_as: str | Path | None = None) -> ReportData:
    """Load a run, sweep or plan directory for :func:`tiersim.report.write_report`.

    ``shown_as``: the folder to name on the page (a run writes its report in a temporary folder
    before moving it into place)."""

    directory = Path(directory)
    if not directory.is_dir():
        from tiersim.paths import leads_nowhere

        what = "not a directory" if directory.exists() else "no such folder"
        if leads_nowhere(directory):
            what = "a link that leads to no folder (or the links loop)"
        stripped = str(directory).strip()
        if not directory.exists() and stripped not in ("", str(directory)) and Path(
                stripped).is_dir():  # the blank that made the difference, unseen before
            from tiersim.errors import yaml_written

            raise TiersimError(f"{directory}: no such folder: {yaml_written(str(directory))} has "
                               "a space (or another blank) at its start or end, which the folder "
                               f"{stripped} has not; remove it")
        raise TiersimError(f"{directory}: {what}; give the --out folder of a run, sweep or "
                           "plan")
    if not any((directory / name).exists() for name in KNOWN):
        if (directory / "sweep.json").is_file() and (directory / "points").is_dir():
            done = sum(1 for _ in (directory / "points").glob("*.json"))
            raise TiersimError(f"{directory}: a sweep that did not finish ({done:,} "
                               f"point{'s' if done != 1 else ''} stored, no sweep.parquet yet); "
                               "run its `tiersim sweep` command again to resume it, and the "
                               "report is written at the end")
        manifest = directory / "sweep.json"
        if (directory / "points").is_dir() and not (manifest.exists() or manifest.is_symlink()):
            done = sum(1 for _ in (directory / "points").glob("*.json"))
            raise TiersimError(f"{directory}: a sweep's folder without its sweep.json ({done:,} "
                               f"point{'s' if done != 1 else ''} stored, no sweep.parquet); run "
                               "its `tiersim sweep` command again with this --out folder to "
                               "rebuild it (it resumes from the points stored), and the report "
                               "is written at the end")
        if directory.name == "points" and (directory.parent / "sweep.json").is_file():
            raise TiersimError(f"{directory}: the folder where the sweep in {directory.parent} "
                               "keeps one file per point, not a result to report; report the "
                               f"sweep: tiersim report {directory.parent}")
        raise TiersimError(f"{directory}: no results here (expected one of {', '.join(KNOWN)}); "
                           "run `tiersim run/sweep/plan --out` into it first")
    run_id = check_manifest(directory)
    run = _run(directory / "summary.json")
    sweep = _parquet(directory / "sweep.parquet")
    axes = read_axes(directory / "sweep.parquet") if sweep is not None else []
    if sweep is not None:
        check_sweep(sweep, axes, directory / "sweep.parquet")
        _check_whole_sweep(directory, sweep, run)
    requests = _parquet(directory / "requests.parquet")
    timeseries = _parquet(directory / "timeseries.parquet")
    for frame, name in ((requests, "requests.parquet"), (timeseries, "timeseries.parquet")):
        check_numeric(frame, directory / name)
    scenario = _scenario(directory)
    names = run_tier_names(run, scenario)
    check_tiers(timeseries, names, directory / "timeseries.parquet")
    check_tiers(requests, names, directory / "requests.parquet", ("tier", "final_tier"))
    if run is not None and run_id is None:
        check_one_run(directory, run, requests, scenario)
    elif run is not None:
        check_scenario_of_run(directory, run, scenario)
    plan = _plan(directory / "plan.json")
    _check_plan_run(directory, plan, run)
    run = baselines_in_scenario_order(run, scenario)
    return ReportData(directory, run, requests, timeseries, sweep, axes, plan, scenario, run_id,
                      Path(shown_as) if shown_as is not None else None,
                      missing_files(directory) if run_id else [])
