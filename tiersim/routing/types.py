"""Plain objects passed between the runner and the routing package."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from tiersim.routing.config import AccuracySpec


@dataclass(frozen=True)
class TierInfo:
    """What routing needs to know about one tier (tiers are listed cheapest first).

    ``precision`` picks the prior accuracy when ``accuracy`` is None; ``cost_weight`` is the
    tier's relative cost of serving one request (any unit; only ratios matter for routing);
    ``output_length_multiplier`` scales the output tokens a request emits on this tier;
    ``max_model_len`` is its context.
    """

    name: str
    precision: str = "bf16"
    accuracy: AccuracySpec = None
    cost_weight: float = 1.0
    output_length_multiplier: float = 1.0
    max_model_len: int = 0
    """The longest prompt + output the tier serves (its ``max_model_len``; 0: no limit): a
    router sends no request to a tier too short for it where another tier holds it
    (:mod:`tiersim.routing.capability`)."""


Basis = Literal["expected", "realised"]
"""What accuracy is scored on: expected correctness (less noise) or the realised 0/1 draws."""


@dataclass(frozen=True)
class Assignment:
    """A router's decision per request: first tier and escalation tier (-1 = none).

    Both arrays are int64, one entry per request in the order of the routed table. ``basis``
    says what this assignment's accuracy is scored on: "realised" when the router's decisions
    read realised correctness (a cascade, or a config that sets ``confusion``), else
    "expected" (see :mod:`tiersim.routing.accuracy`). ``refused_to`` (a cascade's): the tier a
    request goes on to at once when its first tier refuses it at admission (-1, or None for
    every request: it is dropped there).
    """

    tier: np.ndarray
    escalate_to: np.ndarray
    basis: Basis = "expected"
    refused_to: np.ndarray | None = None
    rerouted: np.ndarray | None = None
    """True where the router's tier could not hold the request and another tier that can took
    it (:func:`tiersim.routing.capability.by_capability`); None where nothing was checked."""
    fit: dict | None = None
    """A ``floor`` or ``budget`` router's fitted cuts (:meth:`CutFit.as_dict
    <tiersim.routing.constrained.CutFit.as_dict>`), kept in the summary's ``router.fit``;
    None for other policies."""
    score: np.ndarray | None = None
    """The router's classifier score per request (its uncalibrated probability that the
    cheapest tier answers wrong), for the realised AUROC (:mod:`tiersim.routing.quality`);
    None for a router without a classifier."""

    @property
    def final_tier(self) -> np.ndarray:
        """The tier whose answer the user gets: the escalation tier when there is one."""
        return np.where(self.escalate_to >= 0, self.escalate_to, self.tier)

    @property
    def escalated(self) -> np.ndarray:
        """True where the request runs a second pass."""
        return self.escalate_to >= 0


@dataclass(frozen=True)
class Prepared:
    """A trace with per-tier correctness (``correct_<tier>`` columns, cheapest tier first) and
    where each tier's accuracy came from: tier name -> "labels", "scenario" or "prior"."""

    df: pd.DataFrame
    accuracy_source: dict[str, str]
