"""A big grid's point ids, joined from per-value parts, and its sweep.json, written a point at a
time, are the ids and bytes of the whole-document encodings they replace."""

from __future__ import annotations

import datetime
import hashlib
import json

import numpy as np
import pytest

from tiersim.atomic import write_json_atomic
from tiersim.sweep import axes as ax
from tiersim.sweep import manifest

SWEEPS = [
    {"router.confusion.fpr": [0.0, 0.1, 1e-7, float("nan"), float("inf")],
     "tiers.bf16.replicas": [1, 2]},
    {"zip": [{"b.x": [1, 2], "a.y": ["\u00e9", "\u2028\n\"x"]},
             {"c": [{"k": [1, {"z": 2, "a": None}], "e": {}, "l": []}, True]}],
     "aa": [None, "x"], "B": [[1, [2, [3]]], {"q": 1.5}]},
    {"tiers.0": [{"name": "x", "replicas": 3}, {"replicas": 2}], "trace.window": [[0, 10], [5, 6]]},
    {"d": [datetime.date(2024, 1, 1), np.float64(2.5), np.int64(3), (1, 2)], "e.f": [1.0, -0.0]},
    {},
]
HEAD = {"source": 'a "points": [] b.yaml', "axes": ["x"], "base_digest": "abc", "tiersim": "0"}


def _old_id(values: dict) -> str:
    text = json.dumps(values, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


@pytest.mark.parametrize("sweep", SWEEPS)
def test_expanded_ids_are_the_values_digest(sweep):
    for point in ax.expand(sweep, "t"):
        assert point.id == _old_id(point.values) == ax.point_id(point.values)


HAND_MADE = [[], [ax.Point("", 0, {})],
             [ax.Point('x\u00e9"\n', np.int64(5), {"a": [1]}),
              ax.Point("y", True, {"a": {"b": float("nan")}}), ax.Point("z", 2**70, {"k": 1})]]


@pytest.mark.parametrize("points", [ax.expand(s, "t") for s in SWEEPS] + HAND_MADE)
@pytest.mark.parametrize("batch", [1, 3, manifest.BATCH])
def test_manifest_bytes_equal_write_json_atomic(tmp_path, monkeypatch, points, batch):
    monkeypatch.setattr(manifest, "BATCH", batch)
    rows = [{"point_id": p.id, "index": p.index, "values": p.values} for p in points]
    write_json_atomic(tmp_path / "a.json", {**HEAD, "points": rows})
    manifest.write_manifest(tmp_path / "b.json", HEAD, points)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
