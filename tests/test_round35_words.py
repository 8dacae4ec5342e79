"""Round 35 (words): user-facing lines that spoke for one case of several. Each a failure
reproduced from outside and fixed, with the exact line a user sees."""

from __future__ import annotations


def _dropped_note(tmp_path, capsys, rows) -> str:
    """``tiersim run`` of one bf16 tier capped at max_model_len 1,000 (its model takes
    262,144) over ``rows``: the dropped note's tail, from its first request on."""
    from test_round23_extremes import _run

    code, err = _run(tmp_path, capsys, rows, {"scheduler": {"max_model_len": 1000}})
    assert code == 0, err
    return err[err.index("; the first is"):]


def test_dropped_note_within_then_beyond_the_models_context_gives_each_its_fix(
        tmp_path, capsys):
    """The first dropped request (2,010 tokens) fits its model's 262,144: the note told every
    dropped one to "raise that", which no max_model_len does for the 10,000,010-token one."""
    tail = _dropped_note(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 2000, 10),
                                            (2, 2.0, 10**7, 10)])
    assert tail == (
        "; the first is request_id 1 (2,010 tokens on tier bf16, which serves at most 1,000, "
        "its scheduler.max_model_len); by tier and fix: 1 on tier bf16 (2,010 tokens) "
        "exceeds its scheduler.max_model_len (1,000): raise that (up to its model's context, "
        "262,144 tokens); 1 on tier bf16 (10,000,010 tokens) exceeds its model's maximum "
        "context (262,144 tokens), which no max_model_len serves: serve it on a model with a "
        "longer context; or shorten or remove such rows")


def test_dropped_note_beyond_then_within_the_models_context_gives_each_its_fix(
        tmp_path, capsys):
    """The reverse: the first is beyond the model's context, and the note's "no max_model_len
    serves" hid that raising it serves the 2,010-token ones (counted together)."""
    tail = _dropped_note(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 10**7, 10),
                                            (2, 2.0, 2000, 10), (3, 3.0, 3000, 10)])
    assert tail == (
        "; the first is request_id 1 (10,000,010 tokens on tier bf16, which serves at most "
        "1,000, its scheduler.max_model_len); by tier and fix: 1 on tier bf16 "
        "(10,000,010 tokens) exceeds its model's maximum context (262,144 tokens), which no "
        "max_model_len serves: serve it on a model with a longer context; 2 on tier bf16 (up "
        "to 3,010 tokens) exceed its scheduler.max_model_len (1,000): raise that (up to its "
        "model's context, 262,144 tokens); or shorten or remove such rows")


def test_dropped_note_with_one_fix_for_all_keeps_the_first_requests_line(tmp_path, capsys):
    """Two dropped, both within the model's context: one fix serves them all, told as
    before."""
    tail = _dropped_note(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 2000, 10),
                                            (2, 2.0, 5000, 10)])
    assert tail == ("; the first is request_id 1 (2,010 tokens on tier bf16, which serves at "
                    "most 1,000, its scheduler.max_model_len): raise that (up to its model's "
                    "context), or shorten or remove such rows")
