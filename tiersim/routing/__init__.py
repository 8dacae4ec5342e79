"""Routing: difficulty classifier + isotonic calibration, tier policies, cascades, accuracy.

The runner's entry points:

- :func:`prepare_workload` adds per-tier correctness to a trace that lacks it and returns a
  :class:`Prepared` (the table and each tier's accuracy source);
- :func:`build_router` validates a :class:`RouterConfig` and returns a :class:`Router` whose
  ``assign(df, rng)`` gives an :class:`Assignment` (tiers indexed cheapest first) carrying the
  basis its accuracy is scored on;
- :func:`score` and :func:`savings` turn the final tiers (and attributed cost) into metrics.
"""

from __future__ import annotations

from tiersim.routing.accuracy import prepare_workload, tier_output_tokens
from tiersim.routing.config import (
    AccuracySpec,
    CascadeConfig,
    ClassifierConfig,
    ConfusionConfig,
    DifficultyConfig,
    RouterConfig,
    WorkloadQualityConfig,
)
from tiersim.routing.metrics import routellm_metrics, savings, score
from tiersim.routing.policies import ROUTERS, Router, build_router
from tiersim.routing.types import Assignment, Basis, Prepared, TierInfo

__all__ = [
    "ROUTERS",
    "AccuracySpec",
    "Assignment",
    "Basis",
    "CascadeConfig",
    "ClassifierConfig",
    "ConfusionConfig",
    "DifficultyConfig",
    "Prepared",
    "Router",
    "RouterConfig",
    "TierInfo",
    "WorkloadQualityConfig",
    "build_router",
    "prepare_workload",
    "routellm_metrics",
    "savings",
    "score",
    "tier_output_tokens",
]
