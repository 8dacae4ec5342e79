"""Workloads for traces that lack something: synthetic arrivals, difficulty and correctness."""
