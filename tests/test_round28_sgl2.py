"""Round 28 (helper sgl2): SGLang's eager prefill cost fitted on its named H200 rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_fidelity import fs, make_row


def sglang_row(model: str, version: str, **overrides) -> dict:
    """An H200 SGLang row of ``model`` measured on ``version``."""
    return make_row(backend="sglang", model=model, backend_version=version, **overrides)


def test_sglang_trains_on_its_0_5_9_h200_rows_only():
    """The training rows are the H200 SGLang 0.5.9 (and GLM-5's glm5-hopper) rows of the four
    named models; the older campaigns' rows of the same or other models are held out."""
    rows = pd.DataFrame([
        sglang_row("DeepSeek-R1", "0.5.9"), sglang_row("DeepSeek-V3", "0.5.9"),
        sglang_row("Qwen3.5-397B", "0.5.9"), sglang_row("GLM-5", "glm5-hopper"),
        sglang_row("DeepSeek-R1", "0.5.8.post1"), sglang_row("Llama-3.1-8B", "0.5.6.post2"),
        sglang_row("Qwen3-235B-FP8", "0.5.6.post2"), make_row(model="DeepSeek-R1",
                                                              backend_version="0.5.9"),
    ])
    dense, moe = fs.FIT_TRAINING["sglang"]
    assert dense == moe
    assert fs.training_mask(rows, dense).tolist() == [True] * 4 + [False] * 4


def test_sglang_fit_moves_only_its_eager_cost_above_512_tokens(monkeypatch):
    """``--fit --fit-engine sglang`` tries every pair of its grid on its training rows alone, with
    vLLM's fitted load generator, and keeps SGLang's overhead as its profile has it (a stand-in
    replay whose TTFT error vanishes at 0.1 ms per layer and 0.8 ms per MoE layer)."""
    tried = []

    def fake_run(df, kv_dtype, proto, jobs, knobs=None):
        assert set(df["backend"]) == {"sglang"} and proto == fs.Protocol(per_client=7, spread=0.2)
        eager = knobs.eager
        tried.append((eager.per_layer_s, eager.per_moe_layer_s, knobs.overhead_s))
        ttft = abs(eager.per_layer_s - 0.1e-3) * 1e3 + abs(eager.per_moe_layer_s - 0.8e-3) * 1e3
        return pd.DataFrame({"tpot_err": [0.0, 0.0], "ttft_err": [ttft, -ttft]})

    monkeypatch.setattr(fs, "run", fake_run)
    monkeypatch.setattr(fs, "fitted", lambda: {"per_client": 7, "length_spread": 0.2})
    train = pd.DataFrame([sglang_row("GLM-5", "glm5-hopper"), sglang_row("DeepSeek-R1", "0.5.9"),
                          sglang_row("DeepSeek-R1", "0.5.8.post1"), make_row()])
    knobs, proto = fs.fit(train, "fp8", jobs=1, engine="sglang")
    own = fs.resolve_profile(fs.ENGINE_PROFILES["sglang"])
    assert len(tried) == 16 and {t[2] for t in tried} == {own.overhead_s}
    assert (knobs.engine, proto) == ("sglang", fs.Protocol(per_client=7, spread=0.2))
    assert (knobs.overhead_s, knobs.overhead_per_layer_s) == (own.overhead_s,
                                                              own.overhead_per_layer_s)
    assert knobs.eager.per_layer_s == pytest.approx(0.1e-3)
    assert knobs.eager.per_moe_layer_s == pytest.approx(0.8e-3)
    assert knobs.eager.graph_max_tokens == 512


def test_sglang_fit_writes_its_eager_cost_and_leaves_its_overhead(monkeypatch, tmp_path):
    """The written SGLang profile carries the fitted eager cost, labelled with the command and
    the rows (models and versions), and its overhead object unchanged; fit.json gets an
    ``sglang`` entry beside vLLM's and TensorRT-LLM's."""
    fit_json = tmp_path / "fit.json"
    fit_json.write_text(json.dumps({"per_client": 8, "length_spread": 0.3,
                                    "trtllm": {"overhead_s": 4e-4}}))
    profile = tmp_path / "sglang.json"
    profile.write_text(fs.profile_path("sglang").read_text())
    before = json.loads(profile.read_text())["overhead_s"]
    monkeypatch.setattr(fs, "FIT_JSON", fit_json)
    monkeypatch.setattr(fs, "profile_path", lambda engine: profile)
    monkeypatch.setattr(fs, "propagate_fit", lambda engine: None)
    eager = fs.EagerCost(512, 1e-4, 8e-4, source="fitting")
    knobs = fs.Knobs(overhead_s=before["value"], overhead_per_layer_s=before["per_layer_s"],
                     eager=eager, engine="sglang")
    fs.write_fit(knobs, fs.Protocol(per_client=8, spread=0.3), 105, 105)
    written = json.loads(profile.read_text())
    assert written["overhead_s"] == before
    assert written["eager_s"]["per_moe_layer_s"] == 8e-4
    assert written["eager_s"]["source"] == (
        "fitted: benchmarks/fidelity_silicon.py --fit --fit-engine sglang on 105 silicon-sample "
        "rows (sglang, DeepSeek-R1, DeepSeek-V3, Qwen3.5-397B, GLM-5 (0.5.9 / glm5-hopper))")
    doc = json.loads(fit_json.read_text())
    assert doc["trtllm"] == {"overhead_s": 4e-4} and doc["per_client"] == 8
    assert doc["sglang"]["overhead_fitted"] is False and doc["sglang"]["moe_rows"] == 0


def test_the_vllm_and_trtllm_fit_labels_read_as_before():
    """Naming a subset's versions changes no label of the engines whose subsets name none."""
    assert fs.fit_label(60, 114) == (
        "fitted: benchmarks/fidelity_silicon.py --fit on 60 silicon-sample rows (vllm, "
        "Llama-3.1-70B) and, per MoE layer, 114 (vllm, MiniMax-M2.5, gpt-oss-120b)")
    assert fs.fit_label(72, 62, engine="trtllm").endswith(
        "(trtllm, Llama-3.1-70B) and, per MoE layer, 62 (trtllm, gpt-oss-120b)")
