"""Routing by capability first: no request is sent to a tier whose context cannot hold it when
another tier of the fleet can.

A router decides on accuracy and cost; a real gateway first asks which tiers can serve the
request at all (its prompt plus its output within the tier's ``max_model_len``, the count vLLM
refuses a request by). :func:`by_capability` moves a request its router sent to a tier too
short for it to the cheapest tier above that holds it (at least as accurate), else to the
dearest tier below that does; only a request no tier holds stays where its router sent it,
and is dropped there, counted as dropped (the run's note says why). A cascade's request its
first tier refuses goes on to the cascade's escalation tier as before
(``Assignment.refused_to``), where that tier holds it. :meth:`tiersim.routing.base.Router.
assign` applies it to every router's decision, after any injected confusion.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from tiersim.routing.types import Assignment, TierInfo


def output_on_tier(output_tokens, multiplier) -> np.ndarray:
    """Output tokens of requests on a tier: ``output_tokens x multiplier`` (the tier's
    ``output_length_multiplier``, one or one per request) rounded half to even, at least 1, as
    float64. The one formula for it outside the engine, whose dispatch rounds a request's the
    same way (Python's ``round``, also half to even: :meth:`tiersim.engine.cluster._Fleet.
    dispatch`)."""
    return np.maximum(1.0, np.rint(np.asarray(output_tokens, dtype=np.float64) * multiplier))


def fits(df: pd.DataFrame, tiers: list[TierInfo]) -> np.ndarray:
    """(requests x tiers) whether each tier's context holds each request: its prompt plus its
    output on that tier (the tier's ``output_length_multiplier`` applied, at least 1 token) at
    most the tier's ``max_model_len`` (0: no limit), as the engine drops by it."""
    prompt = df["input_tokens"].to_numpy(np.float64)
    output = df["output_tokens"].to_numpy(np.float64)
    out = np.ones((len(df), len(tiers)), dtype=bool)
    for k, tier in enumerate(tiers):
        if tier.max_model_len:
            tokens = prompt + output_on_tier(output, tier.output_length_multiplier)
            out[:, k] = tokens <= tier.max_model_len
    return out


def capable(chosen: np.ndarray, fit: np.ndarray) -> np.ndarray:
    """``chosen`` (a tier index per request, -1: none) with each tier that cannot hold its
    request (``fit``, :func:`fits`) replaced by the cheapest tier above it that can, else the
    dearest below it that can; kept where no tier can (or none was chosen)."""
    chosen = np.asarray(chosen, dtype=np.int64)
    rows = np.arange(len(chosen))
    bad = (chosen >= 0) & ~fit[rows, np.maximum(chosen, 0)]
    if not bad.any():
        return chosen
    k = np.arange(fit.shape[1])[None, :]
    above = fit & (k > chosen[:, None])
    below = fit & (k < chosen[:, None])
    first_above = above.argmax(axis=1)
    last_below = fit.shape[1] - 1 - below[:, ::-1].argmax(axis=1)
    moved = np.where(above.any(axis=1), first_above,
                     np.where(below.any(axis=1), last_below, chosen))
    return np.where(bad, moved, chosen)


def by_capability(a: Assignment, df: pd.DataFrame, tiers: list[TierInfo]) -> Assignment:
    """``a`` with no request on a tier that cannot hold it where another tier can
    (:func:`capable`): its first tier, unless that tier refuses it on to a ``refused_to`` tier
    that holds it (a cascade's), and its escalation tier; an escalation that lands on the
    request's first tier is none. ``rerouted`` marks the requests whose first or escalation
    tier moved (None where no tier sets a context: nothing to check)."""
    if not any(t.max_model_len for t in tiers) or not len(df):
        return a
    fit = fits(df, tiers)
    rows = np.arange(len(df))
    tier = np.asarray(a.tier, dtype=np.int64)
    forwarded = np.zeros(len(df), dtype=bool)
    if a.refused_to is not None:
        on = np.asarray(a.refused_to, dtype=np.int64)
        forwarded = (on >= 0) & fit[rows, np.maximum(on, 0)]
    first = np.where(forwarded, tier, capable(tier, fit))
    esc = capable(a.escalate_to, fit)
    esc = np.where(esc == first, -1, esc)
    moved = (first != tier) | (esc != np.asarray(a.escalate_to, dtype=np.int64))
    return dataclasses.replace(a, tier=first, escalate_to=esc, rerouted=moved)
