"""fresh54 (round 54, new user, inference engineer): what `speculative.acceptance` is, against the
figures vLLM reports.

tiersim's `acceptance` is conditional: draft position j is accepted with probability a_j given
positions 1..j-1 were (tiersim.engine.spec_decode). vLLM's dashboards report other figures
(vllm/v1/spec_decode/metrics.py, SpecDecodingProm): the per-position rates
num_accepted_tokens_per_pos[j] / num_drafts (unconditional: positions 1..j all accepted), the
acceptance rate num_accepted_tokens / num_draft_tokens, and the mean acceptance length
1 + num_accepted_tokens / num_drafts. An engineer who copies vLLM's "acceptance rate 0.7" into
`acceptance: 0.7` models 2.53 tokens a step where vLLM measured 3.1. docs/serving.md said only
"set acceptance to the rates measured on your own traffic"; it now says which rate and how to
convert, and these tests hold its worked figures to the code.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tiersim.engine.spec_decode import SpecDecoding, draw_tokens
from tiersim.scenario_models import SpeculativeConfig

ROOT = Path(__file__).resolve().parents[1]
SERVING = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _vllm_figures(rates: list[float], k: int) -> tuple[list[float], float, float]:
    """vLLM's per-position rates, acceptance rate and mean acceptance length for tiersim's
    conditional rates (one rate for all positions, or one per position)."""
    spec = SpecDecoding(k, tuple(rates))
    per_pos, p = [], 1.0
    for a in spec.rates():
        p *= a
        per_pos.append(p)
    return per_pos, sum(per_pos) / k, spec.expected_tokens()


def test_serving_doc_says_acceptance_is_conditional_and_not_vllms_acceptance_rate():
    text = _flat(SERVING)
    assert "given the positions before it were accepted" in text
    assert "not vLLM's acceptance rate" in text
    for name in ("vllm:spec_decode_num_accepted_tokens_per_pos_total",
                 "vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_total"):
        assert name in text, name
    assert "`acceptance: [p_1, p_2 / p_1, ..., p_k / p_(k-1)]`" in text


def test_serving_doc_worked_figures_match_the_code():
    """acceptance 0.7 at k = 3 reads, in vLLM's terms, per-position 0.7 / 0.49 / 0.343, an
    acceptance rate of 0.511 and a mean acceptance length of 2.53; a vLLM acceptance rate of 0.7
    at k = 3 is one conditional rate of 0.832."""
    per_pos, rate, length = _vllm_figures([0.7], 3)
    assert [round(p, 3) for p in per_pos] == [0.7, 0.49, 0.343]
    assert f"{rate:.3f}" == "0.511"
    assert f"{length:.2f}" == "2.53"
    # the inverse: the one conditional rate whose accepted / drafted is 0.7 at k = 3
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _vllm_figures([mid], 3)[1] < 0.7 else (lo, mid)
    assert f"{lo:.3f}" == "0.832"
    assert f"{_vllm_figures([lo], 3)[2]:.1f}" == "3.1"
    text = _flat(SERVING)
    assert ("`acceptance: 0.7` at k = 3 is, in vLLM's terms, per-position rates 0.7 / 0.49 / "
            "0.343, an acceptance rate of 0.511 and a mean acceptance length of 2.53") in text
    assert ("an acceptance rate of 0.7 on a vLLM dashboard at k = 3 (a mean acceptance length "
            "of 3.1) is `acceptance: 0.832`") in text


def test_per_position_rates_converted_as_the_doc_says_give_vllms_mean_length():
    """vLLM's per-position rates p_j, converted to p_j / p_(j-1), model vLLM's mean acceptance
    length 1 + sum p_j; written as they are, they model fewer tokens a step."""
    p = [0.8, 0.55, 0.3]
    conditional = [p[0]] + [p[j] / p[j - 1] for j in range(1, 3)]
    assert SpecDecoding(3, tuple(conditional)).expected_tokens() == pytest.approx(1 + sum(p))
    assert SpecDecoding(3, tuple(p)).expected_tokens() < 1 + sum(p) - 0.25


def test_draws_realise_the_documented_figures():
    """The engine's draws give the acceptance rate and mean length the doc quotes (within 0.01
    over 200,000 steps)."""
    rng = random.Random(54)
    steps = [draw_tokens(rng, [0.7] * 3) for _ in range(200_000)]
    assert sum(steps) / len(steps) == pytest.approx(2.533, abs=0.01)
    assert sum(s - 1 for s in steps) / (3 * len(steps)) == pytest.approx(0.511, abs=0.01)


def test_field_description_says_conditional():
    """`tiersim`'s schema (shown in the scenario's JSON schema and error hints) says the same."""
    desc = SpeculativeConfig.model_fields["acceptance"].description
    assert "given the ones before" in desc
    assert "not vLLM's accepted / drafted" in desc
