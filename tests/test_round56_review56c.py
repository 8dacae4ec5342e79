"""Round 56, review56c: checks on round 56's picks (fresh56's text session ids, the plan's
saving a month, plan.json sources).

Text session ids in a logged trace with failed requests: the check that a kept step does not
follow a dropped (failed) one read the ids as numbers, so text ids were all "no number": a step
after a failed one was replayed silently without a ``parent`` column, and with one the check
ended ``tiersim trace inspect`` in a TypeError traceback.
"""

from __future__ import annotations

import pytest
from test_round19 import error_line, run_cli

from tiersim.trace.loader import TraceWarning

HEAD = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,session_id,step"


def _burstgpt(path, rows: list[str], parent: bool = False) -> str:
    path.write_text(
        HEAD
        + (",parent" if parent else "")
        + "\n"
        + "".join(f"{k},ChatGPT,10,{r}\n" for k, r in enumerate(rows))
    )
    return str(path)


def test_a_text_id_step_after_a_failed_one_without_a_parent_is_refused(tmp_path, capsys):
    path = _burstgpt(
        tmp_path / "b.csv",
        [
            "5,15,Conversation log,conv_a,0",
            "0,10,Conversation log,conv_a,1",
            "5,15,Conversation log,conv_b,0",
            "5,15,Conversation log,conv_a,2",
        ],
    )
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 4, column 'step': step 2 of session conv_a follows step 1 "
        "(without a parent column each step follows the one before), a failed request (row 2: "
        "0 response tokens), which tiersim drops, so this step cannot follow it; remove this "
        "step, or add a parent column that leaves its parent empty to replay it as a new root "
        "(file line 5)"
    )


def test_a_text_id_step_whose_parent_failed_is_refused_without_a_traceback(tmp_path, capsys):
    path = _burstgpt(
        tmp_path / "c.csv",
        [
            "5,15,Conversation log,conv_a,0,",
            "0,10,Conversation log,conv_a,1,0",
            "5,15,Conversation log,conv_b,0,",
            "5,15,Conversation log,conv_a,2,1",
        ],
        parent=True,
    )
    assert error_line(*run_cli(capsys, "trace", "inspect", path)) == (
        f"Error: {path}: row 4, column 'parent': parent 1 is a failed request (row 2: 0 "
        "response tokens), which tiersim drops, so this step cannot follow it; remove this "
        "step, or leave its parent empty to replay it as a new root (file line 5)"
    )


@pytest.mark.parametrize("parent", [False, True])
def test_text_id_sessions_whose_failed_step_is_last_still_load(tmp_path, parent):
    from tiersim.trace import read_trace

    end = "," if parent else ""
    path = _burstgpt(
        tmp_path / "d.csv",
        [
            f"5,15,Conversation log,conv_a,0{end}",
            f"5,15,Conversation log,conv_b,0{end}",
            f"0,10,Conversation log,conv_a,1{',0' if parent else ''}",
        ],
        parent=parent,
    )
    with (
        pytest.warns(UserWarning, match="dropped 1 of 3 rows"),
        pytest.warns(TraceWarning, match="holds text ids"),
    ):
        assert read_trace(path).table["session_id"].tolist() == [0, 1]


# ------------------------------------------------------------ names beside numbers, refused


CANONICAL = "arrival_s,input_tokens,output_tokens,session_id,step\n"


def test_a_name_beside_a_number_names_both_and_both_fixes(tmp_path, capsys):
    """Hex session ids ("a3f9c2d1") where one is all digits ("49201837") read as names beside
    a number, and were refused with "session id is not a number ...; write a number", though
    text ids are read since round 56: the fix it gave was the wrong one."""
    path = tmp_path / "hex.csv"
    path.write_text(CANONICAL + "0,100,10,a3f9c2d1,0\n1,100,10,49201837,0\n2,100,10,a3f9c2d1,1\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", str(path))) == (
        f"Error: {path}: row 1, column 'session_id': session id is a name (got text of 8 "
        "characters) where row 2's is a number; give every session id as a number, or every "
        "one as a name that is no number (names are numbered in order of first appearance) "
        "(file line 2)"
    )


def test_a_number_first_names_the_first_name_too(tmp_path, capsys):
    path = tmp_path / "n.csv"
    path.write_text(CANONICAL + "0,100,10,7,0\n1,100,10,conv_b,0\n")
    assert error_line(*run_cli(capsys, "trace", "inspect", str(path))) == (
        f"Error: {path}: row 2, column 'session_id': session id is a name (got text of 6 "
        "characters) where row 1's is a number; give every session id as a number, or every "
        "one as a name that is no number (names are numbered in order of first appearance) "
        "(file line 3)"
    )


def test_the_text_ids_note_names_the_column_a_run_writes():
    """requests.parquet has no "session" column: its sessions' numbers are in session_id, and
    only where the run replays sessions (a trace with a step column too)."""
    from tiersim.summary import SESSION_COLUMNS
    from tiersim.trace.canonical import TEXT_IDS_NOTE

    assert "session_id" in SESSION_COLUMNS
    assert TEXT_IDS_NOTE.endswith(
        "(a run that replays the sessions writes these numbers in requests.parquet's "
        "session_id column)"
    )
