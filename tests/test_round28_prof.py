"""The shipped H200 profile answers unseen model shapes from NVIDIA's own rows: GQA attention at
every per-GPU shape NVIDIA's vLLM attention rows measured, dense GEMMs at every measured grid
``(n, k)``, and the block-FP8 GEMMs a ``moe_backend: deepgemm`` tier's experts read."""

from __future__ import annotations

import pytest
from test_aiconfigurator import FakeImporter, attn_frame
from test_round27_gemmgrid import (
    test_an_unseen_gemm_shape_reads_its_own_measured_table as reads_own_table,
)

from tiersim.perf import aiconfigurator as aic


def _attention_rows():
    """Rows of three shapes: one measured in full, one only under a sliding window, one (FP8
    KV) only at batch 2 in prefill."""
    rows = []
    for isl, step in ((1024, 0), (4096, 0), (1, 1023)):
        for batch in (1, 2):
            rows.append((32, 8, 128, 0, "bfloat16", batch, isl, step, 1e-5 * batch * isl, "fa"))
            rows.append((16, 2, 64, 128, "bfloat16", batch, isl, step, 1e-5 * batch * isl, "fa"))
        rows.append((8, 1, 128, 0, "fp8", 2, isl, step, 2e-5 * isl, "fa"))
    return attn_frame(rows)


def test_attention_shapes_are_the_full_attention_rows_measured():
    imp = FakeImporter(_attention_rows())
    assert aic.attention_shapes(imp, "attn_prefill", "bf16") == [(32, 8, 128)]
    assert aic.attention_shapes(imp, "attn_decode", "bf16") == [(32, 8, 128)]
    assert aic.attention_shapes(imp, "attn_prefill", "fp8") == []  # no batch-1 prompt rows
    assert aic.attention_shapes(imp, "attn_decode", "fp8") == [(8, 1, 128)]
    assert aic.attention_shapes(imp, "attn_decode", "int4") == []  # no such KV rows


def test_measured_attention_requests_import_a_table_at_each_shape():
    imp = FakeImporter(_attention_rows())
    requests = aic.measured_attention_requests(imp, ("bf16", "fp8"))
    assert [(op, kv, tuple(key.values())) for op, kv, key, _, _ in requests] == [
        ("attn_prefill", "bf16", (32, 8, 128)), ("attn_decode", "bf16", (32, 8, 128)),
        ("attn_decode", "fp8", (8, 1, 128))]
    for request in requests:
        table = aic._import_one(imp, *request)
        assert (table.op, table.dtype, table.key) == request[:3]


@pytest.mark.parametrize("precision, n, k", [
    ("bf16", 768, 5120),        # a TP-split qkv (n below 1,024; Llama-3.1-8B's is shipped)
    ("fp8", 5120, 768),         # a TP-split o projection (k below 1,024)
    ("fp8_block", 256, 7168),   # DeepSeek-V3's router (n = experts)
    ("bf16", 32, 2048),         # the grid's smallest side
])
def test_a_small_side_grid_gemm_reads_its_own_measured_table(precision, n, k):
    reads_own_table(precision, n, k)
