"""The checks a rerun into a sweep folder passes before it keeps the points stored there
(:func:`_check_same_base`): the same base scenario (or one every finished point reads the same
under, :mod:`tiersim.sweep.equivalent`), the same input files, the same way of computing
savings; and what the folder's ``sweep.json`` and ``scenario.yaml`` say of its points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tiersim.errors import TiersimError
from tiersim.input_files import point_inputs, written_name
from tiersim.jsonio import read_json
from tiersim.sweep import axes as ax
from tiersim.sweep.build import ran_here
from tiersim.sweep.plan import SweepPlan
from tiersim.sweep.points import PointRunner, default_runner
from tiersim.sweep.provenance import (
    RUNNER_WORDS,
    _cap_words,
    _max_replicas,
    baseline_cap,
    digests,
)


def _different_base(out: Path, plan: SweepPlan | None = None,
                    change: str | None = None) -> TiersimError:
    """The refusal of a folder whose points came from another base scenario, naming a changed
    ``limits.max_replicas`` (the one limit that changes results) where that is what changed,
    else the ``change`` found (:func:`tiersim.sweep.equivalent.point_change`), if any."""
    if plan is not None and _own_copy(out, plan):
        source = _read_manifest(out).get("source") or "the scenario they were run from"
        return TiersimError(f"{out}: its scenario.yaml names the user files by absolute path, "
                            f"so its points do not match it; resume with {source}, or give "
                            "the copy a new --out folder")
    then = _stored_base(out)
    if plan is not None and then is not None and baseline_cap(then) != baseline_cap(plan.base):
        old, new = _max_replicas(then), _max_replicas(plan.base)
        back = "remove it" if old is None else f"set it back to {old!r}"
        return TiersimError(f"{out}: holds sweep points run with {_cap_words(old)}, which caps "
                            f"their simulated baselines; this scenario has "
                            f"{'none' if new is None else repr(new)}, and one table must not "
                            f"mix the two; {back}, or use a new --out folder")
    what = change or "something outside `sweep:` changed"
    return TiersimError(f"{out}: holds a sweep of a different scenario ({what}); use a new "
                        f"--out folder, or delete {out / 'points'} to start over")


def _stored_base(out: Path) -> dict[str, Any] | None:
    """The base scenario the folder's points were run from (its ``scenario.yaml``; None when
    absent or unreadable, within the scenario reader's limits: a FIFO, deep nesting or an
    alias bomb there is unreadable too)."""
    from tiersim.scenario import read_yaml

    try:
        doc, _ = read_yaml(out / "scenario.yaml")
    except TiersimError:
        return None
    return doc if isinstance(doc, dict) else None


def _stored_source(out: Path, manifest: dict[str, Any]) -> str:
    """Where the finished points are read under the folder's ``scenario.yaml`` from: the
    scenario file they were run from (``sweep.json``'s source), which a relative file path on
    an axis (``trace.path: [t.parquet]``, kept as written in the point's values) is beside;
    the copy itself where that file is gone (the copy's own paths are absolute)."""
    source = manifest.get("source")
    try:
        return source if isinstance(source, str) and Path(source).is_file() else \
            str(out / "scenario.yaml")
    except (OSError, ValueError):
        return str(out / "scenario.yaml")


def _own_copy(out: Path, plan: SweepPlan) -> bool:
    """Whether the plan was read from the folder's own ``scenario.yaml``."""
    try:
        return Path(plan.source).resolve() == (out / "scenario.yaml").resolve()
    except (OSError, RuntimeError):
        return False


def _check_same_base(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]],
                     runner: PointRunner = default_runner) -> None:
    """Refuse to resume into a folder whose points came from a different base scenario, other
    input files (the trace, a model config, the profile, changed under the same name), or
    another way of computing savings: every stored point names them (a point stored before a
    field existed is not held to it), and the manifest names the base of older point files."""
    want = digests(plan, runner)
    _check_same_readings(out, plan, records, want["base_digest"])
    if _own_copy(out, plan) and set(records) - {p.id for p in plan.points}:
        raise _different_base(out, plan)  # a swept path written absolute: other point ids
    _check_same_inputs(out, plan, records)
    ran = {r["runner"] for r in records.values() if r.get("runner")} - {want["runner"]}
    if ran:
        old = RUNNER_WORDS.get(min(ran), min(ran))
        raise TiersimError(f"{out}: holds sweep points run {old}; this run is "
                           f"{RUNNER_WORDS.get(want['runner'], want['runner'])}, and one table "
                           "must not mix the two; rerun it as before, or use a new --out folder")


def _check_same_readings(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]],
                         digest: str) -> None:
    """Refuse a folder whose points came from a base scenario whose text (as parsed) differs
    from this one's, unless every finished point of it reads the same under both (a default
    written out, a path spelt otherwise: :mod:`tiersim.sweep.equivalent`); the refusal names
    the first field that changed, or a file the edit names in place of one a point read that
    cannot be read (its content cannot be compared). Without a validator, or without the
    folder's stored base as the sweep wrote it (``copy_digest``) to read them under, any
    difference is refused, as before points were read: a copy edited in place would read the
    points as the edit."""
    from tiersim.sweep.equivalent import point_change, unread_swap

    manifest = _read_manifest(out) if records else {}
    then = manifest.get("base_digest", digest)  # the base of points that name none
    if all(r.get("base_digest", then) == digest for r in records.values()):
        return
    _refuse_copied_in(out, records, then, vouched_bases(manifest, digest))
    stored = _stored_base(out)
    if stored is not None and ax.point_id(stored) != manifest.get("copy_digest"):
        if _own_copy(out, plan):
            raise TiersimError(f"{out}: its scenario.yaml was edited after the sweep wrote it, "
                               "so its points may not be those of the edit; resume with "
                               f"{manifest.get('source') or 'the scenario they were run from'}"
                               ", or give the edited copy a new --out folder")
        stored = None
    if plan.validator is None or stored is None:
        raise _different_base(out, plan)
    other = [r for r in records.values()
             if r.get("status") == "ok" and r.get("base_digest", then) != digest]
    swap = unread_swap(stored, _stored_source(out, manifest), plan.base, plan.source, other)
    if swap is not None:  # the folder's own copy: its own refusal says how to resume
        raise _different_base(out, plan) if _own_copy(out, plan) else \
            TiersimError(f"{out}: {swap}")
    change = point_change(stored, _stored_source(out, manifest), plan.base, plan.source,
                          other, plan.validator)
    if change is not None:
        raise _different_base(out, plan, change)


def vouched_bases(manifest: dict[str, Any], digest: str) -> set[str] | None:
    """The base digests whose points the folder holds as its own: this scenario's
    (``digest``), the one its ``sweep.json`` names, and those of the points its sweeps kept
    over edits that changed none of them (``bases``, :func:`kept_bases`); None where the
    manifest lists none (gone, unreadable, or of a build that did not list them: the folder
    vouches for nothing, and its points are refused as they were, by what they read)."""
    bases = manifest.get("bases")
    if not isinstance(bases, list):
        return None
    return {digest, manifest.get("base_digest", digest), *(b for b in bases if isinstance(b, str))}


def kept_bases(records: dict[str, dict[str, Any]], digest: str) -> list[str]:
    """The base digests a sweep that keeps ``records`` vouches for in its ``sweep.json``
    (``bases``): this scenario's and those of the finished points this build ran (each
    checked to read the same under it, :func:`_check_same_readings`); points another build
    ran are run again, so theirs are not kept."""
    return sorted({digest} | {r["base_digest"] for r in records.values()
                              if r.get("status") == "ok" and ran_here(r)
                              and isinstance(r.get("base_digest"), str)})


def _refuse_copied_in(out: Path, records: dict[str, dict[str, Any]], then: str,
                      known: set[str] | None) -> None:
    """Refuse a finished point this build ran whose base scenario is none the folder vouches
    for (:func:`vouched_bases`): a file copied in from another sweep folder (two halves of a
    grid merged by hand). A resume reads finished points under the folder's ``scenario.yaml``,
    which every point its own sweeps kept reads the same under; such a point was never read
    so, and was kept, its row mixed into the table, though it names another scenario."""
    if known is None:
        return
    for point_id in sorted(records):
        record = records[point_id]
        if (record.get("status") == "ok" and ran_here(record)
                and record.get("base_digest", then) not in known):
            path = out / "points" / f"{point_id}.json"
            raise TiersimError(f"{out}: holds sweep point {point_id} of another scenario "
                               f"({path} names a scenario no sweep into this folder ran: "
                               "copied in from another sweep folder?); remove that file to run "
                               "the point again, or use a new --out folder")


def _check_same_inputs(out: Path, plan: SweepPlan, records: dict[str, dict[str, Any]]) -> None:
    """Refuse to keep a finished point whose input files (its trace, model configs, profile)
    changed under the same names since it ran; a failed point is simply rerun, and so is a
    point another tiersim version ran (:func:`ran_here`: it may not have recorded an
    input this version reads, a baseline's model say); a point stored before points recorded
    their inputs is not held to it. A file that cannot be found or read now, under the name the
    point read it by, is no change (one an edit names in place of it is refused before, by
    :func:`_check_same_readings`): the points it ran stay, and a point still to run says what
    is wrong with it, as ``tiersim run`` does (a moved trace was called changed, and the
    advice to delete the points lost them all); a config's ``hf_quant_config.json`` gone is a
    change (the config reads otherwise without it)."""
    wanted = {p.id: p for p in plan.points}
    for point_id, record in records.items():
        if (record.get("status") != "ok" or "inputs" not in record or point_id not in wanted
                or not ran_here(record)):
            continue
        doc = ax.apply(plan.base, wanted[point_id].values, plan.source)
        now, then = point_inputs(doc, plan.source), record["inputs"] or {}
        changed = sorted(k for k in set(now) | set(then) if now.get(k) != then.get(k)
                         and (k in now or ":" in k))
        if changed:
            files = ", ".join(f"{k} {written_name(doc, k)}" for k in changed[:3])
            raise TiersimError(f"{out}: holds sweep points run over other input files "
                               f"({files} of point {point_id} changed since "
                               f"it ran); use a new --out folder, or delete {out / 'points'} "
                               "to start over")


def _read_manifest(out: Path) -> dict[str, Any]:
    """The folder's ``sweep.json`` (``{}`` when absent or unreadable: not a regular file, too
    big, not JSON, nested too deep)."""
    try:
        doc = read_json(out / "sweep.json", "a sweep manifest")
    except TiersimError:
        return {}
    return doc if isinstance(doc, dict) else {}
