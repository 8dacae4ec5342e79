"""Each tier of a scenario to plan on the fewest GPUs per replica it fits on
(:func:`_fitting`), so the planner can start from a model too big for the GPUs the scenario
gives it; one line naming the tier when it fits on none.
"""

from __future__ import annotations

from tiersim.errors import TiersimError


def _fitting(scenario, gpu_options: tuple[int, ...] | None = None):
    """The scenario with each tier (baseline-only ones too) on the fewest GPUs per replica on
    which it fits (its own count, else the planner's larger options), so the planner can start
    from a model too big for the GPUs the scenario gives it; data parallelism is kept (a count
    it does not divide is skipped); one line when a tier fits on none, or asks a longer
    max_model_len than its model's context (at any size)."""
    from tiersim.fleet import check_contexts

    check_contexts(scenario)
    fitted = [_fitted(scenario, at, t, gpu_options) for at, t in scenario.tier_entries()]
    return scenario.model_copy(update={"tiers": fitted[:len(scenario.tiers)],
                                       "baselines": fitted[len(scenario.tiers):]})


def _fitted(scenario, at: tuple, tier, gpu_options: tuple[int, ...] | None):
    """``tier`` (at ``at`` in the scenario) on the fewest GPUs per replica it fits on
    (:func:`_fitting`); one line when none, at the key a split refusal names (its
    ``FitError.key``), else at the tier."""
    from tiersim.errors import ScenarioError
    from tiersim.fleet import build_tier
    from tiersim.plan.planner import GPU_OPTIONS
    from tiersim.scenario import format_loc

    errors: list[tuple[int, Exception]] = []
    counts = [tier.gpus_per_replica] + [
        g for g in sorted(gpu_options or GPU_OPTIONS) if g > tier.gpus_per_replica]
    for gpus in (g for g in counts if g % tier.data_parallel == 0):
        sized = tier.model_copy(update={"gpus_per_replica": gpus})
        try:
            build_tier(scenario, sized)
        except (TiersimError, ValueError) as err:
            errors.append((gpus, err))
            continue
        return sized
    error, text = _fit_refusal(errors)
    raise ScenarioError(scenario.source, format_loc((*at, *getattr(error, "key", ()))),
                        f"tier {tier.name!r}: {text}")


def _fit_refusal(errors: list[tuple[int, Exception]]) -> tuple[Exception, str]:
    """The error a tier that runs on none of the planner's GPU counts is refused with, and its
    text: the last count's, except that where the largest counts refuse the layout (a split,
    a MoE kernel) and a smaller one only lacked memory, that memory error is what is said, with
    the largest count's refusal after it (so the line does not blame the tier's own count on
    a layout it does not have)."""
    from tiersim.errors import FitError

    last_gpus, last = errors[-1]
    short = [(g, e) for g, e in errors if isinstance(e, FitError) and not e.key]
    if not short or short[-1][1] is last:
        return last, str(last)
    error = short[-1][1]
    return error, f"{error} (on {last_gpus} GPUs per replica: {last})"
