"""Plain objects passed between the runner and the routing package."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tiersim.routing.config import AccuracySpec


@dataclass(frozen=True)
class TierInfo:
    """What routing needs to know about one tier (tiers are listed cheapest first).

    ``precision`` picks the prior accuracy when ``accuracy`` is None; ``cost_weight`` is the
    tier's relative cost of serving one request (any unit; only ratios matter for routing);
    ``output_length_multiplier`` scales the output tokens a request emits on this tier.
    """

    name: str
    precision: str = "bf16"
    accuracy: AccuracySpec = None
    cost_weight: float = 1.0
    output_length_multiplier: float = 1.0


@dataclass(frozen=True)
class Assignment:
    """A router's decision per request: first tier and escalation tier (-1 = none).

    Both arrays are int64, one entry per request in the order of the routed table.
    """

    tier: np.ndarray
    escalate_to: np.ndarray

    @property
    def final_tier(self) -> np.ndarray:
        """The tier whose answer the user gets: the escalation tier when there is one."""
        return np.where(self.escalate_to >= 0, self.escalate_to, self.tier)

    @property
    def escalated(self) -> np.ndarray:
        """True where the request runs a second pass."""
        return self.escalate_to >= 0
