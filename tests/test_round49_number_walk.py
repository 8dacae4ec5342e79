"""The raw scenario's number checks run as one walk (:func:`tiersim.scenario.number_problem`,
round 49: they were four walks over the data, one per kind) and still tell the kind first in
their order (a YAML boolean, quoted text, a misspelt number, one whole only as a float) over a
kind found earlier in the file, and of one kind its first place; the separate checks still
find each kind on its own."""

from __future__ import annotations

import pytest

from tiersim.errors import ScenarioError
from tiersim.scenario import (
    boolean_problem,
    load_scenario,
    misspelt_number,
    near_whole_number,
    number_problem,
    read_yaml,
    refuse_text_numbers,
    scenario_from_dict,
)

SCENARIO = """name: t
seed: {seed}
tiers:
  - {{name: a, precision: bf16, replicas: {first}}}
  - {{name: b, precision: bf16, replicas: {second}}}
router: {{policy: static_split, fractions: [0.5, {fraction}]}}
slo: {{ttft_p99_s: {ttft}, tpot_p99_s: 0.1}}
"""

NEAR = "1.99999999999999999999"
NEAR_WHY = (f"{NEAR} is not a whole number (only a float's 16 digits would round it to 2); "
            "write the whole number meant")
OCTAL_WHY = "010 has a leading zero, which YAML 1.1 reads as octal (8); write 10"
QUOTED_WHY = "must be a number, not a string ('2.0'); write it without quotes"
BOOLEAN_WHY = "a number is expected here, not a YAML boolean (true/false)"


def written(tmp_path, **values):
    """The file of :data:`SCENARIO` with ``values`` (the others plain numbers) and its data and
    node tree."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(**{"seed": 0, "first": 1, "second": 1, "fraction": 0.5,
                                       "ttft": 2.0, **values}))
    return path, *read_yaml(path)


# (values, where and why with the file's node tree, where and why from a dict)
CASES = [
    ({"seed": NEAR, "first": "010"},
     ("tiers[0].replicas", 4, OCTAL_WHY), ("tiers[0].replicas", OCTAL_WHY)),
    ({"seed": NEAR, "first": "010", "ttft": '"2.0"'},
     ("slo.ttft_p99_s", 7, QUOTED_WHY), ("tiers[0].replicas", OCTAL_WHY)),
    ({"seed": NEAR, "first": "010", "ttft": '"2.0"', "fraction": "true"},
     ("router.fractions", 6, BOOLEAN_WHY), ("router.fractions", BOOLEAN_WHY)),
    ({"first": "010", "second": "0x10"},
     ("tiers[0].replicas", 4, OCTAL_WHY), ("tiers[0].replicas", OCTAL_WHY)),
    ({"seed": NEAR, "second": NEAR},
     ("seed", 2, NEAR_WHY), ("seed", NEAR_WHY)),
]


@pytest.mark.parametrize(("values", "in_file", "in_dict"), CASES)
def test_the_first_kind_of_number_problem_is_told_at_its_first_place(tmp_path, values, in_file,
                                                                      in_dict):
    path, data, _ = written(tmp_path, **values)
    key, line, why = in_file
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == f"{path}: line {line}: {key}: {why}"
    key, why = in_dict
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(data, "point")
    assert str(err.value) == f"point: {key}: {why}"


def test_each_kind_is_still_found_on_its_own(tmp_path):
    path, data, root = written(tmp_path, seed=NEAR, first="010", ttft='"2.0"', fraction="true")
    assert boolean_problem(data, root)[0] == ("router", "fractions")
    assert misspelt_number(data) == (("tiers", 0, "replicas"), OCTAL_WHY)
    assert near_whole_number(data) == (("seed",), NEAR_WHY)
    assert number_problem(data, root, boolean=False) == (("slo", "ttft_p99_s"), QUOTED_WHY)
    assert number_problem(data, boolean=False) == (("tiers", 0, "replicas"), OCTAL_WHY)
    with pytest.raises(ScenarioError) as err:  # the sweep's base file: no boolean check
        refuse_text_numbers(data, str(path), root)
    assert str(err.value) == f"{path}: line 7: slo.ttft_p99_s: {QUOTED_WHY}"


def test_a_scenario_without_a_number_problem_has_none(tmp_path):
    _, data, root = written(tmp_path)
    assert number_problem(data, root) is None
    assert number_problem(data) is None
