"""Round 30, a new user following README.md and docs/ from an installed wheel: each test is a
place where the tool's output left a number unexplained or disagreed with the docs."""

from __future__ import annotations

import pytest
from test_disagg_score_text import disagg_lines

from tiersim.disagg import SplitResult


def test_disagg_says_what_its_score_is(tmp_path, monkeypatch, capsys):
    # `tiersim disagg` printed a `score` column and "best: 4P 1D (meets both SLOs; score
    # 0.616)" with no word of what the score is, where `tiersim plan` prints SCORE_WORDS
    rows = [SplitResult(4, 1, 1.232, 0.0283, 0.233, 0.0231, 781, 0.616),
            SplitResult(0, 0, 0.897, 0.1596, 0.215, 0.0214, 781, 1.596)]
    lines = disagg_lines(rows, 5, "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.05}\n", tmp_path,
                         monkeypatch, capsys)
    assert lines[3] == "best: 4P 1D (meets both SLOs; score 0.616)"
    # round 49: and how the splits rank (a split that drops requests is starred, not "inf")
    assert lines[4] == ("score = worse of p99 TTFT and TPOT over their SLOs (TTFT 2 s, TPOT "
                        "0.05 s): below 1 meets both; splits rank by fewest dropped requests, "
                        "then lowest score")


def test_the_ignore_list_budget_counts_cpu_time_not_a_busy_machines_wall_clock():
    # the budget was a real-time timer: on a machine at load 9 on 2 cores,
    # `python benchmarks/decode_table.py --unseen` (README) stopped with "nvidia--Qwen3.6-27B-
    # NVFP4_config.json: ... matching its ignore list ... took over 2 s ...; simplify it", a
    # config whose formats take 0.4 s of CPU (1.2 s wall at load 7). Waiting for the CPU is
    # not backtracking: sleeping past the budget must not stop the block; spinning must
    import time

    from tiersim.hardware import hf_config

    with hf_config.regex_budget(0.05):
        time.sleep(0.2)  # the process gets no CPU, as on a busy machine
    with pytest.raises(hf_config.RegexTimeout), hf_config.regex_budget(0.05):
        end = time.process_time() + 5.0
        while time.process_time() < end:  # CPU spent, as a backtracking pattern spends it
            pass


def test_inspect_names_one_replayed_length():
    # `tiersim trace inspect azure2023_code --window 0 600 --time-scale 10` printed
    # "replayed by tiersim run │ 0 to 58.6 s" and "window │ 0 to 600 s of the trace; 60.0 s
    # replayed": two replayed lengths. A run replays (and bills) from 0 to the last arrival's
    # answer; 60 s is the window's length once scaled, which the rate divides by
    from typer.testing import CliRunner

    from tiersim.cli.trace import trace_app

    out = CliRunner().invoke(trace_app, ["inspect", "azure2023_code", "--window", "0", "600",
                                         "--time-scale", "10"]).output
    assert "0 to 600 s of the trace; 60.0 s at time scale 10" in out
    replayed = [line.split("│")[1:3] for line in out.splitlines() if "replayed" in line]
    assert [[cell.strip() for cell in row] for row in replayed] == [
        ["replayed by tiersim run", "0 to 58.6 s"]]
