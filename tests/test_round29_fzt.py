"""Round 29 (helper fzt): hostile trace files, round 3, through the commands that read a trace.

Each test drives the command line as a user would (:func:`test_hostile_inputs.run_cli`) and
asserts one ``Error:`` line naming the file, the place and the fix, or the right result.
"""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli

BURSTGPT_HEADER = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"


def _burstgpt(tmp_path, times: list[float]):
    """A BurstGPT CSV of one served request at each of ``times`` (seconds)."""
    path = tmp_path / "burst.csv"
    path.write_text(BURSTGPT_HEADER + "".join(
        f"{t},ChatGPT,100,10,110,Conversation log\n" for t in times))
    return path


@pytest.mark.parametrize(("window", "shown"), [(["4.000000001", "5"], "[4.000000001, 5)"),
                                               (["3.9999999999999996", "4"],
                                                "[3.9999999999999996, 4)"),
                                               (["1e-320", "1"], "[1e-320, 1)")])
def test_a_window_that_selects_nothing_is_shown_as_given(tmp_path, capsys, window, shown):
    """``tiersim trace inspect --window`` showed its ends to 6 digits: a window just past the
    request at 4 s read "window [4, 5) s selects no requests", one just before 4 s read
    "[4, 4)" and 1e-320 read "9.99989e-321" (``tiersim run`` showed them as given)."""
    path = _burstgpt(tmp_path, [0, 2, 4, 6, 8, 10.000000001])
    line = one_error_line(*run_cli(capsys, "trace", "inspect", path, "--window", *window))
    assert line == (f"Error: {path}: window {shown} s selects no requests; the trace spans 0 "
                    "to 10.000000001 s")
