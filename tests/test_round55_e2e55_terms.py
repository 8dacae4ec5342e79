"""Round 55, e2e55: the end-to-end limit is named in each line of a plan's output in the form
that line uses for TTFT and TPOT.

An independent check read "e2e_p99_s 2.71 vs limit 2.5" on today's fleet's line beside the
seed check's "p99 end-to-end missed at seeds ..." as mixed terms. Each line is consistent with
itself: the constraint lines and today's fleet's missed constraints name every p99 by key
(``ttft_p99_s 0.334 vs limit 0.3`` too, as :func:`tiersim.plan.constraints._missed` words
them), the figures and the seed check by words ("p99 TTFT missed at seeds ..."). Nothing was
changed; this pins it. Modelled: ``tiny.yaml`` with ``--slo-ttft-p99 0.3 --slo-e2e-p99 2.5``,
today's fleet BF16 1 x 1 GPU (p99 TTFT 0.334 s, end-to-end 2.71 s).
"""

from __future__ import annotations

from conftest import TINY, run_cli


def test_each_line_names_ttft_and_end_to_end_alike(tmp_path):
    out = run_cli("plan", str(TINY), "--slo-ttft-p99", "0.3", "--slo-e2e-p99", "2.5",
                  "--current", "bf16=1", "--out", str(tmp_path / "p"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "  ttft_p99_s: 0.172 vs limit 0.3 (modelled)" in lines
    assert "  e2e_p99_s: 1.71 vs limit 2.5 (modelled)" in lines
    today = next(line for line in lines if line.startswith("  today's fleet (--current"))
    assert today.endswith("p99 TTFT / TPOT (SLOs 0.300 s / 100 ms) 0.334 s / 78.2 ms; p99 "
                          "end-to-end (SLO 2.50 s) 2.71 s; expected accuracy 95.00%: misses the "
                          "SLOs (ttft_p99_s 0.334 vs limit 0.3; e2e_p99_s 2.71 vs limit 2.5)")
    assert "  one fewer bf16: misses: ttft_p99_s 0.334 vs limit 0.3; e2e_p99_s 2.71 vs limit " \
        "2.5" in lines
    assert ("    today's fleet (bf16 1 x 1 GPU) meets the SLOs at 0 of 4 seeds; p99 TTFT missed "
            "at seeds 0, 1, 2, 3; p99 end-to-end missed at seeds 0, 1, 2, 3") in lines
