"""The bounds a scenario's sizes may take (replicas, GPUs per replica, sweep points), in one
leaf module: the scenario's checks and the readers of what runs and plans wrote (plan.json's
``current``) hold the same bounds without importing the scenario's models."""

from __future__ import annotations

DEFAULT_MAX_REPLICAS = 1024
"""Default of ``limits.max_replicas``: the most replicas one tier may have."""
MAX_REPLICAS_CEILING = 100_000
"""Highest ``limits.max_replicas`` a scenario may set (10^5 replicas: 13 s and 360 MB for the
tiny trace; 10^7 took 10 GB)."""
MAX_GRID_POINTS = 1_000_000
"""The most points any grid may expand to, whatever ``max_points`` allows: each point is held in
memory (and listed in ``sweep.json``) before the first runs."""
DEFAULT_MAX_SWEEP_POINTS = 10_000
"""Default of ``limits.max_sweep_points``: the most points a sweep grid may expand to."""
SIZED_GPUS_PER_REPLICA = (1, 2, 4, 8)
"""Default of ``limits.gpus_per_replica``: the GPUs per replica a sized fleet may use."""
MAX_GPUS_PER_REPLICA = 4096
"""Most GPUs one replica may have (a tier's ``gpus_per_replica``, each sized value)."""
MAX_SIZED_GPU_OPTIONS = 16
"""Most values ``limits.gpus_per_replica`` may list (each is a search of its own)."""
