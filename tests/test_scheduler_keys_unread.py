"""A tier's scheduler key read only with another (``kv_offload_overlap`` and
``kv_offload_recompute`` with ``kv_offload`` levels, ``prefix_cache_fraction`` with
``enable_prefix_caching: true``) set without it gets a note naming the tier, the key and the
fix in a plain run, as a sweep axis over it is refused (it was ignored without a word). A note,
not a refusal: dropping ``kv_offload`` from the kv_offload example to compare leaves its
``kv_offload_overlap: true`` on purpose."""

from __future__ import annotations

import warnings

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.errors import Note
from tiersim.scenario import Scenario, check_layouts


def notes_of(scheduler: dict) -> list[str]:
    """The notes :func:`check_layouts` raises for the tiny scenario, its bf16 tier's scheduler
    set to ``scheduler``."""
    doc = tiny_doc()
    doc["tiers"][1]["scheduler"] = scheduler
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_layouts(Scenario.model_validate(doc))
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


@pytest.mark.parametrize(("scheduler", "key", "needs"), [
    ({"kv_offload_overlap": False}, "kv_offload_overlap", "kv_offload levels"),
    ({"enable_prefix_caching": True, "kv_offload_recompute": True}, "kv_offload_recompute",
     "kv_offload levels"),
    ({"prefix_cache_fraction": 0.5}, "prefix_cache_fraction", "enable_prefix_caching: true"),
])
def test_an_unread_scheduler_key_is_noted(scheduler, key, needs):
    assert notes_of(scheduler) == [
        f"tier bf16: scheduler.{key} is read only with {needs}, which the tier does not "
        "have, so it changes nothing; give the tier those, or remove the key"]


@pytest.mark.parametrize("scheduler", [
    {"enable_prefix_caching": True, "prefix_cache_fraction": 0.5},
    {"enable_prefix_caching": True, "kv_offload_overlap": False,
     "kv_offload": [{"name": "host", "capacity_gb": 10, "read_gb_s": 50, "write_gb_s": 50}]},
    {"max_num_seqs": 64},
])
def test_a_read_scheduler_key_gets_no_note(scheduler):
    assert notes_of(scheduler) == []


def test_a_run_prints_and_keeps_the_note(tmp_path, capsys):
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    doc["tiers"][1]["scheduler"] = {"kv_offload_overlap": True}
    path = write_yaml(tmp_path / "s.yaml", doc)
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--no-baselines",
                 "--no-report"]) == 0
    note = ("tier bf16: scheduler.kv_offload_overlap is read only with kv_offload levels, "
            "which the tier does not have, so it changes nothing")
    assert note in " ".join(capsys.readouterr().err.split())
    assert note in (tmp_path / "o" / "summary.json").read_text()
