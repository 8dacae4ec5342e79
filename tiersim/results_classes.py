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
        """Plain JSON fields, ``class`` for the name."""
        out = _fields(self)
        out["class"] = out.pop("name")
        return out


def classes_from(data: Any) -> tuple[ClassAccuracy, ...]:
    """``accuracy_by_class`` read back: a list of objects as :meth:`ClassAccuracy.to_json`
    writes them (absent in a summary written before it, or of a run without classes: ``()``);
    a TypeError or ValueError naming the key otherwise."""
    if data is None:
        return ()
    if not isinstance(data, list):
        raise TypeError("'accuracy_by_class' must be a list of objects")
    return tuple(_class_from(item, k) for k, item in enumerate(data))


def _class_from(item: Any, k: int) -> ClassAccuracy:
    """One entry of ``accuracy_by_class`` (the ``k``-th)."""
    at = f"accuracy_by_class[{k}]"
    if not isinstance(item, dict) or not isinstance(item.get("class"), str):
        raise TypeError(f"'{at}' must be an object with a 'class' name")
    requests, accuracy = item.get("requests"), item.get("accuracy")
    if not isinstance(requests, int) or isinstance(requests, bool) or requests < 0:
        raise ValueError(f"'{at}.requests' must be a count")
    lo, hi = item.get("accuracy_ci95") or (None, None)
    uniform = item.get("uniform") or {}
    for value in (accuracy, lo, hi, *uniform.values()):
        if not (_unknown(value) or (isinstance(value, int | float) and 0 <= value <= 1)):
            raise ValueError(f"'{at}' accuracies must be fractions between 0 and 1")
    return ClassAccuracy(
        name=item["class"],
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
