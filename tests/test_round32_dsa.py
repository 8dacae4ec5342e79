"""Round 32, helper dsa: DSA attention tables keyed by their whole module shape.

DSA (DeepSeek sparse attention) module tables were keyed by the hidden, query-rank, value and
indexer widths and the cached latent (``head_dim``, ``kv_lora_rank + rope``), not the rotary
and non-rotary key widths, so a GLM-5 config of another rope / nope split read GLM-5's
measured modules. The key now carries the MLA block's whole shape (:data:`MLA_KEYS`) and the
indexer's (:data:`DSA_KEYS`); a table written before, without ``rope`` and ``nope``, is read at
the measured shape its other fields give, or refused in one line.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tiersim.errors import TiersimError
from tiersim.hardware import get_model
from tiersim.paths import bundled
from tiersim.perf import build_step_model
from tiersim.perf.aiconfigurator import Importer, _import_one
from tiersim.perf.profile import DSA_KEYS, dsa_key, load_profile

GLM5 = get_model("benchmarks/data/configs/GLM-5-FP8")
#: GLM-5 at another split of its 576-wide latent, or another non-rotary key width.
OTHER_SPLITS = {
    "nope 128": {"qk_nope_head_dim": 128},
    "latent 448 + rope 128": {"kv_lora_rank": 448, "qk_rope_head_dim": 128},
    "rope 32 + nope 224": {"kv_lora_rank": 544, "qk_rope_head_dim": 32, "qk_nope_head_dim": 224},
}
#: Every profile in the repository that holds DSA module tables.
DSA_PROFILES = ("tiersim/profiles/h200_aiconfigurator_vllm.json",
                "tiersim/profiles/h100_aiconfigurator_vllm.json",
                "tiersim/profiles/b200_aiconfigurator_vllm.json",
                "benchmarks/data/h200_aiconfigurator_sglang.json",
                "benchmarks/data/b200_aiconfigurator_sglang.json")


@pytest.fixture(scope="module")
def shipped():
    """The shipped vLLM H200 profile."""
    return load_profile(bundled("profiles", "h200_aiconfigurator_vllm"))


def attention_sources(model, profile) -> dict[str, str]:
    """The attention tables ``model`` reads from ``profile`` at TP 8, with their labels."""
    sources = build_step_model(model, "checkpoint", "h200", 8, "bf16", profile).sources()
    return {name: label for name, label in sources.items() if name.startswith("attn_")}


def test_glm5_reads_its_measured_modules_keyed_by_its_whole_shape(shipped):
    found = attention_sources(GLM5, shipped)
    assert len(found) == 2
    assert all("rope=64 nope=192 " in name for name in found)
    assert set(found.values()) == {"measured:aiconfigurator vllm 0.24.0"}


@pytest.mark.parametrize("change", OTHER_SPLITS.values(), ids=OTHER_SPLITS.keys())
def test_another_rope_nope_split_of_glm5_reads_the_roofline(shipped, change):
    other = dataclasses.replace(GLM5, **change)
    assert other.kv_latent_dim == GLM5.kv_latent_dim == 576  # the old key could not tell
    found = attention_sources(other, shipped)
    assert len(found) == 2 and set(found.values()) == {"roofline"}


@pytest.mark.parametrize("path", DSA_PROFILES)
def test_every_stored_dsa_table_keys_rope_and_nope(path):
    """The importer writes the whole key; no file in the repository holds an older one."""
    tables = [t for t in json.loads(Path(path).read_text())["tables"]
              if " dsa-" in str(t.get("kv_dtype"))]
    assert tables and all(set(DSA_KEYS) <= set(t["key"]) for t in tables)


def old_doc() -> tuple[dict, list[int]]:
    """The shipped profile's document with its DSA tables keyed as before (no rope, nope),
    and their indexes."""
    doc = json.loads(bundled("profiles", "h200_aiconfigurator_vllm").read_text())
    picked = [i for i, t in enumerate(doc["tables"]) if " dsa-" in str(t.get("kv_dtype"))]
    for i in picked:
        for name in ("rope", "nope"):
            doc["tables"][i]["key"].pop(name, None)
    return doc, picked


def test_an_older_profile_reads_its_dsa_tables_at_the_measured_shape_they_match(tmp_path):
    doc, _ = old_doc()
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    profile = load_profile(path)
    assert set(attention_sources(GLM5, profile).values()) == {"measured:aiconfigurator vllm 0.24.0"}
    other = dataclasses.replace(GLM5, **OTHER_SPLITS["nope 128"])
    assert set(attention_sources(other, profile).values()) == {"roofline"}


@pytest.mark.parametrize(("field", "value", "refusal"), [
    ("hidden", 5120, r"rope: a DSA module's key leaves out rope and nope only at DeepSeek-V3\.2's "
                     r"or GLM-5's shapes, and this key is at none of them; add rope, nope$"),
    ("rope", 64, r"nope: a DSA module's key gives all of rope, nope or none \(none: "
                 r"DeepSeek-V3\.2's or GLM-5's shapes\); add nope$"),
], ids=["an older key at no measured shape", "rope but not nope"])
def test_a_dsa_key_short_of_rope_or_nope_is_refused_in_one_line(tmp_path, field, value,
                                                                 refusal):
    """An older DSA key (no rope, no nope) loads only at a measured shape; a key giving one of
    the two is refused too, each in one line naming the file, the table's key and the fix."""
    doc, picked = old_doc()
    doc["tables"][picked[0]]["key"][field] = value
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TiersimError, match=rf"old\.json: tables\[{picked[0]}\]\.key\.{refusal}"):
        load_profile(path)



# ------------------------------------------- DSA modules NVIDIA timed under GLM-5.2's names


def aic_config(name: str) -> str:
    """The path of a ``config.json`` aiconfigurator-core ships (skips without the package)."""
    aic = pytest.importorskip("aiconfigurator_core")
    return str(Path(aic.__file__).parent / "model_configs" / f"{name}_config.json")


def glm5_key(model, heads: int = 8) -> dict[str, int]:
    """GLM-5's DSA table key at ``heads`` query heads per GPU."""
    return {"heads": heads, "kv_heads": 1, "head_dim": model.kv_latent_dim, **dsa_key(model)}


def test_glm5_nvfp4_reads_the_bf16_modules_nvidia_timed_as_glm52_on_b200_sglang():
    """B200 SGLang's only whole DSA modules with BF16 projections are filed under
    nvidia/GLM-5.2-NVFP4 (GLM-5's shape): GLM-5-NVFP4's attention (BF16 projections) read the
    roofline, as its rows' 'fp8 dsa-bf16' tables were never imported."""
    model = get_model(aic_config("nvidia--GLM-5-NVFP4"))
    imp = Importer("b200", "sglang")
    for op in ("attn_prefill", "attn_decode"):
        table = _import_one(imp, op, "fp8 dsa-bf16", glm5_key(model), model, 8)
        assert table is not None and "GLM-5 shapes" in table.extra["notes"]


def test_the_b200_sglang_profile_serves_glm5_nvfp4_attention_from_measured_modules():
    model = get_model(aic_config("nvidia--GLM-5-NVFP4"))
    profile = load_profile("benchmarks/data/b200_aiconfigurator_sglang.json")
    sources = build_step_model(model, "checkpoint", "b200", 8, "fp8", profile).sources()
    attention = {k: v for k, v in sources.items() if k.startswith("attn_")}
    assert len(attention) == 2 and all(" dsa-bf16 " in k for k in attention)
    assert set(attention.values()) == {"measured:aiconfigurator sglang 0.5.14"}
