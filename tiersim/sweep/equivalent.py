"""Whether a sweep folder's finished points are those of the scenario given now, its text edited.

A point record carries the digest of the base scenario as parsed (``base_digest``): comments,
blank lines and key order never change it, but a default written out (``gpus_per_replica: 1``),
``./t.csv`` for ``t.csv`` or a GPU's other spelling do, and a resume was refused although no
point would change. Where that digest differs, each finished point is read under the base the
folder stored (``DIR/scenario.yaml``, its user files named absolute) and under the base given
now, with the scenario models (the validator every point passes), and the two readings are
compared as the points' settings are (:func:`tiersim.sweep.settings.setting_doc`: the pydantic model
dumped canonically, paths as the run finds them); a file a point reads is compared by content,
per point (:func:`tiersim.sweep.resume._check_same_inputs`), not by how it is named, so a trace
reached through another name or copied elsewhere resumes. Points are compared, not the two
bases alone: a base edit can change one point and not another (a price an axis sets in every
point changes none; a profile left out and the H200's shipped one named read alike on an
H200, but not in a point whose axis sets ``gpu: H100``). The first change found is named as a
dotted path with both values. A file the edit names in place of one a point read, where it
cannot be read, is refused first (:func:`unread_swap`): its content cannot be compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tiersim.errors import TiersimError, shown_yaml
from tiersim.input_files import input_paths, unreadable
from tiersim.sweep import axes as ax
from tiersim.sweep.settings import put_files, setting_doc

FILE = "<a file, compared by its content>"
"""What a reading holds in place of a file a point reads (its content is checked per point)."""

ABSENT = "<not set>"
"""How a change names a key that one of the two readings does not have."""


def reading(doc: dict[str, Any], source: str, validator) -> dict[str, Any] | str:
    """``doc`` (one point of a scenario read from ``source``) as the scenario models read it:
    its canonical setting without ``limits.max_sweep_points`` (it bounds the grid, never a
    result) and with each file it reads as :data:`FILE`; where it does not read, why."""
    try:
        setting = setting_doc(validator(doc, source), source)
    except (TiersimError, OSError, ValueError) as error:
        return str(error).removeprefix(f"{source}: ")
    if setting is None:
        return "the validator reads no scenario model"
    limits = setting.get("limits")
    if isinstance(limits, dict):
        limits.pop("max_sweep_points", None)
    put_files(setting, source, lambda _: FILE)
    return setting


def first_change(old: Any, new: Any, at: tuple[str | int, ...] = ()
                 ) -> tuple[str, Any, Any] | None:
    """The first place (dotted path, the old and the new value) where two readings differ, in
    the new reading's key order; None where they are the same."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*new, *(k for k in old if k not in new)]:
            if key not in old or key not in new:
                return _path(at, key), old.get(key, ABSENT), new.get(key, ABSENT)
            found = first_change(old[key], new[key], (*at, key))
            if found is not None:
                return found
        return None
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            found = first_change(a, b, (*at, i))
            if found is not None:
                return found
        return None
    if type(old) is type(new) and old == new:
        return None
    return ".".join(map(str, at)) or "the scenario", old, new


def _path(at: tuple[str | int, ...], key: Any) -> str:
    """A dotted path of ``at`` and ``key``."""
    return ".".join(map(str, (*at, key)))


def point_change(stored: dict[str, Any], stored_source: str, base: dict[str, Any],
                 source: str, records: Iterable[dict[str, Any]], validator) -> str | None:
    """Words naming how the first of ``records`` (finished points, each with its axis
    ``values``) reads otherwise under ``base`` (read from ``source``) than under the folder's
    ``stored`` base (read from ``stored_source``); None where every one reads the same."""
    for record in records:
        values = record.get("values")
        if not isinstance(values, dict):
            return f"its point {record.get('point_id')} records no axis values"
        then = _reading_at(stored, values, stored_source, validator)
        now = _reading_at(base, values, source, validator)
        if isinstance(then, str) or isinstance(now, str):
            from tiersim.sweep.messages import clipped

            which, why = ("the stored scenario.yaml", then) if isinstance(then, str) else \
                ("this scenario", now)
            return (f"its point {record.get('point_id')} does not read under {which}: "
                    f"{clipped(str(why), 120)}")
        found = first_change(then, now)
        if found is not None:
            path, old, new = found
            return (f"{path} is {shown_yaml(new, 60)} here, {shown_yaml(old, 60)} when its point "
                    f"{record.get('point_id')} ran")
    return None


def unread_swap(stored: dict[str, Any], stored_source: str, base: dict[str, Any],
                source: str, records: Iterable[dict[str, Any]]) -> str | None:
    """Words naming a file that ``base`` (read from ``source``) names, in place of the one a
    finished point of ``records`` read under the folder's ``stored`` base, that cannot be
    read: its content cannot be compared with what the point read, so the point cannot be
    kept, nor called changed (a fix may make it readable); None where there is none. A file
    that cannot be read under the name the point read it by is left to the run (no change,
    as where the scenario is not edited), and a point whose values do not apply to
    :func:`point_change`."""
    for record in records:
        values = record.get("values")
        try:
            then = ax.apply(stored, values, stored_source)
            now = ax.apply(base, values, source)
        except (TiersimError, LookupError, TypeError, ValueError, AttributeError):
            continue
        old, new = input_paths(then, stored_source), input_paths(now, source)
        for field in record.get("inputs") or {}:
            if ":" in field or _same_file(old.get(field), new.get(field)):
                continue
            why = unreadable(now, source, field)
            if why is not None:
                which = f", which read {old[field]}," if field in old else ""
                return (f"this scenario's {field} cannot be read ({why}), so the finished "
                        f"points{which} cannot be checked against it (the folder is left as "
                        "it was); make it readable or name the file they read, or use a new "
                        "--out folder")
    return None


def _same_file(old: Any, new: Any) -> bool:
    """Whether two resolved inputs are one file by name, or both resolve to none (a file moved
    away: the readings compare the names)."""
    if old is None or new is None:
        return old is new
    try:
        return old.resolve() == new.resolve()
    except (OSError, RuntimeError):
        return old == new


def _reading_at(base: dict[str, Any], values: dict[str, Any], source: str,
                validator) -> dict[str, Any] | str:
    """The reading of ``base`` with a point's axis ``values`` set (:func:`reading`), or why
    it cannot hold them."""
    try:
        doc = ax.apply(base, values, source)
    except (TiersimError, LookupError, TypeError, ValueError) as error:
        return str(error).removeprefix(f"{source}: ")
    return reading(doc, source, validator)


__all__ = ["ABSENT", "FILE", "first_change", "point_change", "reading", "unread_swap"]
