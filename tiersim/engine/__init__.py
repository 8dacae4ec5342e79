"""The discrete-event engine: pure replica schedulers stepped by thin SimPy processes."""

from tiersim.engine.cluster import (
    BALANCERS,
    PrefixStats,
    SimResult,
    TierSpec,
    Workload,
    simulate,
)
from tiersim.engine.disagg import Disagg
from tiersim.engine.kv_levels import KVLevel
from tiersim.engine.request import Req, SchedulerLimits, longest_sequence, sequences_held
from tiersim.engine.scheduler import ReplicaScheduler, StepPlan
from tiersim.engine.spec_decode import SpecDecoding

__all__ = [
    "BALANCERS", "Disagg", "KVLevel", "PrefixStats", "ReplicaScheduler", "Req", "SchedulerLimits",
    "SimResult", "SpecDecoding", "StepPlan", "TierSpec", "Workload", "longest_sequence",
    "sequences_held", "simulate",
]
