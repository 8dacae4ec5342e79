"""A judged design's size in a few words, as ``tiersim plan`` prints a runner-up and the report's
"Other designs" table shows runners-up and uniform fleets: "nvfp4 3 + fp8 2"."""

from __future__ import annotations

from typing import Any

from tiersim.results import by_planned_tier

LAST_TRIED = "the last size tried"
"""What a size is where no replica count met the SLOs (``missed`` says "latency: ..."): where
the design's search stopped, no size that serves."""


def design_sizes(design: dict[str, Any], gpus: bool = False) -> str | None:
    """Replicas per tier of a runner-up or uniform fleet (plan.json's ``replicas``), in the
    design's order of tiers: "fp8 9 + bf16 8" (the GPUs per replica are in its label,
    ``bf16@2``), or with ``gpus`` and a GPU count for every tier (``gpus_per_replica``) "fp8 9
    x 1 GPU + bf16 8 x 1 GPU", as the plan's own line gives its size; None for a design never
    sized (its accuracy or router ruled it out first). Before, only plan.json gave a
    runner-up's size."""
    replicas = by_planned_tier(design, "replicas")
    if not replicas:
        return None
    per = design.get("gpus_per_replica") or {}
    if gpus and all(tier in per for tier, _ in replicas):
        return " + ".join(f"{tier} {count} x {per[tier]} GPU" for tier, count in replicas)
    return " + ".join(f"{tier} {count}" for tier, count in replicas)


def sized_words(design: dict[str, Any], unit: str = "", gpus: bool = False) -> str | None:
    """:func:`design_sizes` followed by ``unit`` (" replicas"; none where ``gpus`` gave each
    tier's GPUs), with "the last size tried" where no size met the SLOs (:func:`no_size_met`);
    None for a design never sized."""
    sizes = design_sizes(design, gpus)
    if sizes is None:
        return None
    if sizes.endswith(" GPU"):  # the GPU form names its unit (the other ends in a count)
        unit = ""
    return f"{sizes}{unit}, {LAST_TRIED}" if no_size_met(design) else f"{sizes}{unit}"


def no_size_met(design: dict[str, Any]) -> bool:
    """Whether the design missed the SLOs at every size it tried (``missed`` "latency: ..."),
    so its ``replicas`` are where its search stopped; a fleet missing the floor alone was sized
    to meet the SLOs."""
    return not design.get("feasible", True) and str(design.get("missed") or "").startswith(
        "latency")
