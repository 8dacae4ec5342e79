"""An axis path names a field of the base scenario, whatever another axis renames."""

from __future__ import annotations

import pytest

from tiersim.sweep import axes as ax

BASE = {"tiers": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 1}]}


def test_the_axes_order_does_not_change_which_tier_a_name_is():
    """Applied in the map's order, the replicas went to tier b when the renames came first and
    to tier a otherwise, under one point id: a resume after reordering kept the other one."""
    renames = {"tiers.0.name": "b", "tiers.1.name": "a"}
    first = ax.apply(BASE, {**renames, "tiers.a.replicas": 3})
    last = ax.apply(BASE, {"tiers.a.replicas": 3, **renames})
    assert first == last == {"tiers": [{"name": "b", "replicas": 3},
                                       {"name": "a", "replicas": 1}]}


def test_a_name_only_another_axis_gives_is_refused():
    with pytest.raises(ax.SweepError) as caught:
        ax.apply(BASE, {"tiers.0.name": "x", "tiers.x.replicas": 2}, "s.yaml")
    assert str(caught.value) == ("s.yaml: sweep: 'tiers.x.replicas': no item 'x' in 'tiers' "
                                 "(has items: a, b)")


def test_a_renamed_tier_keeps_the_axis_on_its_base_name():
    doc = ax.apply(BASE, {"tiers.1.name": "x", "tiers.b.replicas": 2})
    assert doc["tiers"][1] == {"name": "x", "replicas": 2}
    assert BASE["tiers"][1] == {"name": "b", "replicas": 1}
