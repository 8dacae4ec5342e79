"""review55b: a scenario built in Python (``scenario_from_dict``) with a numpy integer of 0
replicas (a count taken from an array) loaded, and its run stopped on a traceback in the
engine ("ValueError: tier 'w4a16': replicas must be >= 1 (got 0)"): round 55 dropped the
field's ``ge=1`` for a check of its own, which took Python ints and floats alone. Refused at
load, with the line a YAML 0 gets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

import tiersim
from tiersim.errors import ScenarioError
from tiersim.scenario import scenario_from_dict

TINY = yaml.safe_load((Path(tiersim.__file__).parent / "scenarios" / "tiny.yaml").read_text())


@pytest.mark.parametrize("zero", [np.int64(0), np.int32(-1), np.float64(0.0)])
def test_numpy_zero_replicas_are_refused_at_load(zero):
    doc = {**TINY, "tiers": [{**TINY["tiers"][0], "replicas": zero}, TINY["tiers"][1]]}
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(doc, "s.yaml")
    assert "tiers[0].replicas: must be >= 1 (got " in str(err.value)
    assert "to keep a tier out of the routed fleet" in str(err.value)
