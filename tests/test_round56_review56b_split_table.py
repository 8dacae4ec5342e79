"""Round 56, review56b: the report's prefill/decode split table gives each split's p99
end-to-end latency where the plan holds an end-to-end limit, as ``tiersim disagg`` does.

Since review56 a split's score reads its p99 end-to-end over ``slo.e2e_p99_s`` where that is
held, and ``tiersim disagg`` gained an ``E2E p99`` column so that a score over 1 beside TTFT
and TPOT well within their SLOs says why. The plan's report kept its table of TTFT p99, TPOT
p99 and score alone: on tiny's BF16 tier at 3 replicas split 1P 2D, planned at
``--slo-e2e-p99 1.6`` (modelled), 2P 1D read TTFT 0.173 s and TPOT 7.02 ms, both far inside
2 s and 100 ms, beside score 1.04, its 1.67 s end-to-end shown nowhere on the page.
"""

from __future__ import annotations

from tiersim.report.page import split_section

SPLIT = {
    "tier": "bf16",
    "chosen": {"label": "aggregated"},
    "splits": [
        {
            "label": "aggregated",
            "ttft_p99_s": 0.152,
            "tpot_p99_s": 0.0124,
            "e2e_p99_s": 1.551,
            "score": 0.969,
        },
        {
            "label": "2P 1D",
            "ttft_p99_s": 0.173,
            "tpot_p99_s": 0.00702,
            "e2e_p99_s": 1.671,
            "score": 1.044,
        },
    ],
}


def test_the_split_table_gives_the_e2e_p99_its_score_reads():
    page = split_section(SPLIT, {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1, "e2e_p99_s": 1.6})
    assert "<th>E2E p99 (s)</th>" in page
    assert '<td class="num">1.67</td><td>1.04</td>' in page


def test_the_split_table_is_as_before_without_an_e2e_limit():
    plain = {
        **SPLIT,
        "splits": [{k: v for k, v in r.items() if k != "e2e_p99_s"} for r in SPLIT["splits"]],
    }
    page = split_section(plain, {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1})
    assert "E2E" not in page
    assert "<tr><th>split</th><th>TTFT p99 (s)</th><th>TPOT p99 (s)</th><th>score</th></tr>" in page
