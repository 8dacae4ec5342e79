"""Round 31, helper keys: lookups that matched what they should not.

MLA module tables were keyed by the cached latent's width (``kv_lora_rank + rope``) and the
query heads per GPU only, so any MLA model whose latent was 576 wide (448 + 128 rather than
DeepSeek-V3's 512 + 64, or another ``nope``, ``v`` or projection width) read DeepSeek-V3's
measured modules. The key now carries the module's shapes (:data:`MLA_KEYS`); a table that
leaves them out was measured at DeepSeek-V3's, as the shipped profiles' were.

The plan's sort key rounded costs with ``round_sig``, which gives None for infinity and NaN:
a design of such a cost made the sort raise TypeError. :func:`sig_order` is total: infinity
after every finite cost, NaN last.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from tiersim.errors import TiersimError
from tiersim.hardware import get_model
from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.profile import MLA_KEYS, load_profile, save_profile
from tiersim.plan import Constraints, Planner
from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario
from tiersim.results import sig_order

DEEPSEEK = get_model("benchmarks/data/configs/DeepSeek-V3")
KIMI = get_model("benchmarks/data/configs/Kimi-K2.5")
#: MLA models of DeepSeek-V3's latent width (576) but another split or projection shape.
OTHER_SPLITS = {
    "latent 448 + rope 128": {"kv_lora_rank": 448, "qk_rope_head_dim": 128},
    "nope 192": {"qk_nope_head_dim": 192},
    "v 256": {"v_head_dim": 256},
    "hidden 5120": {"hidden": 5120},
    "q_lora 2048": {"q_lora_rank": 2048},
}
#: The vLLM H200 profile's MLA tables read at TP 8 (DeepSeek-V3's 128 heads: 16 per GPU).
TP = 8


@pytest.fixture(scope="module")
def shipped():
    """The shipped vLLM H200 profile."""
    return load_profile(bundled("profiles", "h200_aiconfigurator_vllm"))


def attention_sources(model, profile, tp: int = TP) -> dict[str, str]:
    """The attention tables ``model`` reads from ``profile`` at ``tp``, with their labels."""
    sources = build_step_model(model, "bf16", "h200", tp, "bf16", profile).sources()
    return {name: label for name, label in sources.items() if name.startswith("attn_")}


@pytest.mark.parametrize("model", [DEEPSEEK, KIMI], ids=["DeepSeek-V3", "Kimi-K2.5"])
def test_deepseek_shapes_read_the_measured_mla_modules(shipped, model):
    found = attention_sources(model, shipped, model.heads // 16)
    assert len(found) == 2
    assert all(label.startswith("measured:aiconfigurator") for label in found.values())


@pytest.mark.parametrize("change", OTHER_SPLITS.values(), ids=OTHER_SPLITS.keys())
def test_another_mla_shape_of_the_same_latent_reads_the_roofline(shipped, change):
    other = dataclasses.replace(DEEPSEEK, **change)
    assert other.kv_latent_dim == DEEPSEEK.kv_latent_dim == 576  # the old key's only field
    found = attention_sources(other, shipped)
    assert len(found) == 2 and set(found.values()) == {"roofline"}


def test_another_mla_shape_is_not_anchored_on_deepseek_at_another_head_count(shipped):
    """TP 32 (4 heads per GPU, no such table): DeepSeek-V3 anchors on its own module, a 448 +
    128 split reads the roofline."""
    assert all(v.startswith("anchored:") for v in attention_sources(DEEPSEEK, shipped, 32).values())
    other = dataclasses.replace(DEEPSEEK, **OTHER_SPLITS["latent 448 + rope 128"])
    assert set(attention_sources(other, shipped, 32).values()) == {"roofline"}


def mla_doc() -> tuple[dict, list[int]]:
    """The shipped profile's document and the indexes of its MLA tables read at TP 8 in BF16."""
    doc = json.loads(bundled("profiles", "h200_aiconfigurator_vllm").read_text())
    picked = [i for i, t in enumerate(doc["tables"])
              if t.get("kv_dtype") == "bf16 mla-bf16" and t["key"]["heads"] == 16]
    return doc, picked


def test_a_table_keyed_at_another_mla_shape_is_read_by_that_shape_only(tmp_path):
    doc, picked = mla_doc()
    for i in picked:
        doc["tables"][i]["key"].update(hidden=7168, q_lora=1536, rope=128, nope=128, v_dim=128)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    profile = load_profile(path)
    other = dataclasses.replace(DEEPSEEK, **OTHER_SPLITS["latent 448 + rope 128"])
    assert all(v.startswith("measured:") for v in attention_sources(other, profile).values())
    own = attention_sources(DEEPSEEK, profile).values()  # anchored on its own shape's tables
    assert all(v.startswith("anchored:") and "rope=64 " in v for v in own)


def test_a_profile_saved_again_is_the_file_it_was_and_another_shape_keeps_its_key(tmp_path):
    """The shipped MLA tables (DeepSeek-V3's shapes) are written without the shape fields, as
    they were read: fidelity_silicon.py re-saves the other GPUs' profiles after a fit."""
    path = bundled("profiles", "h200_aiconfigurator_vllm")
    save_profile(load_profile(path), tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    doc, picked = mla_doc()
    doc["tables"][picked[0]]["key"].update(hidden=5120, q_lora=1536, rope=64, nope=128, v_dim=128)
    (tmp_path / "p.json").write_text(json.dumps(doc))
    save_profile(load_profile(tmp_path / "p.json"), tmp_path / "q.json")
    written = json.loads((tmp_path / "q.json").read_text())["tables"][picked[0]]["key"]
    assert written == doc["tables"][picked[0]]["key"]


def test_an_mla_key_with_part_of_its_shape_is_refused_in_one_line(tmp_path):
    doc, picked = mla_doc()
    doc["tables"][picked[0]]["key"]["rope"] = 128
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    missing = ", ".join(n for n in MLA_KEYS if n != "rope")
    with pytest.raises(TiersimError, match=rf"p\.json: tables\[{picked[0]}\]\.key\.hidden: an "
                       rf"MLA module's key gives all of {', '.join(MLA_KEYS)} or none \(none: "
                       rf"DeepSeek-V3's shapes\); add {missing}$"):
        load_profile(path)


# ---------------------------------------------------------------- the plan's sort on costs


def test_sig_order_is_total_with_infinity_after_every_finite_cost_and_nan_last():
    costs = [math.nan, math.inf, 2.0, 0.1 + 0.2, -math.inf, 0.3]
    ordered = sorted(costs, key=sig_order)
    assert ordered[0] == -math.inf and ordered[1:3] == [0.1 + 0.2, 0.3]  # a tie as written
    assert ordered[3:5] == [2.0, math.inf] and math.isnan(ordered[5])
    assert sig_order(0.1 + 0.2) == sig_order(0.3)


@pytest.mark.parametrize("price", [math.inf, math.nan], ids=["inf", "nan"])
def test_a_design_of_unbounded_or_unknown_cost_is_never_the_plan(price):
    """Under both cost models (the fleet's USD/hour, and the cost over the trace); the sort
    raised TypeError (round_sig's None against a float)."""
    tiers = [FakeTier("odd", 0.9, cost_per_gpu_hour=price), FakeTier("dear", 0.9, 5.0)]
    scenario = fake_scenario(tiers)
    for model in ("provisioned", "attributed"):
        evaluator = FakeEvaluator(tiers, cost_model=model)
        result = Planner(scenario, Constraints.of(scenario), evaluator).plan()
        assert result.plan["tiers"] == ["dear"]
