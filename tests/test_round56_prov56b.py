"""Round 56 (helper prov56b): where the figures of a plan, a run's closed form and a tier's
over-SLO note come from, said where they are written."""

from __future__ import annotations

from tiersim.results import tier_over_slo_note


def test_a_tier_over_an_slo_says_its_p99_is_modelled():
    """The note on a tier over an SLO the fleet meets (the run's console, the plan's, the
    report's notes) read "is 0.110 s, over the 0.1 s SLO": a simulated figure with no label,
    beside the plan's margin lines' "(modelled)"."""
    assert tier_over_slo_note("bf16", "tpot_p99_s", 0.110, 0.1, 0.49) == (
        "note: tier bf16's own tpot_p99_s is 0.110 s (modelled), over the 0.1 s SLO, which "
        "the fleet's p99 meets (49% of the requests go to it)")
    assert tier_over_slo_note("fp8", "e2e_p99_s", 11.598, 11.57, 1.0, seeds=True) == (
        "note: tier fp8's own e2e_p99_s is 11.60 s (modelled), over the 11.57 s SLO, which "
        "the fleet's p99 meets (up to 100% of the requests go to it at a seed sized for)")

