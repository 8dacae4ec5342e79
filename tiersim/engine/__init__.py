"""The discrete-event engine: pure replica schedulers stepped by thin SimPy processes."""

from tiersim.engine.cluster import BALANCERS, SimResult, TierSpec, Workload, simulate
from tiersim.engine.request import Req, SchedulerLimits
from tiersim.engine.scheduler import ReplicaScheduler, StepPlan

__all__ = [
    "BALANCERS", "ReplicaScheduler", "Req", "SchedulerLimits", "SimResult", "StepPlan",
    "TierSpec", "Workload", "simulate",
]
