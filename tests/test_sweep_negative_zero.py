"""``-0.0`` and ``0.0`` on one axis are one setting listed twice, not two points."""

from __future__ import annotations

import pytest
import yaml
from conftest import TINY

from tiersim.sweep.axes import SweepError
from tiersim.sweep.run import prepare


def test_minus_zero_and_zero_are_refused_as_one_setting():
    """They ran as two points of one scenario under two labels (and two notes, one of a tier
    costing '-0 USD')."""
    doc = yaml.safe_load(TINY.read_text())
    doc["sweep"] = {"tiers.bf16.cost_per_gpu_hour": [0.0, -0.0]}
    with pytest.raises(SweepError) as caught:
        prepare(doc, "s.yaml")
    assert str(caught.value) == ("s.yaml: sweep: 'tiers.bf16.cost_per_gpu_hour': values 0.0 "
                                 "and -0.0 are the same setting once read; list it once")
