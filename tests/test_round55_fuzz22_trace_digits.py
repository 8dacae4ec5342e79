"""Round 55, hostile-input round (fuzz22): a trace cell written in digits other than 0-9.

ShareGPT's length-only CSV, an Azure or a canonical trace with a full-width ``１０`` in a
number column said "token count is not a number (got text of 2 characters); write a number",
as any text does; it now says what the digits are and the number to write (a number, never
the cell's text: error lines do not echo a trace's content).
"""

from __future__ import annotations

import pytest
from test_hostile_inputs import run_cli

WORDS = ("is written in digits other than 0-9 (full-width, or another script's), which "
         "tiersim does not read")


@pytest.mark.parametrize(("header", "row", "where"), [
    ("num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio", "１０,20,30,0.5",
     f"column 'num_prefill_tokens': token count {WORDS} (got text of 2 characters); write 10"),
    ("arrival_s,input_tokens,output_tokens", "０.５,10,5",
     f"column 'arrival_s': arrival time in seconds {WORDS} (got text of 3 characters); write "
     "0.5"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens", "2023-11-16 18:17:03.9799600,٤٨,10",
     f"column 'ContextTokens': token count {WORDS} (got text of 2 characters); write 48"),
])
def test_the_line_gives_the_number_in_0_9(tmp_path, capsys, header, row, where):
    path = tmp_path / "t.csv"
    path.write_text(f"{header}\n{row}\n{row.replace('１０', '11').replace('٤٨', '49')}\n",
                    encoding="utf-8")
    code, err = run_cli(capsys, "trace", "inspect", path)
    assert code == 1, err
    assert err.strip().splitlines()[-1] == f"Error: {path}: row 1, {where} (file line 2)"
