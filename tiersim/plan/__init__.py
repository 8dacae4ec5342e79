"""Capacity planning: size every fleet design by simulation and pick the cheapest that meets
the SLOs and the accuracy floor (:func:`plan_fleet`); the search itself is in
:mod:`tiersim.plan.search`, the simulation of a design in :mod:`tiersim.plan.evaluate`. The
planner (:mod:`tiersim.plan.planner`) draws on :mod:`~tiersim.plan.constraints` (what a plan
must meet), :mod:`~tiersim.plan.designs` (a sized design), :mod:`~tiersim.plan.feasibility`
(what no replica count fixes), :mod:`~tiersim.plan.reasons` (why, in words),
:mod:`~tiersim.plan.ranking` (the order designs are chosen in) and
:mod:`~tiersim.plan.assembly` (the plan put together)."""

from __future__ import annotations

from tiersim.plan.evaluate import Design, Outcome, SimEvaluator
from tiersim.plan.planner import Constraints, Planner
from tiersim.plan.search import Sizing, Verdict, size_replicas

__all__ = ["Constraints", "Design", "Outcome", "Planner", "SimEvaluator", "Sizing", "Verdict",
           "size_replicas"]
