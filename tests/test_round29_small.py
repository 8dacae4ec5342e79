"""Round 29 (helper small): three small loose ends, each pinned by a test that failed before
its fix (the plan's too-long advice per tier, integer category text, dropped requests in a
disaggregated split's score)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import yaml
from test_round29_fzt import _scenario

from tiersim.cli import main
from tiersim.plan.evaluate import SimEvaluator, _TierRun
from tiersim.plan.planner import _too_long
from tiersim.session_metrics import step_type_results
from tiersim.text_columns import as_text, row_values, text_codes


def test_too_long_advice_names_which_tiers_can_raise_max_model_len():
    """A design of two tiers dropping requests longer than their context, only w4a16 setting
    its own max_model_len: the plan told to "raise tiers[].scheduler.max_model_len" for both,
    though bf16's is already its model's context (nothing to raise)."""
    line = _too_long([("w4a16", 2, 1000), ("bf16", 1, 262144)], {"w4a16"})
    assert line == (
        "3 requests are longer (prompt + output) than their tier's context (w4a16's "
        "max_model_len 1,000, bf16's max_model_len 262,144) and are dropped at any size; "
        "raise w4a16's scheduler.max_model_len (up to its model's context); bf16's is its "
        "model's context: serve its requests on a model with a longer context or leave them "
        "out of the trace")


def test_too_long_advice_is_unchanged_when_every_tier_or_none_sets_its_own():
    """Every tier setting its own max_model_len: raise it; none: serve elsewhere."""
    longer = [("w4a16", 1, 1000)]
    assert "; raise tiers[].scheduler.max_model_len (up to the model's context) or leave it" \
        in _too_long(longer, {"w4a16"})
    assert "; it is the model's context: serve it on a model with a longer context or leave " \
        "it" in _too_long(longer, set())


def test_plan_of_mixed_tiers_says_raise_only_where_max_model_len_is_set(tmp_path, capsys):
    """tiny.yaml's two tiers split half and half, w4a16 capped at max_model_len 1,000, bf16 at
    its model's 262,144; requests of 2,010 and 10,000,010 tokens. The two-tier design was told
    to "raise tiers[].scheduler.max_model_len", bf16's included, which is already at the
    model's context. Round 35: routing by capability sends the 2,010-token requests to bf16,
    so w4a16 keeps only the 10,000,010-token ones, beyond its model's context: no
    max_model_len serves them, and w4a16 is no longer told to raise it."""
    both = two_tier_plan_words([1000, None], tmp_path, capsys)
    assert "raise tiers[]" not in both and "raise w4a16" not in both
    assert ("(w4a16's max_model_len 1,000, bf16's max_model_len 262,144) and are dropped at "
            "any size; bf16's is its model's context: serve its requests on a model with a "
            "longer context; 2 on w4a16 exceed its model's maximum context (262,144 tokens), "
            "which no max_model_len serves: serve them on a model with a longer context or "
            "leave them out of the trace") in both, both


def two_tier_plan_words(lengths: list[int | None], tmp_path, capsys) -> str:
    """``tiersim plan``'s words for its two-tier design, tiny.yaml's tiers capped at
    ``max_model_len`` ``lengths`` (None: unset), on requests of 2,010 and 10,000,010 tokens."""
    path = _scenario(tmp_path, pd.DataFrame({
        "request_id": range(8), "arrival_s": [float(i) for i in range(8)],
        "input_tokens": [2000, 10**7] * 4, "output_tokens": [10] * 8}))
    doc = yaml.safe_load(path.read_text())
    for tier, length in zip(doc["tiers"], lengths, strict=True):
        if length is not None:
            tier["scheduler"] = {"max_model_len": length}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    capsys.readouterr()
    assert main(["plan", str(path), "--out", str(tmp_path / "p"), "--no-report"]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    return line[line.index("w4a16+bf16: "):]


INTEGER_CATEGORIES = pd.Series(pd.Categorical([1, None, 2, 1]), name="step_type")
"""A category column of whole numbers with a missing row (pandas' astype(str) reads "1.0")."""


def test_integer_categories_with_a_missing_row_read_as_written():
    """The choice pinned: ``"1"``, the value as the trace wrote it and as the column reads
    with no row missing, not ``astype(str)``'s ``"1.0"`` (pandas goes through float)."""
    assert list(INTEGER_CATEGORIES.astype(str)) == ["1.0", np.nan, "2.0", "1.0"]  # pandas'
    whole = pd.Series(pd.Categorical([1, 2, 1]))
    assert list(whole.astype(str)) == list(as_text(whole)) == ["1", "2", "1"]
    assert list(as_text(INTEGER_CATEGORIES)) == ["1", np.nan, "2", "1"]
    codes, values = text_codes(INTEGER_CATEGORIES)
    assert (codes.tolist(), values.tolist()) == ([0, -1, 1, 0], ["1", "2"])


def test_integer_step_types_are_reported_as_written():
    """Per step type results name a type of whole numbers as written: "1" (2 steps, 0.5 right
    on average: 1.0 and 0.0) and "2"; the missing row counts as the default "step"."""
    requests = pd.DataFrame({"final_tier": ["a", "b", "a", "b"],
                             "expected_accuracy": [1.0, 0.3, 0.6, 0.0]})
    got = step_type_results(INTEGER_CATEGORIES.to_frame(), requests)
    assert [(r.step_type, r.requests, r.accuracy, r.final_tier_shares) for r in got] == [
        ("1", 2, 0.5, {"a": 0.5, "b": 0.5}), ("2", 1, 0.6, {"a": 1.0}),
        ("step", 1, 0.3, {"b": 1.0})]


def test_row_values_gives_nan_where_to_numpy_gives_na():
    """Categories of pandas ``string`` text: ``to_numpy`` gives <NA> for a missing row,
    :func:`row_values` NaN (its docstring said "as to_numpy gives"); both are missing."""
    column = pd.Series(pd.Categorical(["a", None, "a"],
                                      categories=pd.Index(["a"], dtype="string")))
    assert column.to_numpy()[1] is pd.NA
    got = row_values(column)
    assert got[0] == "a" and isinstance(got[1], float) and np.isnan(got[1])
    assert pd.isna(got).tolist() == pd.isna(column.to_numpy()).tolist() == [False, True, False]


def _run(ttft: list[float], tpot: list[float], dropped: list[bool]) -> _TierRun:
    """A tier run of three requests with these latencies (NaN for a dropped one)."""
    return _TierRun(rows=np.arange(3), ttft=np.array(ttft), tpot=np.array(tpot),
                    e2e=np.array(ttft), dropped=np.array(dropped), last_finish=1.0, busy_s=1.0)


def test_a_split_that_drops_a_request_does_not_win_by_its_latency():
    """Against SLOs of 2 s TTFT and 0.1 s TPOT, a split serving two requests at 0.5 s TTFT and
    0.02 s TPOT (score max(0.25, 0.2) = 0.25) but dropping the third loses to one serving all
    three at 1 s and 0.05 s (max(0.5, 0.5) = 0.5): splits rank by their drops first, then by
    latency (metrics.split_rank; the surviving mutant scored a drop as served, and kept the
    dropping split)."""
    planned = SimpleNamespace(slo=(2.0, 0.1))
    fast = _run([0.5, 0.5, np.nan], [0.02, 0.02, np.nan], [False, False, True])
    slow = _run([1.0, 1.0, 1.0], [0.05, 0.05, 0.05], [False, False, False])
    assert SimEvaluator._split_score(planned, slow) == (0, 0.5)
    assert SimEvaluator._split_score(planned, fast) == (1, 0.25)
    assert min([fast, slow], key=lambda run: SimEvaluator._split_score(planned, run)) is slow
