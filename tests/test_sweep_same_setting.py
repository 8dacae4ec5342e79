"""A sweep axis whose values spell one setting two ways is refused at the axis's line, as
``[1, 1.0]`` already was: a speculative ``acceptance: 0.5`` and ``[0.5]`` (or ``k`` equal
rates), a router's ``thresholds: 0.8`` and ``[0.8]`` (or a map naming each tier), and
``fractions`` as a list and as a map ran as separate points with identical results."""

from __future__ import annotations

import pytest
from conftest import axis_line, tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.errors import yaml_written

SPEC = {"k": 3, "acceptance": 0.5}


def doc_with(axis: str, values: list, router: dict | None = None) -> dict:
    """The tiny scenario with a draft head on its bf16 tier, ``router`` and one sweep axis."""
    doc = tiny_doc(sweep={axis: values})
    doc["tiers"][1]["speculative"] = dict(SPEC)
    if router is not None:
        doc["router"] = router
    return doc


@pytest.mark.parametrize(("axis", "values", "router"), [
    ("tiers.bf16.speculative.acceptance", [0.5, [0.5]], None),
    ("tiers.bf16.speculative.acceptance", [[0.5], [0.5, 0.5, 0.5]], None),
    ("tiers.bf16.speculative.acceptance", [0.7, [0.5, 0.5, 0.5], 0.5], None),
    ("router.thresholds", [0.8, [0.8]], {"policy": "threshold"}),
    ("router.thresholds", [{"w4a16": 0.6}, 0.6], {"policy": "threshold"}),
    ("router.fractions", [[0.5, 0.5], {"w4a16": 0.5, "bf16": 0.5}], None),
])
def test_one_setting_under_two_spellings_is_refused(tmp_path, capsys, axis, values, router):
    path = write_yaml(tmp_path / "s.yaml", doc_with(axis, values, router))
    assert main(["sweep", str(path), "--out", str(tmp_path / "o"), "--no-baselines"]) == 1
    first, second = [v for v in values if v != 0.7][:2]
    assert capsys.readouterr().err == (
        f"Error: {path}: line {axis_line(path, axis)}: sweep: '{axis}': values "
        f"{yaml_written(first)} and {yaml_written(second)} are the same setting once read; "
        "list it once\n")  # round 48: spelt as YAML writes them ({w4a16: 0.6})
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("axis", "values", "router"), [
    ("tiers.bf16.speculative.acceptance", [0.5, [0.5, 0.6, 0.7]], None),
    ("router.thresholds", [0.8, [0.7]], {"policy": "threshold"}),
    ("router.fractions", [[0.5, 0.5], {"w4a16": 0.4, "bf16": 0.6}], None),
])
def test_different_settings_stay_separate_points(axis, values, router):
    from tiersim.sweep.run import prepare

    assert len(prepare(doc_with(axis, values, router), "s.yaml").points) == 2
