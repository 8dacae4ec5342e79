"""GPU specifications: memory, bandwidth, peak tensor-core throughput and native formats.

Figures are the vendor's published per-GPU numbers for the SXM / HGX parts, DENSE (without the
2:4 structured-sparsity doubling that data sheets often headline):

- H100 SXM5 and H200 SXM: NVIDIA H100 and H200 Tensor Core GPU data sheets (2023/2024).
  BF16 989 TFLOP/s and FP8 1,979 TFLOP/s dense (the sheets print 1,979 / 3,958 "with sparsity").
  H100 SXM 80 GB HBM3 at 3.35 TB/s; H200 141 GB HBM3e at 4.8 TB/s. Both: NVLink 4, 900 GB/s
  total (both directions) per GPU. Hopper has no FP4 tensor cores.
- B200: NVIDIA HGX B200 specification (8 GPUs: 1.44 TB HBM3e, 64 TB/s, FP4 144 PF / FP8 72 PF /
  BF16 36 PF *sparse*), divided by 8 and halved for dense: 180 GB and 8 TB/s per GPU, BF16
  2.25 PF, FP8 4.5 PF, FP4 9 PF dense. (Stand-alone B200 material quotes 192 GB; the HGX board
  that clouds rent exposes 180 GB per GPU, so tiersim uses 180 GB.) NVLink 5: 1.8 TB/s per GPU.
- B300 (Blackwell Ultra, the 8-GPU HGX B300 board): aiconfigurator-core 0.12.0's
  ``systems/b300_sxm.yaml`` (NVIDIA's, citing the Blackwell Ultra data sheet; its measured
  tables are the ones B300 profiles import): 7.75 TB/s HBM3e per GPU (62 TB/s a board / 8),
  BF16 2.25 PF, FP8 4.5 PF, FP4 14 PF dense (sparse: 4.5 / 9 / 18 PF). NVIDIA's HGX page
  (nvidia.com/en-us/data-center/hgx, HGX B300: FP4 "144 PFLOPS | 108 PFLOPS" sparse | dense,
  FP8 72 PF and BF16 36 PF sparse, per 8 GPUs) agrees on BF16 and FP8 but gives 13.5 PF dense
  FP4 a GPU; tiersim takes the data sheet's per-GPU 14 PF, as NVIDIA's estimator does beside
  these tables (the FP4 peak only times an NVFP4 operator no table covers). NVLink 5: 1.8 TB/s
  per GPU (the yaml's 900 GB/s each way; the HGX page's GPU-to-GPU 1.8 TB/s). Between nodes
  each GPU has a ConnectX-8 at 800 Gb/s: 100 GB/s a direction (the yaml's ``inter_node_bw``;
  the HGX page's 1.6 TB/s networking a board).
- Between nodes: an HGX board holds 8 GPUs, each with its own ConnectX-7 NIC at NDR 400 Gb/s
  (NVIDIA's DGX H100/H200/B200 reference designs): 50 GB/s per GPU per direction; NVLink does
  not leave the node. A collective over more than 8 GPUs crosses that network, at 10 us per
  point-to-point step (the figure NVIDIA's aiconfigurator uses for these systems, ``p2p_latency``
  in its ``systems/h200_sxm.yaml``).

Memory capacity is the total the device reports (``nvidia-smi`` / ``torch.cuda.mem_get_info``),
because that is what vLLM's ``gpu_memory_utilization`` multiplies: H200 143,771 MiB, H100 SXM
81,559 MiB, B200 183,359 MiB, B300 275,040 MiB (``mem_capacity`` in aiconfigurator-core's
``b300_sxm.yaml``: "275040MiB reported by nvidia-smi"; the "288 GB" B300 material quotes is that
total in 1e9 bytes). The data sheets' "141 GB", "80 GB" and "180 GB" are those totals in round
GiB-like figures; reading them as 1e9 bytes would under-count an H200's KV cache by about 9 GB.
Elsewhere ``GB`` in this package is 1e9 bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tiersim.errors import TiersimError, shown


@dataclass(frozen=True)
class GPU:
    """One accelerator as the performance and memory models see it.

    name: display name ("H200").
    hbm_bytes: device memory in bytes.
    hbm_bw_bytes_s: peak device-memory bandwidth in bytes per second.
    peak_flops: dense tensor-core FLOP/s per compute dtype ("bf16", "fp8", "fp4").
    native: precision formats whose matrix math the tensor cores run directly
        (names as in :mod:`tiersim.hardware.precisions`).
    nvlink_bw_bytes_s: total NVLink bandwidth per GPU, both directions together.
    gpus_per_node: GPUs one NVLink domain (a node) holds.
    internode_bw_bytes_s: network bandwidth per GPU between nodes, one direction.
    internode_latency_s: latency of one point-to-point step between nodes.
    """

    name: str
    hbm_bytes: float
    hbm_bw_bytes_s: float
    peak_flops: dict[str, float] = field(hash=False)
    native: frozenset[str]
    nvlink_bw_bytes_s: float
    gpus_per_node: int = 8
    internode_bw_bytes_s: float = 50e9
    internode_latency_s: float = 10e-6

    def peak(self, compute_dtype: str) -> float:
        """Dense tensor-core FLOP/s for ``compute_dtype``; a missing dtype is a bug, not input."""
        return self.peak_flops[compute_dtype]


_MIB = 1 << 20
_HOPPER_FLOPS = {"bf16": 989e12, "fp8": 1979e12}

GPUS: dict[str, GPU] = {
    "h200": GPU(
        name="H200",
        hbm_bytes=143_771 * _MIB,
        hbm_bw_bytes_s=4.8e12,
        peak_flops=dict(_HOPPER_FLOPS),
        native=frozenset({"bf16", "fp8"}),
        nvlink_bw_bytes_s=900e9,
    ),
    "h100": GPU(
        name="H100",
        hbm_bytes=81_559 * _MIB,
        hbm_bw_bytes_s=3.35e12,
        peak_flops=dict(_HOPPER_FLOPS),
        native=frozenset({"bf16", "fp8"}),
        nvlink_bw_bytes_s=900e9,
    ),
    "b200": GPU(
        name="B200",
        hbm_bytes=183_359 * _MIB,
        hbm_bw_bytes_s=8.0e12,
        peak_flops={"bf16": 2.25e15, "fp8": 4.5e15, "fp4": 9.0e15},
        native=frozenset({"bf16", "fp8", "nvfp4"}),
        nvlink_bw_bytes_s=1.8e12,
    ),
    "b300": GPU(
        name="B300",
        hbm_bytes=275_040 * _MIB,
        hbm_bw_bytes_s=7.75e12,
        peak_flops={"bf16": 2.25e15, "fp8": 4.5e15, "fp4": 14.0e15},
        native=frozenset({"bf16", "fp8", "nvfp4"}),
        nvlink_bw_bytes_s=1.8e12,
        internode_bw_bytes_s=100e9,
    ),
}

_ALIASES = {"h200 sxm": "h200", "h200_sxm": "h200", "h100 sxm": "h100", "h100_sxm": "h100",
            "b200 sxm": "b200", "b200_sxm": "b200", "b300 sxm": "b300", "b300_sxm": "b300",
            # the name torch and nvidia-smi give the H100 SXM ("NVIDIA H100 80GB HBM3"), which
            # the harness writes as a profile's gpu (the PCIe and NVL parts are other GPUs)
            "h100 80gb hbm3": "h100",
            # and the HGX B300's ("NVIDIA B300 SXM6 AC", 275,040 MiB: the B300 above)
            "b300 sxm6 ac": "b300"}


def get_gpu(name: str) -> GPU:
    """The catalogue GPU called ``name`` (case-insensitive, a space, ``_`` or ``-`` between
    words alike: "H200", "h200_sxm", "H200-SXM" ...)."""
    key = re.sub(r"[\s_-]+", " ", str(name).strip().lower())
    key = _ALIASES.get(key, key)
    if key not in GPUS:
        known = ", ".join(g.name for g in GPUS.values())
        raise TiersimError(f"unknown GPU {shown(name)}; known GPUs: {known}")
    return GPUS[key]
