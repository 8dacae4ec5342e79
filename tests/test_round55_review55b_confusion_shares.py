"""review55b: the note a floor or budget router with ``router.confusion`` gives names the
shares it routes, to whole percents: a tier sent 1 request in 300 read "w4a16 0%", as if the
router sent it none (the project's rule, :func:`tiersim.results_figures.percent_text`: a share
that is not 0 never reads "0%", nor one that is not 1 "100%")."""

from __future__ import annotations

import types
import warnings

import numpy as np

from tiersim.runner import _note_refit_on_draws


def _note(counts: list[int]) -> str:
    router = types.SimpleNamespace(policy="floor", model_fields_set={"policy", "confusion"})
    scenario = types.SimpleNamespace(router=router)
    infos = [types.SimpleNamespace(name=n) for n in ("w4a16", "bf16")]
    tier = np.repeat(np.arange(len(counts)), counts)
    assignment = types.SimpleNamespace(tier=tier)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_refit_on_draws(scenario, assignment, infos, "s.yaml")
    (only,) = caught
    return str(only.message)


def test_a_tier_sent_one_request_in_300_is_not_read_as_sent_none():
    text = _note([1, 299])
    assert "routes w4a16 0.3%, bf16 99.7% here" in text


def test_whole_shares_read_as_before():
    assert "routes w4a16 50%, bf16 50% here" in _note([150, 150])
    assert "routes w4a16 0%, bf16 100% here" in _note([0, 300])
