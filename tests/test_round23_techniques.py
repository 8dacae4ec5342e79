"""Round 23, serving techniques and their accounting: cascades, the response cache, prefix
caching and speculative decoding, and how they feed the run's figures."""

from __future__ import annotations

import json

import pytest
from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli


def _edited(run, folder, doc: dict):
    """A copy of ``run`` at ``folder`` whose summary.json holds ``doc``."""
    copy_folder(run, folder)
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize(("edit", "problem"), [
    # a cascade's share sent on by its first tier: was drawn as "500 %"
    (lambda d: d["router"].__setitem__("escalation_refused_rate", 5.0),
     "'router.escalation_refused_rate' must be a fraction between 0 and 1, got 5.0"),
    # fractions inside a map or a pair: were drawn as 700 % and 300 % - 500 %
    (lambda d: d["router"]["first_tier_shares"].__setitem__("bf16", 7.0),
     "'router.first_tier_shares.bf16' must be a fraction between 0 and 1, got 7.0"),
    (lambda d: d["router"].__setitem__("accuracy_ci95", [3.0, 5.0]),
     "'router.accuracy_ci95[0]' must be a fraction between 0 and 1, got 3.0"),
    (lambda d: d["tiers"]["bf16"].__setitem__("prefix_hit_by_level", {"gpu": -0.5}),
     "'tiers.bf16.prefix_hit_by_level.gpu' must be a fraction between 0 and 1, got -0.5"),
])
def test_a_fraction_no_run_writes_is_refused_wherever_it_sits(hand_edited_run, tmp_path, capsys,
                                                             edit, problem):
    """The summary reader range-checked top-level fractions only: a share or an interval bound
    nested in a map or a pair, and the cascade's escalation_refused_rate, passed at any value."""
    doc = json.loads((hand_edited_run / "summary.json").read_text())
    edit(doc)
    folder = _edited(hand_edited_run, tmp_path / "r", doc)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({problem}); rerun "
                    "`tiersim run` to rewrite it")
