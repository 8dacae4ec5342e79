"""The speculative decoding example: a draft head halves TPOT at light load (small batches)
and makes latency worse when the same tier is overloaded (large, compute-bound batches)."""

from __future__ import annotations

import pytest
import yaml

from tiersim.errors import TiersimError
from tiersim.paths import bundled
from tiersim.runner import run_scenario
from tiersim.scenario import scenario_from_dict


def _run(spec: bool, time_scale: float | None = None, **tier) -> dict:
    path = bundled("scenarios", "spec_decode.yaml")
    doc = yaml.safe_load(path.read_text())
    if not spec:
        del doc["tiers"][0]["speculative"]
    if time_scale is not None:
        doc["trace"]["time_scale"] = time_scale
    doc["tiers"][0].update(tier)
    return run_scenario(scenario_from_dict(doc, str(path)), scenario_path=path).to_json()


def test_speculation_helps_small_batches():
    on, off = _run(True), _run(False)
    assert on["completed"] == off["completed"] == on["requests"]
    assert on["tpot_p50_s"] < 0.6 * off["tpot_p50_s"]
    # the saving rests on the scenario's acceptance and draft cost, and the label says so
    assert on["sources"]["latency"].endswith(
        "; scenario (bf16: speculative acceptance 0.7, draft head cost 0.05)")
    assert "scenario" not in off["sources"]["latency"]


def test_speculation_hurts_large_batches():
    on, off = _run(True, time_scale=4.0), _run(False, time_scale=4.0)
    assert on["completed"] == off["completed"] == on["requests"]
    assert on["tpot_p50_s"] > off["tpot_p50_s"]
    assert on["ttft_p50_s"] > off["ttft_p50_s"]


def test_a_budget_too_small_for_the_verify_is_one_line():
    with pytest.raises(TiersimError, match="max_num_seqs x") as err:
        _run(True, scheduler={"max_num_seqs": 256, "max_num_batched_tokens": 512})
    assert "\n" not in str(err.value)


def test_a_draft_model_costs_its_own_step_times():
    head = _run(True)
    draft = _run(True, speculative={"k": 3, "acceptance": 0.7, "draft_model": "Llama-3.1-8B"})
    off = _run(False)
    assert head["tpot_p50_s"] < draft["tpot_p50_s"] < off["tpot_p50_s"]


def _trace_run(tmp_path, acceptance: list) -> dict:
    """The example's tier over a six-request trace whose spec_acceptance column holds
    ``acceptance`` (None: a row without one)."""
    import pandas as pd

    trace = tmp_path / "t.parquet"
    pd.DataFrame({"request_id": range(6), "arrival_s": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
                  "input_tokens": [500] * 6, "output_tokens": [60] * 6,
                  "spec_acceptance": acceptance}).to_parquet(trace)
    doc = yaml.safe_load(bundled("scenarios", "spec_decode.yaml").read_text())
    doc["trace"] = {"path": str(trace)}
    return run_scenario(scenario_from_dict(doc, str(tmp_path / "s.yaml"))).to_json()


def test_the_latency_source_names_the_trace_acceptance_that_replaced_the_scenario_one(tmp_path):
    every = _trace_run(tmp_path, [1.0] * 6)["sources"]["latency"]
    assert every.endswith("; scenario (bf16: speculative acceptance from the trace's "
                          "spec_acceptance column, draft head cost 0.05)")
    some = _trace_run(tmp_path, [1.0, None, 1.0, None, None, None])["sources"]["latency"]
    assert some.endswith("; scenario (bf16: speculative acceptance from the trace's "
                         "spec_acceptance column for 2 of 6 requests, else 0.7, draft head "
                         "cost 0.05)")


def test_a_trace_acceptance_no_tier_reads_is_a_note(tmp_path):
    """The column was read, checked and silently unused without a speculative tier."""
    import warnings

    import pandas as pd

    trace = tmp_path / "t.parquet"
    pd.DataFrame({"request_id": range(3), "arrival_s": [0.0, 0.1, 0.2],
                  "input_tokens": [500] * 3, "output_tokens": [60] * 3,
                  "spec_acceptance": [1.0, None, 0.5]}).to_parquet(trace)
    doc = yaml.safe_load(bundled("scenarios", "spec_decode.yaml").read_text())
    doc["trace"] = {"path": str(trace)}
    source = str(tmp_path / "s.yaml")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_scenario(scenario_from_dict(doc, source), baselines=False)
    assert not [w for w in caught if "spec_acceptance" in str(w.message)]
    del doc["tiers"][0]["speculative"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_scenario(scenario_from_dict(doc, source), baselines=False)
    assert [str(w.message) for w in caught if "spec_acceptance" in str(w.message)] == [
        f"{source}: the trace's spec_acceptance column is not used: no tier has a speculative "
        "block (add one to a tier to use the rates, or drop the column)"]
