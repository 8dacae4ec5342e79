"""Whether a trace's timestamps look like the time unit its format is read in.

A time column in the wrong unit passes every check (the numbers are sorted and finite) and
replays the trace 1000x too fast or too slow: Qwen's Bailian traces use Mooncake's column names
with float seconds, and a canonical ``arrival_s`` written in milliseconds spans weeks. These
notes say which sizes do not fit the unit and the setting that rescales them
(``trace.time_scale``, whose bounds 0.001 and 1000 are exactly these factors).
"""

from __future__ import annotations

import numpy as np

EPOCH_SECONDS = (1e9, 1e11)
"""First timestamps read as Unix times in seconds (September 2001 to the year 5138); Unix
milliseconds are 1e12 and more."""
SLOW_SPAN_S = 86_400.0
"""A seconds trace spanning more than a day ..."""
SLOW_GAP_S = 60.0
"""... with a median gap of a minute or more between arrivals may be milliseconds."""


class UnitNote(str):
    """A note on a time column's unit, with the ``trace.time_scale`` it advises (``scale``):
    a read at that very scale has followed it, so it is not said again."""

    scale: float

    def __new__(cls, text: str, scale: float) -> UnitNote:
        """The note ``text``, with the ``scale`` it applied to the column."""
        note = super().__new__(cls, text)
        note.scale = scale
        return note

    def __reduce__(self):
        return (UnitNote, (str(self), self.scale))


def unfollowed(notes: list[str], time_scale: float) -> list[str]:
    """``notes`` less the unit notes whose advised scale is ``time_scale``."""
    return [n for n in notes if not (isinstance(n, UnitNote) and n.scale == time_scale)]


def milliseconds_note(column: str, t: np.ndarray) -> list[str]:
    """A note when the raw timestamps ``t`` of a column read in milliseconds (Mooncake) look
    like seconds: a fraction of a millisecond, a first value sized as Unix seconds, or a median
    gap between consecutive timestamps under 1 ms."""
    if len(t) < 2:
        return []
    reasons = []
    fractional = float(np.mean(t != np.floor(t))) if t.dtype.kind == "f" else 0.0
    if fractional:
        reasons.append(f"{fractional:.1%} of them have a fraction of a millisecond")
    if EPOCH_SECONDS[0] <= float(t[0]) < EPOCH_SECONDS[1]:
        reasons.append(f"the first, {float(t[0]):.15g}, is sized as a Unix time in seconds")
    gap = _median_gap(t)
    if gap is not None and gap < 1:
        reasons.append(f"the median gap between consecutive ones is {gap:.3g} ms")
    if not reasons:
        return []
    return [UnitNote(
        f"{column} is read in milliseconds (this format's unit), but {'; '.join(reasons)}: if "
        "they are seconds (as in Qwen's Bailian traces), every arrival comes 1000x too early; "
        "set trace.time_scale: 0.001 (tiersim trace inspect: --time-scale 0.001) or write them "
        "in milliseconds", 0.001)]


UNIX_UNITS = (("seconds", 1.0), ("milliseconds", 1e3), ("microseconds", 1e6),
              ("nanoseconds", 1e9))
"""Units a Unix time is written in, with their counts per second: a first timestamp in
:data:`EPOCH_SECONDS` times the count is sized as a Unix time in that unit (the ranges do not
overlap)."""


def epoch_note(column: str, t: np.ndarray, unit: str) -> list[str]:
    """A note when the raw timestamps ``t`` of a column read in ``unit`` ("seconds" or
    "milliseconds") start at a value sized as a Unix time in a finer unit (a BurstGPT log's
    Timestamp in Unix milliseconds, a Mooncake timestamp in Unix microseconds or nanoseconds):
    every gap is read 1000 or more times too long (20 ms between requests replayed as 20 s).
    A factor above 1000, beyond what ``trace.time_scale`` rescales, is said so."""
    if len(t) < 2:
        return []
    first, per_second = float(t[0]), dict(UNIX_UNITS)[unit]
    finer = next((name for name, count in UNIX_UNITS if count > per_second
                  and EPOCH_SECONDS[0] * count <= first < EPOCH_SECONDS[1] * count), None)
    if finer is None:
        return []
    factor = dict(UNIX_UNITS)[finer] / per_second
    shown = str(int(first)) if first.is_integer() else f"{first:.15g}"  # in full: 1.7e+15
    head = (f"{column} is read in {unit}, but the first, {shown}, is sized as a Unix time "
            f"in {finer}: if they are {finer}, every arrival comes "
            f"{'1000' if factor == 1000 else f'{factor:,.0f}'}x too late")
    if factor > 1000:
        return [UnitNote(f"{head}, more than trace.time_scale (at most 1000) rescales; write "
                         f"them in {unit}", factor)]
    return [UnitNote(f"{head}; set trace.time_scale: 1000 (tiersim trace inspect: "
                     f"--time-scale 1000) or write them in {unit}", 1000.0)]


FINER = {"seconds": "milliseconds", "milliseconds": "microseconds"}
"""The unit 1000 times finer than each unit a time column is read in."""


def seconds_note(column: str, t: np.ndarray, unit: str = "seconds") -> list[str]:
    """A note when arrival times ``t`` (in seconds) of a column read in ``unit`` ("seconds" or
    "milliseconds") look like the unit 1000 times finer (:data:`FINER`): they span more than
    :data:`SLOW_SPAN_S` with a median gap of :data:`SLOW_GAP_S` or more (Mooncake timestamps
    in microseconds replayed 30 minutes as 21 days, without a note)."""
    if len(t) < 2:
        return []
    span = float(t[-1] - t[0])
    if span <= SLOW_SPAN_S or _gaps_surely_short(t, span, SLOW_GAP_S):
        return []
    gap = _median_gap(t)
    if gap is None or gap < SLOW_GAP_S:
        return []
    return [UnitNote(
        f"{column} is read in {unit}, but the arrivals span {span / 86_400:,.1f} days with a "
        f"median gap of {gap:,.0f} s between consecutive ones: if they are {FINER[unit]}, every "
        "arrival comes 1000x too late; set trace.time_scale: 1000 (tiersim trace inspect: "
        f"--time-scale 1000) or write them in {unit}", 1000.0)]


def _gaps_surely_short(t: np.ndarray, span: float, limit: float) -> bool:
    """Whether the median gap of non-decreasing times ``t`` (:func:`_median_gap`) is surely
    below ``limit``, told without the gaps: a median of ``limit`` or more puts at least half of
    the ``k`` positive gaps near ``limit`` or above, so they sum past ``span`` when
    ``k // 2`` such gaps would hold more than twice it (a 20M-row trace's gaps, 160 MB, were
    the peak of loading it, for a note such a trace never gets). False for unsorted times."""
    later, earlier = t[1:], t[:-1]
    if (later < earlier).any():
        return False
    return gaps_counted_short(int(np.count_nonzero(later > earlier)), span, limit)


def gaps_counted_short(positive: int, span: float, limit: float) -> bool:
    """Whether ``positive`` gaps between sorted times spanning ``span`` surely have a median
    below ``limit`` (:func:`_gaps_surely_short`, told from the count alone)."""
    return (limit - 1) * (positive // 2) > 2 * span + 1


def _median_gap(t: np.ndarray) -> float | None:
    """The median of the gaps between consecutive distinct times (requests logged at the same
    time are one burst, not a gap of 0), None when all are equal."""
    gaps = np.diff(t.astype(np.float64, copy=False))
    # the positive gaps are moved behind the others in place, not copied out (a 20M-row
    # trace's copies of its 160 MB of gaps were the load's peak)
    flat = int(np.count_nonzero(gaps <= 0))
    if flat == len(gaps):
        return None
    if flat:
        gaps.partition(flat - 1)
    return float(np.median(gaps[flat:], overwrite_input=True))


COARSE_UNITS = (("hour", 3600.0), ("minute", 60.0), ("second", 1.0))
"""Precisions of a logged time column coarse enough to make bursts (:func:`coarse_note`)."""
COARSE_TIED = (10, 0.01)
"""Least count and share of requests at the same instant as the one before that
:func:`coarse_note` says."""
GRID_STEP_S = 1.0
"""Least spacing of a grid of instants (:func:`_grid_step`) coarse enough to make bursts; a
log's ties at a finer step (Mooncake milliseconds) are its own precision."""
GRID_JITTER = 0.01
"""Share of the grid's step by which a gap between instants may miss a whole number of steps
(Mooncake's conversation trace: 2999 or 3001 ms on a 3 s grid)."""


def coarse_note(column: str, t: np.ndarray) -> list[str]:
    """A note when a logged trace's arrival times ``t`` (seconds since its first request) are
    all whole hours, minutes or seconds apart, or on instants a second or more apart
    (:func:`_grid_step`), and many requests (:data:`COARSE_TIED`) arrive at the same instant
    as the one before: each such group is replayed as a burst at one instant, which the log's
    coarse times may have made (requests a second apart logged to the hour were served 40 at
    once, without a word; Mooncake's conversation trace holds 90% of its requests at instants
    3 s apart). The file is read as written; a canonical ``arrival_s`` is the replay's own
    schedule and is not judged. The note is a :class:`CoarseNote`, said again of the rows a
    window keeps."""
    text = _coarse_text(column, t)
    return [CoarseNote(text, column, t)] if text else []


class CoarseNote(str):
    """The note on coarse arrival times (:func:`coarse_note`) with the times it was said of
    (``t``, of the converted table's rows, and their ``column``), so that :meth:`within` can
    say it of the rows a window keeps: a window of 87 requests was told of the file's
    '2,671 of 3,001'."""

    column: str
    t: np.ndarray

    def __new__(cls, text: str, column: str, t: np.ndarray) -> CoarseNote:
        """The note ``text`` on ``column``, keeping its times ``t`` for :meth:`within`."""
        note = super().__new__(cls, text)
        note.column, note.t = column, t
        return note

    def within(self, rows: np.ndarray | None) -> list[str]:
        """The note as plain text (no times held), of the table ``rows`` a window keeps (None:
        every row); none where those rows are not tied enough."""
        if rows is None:
            return [str(self)]
        text = _coarse_text(self.column, self.t[rows])
        return [text] if text else []


def _coarse_text(column: str, t: np.ndarray) -> str:
    """The words of :func:`coarse_note` for times ``t``, empty when it says nothing."""
    if len(t) < 2:
        return ""
    tied = int(np.count_nonzero(t[1:] == t[:-1]))
    if not tied_enough(tied, len(t)):
        return ""
    unit = next((name for name, size in COARSE_UNITS if whole_units(t, size)), None)
    if unit is not None:
        return coarse_words(column, tied, len(t), unit)
    step = _grid_step(t)
    if step is None:
        return ""
    shown = f"{round(step, 3):,g} s"  # to the millisecond: 7,200 s, not 7.2e+03 s
    return coarse_words(column, tied, len(t), None, shown)


def tied_enough(tied: int, count: int) -> bool:
    """Whether ``tied`` of ``count`` times at the instant before are enough for the coarse
    note (:data:`COARSE_TIED`)."""
    return tied >= max(COARSE_TIED[0], COARSE_TIED[1] * count)


def whole_units(t: np.ndarray, size: float) -> bool:
    """Whether every time of ``t`` (seconds) is a whole number of ``size`` seconds."""
    return bool(np.all(np.abs(t / size - np.round(t / size)) * size < 1e-6))


def coarse_words(column: str, tied: int, count: int, unit: str | None,
                 shown: str = "") -> str:
    """The coarse note's words: ``tied`` of ``count`` requests at the instant before, times
    given to the whole ``unit`` (of :data:`COARSE_UNITS`) or else on instants ``shown``
    apart; all at one instant (``tied`` is ``count`` - 1), no unit: times 0 s apart are whole
    hours and microseconds alike, and said nothing of the log's precision."""
    if tied == count - 1:
        return (f"{column} gives all {count:,} requests one instant, so they are replayed as "
                "one burst at it (queueing and TTFT may read high); if the log's times are "
                "coarser than when they came, a log with finer times replays them as they came")
    if unit is not None:
        given, within = f"is given to the whole {unit}", f"the {unit}"
    else:
        given, within = f"falls on instants {shown} apart", f"the {shown}"
    return (f"{column} {given}: {tied:,} of {count:,} requests arrive at the same instant as "
            "the request before them, so each is replayed in a burst at that instant, though "
            f"they may have come apart within {within} (queueing and TTFT may read high); a "
            "log with finer times replays them as they came")


def _grid_step(t: np.ndarray) -> float | None:
    """The spacing of a grid that every distinct time of non-decreasing ``t`` (seconds) lies
    on, when it is :data:`GRID_STEP_S` or more: the median gap between distinct times, each gap
    within :data:`GRID_JITTER` of a whole number of it (at least two gaps); else None."""
    instants = t[np.flatnonzero(np.diff(t, prepend=-np.inf) != 0)]
    gaps = np.diff(instants)
    if len(gaps) < 2 or (gaps <= 0).any():
        return None
    step = float(np.median(gaps))
    steps = np.round(gaps / step)
    if step < GRID_STEP_S or (steps < 1).any():
        return None
    return step if bool(np.all(np.abs(gaps - steps * step) <= GRID_JITTER * step)) else None
