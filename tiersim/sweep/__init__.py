"""Sweeps: grid expansion of scenario axes, executors (local processes, Ray), resumable store,
and the capacity planner."""
