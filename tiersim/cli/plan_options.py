"""``tiersim plan``'s options other than ``--choose`` (:mod:`tiersim.cli.plan_choose`), read
and checked before anything is simulated: ``--gpus-per-replica``, ``--cost-model``, the SLO
limits and the accuracy floor, and ``--max-replicas`` above the scenario's cap.
"""

from __future__ import annotations

import math
from pathlib import Path

from tiersim.errors import TiersimError, shown


def _parse_gpus(text: str | None) -> tuple[int, ...] | None:
    """``1,2,4`` -> (1, 2, 4); a bad list is a one-line error, before anything is simulated:
    the values become the planned scenario's ``limits.gpus_per_replica``, so they are held to
    that key's bounds (before, a value over them failed once the whole plan had run, and the
    error blamed the scenario file)."""
    from tiersim.scenario import MAX_GPUS_PER_REPLICA, MAX_SIZED_GPU_OPTIONS

    if text is None:
        return None
    from tiersim.numbers import ascii_digits, other_digits_words

    written = ascii_digits(text)
    if written != text:  # １,２ was told to type 1, and １，２ was one value
        raise TiersimError(f"--gpus-per-replica: {other_digits_words(text)}; type "
                           f"--gpus-per-replica {written}")
    try:
        values = tuple(sorted({_gpu_count(v) for v in text.split(",")}))
    except ValueError:
        values = ()
    if (not values or min(values) < 1 or max(values) > MAX_GPUS_PER_REPLICA
            or len(values) > MAX_SIZED_GPU_OPTIONS):
        raise TiersimError(f"--gpus-per-replica {text!r}: write whole numbers from 1 to "
                           f"{MAX_GPUS_PER_REPLICA:,}, at most {MAX_SIZED_GPU_OPTIONS} of "
                           "them, e.g. 1,2,4")
    return values


def _gpu_count(text: str) -> int:
    """One ``--gpus-per-replica`` value, read as every number flag is (``2``; ``1e3`` is 1000)
    and whole; a misspelt one (``010``) is refused with the number to write, and so is one
    whole only to a float's 16 digits (``0.99999999999999999999``, which planned 1 GPU per
    replica, as every other whole-number flag refuses it), other text with ValueError."""
    from tiersim.numbers import NumberError, exact_whole, misspelt, read_number

    try:
        number = read_number(text)
    except NumberError:
        why = misspelt(text.strip(), flag="--gpus-per-replica")
        if why is not None:
            raise TiersimError(f"--gpus-per-replica: {why}") from None
        raise
    if not float(number).is_integer():
        raise ValueError(text)
    if isinstance(number, float):
        try:
            return exact_whole(text)
        except NumberError as err:
            raise TiersimError(f"--gpus-per-replica: {err}") from None
    return int(number)


def _check_cost_model(name: str | None) -> str | None:
    """A known cost model, or a one-line error."""
    from tiersim.costs import COST_MODELS

    if name is not None and name not in COST_MODELS:
        raise TiersimError(f"--cost-model {shown(name, 64)}: choose one of "
                           f"{', '.join(COST_MODELS)}")
    return name


#: The option each SLO is given with, by its ``slo:`` key.
SLO_FLAGS = {"ttft_p99_s": "--slo-ttft-p99", "tpot_p99_s": "--slo-tpot-p99",
             "e2e_p99_s": "--slo-e2e-p99", "session_p99_s": "--slo-session-p99"}


def _flags_given(ttft: float | None, tpot: float | None, e2e: float | None = None,
                 session: float | None = None) -> dict[str, str]:
    """The SLO options given (not None), by the scenario key they set (``slo.ttft_p99_s`` ->
    ``--slo-ttft-p99``): a note on the planned scenario's SLO names the option the user typed
    (:func:`tiersim.scenario_checks.keys_given_as`)."""
    return {f"slo.{field}": flag for (field, flag), value
            in zip(SLO_FLAGS.items(), (ttft, tpot, e2e, session), strict=True)
            if value is not None}


def _check_limits(ttft: float | None, tpot: float | None, floor: float | None,
                  e2e: float | None = None, session: float | None = None) -> None:
    """The SLO options must be finite numbers of seconds > 0, the floor a number from 0 to 1:
    one line naming the option (NaN and inf pass a bare range check)."""

    from tiersim.numbers import as_written
    from tiersim.scenario import SloConfig

    for (field, flag), value in zip(SLO_FLAGS.items(), (ttft, tpot, e2e, session),
                                    strict=True):
        high = next(m.le for m in SloConfig.model_fields[field].metadata if hasattr(m, "le"))
        if value is not None and not (math.isfinite(value) and value > 0):
            raise TiersimError(f"{flag}: must be a finite number > 0 (got {as_written(value)})")
        if value is not None and value > high:  # the scenario's own bound, named as the flag
            raise TiersimError(f"{flag}: must be at most {high:g} seconds (got "
                               f"{as_written(value)})")
    if floor is not None and not 0 <= floor <= 1:
        from tiersim.errors import percent_hint

        raise TiersimError(f"--accuracy-floor: must be a number from 0 to 1 (got "
                           f"{as_written(floor)}){percent_hint(floor)}")


def _over_the_cap(asked: int, cap: int, scenario_path: Path) -> str:
    """Why ``--max-replicas asked`` above the scenario's ``limits.max_replicas`` (``cap``) is
    refused, and what to give: at most the cap, or a raised cap, where the most a scenario
    may set (:data:`~tiersim.scenario_models.MAX_REPLICAS_CEILING`) holds ``asked`` (``1e30`` was
    told to raise limits: {max_replicas: N}, which no scenario may set so high)."""
    from tiersim.numbers import shown
    from tiersim.scenario import MAX_REPLICAS_CEILING

    said = f"--max-replicas {shown(str(asked))} is above {scenario_path}'s limits.max_replicas"
    if asked <= MAX_REPLICAS_CEILING:
        return f"{said} ({cap}); lower it, or raise limits: {{max_replicas: N}} in the scenario"
    if cap == MAX_REPLICAS_CEILING:
        return f"{said} ({cap}, the most a scenario may set); give 1 to {cap}"
    return (f"{said} ({cap}) and the most a scenario may set ({MAX_REPLICAS_CEILING}); give "
            f"1 to {cap}, or raise limits: {{max_replicas: N}} in the scenario, N up to "
            f"{MAX_REPLICAS_CEILING}")
