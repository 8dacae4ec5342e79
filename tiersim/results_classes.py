"""Accuracy per difficulty class: a run summary's ``accuracy_by_class``.

Where the workload gives every request a ``difficulty_class`` (``two_type`` and ``three_type``
draws: easy, hard, hopeless), a planner asks whether routing cut cost at the hard requests'
expense. :class:`ClassAccuracy` holds one class: its requests, the run's accuracy over them
(on the run's basis, a dropped request scored 0, as the overall accuracy), its 95% interval,
and each uniform fleet's accuracy over the same requests. The class accuracies weighted by
their request counts give the overall accuracy. Every name here is importable from
:mod:`tiersim.results` as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tiersim.results_figures import _fields, _unknown


@dataclass(frozen=True)
class ClassAccuracy:
    """One difficulty class of the run's requests (``name``: ``easy``, ``hard``, ...):
    ``requests`` of them, the run's ``accuracy`` over them with its ``accuracy_ci95``
    (:func:`tiersim.routing.metrics.accuracy_ci`), and ``uniform``: each uniform fleet's
    accuracy over them by tier name (a fleet that dropped requests, whose accuracy is its
    simulation's, is left out)."""

    name: str
    requests: int
    accuracy: float | None
    accuracy_ci95: tuple[float | None, float | None] = (None, None)
    uniform: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Plain JSON fields (the name is the key it sits under in ``accuracy_by_class``)."""
        out = _fields(self)
        out.pop("name")
        return out


GENERATED_CLASSES = ("easy", "hard", "hopeless")
"""The classes the workload generator draws, cheapest first
(:data:`tiersim.workload.difficulty.CLASS_NAMES`)."""

UNCLASSIFIED = "unclassified"
"""The class of a request without one, where other requests have one."""


def class_order(names) -> list[str]:
    """Class ``names`` in the order every output lists them: the generator's
    (:data:`GENERATED_CLASSES`) first, then others sorted, :data:`UNCLASSIFIED` last (a
    JSON object's keys are sorted, which would put ``unclassified`` among the others)."""
    present = set(names)
    known = [c for c in GENERATED_CLASSES if c in present]
    rest = sorted(present - set(known) - {UNCLASSIFIED})
    return known + rest + ([UNCLASSIFIED] if UNCLASSIFIED in present else [])


def classes_json(classes: tuple[ClassAccuracy, ...]) -> dict[str, Any]:
    """``accuracy_by_class`` as summary.json writes it: class name to its fields (a sweep's
    table flattens it to columns such as ``accuracy_by_class.hard.accuracy``)."""
    return {c.name: c.to_json() for c in classes}


def classes_from(data: Any) -> tuple[ClassAccuracy, ...]:
    """``accuracy_by_class`` read back, in :func:`class_order` (absent in a summary written
    before it, or of a run without classes: ``()``); a TypeError or ValueError naming the key
    otherwise."""
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise TypeError("'accuracy_by_class' must map class names to objects")
    return tuple(_class_from(data[name], name) for name in class_order(data))


def _class_from(item: Any, name: str) -> ClassAccuracy:
    """The entry of class ``name`` in ``accuracy_by_class``."""
    at = f"accuracy_by_class.{name}"
    if not isinstance(item, dict):
        raise TypeError(f"'{at}' must be a JSON object")
    requests, accuracy = item.get("requests"), item.get("accuracy")
    if not isinstance(requests, int) or isinstance(requests, bool) or requests < 0:
        raise ValueError(f"'{at}.requests' must be a count")
    lo, hi = item.get("accuracy_ci95") or (None, None)
    uniform = item.get("uniform") or {}
    if not isinstance(uniform, dict):
        raise TypeError(f"'{at}.uniform' must map tier names to accuracies")
    for value in (accuracy, lo, hi, *uniform.values()):
        if not (_unknown(value) or (isinstance(value, int | float) and 0 <= value <= 1)):
            raise ValueError(f"'{at}' accuracies must be fractions between 0 and 1")
    return ClassAccuracy(
        name=name,
        requests=requests,
        accuracy=accuracy,
        accuracy_ci95=(lo, hi),
        uniform=dict(uniform),
    )


def classes_line(classes: tuple[ClassAccuracy, ...], baseline: str | None, show) -> str | None:
    """The console's one line: each class's accuracy, with the uniform ``baseline`` fleet's
    beside it where there is one ("easy 95.00 % (all bf16 96.00 %) / hard 80.00 % (all bf16
    80.00 %)"); ``show`` formats a fraction. None without classes."""
    if not classes:
        return None
    parts = []
    for c in classes:
        other = c.uniform.get(baseline) if baseline else None
        beside = "" if other is None else f" (all {baseline} {show(other)})"
        parts.append(f"{c.name} {show(c.accuracy)}{beside}")
    return " / ".join(parts)
