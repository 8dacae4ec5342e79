"""Imported prefill attention never beats reading the chunk's KV once at HBM bandwidth."""

from __future__ import annotations

import numpy as np

from tiersim.hardware import get_gpu
from tiersim.paths import bundled
from tiersim.perf.profile import load_profile


def test_shipped_prefill_tables_respect_the_kv_read_floor():
    profile = load_profile(bundled("profiles", "h200_aiconfigurator_vllm.json"))
    bw = get_gpu(profile.gpu).hbm_bw_bytes_s
    tables = [t for t in profile.tables if t.op == "attn_prefill"]
    assert tables
    for t in tables:
        kv_bytes = 2 * t.key["kv_heads"] * t.key["head_dim"] * (1 if t.dtype == "fp8" else 2)
        tokens, context = np.meshgrid(t.axes["tokens"], t.axes["context"], indexing="ij")
        floor = (tokens + context) * kv_bytes / bw
        assert np.all(t.latency >= floor * (1 - 1e-5)), t.name  # 6-digit JSON
