"""Round 49, hostile input (helper fuzz15). Each test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli


@pytest.mark.parametrize(("digits", "sign"), [(5000, ""), (5000, "-"), (4400, "")])
def test_a_jsonl_number_of_more_than_4300_digits_is_named_as_written(tmp_path, capsys, digits,
                                                                     sign):
    """A JSON-lines number of more than 4,300 digits (Python reads no integer that long) was
    said to be "not finite (got inf); write a finite number": the file holds no infinity. It
    is now named as a CSV cell of those digits is, by its first digits and their count."""
    path = tmp_path / "t.jsonl"
    number = sign + "1" * digits
    path.write_text('{"arrival_s": 0, "input_tokens": 10, "output_tokens": 5}\n'
                    f'{{"arrival_s": 1, "input_tokens": {number}, "output_tokens": 5}}\n')
    line = one_error_line(*run_cli(capsys, "trace", "inspect", str(path)))
    assert line == (f"Error: {path}: row 2, column 'input_tokens': token count is beyond the "
                    f"range of numbers (got {number[:12]}... ({digits:,} digits)); fix or "
                    "remove the row (file line 2)")
