"""A judged design's size in a few words, as ``tiersim plan`` prints a runner-up and the report's
"Other designs" table shows runners-up and uniform fleets: "nvfp4 3 + fp8 2"."""

from __future__ import annotations

from typing import Any

from tiersim.results import by_planned_tier, split_words

LAST_TRIED = "the last size tried"
"""What a size is where no replica count met the SLOs (``missed`` says "latency: ..."): where
the design's search stopped, no size that serves."""


def design_sizes(design: dict[str, Any], gpus: bool = False,
                 techniques: bool = False) -> str | None:
    """Replicas per tier of a runner-up or uniform fleet (plan.json's ``replicas``), in the
    design's order of tiers: "fp8 9 + bf16 8" (the GPUs per replica are in its label,
    ``bf16@2``), or with ``gpus`` and a GPU count for every tier (``gpus_per_replica``) "fp8 9
    x 1 GPU + bf16 8 x 1 GPU", as the plan's own line gives its size; None for a design never
    sized (its accuracy or router ruled it out first). Before, only plan.json gave a
    runner-up's size. With ``techniques`` each tier's prefill/decode split and serving
    techniques follow its count (plan.json's ``per_tier``, :func:`~tiersim.results.split_words`:
    "fp8 7 (spec decode k=3)"), as the console's uniform-fleet line names them."""
    replicas = by_planned_tier(design, "replicas")
    if not replicas:
        return None
    per = design.get("gpus_per_replica") or {}
    tiers = design.get("per_tier") or {}

    def said(tier: str, count: int) -> str:
        if not techniques:
            return ""
        entry = tiers.get(tier) or {}
        return split_words(count, entry.get("prefill"), entry.get("techniques"))

    if gpus and all(tier in per for tier, _ in replicas):
        return " + ".join(f"{tier} {count} x {per[tier]} GPU{said(tier, count)}"
                          for tier, count in replicas)
    return " + ".join(f"{tier} {count}{said(tier, count)}" for tier, count in replicas)


def sized_words(design: dict[str, Any], unit: str = "", gpus: bool = False,
                techniques: bool = False) -> str | None:
    """:func:`design_sizes` followed by ``unit`` (" replicas"; none where ``gpus`` gave each
    tier's GPUs; with ``techniques`` each tier's split and techniques, :func:`design_sizes`),
    with "the last size tried" where no size met the SLOs (:func:`no_size_met`);
    None for a design never sized."""
    sizes = design_sizes(design, gpus, techniques)
    if sizes is None:
        return None
    if sizes.endswith(" GPU"):  # the GPU form names its unit (the other ends in a count)
        unit = ""
    return f"{sizes}{unit}, {LAST_TRIED}" if no_size_met(design) else f"{sizes}{unit}"


def router_words(design: dict[str, Any]) -> str | None:
    """The router setting a sized design was judged under (plan.json's ``router``), as a
    scenario writes it: "router.policy floor, router.floor 0.805"; None for a design with none
    (a uniform fleet) or never sized (its verdict names the floors it tried). The planner routes
    a multi-tier design at floors from the scenario's ``accuracy_floor`` up, so a runner-up may
    meet every constraint only at a floor the scenario does not write: ``tiersim run`` of its
    replicas at the scenario's floor routes another way. Before, only plan.json gave it."""
    from tiersim.errors import setting_written

    router = design.get("router") or {}
    if not router or design_sizes(design) is None:
        return None
    settings = sorted(router.items(), key=lambda kv: (kv[0] != "policy", kv[0]))
    return ", ".join(f"router.{key} {setting_written(value)}" for key, value in settings)


def no_size_met(design: dict[str, Any]) -> bool:
    """Whether the design missed the SLOs at every size it tried (``missed`` "latency: ..."),
    so its ``replicas`` are where its search stopped; a fleet missing the floor alone was sized
    to meet the SLOs."""
    return not design.get("feasible", True) and str(design.get("missed") or "").startswith(
        "latency")
