"""Tests of sweep-axis expansion, dotted paths and stable point ids."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.sweep.axes import SweepError, apply, axis_names, expand, point_id, set_path
from tiersim.sweep.store import flatten

BASE = {"tiers": [{"name": "w4a16", "replicas": 1}, {"name": "bf16", "replicas": 2}],
        "router": {"policy": "threshold", "confusion": {"fpr": 0.0}}, "seed": 3}


def test_grid_and_zip_expand_to_product():
    sweep = {"router.confusion.fpr": [0.0, 0.1, 0.2],
             "zip": {"trace.time_scale": [1.0, 2.0], "workload.difficulty.p_easy": [0.3, 0.7]}}
    points = expand(sweep)
    assert len(points) == 6
    assert axis_names(sweep) == ["router.confusion.fpr", "trace.time_scale",
                                 "workload.difficulty.p_easy"]
    pairs = {(p.values["trace.time_scale"], p.values["workload.difficulty.p_easy"])
             for p in points}
    assert pairs == {(1.0, 0.3), (2.0, 0.7)}
    assert [p.index for p in points] == list(range(6))
    assert len({p.id for p in points}) == 6


def test_zip_lengths_must_match():
    with pytest.raises(SweepError, match="equal lengths"):
        expand({"zip": [{"a.b": [1, 2], "a.c": [1]}]}, "x.yaml")


def test_values_must_be_a_list():
    with pytest.raises(SweepError, match=r"x.yaml: sweep: 'seed': values must be a non-empty"):
        expand({"seed": 3}, "x.yaml")


def test_point_ids_are_stable_and_order_free():
    assert point_id({"a": 1, "b": 0.5}) == point_id({"b": 0.5, "a": 1})
    assert point_id({"a": 1}) != point_id({"a": 2})
    assert expand({"a.b": [1, 2]})[1].id == expand({"a.b": [1, 2]})[1].id


def test_tier_addressed_by_name_and_index():
    doc = apply(BASE, {"tiers.bf16.replicas": 5, "tiers.0.replicas": 4})
    assert doc["tiers"][1]["replicas"] == 5 and doc["tiers"][0]["replicas"] == 4
    assert BASE["tiers"][1]["replicas"] == 2, "base must not change"


def test_unknown_tier_names_path_and_what_exists():
    with pytest.raises(SweepError) as info:
        apply(BASE, {"tiers.fp8.replicas": 2}, "s.yaml")
    assert str(info.value) == ("s.yaml: sweep: 'tiers.fp8.replicas': no item 'fp8' in 'tiers' "
                               "(has items: w4a16, bf16)")


def test_path_through_a_value_is_an_error():
    with pytest.raises(SweepError, match=r"'seed' is a value \(3\), not a map"):
        set_path(apply(BASE, {}), "seed.x", 1, "s.yaml")


def test_missing_leaf_is_created_for_the_validator():
    doc = apply(BASE, {"router.confusion.fnr": 0.1, "trace.time_scale": 2.0})
    assert doc["router"]["confusion"] == {"fpr": 0.0, "fnr": 0.1}
    assert doc["trace"] == {"time_scale": 2.0}


@settings(deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_grid_size_is_product_of_axis_lengths(lengths):
    sweep = {f"a.k{i}": list(range(n)) for i, n in enumerate(lengths)}
    points = expand(sweep)
    expected = 1
    for n in lengths:
        expected *= n
    assert len(points) == expected == len({p.id for p in points})


leaf = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5), st.none())
nested = st.recursive(st.dictionaries(st.text("abc", min_size=1, max_size=3), leaf, max_size=3),
                      lambda inner: st.dictionaries(st.text("abc", min_size=1, max_size=3),
                                                    inner, min_size=1, max_size=3), max_leaves=12)


def _leaves(d, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _leaves(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


@settings(deadline=None)
@given(nested)
def test_flatten_keeps_every_leaf_under_its_dotted_path(doc):
    flat = flatten(doc)
    assert flat == dict(_leaves(doc))


def test_a_bare_zip_map_is_one_group_and_the_scenario_keeps_it():
    """docs/report.md said a bare map under zip "would fail `tiersim run`"; the scenario keeps
    the sweep map as written (run runs the base point) and the sweep reads it as one group."""
    from conftest import tiny_doc

    from tiersim.scenario import scenario_from_dict

    sweep = {"zip": {"tiers.w4a16.replicas": [1, 2], "seed": [5, 6]}}
    assert [p.values for p in expand(sweep)] == [{"tiers.w4a16.replicas": 1, "seed": 5},
                                                 {"tiers.w4a16.replicas": 2, "seed": 6}]
    assert scenario_from_dict(tiny_doc(sweep=sweep), "s.yaml").sweep == sweep


def test_an_axis_changes_only_its_tier_where_yaml_aliases_share_a_map(tmp_path):
    """A merge key (or an alias) gives both tiers one scheduler map when read; an axis on one
    tier's scheduler once changed both (the point ran another scenario than it said)."""
    from tiersim.sweep.run import load_raw

    path = tmp_path / "s.yaml"
    path.write_text("tiers:\n"
                    "  - &t {name: w4a16, replicas: 1, scheduler: {max_num_seqs: 8}}\n"
                    "  - {<<: *t, name: bf16}\n"
                    "  - {name: fp8, scheduler: {max_num_seqs: 4}}\n")
    base = load_raw(path)
    assert base["tiers"][0]["scheduler"] is base["tiers"][1]["scheduler"]  # as PyYAML reads it
    doc = apply(base, {"tiers.bf16.scheduler.max_num_seqs": 2,
                       "tiers.w4a16.scheduler.max_num_seqs": 1})
    assert [t["scheduler"]["max_num_seqs"] for t in doc["tiers"]] == [1, 2, 4]
    assert base["tiers"][0]["scheduler"] == {"max_num_seqs": 8}, "base must not change"


def test_a_value_shared_by_two_points_is_copied_into_each():
    value = {"max_num_seqs": 4}
    first = apply(BASE, {"tiers.bf16.scheduler": value})
    first["tiers"][1]["scheduler"]["max_num_seqs"] = 9
    assert value == {"max_num_seqs": 4}


@pytest.mark.parametrize("first", ["fp8", "w4"])
def test_a_tier_named_with_a_dot_is_refused_with_its_index_path(first):
    """``tiers.fp8.v2.replicas`` once set tier ``fp8``'s key ``v2`` (refused as an unknown key
    of another tier) or found no tier ``fp8``; neither said how to name tier ``fp8.v2``."""
    base = {"tiers": [{"name": first, "replicas": 1}, {"name": "fp8.v2", "replicas": 1}]}
    with pytest.raises(SweepError) as info:
        apply(base, {"tiers.fp8.v2.replicas": 2}, "s.yaml")
    assert str(info.value) == ("s.yaml: sweep: 'tiers.fp8.v2.replicas': item 1 of 'tiers' is "
                               "named 'fp8.v2', and a dotted path cannot name what holds a dot; "
                               "write 'tiers.1.replicas' (by its index)")
    assert apply(base, {"tiers.1.replicas": 2})["tiers"][1]["replicas"] == 2


def test_a_whole_float_sweep_limit_is_the_number_validation_reads():
    """``max_sweep_points: 5.0`` loads as 5 in every command, but the sweep refused it as not
    a whole number."""
    from tiersim.errors import ScenarioError
    from tiersim.sweep.run import max_points_of

    assert max_points_of({"limits": {"max_sweep_points": 5.0}}, "s.yaml") == 5
    with pytest.raises(ScenarioError, match=r"must be a whole number >= 1 \(got 1.5\)"):
        max_points_of({"limits": {"max_sweep_points": 1.5}}, "s.yaml")
