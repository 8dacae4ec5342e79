"""Round 30 (keys): the three walks over a scenario's file-valued fields (the input files a
sweep point digests, the absolute paths a copied scenario writes, the canonical setting a
sweep resumes by) follow :func:`tiersim.scenario.file_keys`, the list derived from the
schema, not a hand list of ``tiers`` and ``baselines``: a schema that gains a list of tiers
(``canaries`` here, a subclass of :class:`tiersim.scenario.Scenario`) is walked by all three
without a second list to keep."""

from __future__ import annotations

import pytest
from pydantic import Field

from tiersim import scenario as scenario_module
from tiersim.scenario import Scenario, TierConfig


class _Wider(Scenario):
    """A scenario schema with one more list of tiers, each of which may name its model."""

    canaries: list[TierConfig] = Field(default_factory=list)


@pytest.fixture
def wider(monkeypatch):
    """``file_keys()`` as the wider schema lists it (``canaries.*.model`` and its draft)."""
    keys = scenario_module.file_keys
    monkeypatch.setattr(scenario_module, "file_keys",
                        lambda model=_Wider, inside=frozenset(): keys(model, inside))
    assert ("canaries", "*", "model") in scenario_module.file_keys()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A scenario file beside a trace and a model folder ``m`` with its config.json."""
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    (tmp_path / "t.csv").write_text("arrival_s,input_tokens,output_tokens\n0,1,1\n")
    (tmp_path / "s.yaml").write_text("name: s\n")
    monkeypatch.chdir(tmp_path.parent)
    return tmp_path


def _doc() -> dict:
    return {"trace": {"path": "t.csv"}, "tiers": [{"name": "a"}],
            "canaries": [{"name": "c", "model": "./m"}]}


def test_a_copied_scenario_names_every_file_key_absolute(wider, folder):
    """portable_paths walked ``tiers`` and ``baselines`` by hand: a canary's ``./m`` stayed
    relative, so a run's scenario.yaml copied elsewhere named no model."""
    from tiersim.runner import portable_paths

    doc = portable_paths(_doc(), str(folder / "s.yaml"))
    assert doc["canaries"][0]["model"] == str(folder / "m")
    assert doc["trace"]["path"] == str(folder / "t.csv")


def test_a_sweep_point_digests_every_file_key(wider, folder):
    """input_files listed the models of ``tiers`` and ``baselines`` only: a canary's config
    was not digested, so a sweep resumed over an edited config kept its points."""
    from tiersim.input_files import input_paths

    found = input_paths(_doc(), str(folder / "s.yaml"))
    assert found["canaries[0].model"] == folder / "m" / "config.json"


def test_a_sweeps_setting_names_every_file_keys_catalogue_model_in_one_case(wider, folder):
    """_canonical put the catalogue's case on the models of ``tiers`` and ``baselines``
    only: a canary written ``LLAMA-3.1-8B`` and ``llama-3.1-8b`` were two settings."""
    from tiersim.sweep.run import _canonical

    doc = {**_doc(), "canaries": [{"name": "c", "model": "LLAMA-3.1-8B",
                                   "speculative": {"k": 1, "acceptance": 0.5,
                                                   "draft_model": "LLAMA-3.1-8B"}}]}
    canary = _canonical(doc, str(folder / "s.yaml"))["canaries"][0]
    assert canary["model"] == canary["speculative"]["draft_model"] == "llama-3.1-8b"


def test_a_points_input_fields_keep_their_order_and_names(folder):
    """The fields a point records (its ``inputs``, written in this order) are as before the
    walk followed file_keys: the trace, the scenario's model, each tier's model then its
    draft's, the baseline-only tiers', the profile (file_keys lists the profile second)."""
    import json

    from tiersim.input_files import input_paths

    (folder / "p.json").write_text(json.dumps({}))
    doc = {"model": "./m", "profile": "p.json", "trace": {"path": "t.csv"},
           "tiers": [{"name": "a", "model": "./m",
                      "speculative": {"k": 1, "acceptance": 0.5, "draft_model": "./m"}},
                     {"name": "b", "model": "./m"}],
           "baselines": [{"name": "u", "speculative": {"k": 1, "acceptance": 0.5,
                                                       "draft_model": "./m"}}]}
    assert list(input_paths(doc, str(folder / "s.yaml"))) == [
        "trace", "model", "tiers[0].model", "tiers[0].speculative.draft_model",
        "tiers[1].model", "baselines[0].speculative.draft_model", "profile"]
