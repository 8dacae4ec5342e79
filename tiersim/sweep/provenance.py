"""What ties a stored point to what made it: the digests of its base scenario and sweep map,
the runner that computed its savings, and the tiersim build that ran it (:func:`digests`,
:func:`tiersim_version`); and what the build decides: a later release's points are refused,
another build's run again, and points run while tiersim's own files changed are marked failed
(:func:`_check_same_package`)."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.sweep import axes as ax
from tiersim.sweep.messages import _note, clipped
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.points import PointRunner, default_runner
from tiersim.sweep.store import write_point


def base_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario without its sweep map: points of different bases never mix.
    Of ``limits`` only what changes a result counts: ``max_replicas`` where it sets the cap
    on the simulated uniform baselines (:func:`baseline_cap`), and ``gpus_per_replica`` where
    the scenario sets it (the sizes those baselines may use); ``max_sweep_points`` bounds the
    grid, never a result (raising it to extend a sweep, as its refusal advises, keeps the
    finished points)."""
    doc = {k: v for k, v in base.items() if k not in ("sweep", "limits")}
    cap = baseline_cap(base)
    if cap is not None:  # left out at the default cap, so older sweep folders still resume
        doc["limits"] = {"max_replicas": cap}
    limits = base.get("limits")
    if isinstance(limits, dict) and "gpus_per_replica" in limits:
        doc.setdefault("limits", {})["gpus_per_replica"] = limits["gpus_per_replica"]
    return ax.point_id(doc)


def baseline_cap(base: dict[str, Any]) -> Any:
    """The scenario's ``limits.max_replicas`` where it changes results: a run's sized uniform
    baselines try at most that many replicas (:func:`tiersim.savings.baseline_replica_limit`),
    so ``None`` when it is not set or is the default (1024), else the value as written."""
    from tiersim.scenario import DEFAULT_MAX_REPLICAS

    value = _max_replicas(base)
    if isinstance(value, float) and value.is_integer():  # 8.0 is the 8 validation accepts
        value = int(value)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)
                         and value == DEFAULT_MAX_REPLICAS):
        return None
    return value


def _max_replicas(base: dict[str, Any]) -> Any:
    """``limits.max_replicas`` as the scenario writes it (None where it does not)."""
    limits = base.get("limits")
    if limits is None:
        return None
    return limits.get("max_replicas") if isinstance(limits, dict) else limits


def _cap_words(value: Any) -> str:
    """A scenario's baseline cap in words, for a refusal."""
    return "no limits.max_replicas" if value is None else f"limits.max_replicas {value!r}"


def sweep_digest(base: dict[str, Any]) -> str:
    """A digest of the scenario's sweep map (its axes and their values)."""
    return ax.point_id({"sweep": base.get("sweep") or {}})


#: How each point runner computes savings, as a rerun's refusal names it.
RUNNER_WORDS = {"default_runner": "with simulated baselines",
                "estimate_runner": "with --no-baselines (estimated savings)"}


def runner_name(runner: PointRunner) -> str:
    """The name a point record keeps of the runner that made it."""
    return str(getattr(runner, "__qualname__", None) or type(runner).__name__)


def digests(plan: SweepPlan, runner: PointRunner = default_runner) -> dict[str, str]:
    """What every point record carries to tie it to its scenario: the scenario text without
    and with its sweep map, and how its savings are made (the worker adds the digests of the
    files the point read, :func:`tiersim.input_files.point_inputs`)."""
    return {"base_digest": base_digest(plan.base), "sweep_digest": sweep_digest(plan.base),
            "runner": runner_name(runner), "tiersim": tiersim_version()}


def tiersim_version() -> str:
    """The version of tiersim running the points, with a digest of its code and packaged data
    (``0.1.0+3f2a9c1b7e04``): a point run by another build is run again, so an edited
    checkout without a version bump does not mix its rows with the old ones."""
    import tiersim

    return f"{tiersim.__version__}+{_package_digest()}"


@functools.cache
def _package_digest() -> str:
    """12 hex digits over the package's Python sources and data files (names and bytes)."""
    import tiersim

    root = Path(tiersim.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".parquet", ".csv"):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def _check_same_package(out: Path, started: str, ran: list[str],
                        records: dict[str, dict[str, Any]]) -> None:
    """Refuse to make one table of points run while tiersim's own files changed (an upgrade,
    a ``git pull`` or packaged data such as ``precision_priors.json`` edited mid-sweep): a
    point reads some of them as it runs, so the points ``ran`` may have read either version,
    all recorded as ``started``. The package is digested again (:func:`tiersim_version`); on
    a change the points run are marked failed, the table and report removed, and a rerun
    recomputes them with the tiersim then installed."""
    ran = [i for i in ran if i in records]
    if not ran:
        return  # the stored points are all of the version they record
    _package_digest.cache_clear()
    now = tiersim_version()
    if now == started:
        return
    for point_id in ran:
        record = records[point_id]
        if record.get("status") == "ok":
            record.update(status="error", summary=None,
                          error="InputChanged: tiersim's own files changed while the sweep "
                                "ran; rerun to recompute this point")
            write_point(out, record)
    for name in ("sweep.parquet", "report.html"):
        (out / name).unlink(missing_ok=True)
    count = f"{len(ran):,} point{'s' if len(ran) != 1 else ''}"
    raise TiersimError(f"{out}: tiersim's own files changed while the sweep ran (tiersim "
                       f"{started}, now {now}), so its {count} run may have read either "
                       "version, and one table must not mix the two; rerun to recompute "
                       f"{'them' if len(ran) != 1 else 'it'} with the tiersim now installed "
                       f"({'they are' if len(ran) != 1 else 'it is'} marked failed)")


def _refuse_later_release(out: Path, records: dict[str, dict[str, Any]],
                          done: set[str]) -> None:
    """Refuse, before anything changes, to resume points a later tiersim release ran: running
    them again (:func:`_other_version`) would replace their files with this earlier release's
    results. An earlier release's points, or another build of this release's, run again."""
    import tiersim
    from tiersim.versions import later_than_this, release, release_text

    later = sorted((i for i in done if later_than_this(records[i].get("tiersim"))),
                   key=lambda i: release(records[i]["tiersim"]))
    if later:
        newest = str(records[later[-1]]["tiersim"])
        count = f"{len(later)} sweep point{'s' if len(later) != 1 else ''}"
        raise TiersimError(f"{out}: holds {count} run by tiersim {newest}, a later release than "
                           f"this tiersim {tiersim.__version__}; resuming would replace them "
                           "with an earlier version's results: resume with tiersim "
                           f"{release_text(newest)} or later, or use a "
                           "new --out folder (nothing was changed)")


def ran_here(record: dict[str, Any]) -> bool:
    """Whether this tiersim build ran the point ``record`` holds: its ``tiersim`` version is
    this one's. Every build since points recorded it writes one, so a record without one was
    written by an earlier build, another version too."""
    return record.get("tiersim") == tiersim_version()


def _other_version(records: dict[str, dict[str, Any]], done: set[str]) -> set[str]:
    """The finished points another tiersim version ran (one that recorded no version
    included: :func:`ran_here`), noted: they run again, so one table holds one version."""
    now = tiersim_version()
    stale = {i for i in done if not ran_here(records[i])}
    if stale:
        then = sorted({clipped(str(records[i]["tiersim"]), 40) for i in stale
                       if "tiersim" in records[i]})  # an edited file's may be any length
        who = [f"tiersim {', '.join(then)}"] if then else []
        if any("tiersim" not in records[i] for i in stale):
            who.append("a tiersim that recorded no version")
        _note(f"{len(stale)} stored point(s) were run by {' and '.join(who)}; they run "
              f"again with {now}, so the table holds one version")
    return stale
