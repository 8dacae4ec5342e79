"""Collectives over more GPUs than a node holds: hierarchical all-reduce, NVLink within each
node plus the network between them (roofline), and measured intra-node tables kept."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tiersim.hardware import get_gpu
from tiersim.perf.profile import ProfileOps, profile_from_json
from tiersim.perf.roofline import RooflineOps

H200 = get_gpu("h200")


def roofline(gpu=H200) -> RooflineOps:
    return RooflineOps("llama-3.1-70b", "fp8", gpu, tp=8)


def test_within_a_node_nothing_crosses_the_network():
    ops = roofline()
    sizes = np.array([0.0, 1e6, 1e8])
    assert np.all(ops.internode_allreduce(sizes, 8) == 0.0)
    assert np.all(ops.internode_allreduce(sizes, 4) == 0.0)


def test_inter_node_part_is_the_faster_of_a_ring_and_a_tree_on_each_gpus_nic():
    """Each GPU's 1/8 share crosses its own 50 GB/s NIC: a ring of ``nodes`` (2 (nodes - 1)
    latency steps) or a tree (2 ceil(log2 nodes) steps, twice the share), whichever is faster."""
    ops, c = roofline(), roofline().c
    lat, bw = H200.internode_latency_s, H200.internode_bw_bytes_s * c.allreduce_eff
    for nodes, small_steps in ((2, 2), (4, 4), (8, 6)):
        gpus = 8 * nodes
        assert ops.internode_allreduce(np.array([0.0]), gpus)[0] == pytest.approx(
            small_steps * lat)  # latency-bound: the tree from 4 nodes on
        share = 512e6 / 8
        ring = 2 * (nodes - 1) * lat + 2 * (nodes - 1) / nodes * share / bw
        assert ops.internode_allreduce(np.array([512e6]), gpus)[0] == pytest.approx(ring)


def test_all_reduce_over_two_nodes_is_one_node_plus_the_network_and_much_slower():
    ops = roofline()
    size = np.array([1e6])
    two_nodes = ops.allreduce(size, 16)[0]
    network = ops.internode_allreduce(size, 16)[0]
    assert two_nodes == pytest.approx(ops.allreduce(size, 8)[0] + network)
    assert two_nodes > 3 * ops.allreduce(size, 8)[0]  # 50 GB/s NIC vs 450 GB/s NVLink


def test_a_bigger_nvlink_domain_keeps_the_collective_on_nvlink():
    rack = dataclasses.replace(H200, gpus_per_node=72)
    ops = roofline(rack)
    assert ops.internode_allreduce(np.array([1e6]), 64)[0] == 0.0


def _doc(tp: int) -> dict:
    return {
        "schema": "tiersim.profile/1", "name": "comm", "gpu": "H200",
        "provenance": {"source": "public", "tool": "aiconfigurator-core", "engine": "vllm"},
        "overhead_s": {"value": 0.0, "source": "harness"},
        "tables": [{"op": "allreduce", "source": "public", "engine_version": "0.24.0",
                    "key": {"tp": tp}, "axes": {"bytes": [1e3, 1e6, 1e8]},
                    "latency_s": [1e-5, 3e-5, 1e-3]}],
    }


def test_profile_keeps_the_measured_node_and_adds_the_network():
    """With a measured table at 8 GPUs only, an all-reduce over 16 is that table plus the
    roofline's inter-node part, labelled so; it is never the 8-GPU table anchored to 16."""
    prof = profile_from_json(_doc(8), "comm.json")
    fallback = roofline()
    ops = ProfileOps(prof, "llama-3.1-70b", "fp8", gpu=H200, tp=8, fallback=fallback)
    size = np.array([1e6])
    got = ops.allreduce(size, 16)[0]
    assert got == pytest.approx(3e-5 + fallback.internode_allreduce(size, 16)[0])
    assert ops.sources()["allreduce tp=16"] == (
        "measured:aiconfigurator vllm 0.24.0 within a node + roofline across 2 nodes")


def test_a_run_labels_the_network_part_as_roofline():
    """The run's latency label names the roofline part of a cross-node all-reduce (it used to
    count it as public measured: "measured:" matched first)."""
    from tiersim.summary import source_counts

    class Model:
        def sources(self):
            return {"gemm": "measured:aiconfigurator vllm 0.24.0",
                    "allreduce tp=16": "measured:aiconfigurator vllm 0.24.0 within a node + "
                                       "roofline across 2 nodes"}

    assert source_counts(Model()) == {"public measured": 1,
                                      "public measured, roofline across nodes": 1}


def test_a_source_label_says_its_origin_and_every_way_it_was_read():
    from tiersim.summary import source_kind

    assert source_kind("graph-read:anchored:measured:aiconfigurator vllm 0.24.0 (gemm "
                       "fp8_block n=1 k=2) (its launch floor removed in CUDA-graph steps)") == (
        "public measured, rescaled to the shape, launch floor removed in CUDA graphs")
    assert source_kind("anchored:harness (gemm bf16 n=1 k=2)") == (
        "measured profile, rescaled to the shape")
    assert source_kind("roofline") == "roofline"
    assert source_kind("measured:aiconfigurator vllm 0.24.0 (7 of 108 points below the physical "
                       "limit, read from the roofline)") == (
        "public measured, points below the physical limit from the roofline")


def test_a_measured_table_at_the_full_size_wins():
    prof = profile_from_json(_doc(16), "comm.json")
    ops = ProfileOps(prof, "llama-3.1-70b", "fp8", gpu=H200, tp=8, fallback=roofline())
    assert ops.allreduce(np.array([1e6]), 16)[0] == pytest.approx(3e-5)
    assert ops.sources()["allreduce tp=16"] == "measured:aiconfigurator vllm 0.24.0"


def test_a_half_filled_node_sets_the_pace():
    """12 GPUs = 8 + 4: each GPU of the 4-GPU node carries a quarter of the data over its NIC,
    twice the eighth of a full node, so its all-reduce is slower than 16 GPUs'."""
    ops = roofline()
    big = np.array([512e6])
    assert ops.internode_allreduce(big, 12)[0] > ops.internode_allreduce(big, 16)[0]
    bw = H200.internode_bw_bytes_s * ops.c.allreduce_eff
    want = 2 * H200.internode_latency_s + (512e6 / 4) / bw  # ring of 2 nodes: 2(2-1)/2 = 1
    assert ops.internode_allreduce(big, 12)[0] == pytest.approx(want)
