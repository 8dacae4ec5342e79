"""An accuracy against its floor: the tolerance a floor is met within, the floor a uniform
baseline is held to, the digits a floor is printed with, and an accuracy's name.

Every name here is importable from :mod:`tiersim.results` as well.
"""

from __future__ import annotations

import math

from tiersim.results_figures import digits_apart

FLOOR_TOLERANCE = 1e-9
"""A fleet meets the accuracy floor when its accuracy is at least the floor less this."""


def accuracy_words(accuracy_source: dict[str, str]) -> list[str]:
    """The distinct accuracy sources of some tiers (``labels``, ``scenario``, ``prior``),
    sorted; ``["scenario"]`` for none."""
    return sorted({str(v) for v in accuracy_source.values()}) or ["scenario"]


def baseline_floor(floor: float | None, accuracy: float) -> float:
    """The accuracy a uniform fleet must reach to be the baseline of a fleet of ``accuracy``:
    the floor, or where none is set that fleet's own accuracy (a cheaper, less accurate fleet
    is not a like-for-like baseline). ``tiersim run`` and ``tiersim plan`` both hold their
    uniform fleets to it."""
    return accuracy if floor is None else floor


def reaches_floor(accuracy: float, floor: float) -> bool:
    """Whether ``accuracy`` reaches ``floor`` (less :data:`FLOOR_TOLERANCE`)."""
    return bool(accuracy >= floor - FLOOR_TOLERANCE)


def floor_pair(accuracy: float, floor: float, percent: bool = True) -> tuple[str, str]:
    """``accuracy`` and the ``floor`` it is held to as the plan prints them: in percent, the
    floor as :func:`percent_as_given` writes it (0.8 is 80.00%), the accuracy at its decimals
    or at as many more as tell a missed floor from it (before, both at four: a floor of 0.94885
    read "floor 0.9488" beside "fitted to 0.94885", and an accuracy under it by less than 5e-5
    printed as the floor it missed). ``percent=False`` gives fractions at four decimals at least
    (0.8000), as ``tiersim analytic`` prints its accuracies."""
    scale, unit, least = (100, "%", 2) if percent else (1, "", 4)
    value, limit = scale * accuracy, scale * floor
    given = next((d for d in range(least, 11) if abs(round(limit, d) - limit) < 1e-11 * scale), 10)
    shown = given
    if not reaches_floor(accuracy, floor):
        while shown < 10 and f"{value:.{shown}f}" == f"{limit:.{shown}f}":
            shown += 1
    return f"{value:.{shown}f}{unit}", f"{limit:.{given}f}{unit}"


def floor_digits(floor: float, accuracy: float | None, digits: int) -> int:
    """Significant digits to print ``floor`` (and ``accuracy`` beside it) with: ``digits``, or
    more where ``digits`` print the two alike though the floor is missed by more than
    :data:`FLOOR_TOLERANCE` (a floor of 0.944040 under an accuracy of 0.9440382 read "accuracy
    94.4 % under 94.4 %" and "accuracy floor 94.4 %: MISSED" beside "accuracy 94.40 %").
    The same digits serve a fraction and its percentage (x100 moves no digit); at most
    :data:`SIG_DIGITS`, the precision summary.json keeps."""
    if accuracy is None or not (math.isfinite(floor) and math.isfinite(accuracy)) \
            or reaches_floor(accuracy, floor):
        return digits
    return digits_apart(floor, accuracy, digits)


def percent_as_given(fraction: float) -> str:
    """A floor as a percentage at the decimals it was given with, two at least (0.93 is
    93.00%, 0.94995 is 94.995%; at two, 94.99% read under the floor set)."""
    return floor_pair(fraction, fraction)[1]


def accuracy_name(basis: str | None) -> str:
    """An accuracy's name by what it is scored on: "accuracy (realised draws)" on the
    ``realised`` basis, else "expected accuracy" (every output names it so)."""
    return "accuracy (realised draws)" if basis == "realised" else "expected accuracy"
