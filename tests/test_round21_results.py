"""Round 21 (results): the printed results say where each number comes from, truthfully, and
add up from the written files."""

from __future__ import annotations

import pandas as pd
import yaml

from tiersim.paths import bundled
from tiersim.runner import run_scenario
from tiersim.scenario import scenario_from_dict


def _draft_run(tmp_path, profile="h200_aiconfigurator_vllm") -> dict:
    """A Llama-3.1-70B TP2 tier drafting with Llama-3.1-8B over six requests."""
    trace = tmp_path / "t.parquet"
    pd.DataFrame({"request_id": range(6), "arrival_s": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
                  "input_tokens": [500] * 6, "output_tokens": [60] * 6}).to_parquet(trace)
    doc = yaml.safe_load(bundled("scenarios", "spec_decode.yaml").read_text())
    doc["trace"] = {"path": str(trace)}
    doc["profile"] = profile
    doc["tiers"][0]["speculative"] = {"k": 3, "acceptance": 0.7, "draft_model": "Llama-3.1-8B"}
    return run_scenario(scenario_from_dict(doc, str(tmp_path / "s.yaml"))).to_json()


def test_a_draft_model_reads_the_scenarios_profile_and_its_tables_are_listed(tmp_path):
    """The draft's step times come from the profile the scenario names (its Llama-3.1-8B
    tables are measured), and the tier's sources list the draft's tables beside the
    target's, so the step-time label counts every table the step times read."""
    out = _draft_run(tmp_path)
    sources = out["profile"]["sources"]["bf16"]
    draft = {k: v for k, v in sources.items() if k.startswith("draft Llama-3.1-8B: ")}
    assert draft, sorted(sources)
    gemms = [v for k, v in draft.items() if ": gemm bf16 " in k]
    assert gemms and all(v.startswith("measured:") for v in gemms), draft
    label = out["tiers"]["bf16"]["step_time_source"]
    counted = sum(int(part.rsplit("(", 1)[1].split(" ")[0]) for part in label.split(" + "))
    assert counted == len(sources), label


def test_a_draft_model_on_the_roofline_says_so(tmp_path):
    out = _draft_run(tmp_path, profile=None)
    sources = out["profile"]["sources"]["bf16"]
    assert any(k.startswith("draft Llama-3.1-8B: ") for k in sources)
    host = {k for k in sources if k.rsplit(": ", 1)[-1] in ("overhead", "eager")}
    assert {v for k, v in sources.items() if k not in host} == {"roofline"}
    # the host time, the draft's too, is vLLM's fitted one (the roofline's calibration)
    assert len(host) == 4 and all(sources[k].startswith("fitted: ") for k in host)
    assert out["tiers"]["bf16"]["step_time_source"] == (
        "fitted on measured serving rows (4 ops) + roofline (8 ops)")
