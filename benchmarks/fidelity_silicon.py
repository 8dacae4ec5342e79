"""Fidelity against measured serving: replay NVIDIA's H200 serving runs, beside aiconfigurator.

``aiconfigurator-core`` ships ``systems/silicon_sample.csv``: mean TTFT and TPOT measured by NVIDIA
on real servers (vLLM, TensorRT-LLM, SGLang) at a given parallelism, client concurrency, input and
output length. This script replays EVERY H200 row (copied to ``benchmarks/data/``) through
tiersim's engine and, for the same rows, shows aiconfigurator's own estimate (computed by
aiconfigurator-core's estimator and cached in ``benchmarks/data/aic_estimates_h200.csv``).

**A row** is one closed loop through :func:`tiersim.engine.simulate`: ``concurrency`` clients send
requests of ``isl`` prompt and ``osl`` output tokens back to back (``Workload.follows``) to ONE
server of ``tp x dp`` H200s (``dp`` attention data-parallel ranks, each a replica of the tier with
its own scheduler and KV cache, stepped in lockstep for a MoE model; experts split ``ep``
ways), with vLLM V1's API-server limits
(8,192 batched tokens, ``max_num_seqs`` 1,024), KV blocks from ``tiersim.perf.memory`` and step
times from ``tiersim.perf.build_step_model`` on the engine's profile (vLLM: the shipped
``profiles/h200_aiconfigurator_vllm.json``; TensorRT-LLM / SGLang: ``benchmarks/data/*.json``).

**The load generator** (:class:`Protocol`): the measured runs start every client at once and
report means over the whole run, start-up burst included. By default all clients start at 0, each
sends ``per_client`` requests, and TTFT/TPOT are means over every request; TPOT of a request is
``(finish - first token) / (osl - 1)`` as ``vllm bench serve`` defines it. ``--warmup-rounds``
sends that many requests per client first and leaves them out. ``--aiperf-client`` replays
NVIDIA's published aiperf client instead (:data:`AIPERF_CLIENT`: a drained warm-up phase, then
10 measured requests per client from 12 prompts per client), a setting with nothing fitted.

**The free parameters** are the load generator (``per_client``, the length spread), vLLM's
per-iteration overhead (``value + per_layer_s x layers``: a CUDA-graph replay pays a gap per
kernel, and kernels come per layer), and the host time of iterations vLLM runs outside CUDA
graphs (over 512 tokens: ``per_layer_s`` x layers + ``per_moe_layer_s`` x MoE layers;
:class:`tiersim.perf.profile.EagerCost`). ``--fit`` fits them on the training rows
(:data:`TRAINING`: every vLLM Llama-3.1-70B row, and :data:`MOE_TRAINING`: every vLLM
MiniMax-M2.5 and gpt-oss-120b row, for the overhead and ``per_moe_layer_s`` only: three layer
counts, 80, 62 and 36, separate the overhead's two terms), prints the held-out figures
(every other vLLM row), writes the overhead and eager cost into the shipped profile and
``per_client`` into ``benchmarks/data/fit.json``, which the default run reads.
``--fit --fit-engine trtllm`` fits TensorRT-LLM's overhead and eager cost the same way on
its own Llama-3.1-70B and gpt-oss-120b rows (:data:`FIT_TRAINING`; its PyTorch runtime also
runs steps with a prefill chunk outside CUDA graphs) with vLLM's fitted load generator (the
same benchmark client), into ``benchmarks/data/h200_aiconfigurator_trtllm.json``.
``--fit --fit-engine sglang`` fits SGLang's eager cost alone (:data:`FIT_EAGER_ONLY`; its
overhead kept) on its H200 0.5.9 rows (:data:`SGLANG_TRAINING`), every prefill step eager and a
decode step above SGLang's CUDA-graph size of its GPU and TP (:data:`ENGINE_GRAPH_MAX_TOKENS`)
too, into ``benchmarks/data/h200_aiconfigurator_sglang.json``.
``--steady-state`` runs the earlier protocol instead (clients staggered over one request cycle,
first and last request of each left out).

**A model not listed** in :data:`MODELS` is read from its folder under ``benchmarks/data/configs``
or, failing that, the ``config.json`` aiconfigurator-core ships for it; operator shapes the
profile was not imported for are anchored on the nearest measured table (rows flagged in the
report). ``--rows-file PATH`` replays another file's rows (a newer silicon sample's, say;
``--aic-file`` for aiconfigurator's estimates of them).

**Rows tiersim cannot represent** (a model type it cannot read, a checkpoint format it ignores,
a parallel layout it lacks, disaggregated serving, an engine with no profile at the model's
shapes) are counted and listed with a one-line reason, never a traceback. A run the sample lists
twice counts once; a measurement filed under several layouts (identical TTFT and TPOT to every
digit: the sample repeats TP 8 runs as TP 64) is listed, not scored.

**Two engines on one checkpoint** (:func:`engine_pairs`): where the sample measures a checkpoint
on one layout with two engines, the report sets their measured TPOT side by side at the client
counts both ran, with tiersim's on the same rows: how far apart engines are on the same GPU.

**Another GPU** (``--system h100_sxm``, ``b200_sxm`` or ``b300_sxm``): its rows replay on
NVIDIA's tables of that GPU (vLLM: ``tiersim/profiles/<gpu>_aiconfigurator_vllm.json``, the
profile tiersim ships for it, imported for every shipped model too, or, for a GPU tiersim ships
no profile of (B300), ``benchmarks/data/<gpu>_aiconfigurator_vllm.json``; TensorRT-LLM and
SGLang: ``benchmarks/data/<gpu>_aiconfigurator_<engine>.json``; all by ``--refresh-data
--system ...``) with the overhead, eager cost and load generator fitted on H200 unchanged:
every row is held out, models the H200 sample lacks (Qwen3-32B, the NVFP4 checkpoints on B200
and B300) included.
``--roofline`` replays on the roofline model alone, no tables, with its shipped calibration
(:mod:`tiersim.perf.roofline_calibration`: kernel efficiencies from H200's tables, vLLM's host
time as fitted): what a run with no profile gets (``--write-check`` records it as
``roofline_<gpu>``, which such a run prints).

Run ``python benchmarks/fidelity_silicon.py`` (no network; aiconfigurator not needed). It prints
per engine and model: n, median |TPOT error| and |TTFT error| of tiersim and of aiconfigurator on
the same rows, and ends with ``vllm all median |TPOT error| = X%, |TTFT error| = Y% (n=N);
aiconfigurator X2%, Y2%``. ``--refresh-data`` recopies rows and configs, ``--refresh-aic``
recomputes aiconfigurator's estimates (both need aiconfigurator-core installed). See
``docs/fidelity.md``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import itertools
import json
import math
import os
import re
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
#: The silicon sample's ``system`` -> tiersim's GPU. H200 is what tiersim is fitted on; the other
#: systems' rows are replayed with the H200 fit unchanged (held out as a whole).
SYSTEM_GPU = {"h200_sxm": "h200", "h100_sxm": "h100", "b200_sxm": "b200", "b300_sxm": "b300"}
FIT_SYSTEM = "h200_sxm"
FIT_JSON = DATA / "fit.json"
CONFIGS = DATA / "configs"
sys.path.insert(0, str(HERE.parent))  # run from a checkout, installed or not
#: Kimi-K2.5 is a multimodal wrapper; its rows are text-only serving, so the note that its
#: vision tower is not counted says nothing about them (the worker processes inherit this).
warnings.filterwarnings("ignore", message=".*vision tower's weights are not counted")

from tiersim.calibrate.cli import OneLineParser, real_number  # noqa: E402
from tiersim.engine import SchedulerLimits, TierSpec, Workload, simulate  # noqa: E402
from tiersim.hardware import get_gpu, get_model  # noqa: E402
from tiersim.hardware.precisions import weight_formats  # noqa: E402
from tiersim.numbers import as_written, plain_float  # noqa: E402
from tiersim.perf import build_step_model, default_profile_name, resolve_profile  # noqa: E402
from tiersim.perf.base import StepShape  # noqa: E402
from tiersim.perf.memory import (  # noqa: E402
    check_moe_backend,
    kv_capacity_blocks,
    kv_groups,
    kv_pages,
)
from tiersim.perf.profile import EagerCost  # noqa: E402

ENGINE_PROFILES = {
    "vllm": default_profile_name(),
    "trtllm": str(DATA / "h200_aiconfigurator_trtllm.json"),
    "sglang": str(DATA / "h200_aiconfigurator_sglang.json"),
}
#: What each non-vLLM profile in benchmarks/data is imported for (``--refresh-data``):
#: importer model name -> (precisions, layouts as ``tp`` or ``(tp, dp, ep)``), at the layouts
#: the silicon sample ran on one node (the multi-node rows, TP 16/64, are left out).
ENGINE_IMPORTS = {
    "trtllm": {
        "llama-3.1-70b": (("fp8",), (1, 2, 4, 8)),
        "aic:openai--gpt-oss-120b": (("checkpoint",), (1, 2, 4, 8, (4, 1, 2), (8, 1, 8))),
        "aic:deepseek-ai--DeepSeek-V3": (("checkpoint",), (8, (8, 1, 8), (1, 8, 8))),
    },
    "sglang": {
        "llama-3.1-8b": (("fp8",), (1, 2, 4, 8)),
        "aic:Qwen--Qwen3-235B-A22B-FP8": (("checkpoint",), (2, 4)),
        "aic:Qwen--Qwen3.5-397B-A17B": (("fp8",), ((8, 1, 8),)),
        "aic:zai-org--GLM-5-FP8": (("checkpoint",), (8,)),
        "aic:deepseek-ai--DeepSeek-V3": (("checkpoint",), (8,)),
    },
}
#: Engines whose profiles in benchmarks/data also carry the importer's measured sets
#: (``import_aiconfigurator``'s ``measured``: every shape NVIDIA measured, as the shipped vLLM
#: profiles do), so that a row reads NVIDIA's rows at its shapes rather than anchored ones.
MEASURED_SET_ENGINES = {"trtllm", "sglang"}
#: The report labels of the models each non-vLLM profile covers.
ENGINE_PROFILE_MODELS = {
    "trtllm": {"Llama-3.1-70B", "gpt-oss-120b", "DeepSeek-R1", "DeepSeek-V3"},
    "sglang": {"Llama-3.1-8B", "Qwen3-235B-FP8", "Qwen3.5-397B", "GLM-5", "DeepSeek-R1",
               "DeepSeek-V3"},
}
#: Another system's profiles (``--refresh-data --system``): engine -> the models and layouts
#: its rows run, imported from aiconfigurator's tables of that GPU; the overhead and eager cost
#: are copied from the H200 profile of the same engine (fitted there, not refitted).
SYSTEM_IMPORTS = {
    "b200_sxm": {
        "vllm": {
            "llama-3.1-70b": (("fp8", "nvfp4"), (1, 2, 4, 8)),
            "aic:MiniMaxAI--MiniMax-M2.5": (
                ("checkpoint",), (2, (2, 1, 2), (2, 2, 4), 4, (4, 1, 4), (4, 4, 16))),
            "aic:nvidia--MiniMax-M2.5-NVFP4": (
                ("checkpoint",), (1, 2, (2, 2, 4), 4, (4, 4, 16), 8)),
            "aic:moonshotai--Kimi-K2.5": (("checkpoint",), (8,)),
            "aic:nvidia--Kimi-K2.5-NVFP4": (("checkpoint",), (4, (4, 1, 4), (4, 4, 16), 8)),
            "aic:openai--gpt-oss-120b": (("checkpoint",), (1, 2, 4, 8)),
        },
        "trtllm": {
            "llama-3.1-70b": (("fp8", "nvfp4"), (1, 2, 4, 8)),
            "aic:openai--gpt-oss-120b": (("checkpoint",), (1, 2, 4, 8, (1, 2, 2))),
            "aic:deepseek-ai--DeepSeek-V3": (("checkpoint",), (4, 8, (1, 8, 8))),
            "aic:nvidia--DeepSeek-V3.1-NVFP4": (("checkpoint",), (4, 8, (4, 1, 4), (8, 1, 8),
                                                              (1, 4, 4), (1, 8, 8))),
        },
        "sglang": {
            "aic:Qwen--Qwen3.5-397B-A17B": (("bf16", "fp8", "nvfp4"), (4, 8, (4, 1, 4))),
            "aic:deepseek-ai--DeepSeek-V3": (("checkpoint",), (4, 8)),
            "aic:zai-org--GLM-5-FP8": (("checkpoint",), (8,)),
            "aic:nvidia--GLM-5-NVFP4": (("checkpoint",), (8,)),
        },
    },
    "h100_sxm": {
        "vllm": {
            "aic:Qwen--Qwen3-32B": (("bf16", "fp8"), (1, 2, 4, 8)),
            "llama-3.1-70b": (("fp8",), (2, 4, 8)),
            "aic:openai--gpt-oss-120b": (("checkpoint",), (2, 4, 8)),
            "aic:MiniMaxAI--MiniMax-M2.5": (("checkpoint",), ((4, 1, 4), (4, 4, 16))),
        },
        "trtllm": {
            "aic:Qwen--Qwen3-32B": (("fp8",), (1, 2, 4, 8)),
            "llama-3.1-8b": (("bf16",), (1, 2, 4, 8)),
            "aic:Qwen--Qwen3-235B-A22B-FP8": (("checkpoint",), ((4, 1, 4), (8, 1, 8), (4, 1, 2))),
            "aic:openai--gpt-oss-120b": (("checkpoint",), (2, 4)),
        },
        "sglang": {
            "aic:Qwen--Qwen3-32B": (("bf16",), (1, 2, 4, 8)),
        },
    },
    # B300: its vLLM and SGLang aggregated rows (its TensorRT-LLM rows are disaggregated, which
    # tiersim does not model); no vLLM profile ships for it, so only the rows' models.
    "b300_sxm": {
        "vllm": {
            "aic:MiniMaxAI--MiniMax-M2.5": (("checkpoint",), (1, 2, (2, 2, 4), 4, (4, 4, 16))),
            "aic:nvidia--MiniMax-M2.5-NVFP4": (
                ("checkpoint",), (1, 2, (2, 2, 4), 4, (4, 4, 16), 8)),
            "aic:nvidia--Kimi-K2.5-NVFP4": (("checkpoint",), (4, (4, 1, 4), 8)),
        },
        "sglang": {
            "aic:Qwen--Qwen3.5-397B-A17B": (("bf16", "fp8"), (4, 8, (4, 1, 4))),
            "aic:nvidia--Qwen3.5-397B-A17B-NVFP4": (("checkpoint",), (4, (4, 1, 2))),
            "aic:deepseek-ai--DeepSeek-V3": (("checkpoint",), (4, 8)),
            "aic:zai-org--GLM-5-FP8": (("checkpoint",), (8,)),
        },
    },
}
#: The report labels of the models another system's non-vLLM profiles cover.
SYSTEM_PROFILE_MODELS = {
    "b200_sxm": {"trtllm": {"Llama-3.1-70B", "gpt-oss-120b", "DeepSeek-R1", "DeepSeek-V3",
                            "DeepSeek-V3.1-NVFP4"},
                 "sglang": {"Qwen3.5-397B", "DeepSeek-R1", "DeepSeek-V3", "GLM-5", "GLM-5-NVFP4"}},
    "h100_sxm": {"trtllm": {"Qwen3-32B", "Llama-3.1-8B", "Qwen3-235B-FP8", "gpt-oss-120b"},
                 "sglang": {"Qwen3-32B"}},
    "b300_sxm": {"sglang": {"Qwen3.5-397B", "DeepSeek-V3", "GLM-5"}},
}
MAX_BATCHED_TOKENS = 8192  # vLLM V1's default for an API server on an 80+ GB GPU
MAX_NUM_SEQS = 1024  # vLLM V1's default there; never binds (at most `concurrency` requests)
BLOCK_SIZE = 16
#: The training rows of ``--fit`` per engine (fixed here; everything else is held out):
#: ``(dense, moe)``. The dense rows fit the eager time per layer (and, for vLLM, the load
#: generator); the MoE rows the eager time per MoE layer (a dense model cannot show it); both
#: together the per-iteration overhead's two terms (they need several layer counts). vLLM's MoE
#: rows are one block-FP8 and one MXFP4 checkpoint, so the value is not one kernel's.
FIT_TRAINING = {
    "vllm": ({"backend": "vllm", "model": "Llama-3.1-70B"},
             {"backend": "vllm", "model": ("MiniMax-M2.5", "gpt-oss-120b")}),
    "trtllm": ({"backend": "trtllm", "model": "Llama-3.1-70B"},
               {"backend": "trtllm", "model": ("gpt-oss-120b",)}),
}
#: SGLang's training rows: its newest H200 campaign (0.5.9; GLM-5 on that campaign's
#: ``glm5-hopper`` build), named before any held-out figure was looked at. Every one is a MoE
#: model, so the same rows fit both eager fields; the older campaigns (0.5.6.post2 Llama-3.1-8B
#: and Qwen3-235B-FP8, 0.5.8.post1 DeepSeek-R1) and every H100 / B200 row are held out.
SGLANG_TRAINING = {"backend": "sglang",
                   "model": ("DeepSeek-R1", "DeepSeek-V3", "Qwen3.5-397B", "GLM-5"),
                   "backend_version": ("0.5.9", "glm5-hopper")}
FIT_TRAINING["sglang"] = (SGLANG_TRAINING, SGLANG_TRAINING)
TRAINING, MOE_TRAINING = FIT_TRAINING["vllm"]
#: vLLM's largest CUDA-graph batch (``max_cudagraph_capture_size``: min(2 x max_num_seqs, 512)).
GRAPH_MAX_TOKENS = 512
#: SGLang's ``cuda_graph_max_bs`` by GPU memory, as ``ServerArgs._handle_gpu_memory_settings``
#: (python/sglang/srt/server_args.py) sets it: ``(GiB below which, batch below TP
#: SGLANG_GRAPH_TP, batch from it)``, the first that fits the GPU's memory (H100 80 GB and H200
#: 141 GB: 256 below TP 4, else 512; B200 180 GB and B300 288 GB: 512). SGLang runs every
#: prefill (extend) batch outside CUDA graphs unless ``--enable-piecewise-cuda-graph`` (off by
#: default) and replays decode batches up to that size; every SGLang row's prompt is longer, so
#: each prefill step reads as eager.
SGLANG_GRAPH_MAX_BS = ((20, 8, 8), (35, 24, 80), (60, 32, 160), (90, 256, 512), (160, 256, 512),
                       (float("inf"), 512, 512))
SGLANG_GRAPH_TP = 4


def sglang_graph_max_tokens(gpu: str, tp: int) -> int:
    """SGLang's largest CUDA-graph iteration on ``gpu`` at tensor parallelism ``tp``
    (:data:`SGLANG_GRAPH_MAX_BS`: a decode step of one token a request)."""
    gib = get_gpu(gpu).hbm_bytes / 2**30
    small, large = next(row[1:] for row in SGLANG_GRAPH_MAX_BS if gib < row[0])
    return small if tp < SGLANG_GRAPH_TP else large


#: Another engine's largest CUDA-graph iteration by GPU and TP (``rule(gpu, tp)``), where it is
#: not vLLM's :data:`GRAPH_MAX_TOKENS`; read at TP 1 to :data:`SGLANG_GRAPH_TP` (the sizes it
#: tells apart) into a profile's ``eager_s`` (:func:`engine_graph`).
ENGINE_GRAPH_MAX_TOKENS = {"sglang": sglang_graph_max_tokens}


def engine_graph(engine: str, gpu: str) -> dict:
    """The ``graph_max_tokens`` and ``graph_max_tokens_by_tp`` fields of ``engine``'s eager cost
    on ``gpu``: its :data:`ENGINE_GRAPH_MAX_TOKENS` rule at TP :data:`SGLANG_GRAPH_TP` and the
    smaller sizes where it differs (vLLM's :data:`GRAPH_MAX_TOKENS` for an engine with none)."""
    rule = ENGINE_GRAPH_MAX_TOKENS.get(engine)
    if rule is None:
        return {"graph_max_tokens": GRAPH_MAX_TOKENS, "graph_max_tokens_by_tp": ()}
    top = rule(gpu, SGLANG_GRAPH_TP)
    by_tp = tuple((tp, rule(gpu, tp)) for tp in range(1, SGLANG_GRAPH_TP) if rule(gpu, tp) != top)
    return {"graph_max_tokens": top, "graph_max_tokens_by_tp": by_tp}


#: Engines whose ``--fit`` fits the eager cost alone, on a joint grid (per layer, per MoE layer;
#: seconds), their overhead kept as the profile has it (its grid would cost 117 replays a pass).
FIT_EAGER_ONLY = {"sglang": ((0.0, 0.1e-3, 0.2e-3, 0.3e-3), (0.0, 0.4e-3, 0.8e-3, 1.2e-3))}
#: ``--fit`` grids of the eager host time per layer and per MoE layer (seconds).
FIT_EAGER_PER_LAYER_S = tuple(round(0.05e-3 * i, 6) for i in range(0, 11))
FIT_EAGER_PER_MOE_LAYER_S = tuple(round(0.1e-3 * i, 6) for i in range(0, 13))
#: ``--fit-cpp-moe``: the system whose vLLM rows fit the eager host time of a MoE layer whose
#: experts launch C++ kernels alone (no H200 training row runs such a path: the H200 MoE
#: training rows run Triton kernels, whose rate ``--fit`` fits), and the grid (seconds).
FIT_CPP_MOE_SYSTEM = "b200_sxm"
FIT_CPP_MOE_LAYER_S = tuple(round(0.1e-3 * i, 6) for i in range(0, 9))
#: ``--fit`` grids: per-iteration overhead (seconds: fixed, and per layer) and requests per
#: client.
FIT_OVERHEADS_S = tuple(round(0.1e-3 * i, 6) for i in range(0, 13))
FIT_OVERHEADS_PER_LAYER_S = tuple(round(2.5e-6 * i, 9) for i in range(0, 9))
FIT_PER_CLIENT = (1, 2, 3, 5, 8, 10, 15, 20)
#: ``--fit`` grid: spread of request lengths around isl / osl (the real prompts and outputs
#: vary; identical lengths keep clients in lock-step bursts).
FIT_SPREADS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
#: Coordinate-descent passes of ``--fit`` at most.
FIT_PASSES = 3
#: Default requests per client before any fit has been written.
UNFITTED_PER_CLIENT = 10


@dataclass(frozen=True)
class ModelSpec:
    """How one ``model_path`` of the silicon sample is read.

    name: the label in reports. tiersim: a tiersim catalogue name, or a folder under
    ``benchmarks/data/configs`` holding the model's ``config.json``. aic: the model id
    aiconfigurator-core ships a config for (its estimator runs offline on it).
    """

    name: str
    tiersim: str
    aic: str


MODELS = {
    "meta-llama/Llama-3.1-70B": ModelSpec(
        "Llama-3.1-70B", "llama-3.1-70b", "meta-llama/Meta-Llama-3.1-70B"
    ),
    "nvidia/Llama-3.1-8B-Instruct-FP8": ModelSpec(
        "Llama-3.1-8B", "llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B"
    ),
    "meta-llama/Llama-3.1-8B-Instruct": ModelSpec(
        "Llama-3.1-8B", "llama-3.1-8b", "meta-llama/Meta-Llama-3.1-8B"
    ),
    "MiniMaxAI/MiniMax-M2.5": ModelSpec("MiniMax-M2.5", "MiniMax-M2.5", "MiniMaxAI/MiniMax-M2.5"),
    "moonshotai/Kimi-K2.5": ModelSpec("Kimi-K2.5", "Kimi-K2.5", "moonshotai/Kimi-K2.5"),
    "Qwen/Qwen3-235B-A22B-FP8": ModelSpec(
        "Qwen3-235B-FP8", "Qwen3-235B-A22B-FP8", "Qwen/Qwen3-235B-A22B-FP8"
    ),
    "openai/gpt-oss-120b": ModelSpec("gpt-oss-120b", "gpt-oss-120b", "openai/gpt-oss-120b"),
    "deepseek-ai/DeepSeek-R1": ModelSpec("DeepSeek-R1", "DeepSeek-R1", "deepseek-ai/DeepSeek-R1"),
    "deepseek-ai/DeepSeek-V3": ModelSpec("DeepSeek-V3", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3"),
    "Qwen/Qwen3.5-397B-A17B": ModelSpec(
        "Qwen3.5-397B", "Qwen3.5-397B-A17B", "Qwen/Qwen3.5-397B-A17B"
    ),
    "zhipuai/GLM-5": ModelSpec("GLM-5", "GLM-5-FP8", "zai-org/GLM-5-FP8"),
}


def spec_for(model_path: str) -> ModelSpec | None:
    """How ``model_path`` is read: its :data:`MODELS` entry, else one derived from its config,
    so that a row of a model nobody listed still replays: a folder named as the model under
    ``benchmarks/data/configs``, else the config aiconfigurator-core ships for it
    (``org--name_config.json``, read in place); ``None`` where there is neither."""
    if not isinstance(model_path, str) or not model_path:
        return None
    spec = MODELS.get(model_path)
    if spec is not None:
        return spec
    name = model_path.rsplit("/", 1)[-1]
    if (CONFIGS / name / "config.json").is_file():
        return ModelSpec(name, name, model_path)
    from tiersim.errors import TiersimError
    from tiersim.perf.aiconfigurator import aic_model_path

    try:  # aiconfigurator-core's own config of the model, where it is installed and ships one
        return ModelSpec(name, aic_model_path("aic:" + model_path.replace("/", "--")), model_path)
    except TiersimError:
        return None


def row_spec(row: dict) -> ModelSpec | None:
    """The checkpoint a row ran: its model's (:func:`spec_for`), except that an ``fp4`` row of
    a model whose checkpoint declares other formats ran NVIDIA's NVFP4 checkpoint of it
    (``nvidia/<name>-NVFP4``, read from the config aiconfigurator-core ships), where one
    exists; else the model's own (and :func:`tier_precision` says why it cannot serve it).
    A quantized row of a checkpoint that declares no formats ran NVIDIA's export of it
    (:func:`nvidia_export`), where aiconfigurator-core ships its config."""
    spec = spec_for(row["model_path"])
    if spec is None:
        return spec
    if not declares_formats(spec):
        return nvidia_export(row, spec)
    if row.get("precision") != "fp4":
        return spec
    name = str(row["model_path"]).rsplit("/", 1)[-1]
    nvfp4 = spec_for(f"nvidia/{name}-NVFP4")
    return spec if nvfp4 is None else nvfp4


#: NVIDIA's names for its quantized exports of a model ``{name}`` (ModelOpt checkpoints on
#: Hugging Face), by the row's ``precision``, in the order they are looked for.
NVIDIA_EXPORTS = {
    "fp8": ("nvidia/{name}-Instruct-FP8", "nvidia/{name}-FP8"),
    "fp4": ("nvidia/{name}-Instruct-FP4", "nvidia/{name}-Instruct-NVFP4", "nvidia/{name}-NVFP4",
            "nvidia/{name}-FP4"),
}


def nvidia_export(row: dict, spec: ModelSpec) -> ModelSpec:
    """The checkpoint an ``fp8`` or ``fp4`` row of ``spec``, a checkpoint that declares no
    formats (a BF16 release such as meta-llama's), ran: NVIDIA's ModelOpt export of the model
    (:data:`NVIDIA_EXPORTS`) where aiconfigurator-core ships its config, else ``spec`` (served
    in the row's precision, :data:`ROW_PRECISION`). The export declares what the row cannot
    say: its formats and its KV cache (``kv_cache_quant_algo`` ``FP8`` in NVIDIA's
    ``nvidia/Llama-3.1-70B-Instruct-FP8``, which vLLM's ``--kv-cache-dtype auto`` reads as an
    FP8 cache: twice the tokens of a BF16 one). It keeps the model's label and the
    aiconfigurator estimate's model, so the rows stay the same model's.

    NOTE: before, such a row was served from the BF16 config with BF16 KV: the H200
    Llama-3.1-70B rows that fill the KV cache (TP 1, 32-64 clients, 9,216 tokens a request)
    replayed 10 to 25 times slower to first token than measured (4,776 ms against 474; 128,640
    against 5,323), with FP8 KV within -20% to +25% of it."""
    name = str(row["model_path"]).rsplit("/", 1)[-1]
    for pattern in NVIDIA_EXPORTS.get(row.get("precision"), ()):
        if pattern.format(name=name) in MODELS:  # a model of its own in the sample
            continue
        export = spec_for(pattern.format(name=name))
        if export is not None and declares_formats(export):
            return ModelSpec(spec.name, export.tiersim, spec.aic)
    return spec


def row_label(row: dict) -> str:
    """The report label of a row: its checkpoint's (:func:`row_spec`), else the path."""
    spec = row_spec(row)
    return (_text(row["model_path"]) or "(no model_path)") if spec is None else spec.name


def model_label(model_path: str) -> str:
    """The report label of ``model_path`` (the path itself where no spec exists)."""
    spec = spec_for(model_path)
    return model_path if spec is None else spec.name


#: The order models are reported in (the issue's four first; others after, by name).
MODEL_ORDER = [
    "Llama-3.1-8B", "Llama-3.1-70B", "MiniMax-M2.5", "Kimi-K2.5", "Qwen3-235B-FP8",
    "gpt-oss-120b", "DeepSeek-R1", "DeepSeek-V3", "Qwen3.5-397B", "GLM-5",
]
#: tiersim precision for a row's ``precision`` where the checkpoint declares no format.
ROW_PRECISION = {"fp8": "fp8", "int4": "w4a16", "fp4": "nvfp4", "bf16": "bf16"}

KEEP_COLUMNS = [
    "id", "backend", "backend_version", "model_path", "system", "precision", "mode",
    "gemm_quant_mode", "moe_quant_mode", "isl", "osl", "batch_size", "tp_size", "pp_size",
    "attention_dp_size", "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms",
    "silicon_data_source",
]


# ---------------------------------------------------------------- data copied from aiconfigurator


def _aic_root() -> Path:
    import aiconfigurator_core

    return Path(aiconfigurator_core.__file__).parent


#: Files given on the command line in place of the copied ones (``--rows-file``,
#: ``--aic-file``); ``None``: ``benchmarks/data``'s.
DATA_FILES: dict[str, Path | None] = {"rows": None, "aic": None}


def rows_csv(system: str = FIT_SYSTEM) -> Path:
    """The measured rows read: ``--rows-file``, else the copied rows of one system
    (``benchmarks/data/silicon_<gpu>.csv``)."""
    return DATA_FILES["rows"] or DATA / f"silicon_{SYSTEM_GPU[system]}.csv"


def aic_csv(system: str = FIT_SYSTEM) -> Path:
    """aiconfigurator's cached estimates of one system's rows: ``--aic-file``, else
    ``benchmarks/data/aic_estimates_<gpu>.csv`` (joined to the rows by ``id``)."""
    return DATA_FILES["aic"] or DATA / f"aic_estimates_{SYSTEM_GPU[system]}.csv"


def profile_file(engine: str, system: str = FIT_SYSTEM) -> str:
    """The profile an engine's rows of ``system`` replay on (H200: :data:`ENGINE_PROFILES`;
    another GPU: the vLLM profile tiersim ships for it, else
    ``benchmarks/data/<gpu>_aiconfigurator_<engine>.json``)."""
    if system == FIT_SYSTEM:
        return ENGINE_PROFILES[engine]
    shipped = bundled_profile(SYSTEM_GPU[system]) if engine == "vllm" else None
    return str(shipped or DATA / f"{SYSTEM_GPU[system]}_aiconfigurator_{engine}.json")


def bundled_profile(gpu: str) -> Path | None:
    """Where tiersim ships ``gpu``'s default (vLLM) profile, or ``None`` if it ships none."""
    from tiersim.paths import bundled_dirs

    name = default_profile_name(gpu)
    return None if name is None else bundled_dirs("profiles")[0] / f"{name}.json"


def profile_models(engine: str, system: str = FIT_SYSTEM) -> set[str]:
    """The report labels of the models a non-vLLM engine's profile of ``system`` covers."""
    if system == FIT_SYSTEM:
        return ENGINE_PROFILE_MODELS[engine]
    return SYSTEM_PROFILE_MODELS.get(system, {}).get(engine, set())


def refresh_data(system: str = FIT_SYSTEM) -> None:
    """Copy every row of ``system`` in the silicon sample (and, for H200, the model configs
    tiersim reads), then import that system's engine profiles."""
    df = pd.read_csv(_aic_root() / "systems" / "silicon_sample.csv")
    rows = df[df["system"] == system].reindex(columns=KEEP_COLUMNS)  # a column a sample lacks: NaN
    DATA.mkdir(exist_ok=True)
    rows.to_csv(rows_csv(system), index=False)
    print(f"{len(rows)} rows -> {rows_csv(system)}")
    if system != FIT_SYSTEM:
        refresh_system_profiles(system)
        return
    for spec in {s.tiersim: s for s in MODELS.values()}.values():
        if "/" in spec.aic and not spec.tiersim.startswith("llama"):
            copy_config(spec.aic, CONFIGS / spec.tiersim)
    refresh_profiles()


def refresh_profiles() -> None:
    """Import the TensorRT-LLM and SGLang profiles of :data:`ENGINE_IMPORTS` (with the
    measured sets for :data:`MEASURED_SET_ENGINES`)."""
    from tiersim.perf.aiconfigurator import import_aiconfigurator

    for engine, models in ENGINE_IMPORTS.items():
        name = Path(ENGINE_PROFILES[engine]).stem
        profile, missing = import_aiconfigurator("h200", engine, out=ENGINE_PROFILES[engine],
                                                 models=models, name=name,
                                                 measured=engine in MEASURED_SET_ENGINES)
        print(f"{engine}: {len(profile.tables)} tables; on the roofline: {missing or 'none'}")


def refresh_system_profiles(system: str) -> None:
    """Import ``system``'s engine profiles (:data:`SYSTEM_IMPORTS`) from aiconfigurator's
    tables of its GPU, with the overhead and eager cost of the same engine's H200 profile
    (fitted there; another GPU's rows are held out, so nothing is refitted on them). The
    default profile of that GPU is built as the H200 one is: every shipped model, and the
    measured sets (``import_aiconfigurator``'s ``measured``); every other profile carries the
    measured sets too (:data:`MEASURED_SET_ENGINES`, and the vLLM profile of a GPU tiersim ships
    none for, B300's, kept in ``benchmarks/data``), so a row reads NVIDIA's rows at its shapes."""
    from tiersim.perf.aiconfigurator import import_aiconfigurator
    from tiersim.perf.profile import save_profile

    for engine, models in SYSTEM_IMPORTS[system].items():
        out = profile_file(engine, system)
        default = engine == "vllm" and bundled_profile(SYSTEM_GPU[system]) is not None
        if default:
            models = shipped_with(models)  # the default profile of that GPU: every shipped model
        profile, missing = import_aiconfigurator(SYSTEM_GPU[system], engine, models=models,
                                                 name=Path(out).stem,
                                                 measured=engine == "vllm"
                                                 or engine in MEASURED_SET_ENGINES)
        save_profile(with_h200_fit(profile, engine, system), out)
        print(f"{system} {engine}: {len(profile.tables)} tables; on the roofline: "
              f"{missing or 'none'} -> {out}")


def shipped_with(models: dict) -> dict:
    """:data:`~tiersim.perf.aiconfigurator.SHIPPED_MODELS` (what the H200 profile covers) with
    ``models`` added: their precisions and layouts merged where both name a model."""
    from tiersim.perf.aiconfigurator import SHIPPED_MODELS

    out = dict(SHIPPED_MODELS)
    for name, (precisions, layouts) in models.items():
        have_p, have_l = out.get(name, ((), ()))
        out[name] = (tuple(dict.fromkeys(have_p + precisions)),
                     tuple(dict.fromkeys(have_l + layouts)))
    return out


def with_h200_fit(profile, engine: str, system: str):
    """``profile`` with the overhead and eager cost of ``engine``'s H200 profile (fitted there;
    labelled as applied unchanged to ``system``), its CUDA-graph sizes those of ``system``'s GPU
    where the engine's depend on it (:data:`ENGINE_GRAPH_MAX_TOKENS`)."""
    h200 = resolve_profile(ENGINE_PROFILES[engine])
    eager = dataclasses.replace(h200.eager, source=moved_source(h200.eager.source, system))
    if profile.eager.per_cpp_moe_layer_s is not None:  # --fit-cpp-moe's, labelled per system
        eager = dataclasses.replace(eager, per_cpp_moe_layer_s=profile.eager.per_cpp_moe_layer_s,
                                    cpp_moe_source=profile.eager.cpp_moe_source)
    elif h200.eager.per_cpp_moe_layer_s is not None:
        eager = dataclasses.replace(eager, cpp_moe_source=cpp_moe_moved(h200.eager, system))
    if h200.eager.graph_max_tokens and engine in ENGINE_GRAPH_MAX_TOKENS:
        eager = dataclasses.replace(eager, **engine_graph(engine, SYSTEM_GPU[system]))
    return dataclasses.replace(
        profile, overhead_s=h200.overhead_s, overhead_per_layer_s=h200.overhead_per_layer_s,
        overhead_source=moved_source(h200.overhead_source, system), eager=eager)


def cpp_moe_moved(eager: EagerCost, system: str) -> str:
    """The ``cpp_moe_source`` of ``eager`` as applied to ``system``'s rows: fitted on
    :data:`FIT_CPP_MOE_SYSTEM`'s, applied unchanged to any other's."""
    return cpp_moe_label(eager.cpp_moe_source.split("; applied unchanged to ")[0], system)


def cpp_moe_label(label: str, system: str) -> str:
    """``--fit-cpp-moe``'s ``label`` as a ``system`` profile carries it (applied unchanged
    beyond :data:`FIT_CPP_MOE_SYSTEM`)."""
    return label if system == FIT_CPP_MOE_SYSTEM else f"{label}; applied unchanged to {system} rows"


def moved_source(source: str, system: str) -> str:
    """A fitted value's ``source`` labelled as applied unchanged to ``system``'s rows; an
    unfitted one (``roofline``: SGLang's overhead) as it is, the only way a profile may say it."""
    if not source.startswith("fitted"):
        return source
    return f"{source}; applied unchanged to {system} rows"


def propagate_fit(engine: str) -> None:
    """Copy ``engine``'s H200 fit into the profiles of the other systems (those that exist)."""
    from tiersim.perf.profile import save_profile

    for system in SYSTEM_IMPORTS:
        path = Path(profile_file(engine, system))
        if path.exists():
            save_profile(with_h200_fit(resolve_profile(path), engine, system), path)
            print(f"{engine}: the fit also -> {path} (applied unchanged to {system} rows)")


def copy_config(aic_id: str, folder: Path) -> None:
    """Copy aiconfigurator's ``config.json`` (and ``hf_quant_config.json``) of ``aic_id``."""
    src = _aic_root() / "model_configs"
    stem = aic_id.replace("/", "--")
    folder.mkdir(parents=True, exist_ok=True)
    for kind in ("config", "hf_quant_config"):
        path = src / f"{stem}_{kind}.json"
        if path.exists():
            (folder / f"{kind}.json").write_text(path.read_text())
    print(f"{aic_id} -> {folder}")


def load_rows(system: str = FIT_SYSTEM) -> pd.DataFrame:
    """The measured rows of ``system``, with the model label each maps to (``model``)."""
    path = rows_csv(system)
    if DATA_FILES["rows"] and not path.is_file():
        raise SystemExit(f"{path}: no such file (--rows-file)")
    if not path.exists():
        raise SystemExit(f"{path}: no {system} rows copied yet; run with --refresh-data "
                         f"--system {system} (needs aiconfigurator-core)")
    df = of_system(read_rows_file(path).reindex(columns=KEEP_COLUMNS), system, path)
    problems = value_problems(df)
    df[NUMBER_COLUMNS] = df[NUMBER_COLUMNS].apply(pd.to_numeric, errors="coerce")
    df = readable_counts(df)
    df = unique_ids(drop_repeats(df.assign(_problem=problems)), path)
    problems = df.pop("_problem")
    df["model"] = [row_label(r) for r in df.to_dict("records")]
    misfiled = pd.Series([id_conflict(r) for r in df.to_dict("records")], index=df.index,
                         dtype=object)
    problems = problems.fillna(misfiled)
    df["conflict"] = problems.fillna(layout_conflicts(df, among=problems.isna()))
    for col in ("tp_size", "batch_size", "isl", "osl"):  # 0 on disaggregated rows
        df[col] = df[col].fillna(0).astype(int)
    order = {m: i for i, m in enumerate(MODEL_ORDER)}
    df["_order"] = df["model"].map(order).fillna(len(order))
    df = df.sort_values(["backend", "_order", "tp_size", "isl", "osl", "batch_size", "id"])
    return df.drop(columns="_order").reset_index(drop=True)


#: The columns a file of measured rows must have (the others may be missing: empty).
REQUIRED_COLUMNS = ["id", "backend", "model_path", "mode", "isl", "osl", "batch_size", "tp_size",
                    "silicon_ttft_ms", "silicon_tpot_ms"]
#: The columns that hold numbers (an empty cell is allowed: not given).
NUMBER_COLUMNS = ["isl", "osl", "batch_size", "tp_size", "pp_size", "attention_dp_size",
                  "moe_tp_size", "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms"]
#: The measured times a row is scored on.
TIME_COLUMNS = ["silicon_ttft_ms", "silicon_tpot_ms"]
#: The largest count (tokens, clients, GPUs) a row may give: one beyond it is no run's.
COUNT_MOST = 2**31 - 1


def read_rows_file(path: Path) -> pd.DataFrame:
    """The CSV at ``path``, every cell as written (one error line if it is no CSV of measured
    rows: unreadable, empty, or without a column :data:`REQUIRED_COLUMNS` names)."""
    try:
        df = pd.read_csv(path, dtype=str)  # pandas' missing-value spellings ("nan"...) empty
    except (ValueError, UnicodeDecodeError, OSError) as exc:  # pandas' parser errors included
        if "EOF inside string" in str(exc):
            raise SystemExit(unclosed_quote(path)) from None
        raise SystemExit(f"{path}: not a CSV of measured rows ({_one_line(exc)})") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise SystemExit(f"{path}: no column {', '.join(missing)} (a file of measured rows "
                         f"needs {', '.join(REQUIRED_COLUMNS)}; the silicon sample's others may "
                         "be left out)")
    return df


def unclosed_quote(path: Path) -> str:
    """The error line of a CSV whose last record opens a quote it never closes (pandas' "EOF
    inside string starting at row N"; the rest of the file is one cell): the file line that
    record starts on, read with Python's CSV reader (pandas' N counts records, not lines), and
    the fix."""
    start = line = 0
    limit = csv.field_size_limit(sys.maxsize)  # the open cell runs to the file's end
    try:
        with open(path, newline="", encoding="utf-8-sig", errors="replace") as handle:
            reader = csv.reader(handle)
            for _ in reader:
                start, line = line + 1, reader.line_num
    finally:
        csv.field_size_limit(limit)
    where = "the header" if start == 1 else "the row"
    return (f"{path}: a quote in {where} on file line {start} is never closed (the file ends "
            'inside it); close the quote, or write a quote inside a quoted cell as two ("")')


def value_problems(df: pd.DataFrame) -> pd.Series:
    """Per row, why one of its numbers cannot be read as given (else NaN): the first of
    :func:`column_problems` over :data:`NUMBER_COLUMNS`."""
    out = pd.Series(np.nan, index=df.index, dtype=object)
    for col in NUMBER_COLUMNS:
        out = out.fillna(column_problems(col, df[col]))
    return out


def column_problems(col: str, text: pd.Series) -> pd.Series:
    """Per cell of ``col`` (as written), why it cannot be read (else NaN): no number, a count
    that is no whole number, or a measured time (:data:`TIME_COLUMNS`) that is missing, not
    positive or not finite."""
    value = pd.to_numeric(text, errors="coerce")
    bad = pd.Series(np.nan, index=text.index, dtype=object)
    bad[text.notna() & value.isna()] = [f"{col} {t!r} is not a number" for t in text]
    if col in TIME_COLUMNS:
        bad[text.isna()] = f"no measured {col} (empty)"
        wrong = value.notna() & ~(np.isfinite(value) & (value > 0))
        bad[wrong] = [f"{col} {v} (a positive measured time needed)" for v in value]
    else:
        fraction = value.notna() & (~np.isfinite(value) | (value != value.round()))
        bad[fraction] = [f"{col} {v} is not a whole number" for v in value]
        large = value.notna() & np.isfinite(value) & (value.abs() > COUNT_MOST)
        bad[large] = [f"{col} {v} is out of range (a count of at most {COUNT_MOST})"
                      for v in value]
    return bad


def readable_counts(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (numbers read) with each count :func:`column_problems` refuses (not finite, not
    whole, out of range) emptied: its row is listed with that reason, and no later step reads
    the value (an infinite count has no integer)."""
    counts = [c for c in NUMBER_COLUMNS if c not in TIME_COLUMNS]
    values = df[counts].astype(float)
    return df.assign(**values.where(np.isfinite(values) & (values.abs() <= COUNT_MOST)
                                    & (values == values.round())))


def unique_ids(df: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``df`` with a row whose ``id`` an earlier row (another run) already has renamed
    ``<id>#2``, ``#3``..., in file order, said in one line on stderr: an id names one row's
    aiconfigurator estimate (:func:`with_aic`)."""
    ids = df["id"].astype(str)
    nth = ids.groupby(ids).cumcount()
    if not (nth > 0).any():
        return df
    print(f"{path}: {int((nth > 0).sum())} rows repeat an earlier row's id with another "
          f"measurement or layout; renamed <id>#2, #3... (e.g. {ids[nth > 0].iloc[0]}#2)",
          file=sys.stderr)
    return df.assign(id=ids.where(nth == 0, ids + "#" + (nth + 1).astype(str)))


def of_system(df: pd.DataFrame, system: str, path: Path) -> pd.DataFrame:
    """The rows of ``system`` (a row with no ``system`` is taken as one of it); the others,
    which a file holding several systems' rows has (the whole silicon sample), are counted in
    one line on stderr."""
    df = df.assign(system=df["system"].fillna(system))
    other = df.loc[df["system"] != system, "system"].astype(str).value_counts()
    if len(other):
        counts = ", ".join(f"{name} {n}" for name, n in other.items())
        print(f"{path}: {other.sum()} rows of other systems left out ({counts}); --system picks "
              f"one of {', '.join(sorted(SYSTEM_GPU))}", file=sys.stderr)
    return df[df["system"] == system].reset_index(drop=True)


#: The columns that say how a row was served, and what it measured.
LAYOUT_COLUMNS = ["tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size",
                  "batch_size"]
MEASURED_COLUMNS = ["backend", "model_path", "mode", "isl", "osl", "silicon_ttft_ms",
                    "silicon_tpot_ms"]
#: The measured times, compared within :data:`SAME_RUN_MS`, not digit for digit.
TIMES = ["silicon_ttft_ms", "silicon_tpot_ms"]
#: Two rows whose TTFT and TPOT both agree within this (ms) report one run. The sample's
#: coarsest files round a time to 0.01 ms (a 2026-04-06 run of Kimi-K2.5, 148.606387 ms TTFT,
#: is 148.61 in its gap-analysis copy); two runs do not agree to 10 us on both means.
SAME_RUN_MS = 0.01


def run_numbers(df: pd.DataFrame, by: list[str]) -> pd.Series:
    """Per row, a number shared by the rows that report one run: rows equal in ``by`` whose
    :data:`TIMES` agree within :data:`SAME_RUN_MS` (a row missing a time is a run of its own)."""
    number = pd.Series(np.arange(len(df)), index=df.index)
    for _, group in df.groupby(by, dropna=False, sort=False):
        seen: list[tuple[int, np.ndarray]] = []
        for index, times in zip(group.index, group[TIMES].to_numpy(float)):
            same = [n for n, t in seen if not np.isnan(times).any()
                    and np.all(np.abs(t - times) <= SAME_RUN_MS + 1e-9)]
            if same:
                number[index] = same[0]
            else:
                seen.append((number[index], times))
    return number


def drop_repeats(df: pd.DataFrame) -> pd.DataFrame:
    """The rows without repeats: a row equal to an earlier one in layout and measurement (its
    times within :data:`SAME_RUN_MS`) is the same run listed twice (counted once)."""
    by = [c for c in MEASURED_COLUMNS if c not in TIMES] + LAYOUT_COLUMNS
    repeat = df.assign(_run=run_numbers(df, by)).duplicated(by + ["_run"])
    return df[~repeat].reset_index(drop=True)


def layout_conflicts(df: pd.DataFrame, among: pd.Series | None = None) -> pd.Series:
    """Per row, why its layout is in doubt (else NaN): the same TTFT and TPOT (within
    :data:`SAME_RUN_MS`) recorded under more than one layout (in the silicon sample, TP 8 runs
    repeated as TP 64 or as 64 DP ranks). Two runs do not agree that closely, so one
    measurement was filed under several layouts and which one ran is unknown: none of them is
    scored. Only the rows ``among`` marks (default all) are compared: a row already known to be
    misfiled (:func:`id_conflict`) leaves its twin's layout in no doubt."""
    if among is not None:
        return layout_conflicts(df[among]).reindex(df.index)
    layouts = pd.Series([str(t) for t in df[LAYOUT_COLUMNS].fillna(-1).itertuples(index=False)],
                        index=df.index)
    by = [c for c in MEASURED_COLUMNS if c not in TIMES]
    run = run_numbers(df, by)
    counts = layouts.groupby([df[c] for c in by] + [run], dropna=False).transform("nunique")
    reason = counts.map(lambda n: f"the same measurement is filed under {n} layouts (which "
                        "one ran is unknown)")
    measured = df[TIMES].notna().all(axis=1)
    return reason.where((counts > 1) & measured)  # rows measuring nothing agree on nothing


#: A run's layout as its id names it (``..._tp4_ep4_...``, ``..._tp1_epnone_...``).
ID_LAYOUT = re.compile(r"_tp(\d+)_ep(\d+|none)_")
#: The client count as the campaign recorded it (``silicon_data_source``).
CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


def id_conflict(row: dict) -> str | None:
    """Why a row's layout columns are in doubt, where its id names another tensor- or
    expert-parallel size (the sample's 2026-04-06 file writes ``tp_size`` as the id's tp x ep:
    a ``tp4_ep4`` run on 4 GPUs filed as TP 16, whose TPOT equals the 4-GPU rows'); ``None``
    where they agree, the id names no layout or the row gives no tp_size (ids do not name data
    parallelism, and ``epnone`` leaves the expert split to the engine)."""
    m = ID_LAYOUT.search(str(row.get("id", "")))
    tp = _int_or_none(row.get("tp_size"))
    if m is None or row.get("mode") != "agg" or tp is None:  # no tp_size: its own reason
        return None
    ep = _int_or_none(row.get("moe_ep_size")) or 1
    if tp == int(m[1]) and (m[2] == "none" or ep == int(m[2])):
        return None
    return (f"its id says tp{m[1]} ep{m[2]}, its columns TP {tp} EP {ep} (which ran is "
            "unknown)")


def clients(row: dict) -> int:
    """A row's client count: ``silicon_concurrency`` as the campaign recorded it, else
    ``batch_size`` (which some source files give per attention-DP rank; 0 where neither)."""
    m = CONCURRENCY.search(str(row.get("silicon_data_source", "")))
    return int(m[1]) if m else (_int_or_none(row.get("batch_size")) or 0)


#: aiperf's synthetic text dataset: this many distinct prompts (``--num-dataset-entries``,
#: default 100 in aiperf 0.x), drawn at random until the run ends; aiconfigurator's generated
#: benchmark (``bench_run.sh.j2``) leaves it at that default and vLLM caches prefixes by default.
AIPERF_PROMPT_POOL = 100
#: NVIDIA's published benchmark client of 2025-26, as ``--aiperf-client`` replays it (Protocol
#: fields): ``aiperf profile --concurrency C --request-count 10C --warmup-request-count 2C
#: --num-dataset-entries 12C --synthetic-input-tokens-stddev 0 --output-tokens-stddev 0
#: --random-seed 100`` in ai-dynamo/dynamo's ``benchmarks/llm/perf.sh`` and aiconfigurator's
#: ``eval`` runner (``src/aiconfigurator/eval/benchmarks/genai_perf_runner.py``, 2025-08 to
#: 2026-03), run by aiperf 0.1 (v0.1.1, c2776b11): prompts drawn at random with replacement
#: from the 12C entries (``DatasetManager``), the warm-up phase's requests all returned before
#: the profiling phase starts its C concurrent requests (``_execute_phases``), and the means
#: over the profiling phase alone. docs/fidelity.md, section 2, "The campaign's client".
AIPERF_CLIENT = {"per_client": 12, "warmup": 2, "spread": 0.0, "pool_per_client": 12,
                 "drained_warmup": True}
#: A campaign whose typical row (the median) needs more than this share of a replica's time to
#: prefill fresh prompts (:func:`prefill_load`) cannot have sent fresh prompts.
REUSE_LOAD = 1.0
#: The fewest rows whose median says what a campaign's typical row is (below it, the median is
#: one or two rows' estimate, which :func:`reused_prompt_campaigns` does not act on).
REUSE_MIN_ROWS = 3
#: When a row was measured (``measured=...`` in ``silicon_data_source``).
MEASURED_ON = re.compile(r"measured=(\d{4}-\d{2}-\d{2})")


def campaign(row: dict) -> str:
    """The campaign of a row: one model's runs from one source (the folder of its
    ``source_file``, one harness whatever the model, else the first field of
    ``silicon_data_source``) on one date and engine version, driven by one client."""
    text = _text(row.get("silicon_data_source"))
    first = text.split(";")[0].strip()
    name = first.removeprefix("source_file=")
    source = name.rsplit("/", 1)[0] if name != first and "/" in name else first
    date = MEASURED_ON.search(text)
    engine = " ".join(_text(row.get(k)) for k in ("backend", "backend_version")).strip()
    parts = [source, _text(row.get("model_path")), date[1] if date else "", engine]
    return ", ".join(p for p in parts if p)


def _text(value) -> str:
    """``value`` as text, ``""`` where it is missing (None or NaN)."""
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


# ---------------------------------------------------------------- aiconfigurator's estimate


def _int_or_none(value) -> int | None:
    return None if pd.isna(value) else int(value)


def aic_layout(row: dict) -> tuple[int, int, int | None, int | None]:
    """``(tp, attention_dp, moe_tp, moe_ep)`` for aiconfigurator, from a row's columns.

    An empty ``attention_dp_size`` means the row's GPUs beyond ``tp`` (``moe_tp x moe_ep``)
    serve attention data-parallel, as vLLM's ``--data-parallel-size`` does.
    """
    tp = int(row["tp_size"])
    moe_tp, moe_ep = _int_or_none(row["moe_tp_size"]), _int_or_none(row["moe_ep_size"])
    dp = _int_or_none(row["attention_dp_size"])
    if dp is None:
        moe_gpus = (moe_tp or 1) * (moe_ep or 1)
        dp = max(1, moe_gpus // tp)
    return tp, dp, moe_tp, moe_ep


def aic_estimate(row: dict) -> dict:
    """aiconfigurator-core's agg estimate of one row (its own ``cli estimate`` path, offline).

    As NVIDIA's ``tools/accuracy_regression_testing/predict_silicon_sample.py`` runs it: the
    row's parallelism, batch (= concurrency), isl/osl, ``ctx_tokens = isl``; a database version
    the package lacks falls back to its latest. Quant modes: where the checkpoint's config
    declares its formats (block FP8, MXFP4, int4), aiconfigurator infers them from it, as tiersim
    serves them (the rows' ``fp8`` would select per-tensor FP8 tables for a block-FP8
    checkpoint); otherwise the row's modes. Where the first choice fails (no table for the
    modes; a block size the layout does not divide), the other is tried. ``aic_quant`` records
    which was used (``row`` / ``checkpoint``), ``aic_error`` why both failed.
    """
    spec = row_spec(row)
    out = {"id": row["id"], "aic_model_path": spec.aic}
    errors = []
    for row_quant in aic_quant_order(spec):
        try:
            out.update(_aic_run(row, row_quant), aic_quant="row" if row_quant else "checkpoint")
            return out
        except Exception as exc:  # noqa: BLE001 -- recorded in the CSV, one line
            errors.append(_one_line(exc))
    out["aic_error"] = " / ".join(errors)
    return out


def aic_quant_order(spec: ModelSpec) -> tuple[bool, bool]:
    """Which quant modes aiconfigurator tries first (``True``: the row's; ``False``: the
    checkpoint's): the checkpoint's where its config declares formats (see
    :func:`aic_estimate`)."""
    return (False, True) if declares_formats(spec) else (True, False)


def _one_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def aic_setup(row: dict, row_quant: bool, kv_quant: str | None = None):
    """``(backend, model, database, version)`` of aiconfigurator-core for a row (offline);
    ``kv_quant`` sets its KV-cache mode (``None``: inferred, as its CLI does)."""
    from aiconfigurator_core.sdk.backends.factory import get_backend
    from aiconfigurator_core.sdk.config import ModelConfig
    from aiconfigurator_core.sdk.config_builders import build_model_config
    from aiconfigurator_core.sdk.models import (
        check_is_moe,
        resolve_context_fmha_by_data,
        resolve_dsv4_moe_arch,
        resolve_nvfp4_for_system,
    )
    from aiconfigurator_core.sdk.models import (
        get_model as aic_model,
    )
    from aiconfigurator_core.sdk.perf_database import (
        get_database_view,
        get_latest_database_version,
        get_supported_databases,
    )

    path, backend, system = row_spec(row).aic, row["backend"], row["system"]
    tp, dp, moe_tp, moe_ep = aic_layout(row)
    if check_is_moe(path):
        cfg = ModelConfig(tp_size=tp, attention_dp_size=dp, moe_tp_size=moe_tp, moe_ep_size=moe_ep)
        moe_tp, moe_ep = cfg.resolve_moe_parallelism()
    else:
        moe_tp, moe_ep = 1, 1
    gemm = row["gemm_quant_mode"] if row_quant and isinstance(row["gemm_quant_mode"], str) else None
    moe = row["moe_quant_mode"] if row_quant and isinstance(row["moe_quant_mode"], str) else None
    mc = build_model_config(tp, int(row.get("pp_size") or 1), dp, moe_tp, moe_ep, gemm, kv_quant,
                            None, moe, None)
    version = str(row["backend_version"]) if isinstance(row["backend_version"], str) else None
    if version not in get_supported_databases().get(system, {}).get(backend, []):
        version = get_latest_database_version(system=system, backend=backend)
    db = get_database_view(system, backend, version, allow_missing_data=False,
                           database_mode="SILICON", transfer_policy=None)
    resolve_context_fmha_by_data(mc, path, db, backend, is_context_role=True)
    resolve_dsv4_moe_arch(mc, path, system_name=system, backend_name=backend)
    resolve_nvfp4_for_system(mc, system, path)
    return get_backend(backend), aic_model(path, mc, backend), db, version


def _aic_run(row: dict, row_quant: bool) -> dict:
    from aiconfigurator_core.sdk.config import RuntimeConfig

    backend, model, db, version = aic_setup(row, row_quant)
    rc = RuntimeConfig(isl=int(row["isl"]), osl=int(row["osl"]), batch_size=int(row["batch_size"]),
                       prefix=0)
    summary = backend.run_agg(model, db, rc, ctx_tokens=int(row["isl"]))
    result = summary.get_result_dict()
    return {"aic_ttft_ms": float(result["ttft"]), "aic_tpot_ms": float(result["tpot"]),
            "aic_backend_version": version, "aic_oom": bool(summary.check_oom())}


def aic_todo(rows: pd.DataFrame, system: str = FIT_SYSTEM) -> pd.DataFrame:
    """The rows aiconfigurator estimates: aggregated, of a model tiersim can read
    (:func:`spec_for`, listed or not); vLLM's first, then the other engines' rows tiersim
    replays, then the rest."""
    readable = rows["model_path"].map(lambda p: spec_for(p) is not None).astype(bool)
    todo = rows[(rows["mode"] == "agg") & readable].copy()
    replayed = todo["model"].isin(profile_models("trtllm", system)
                                  | profile_models("sglang", system))
    todo["_rank"] = np.where(todo["backend"] == "vllm", 0, np.where(replayed, 1, 2))
    return todo.sort_values("_rank", kind="stable").drop(columns="_rank")


def refresh_aic(rows: pd.DataFrame, jobs: int, resume: bool = False, every: int = 24,
                system: str = FIT_SYSTEM):
    """Recompute aiconfigurator's estimate of every row of :func:`aic_todo`; write
    :func:`aic_csv` of ``system``, rewritten every ``every`` rows, so an interrupted refresh
    keeps what it computed, and ``resume`` skips the rows the CSV already holds.
    """
    import importlib.metadata
    import logging

    logging.disable(logging.WARNING)
    todo = aic_todo(rows, system)
    done = load_aic(system) if resume else pd.DataFrame()
    out = done.to_dict("records")
    if len(done):
        todo = todo[~todo["id"].isin(set(done["id"]))]
    version = "aiconfigurator-core " + importlib.metadata.version("aiconfigurator-core")
    with ProcessPoolExecutor(max(jobs, 1)) as pool:
        for i, est in enumerate(pool.map(aic_estimate, todo.to_dict("records"), chunksize=2)):
            out.append({**est, "aic_version": version,
                        "computed_on": datetime.date.today().isoformat()})
            if (i + 1) % every == 0 or i + 1 == len(todo):
                pd.DataFrame(out).to_csv(aic_csv(system), index=False)
                print(f"{len(out)} estimates -> {aic_csv(system)}", flush=True)
    return pd.DataFrame(out)


def load_aic(system: str = FIT_SYSTEM) -> pd.DataFrame:
    """The cached estimates of ``system``'s rows (empty when none were computed)."""
    path = aic_csv(system)
    if DATA_FILES["aic"] and not path.is_file():
        raise SystemExit(f"{path}: no such file (--aic-file)")
    if not path.exists():
        return pd.DataFrame({"id": [], "aic_ttft_ms": [], "aic_tpot_ms": []}, dtype=float)
    df = pd.read_csv(path, dtype={"id": str})  # as the rows' ids are read
    for col in ("aic_ttft_ms", "aic_tpot_ms"):  # an estimate that is no number: none
        df[col] = pd.to_numeric(df[col], errors="coerce") if col in df else np.nan
    return df


# ---------------------------------------------------------------- what tiersim serves a row as


@dataclass(frozen=True)
class Case:
    """A row as tiersim serves it: model, precision and the parallel layout of one server."""

    model: str
    precision: str
    tp: int
    dp: int
    ep: int
    engine: str
    gpu: str = "h200"
    moe_backend: str = "auto"


class Unrepresentable(Exception):
    """A row tiersim cannot serve yet; ``str()`` is the one-line reason."""


#: The most GPUs (TP x attention-DP ranks) a row's replay serves on: each DP rank is a replica
#: held in memory, and a million of them took gigabytes and minutes (the shipped rows use 64).
MOST_GPUS = 4096


def parallel_layout(row: dict) -> tuple[int, int, int]:
    """``(tp, dp, ep)`` of tiersim's replica for a row: attention TP, attention-DP ranks, and
    the expert-parallel size (1 = experts tensor-parallel over every GPU); more than
    :data:`MOST_GPUS` GPUs are not replayed."""
    tp, dp, moe_tp, moe_ep = aic_layout(row)
    pp = _int_or_none(row.get("pp_size")) or 1
    if pp > 1:
        raise Unrepresentable(f"pipeline parallelism (pp={pp}) is not modelled")
    gpus = tp * dp
    if gpus > MOST_GPUS:
        raise Unrepresentable(f"{gpus:,} GPUs (at most {MOST_GPUS:,} are replayed)")
    moe_gpus = (moe_tp or 1) * (moe_ep or 1)
    if moe_tp is not None and moe_gpus != gpus and moe_gpus != 1:
        raise Unrepresentable(f"experts on {moe_gpus} GPUs but attention on {gpus}")
    return tp, dp, (moe_ep or 1)


def model_source(spec: ModelSpec) -> str:
    """What :func:`tiersim.hardware.get_model` is given for a model."""
    folder = CONFIGS / spec.tiersim
    return str(folder) if folder.is_dir() else spec.tiersim


def config_files(spec: ModelSpec) -> tuple[Path, Path]:
    """``(config.json, hf_quant_config.json)`` paths of a model (either may not exist): in its
    folder under ``benchmarks/data/configs``, or beside a config file read in place."""
    source = Path(model_source(spec))
    if source.is_file():
        return source, source.with_name(source.name.removesuffix("config.json")
                                        + "hf_quant_config.json")
    folder = CONFIGS / spec.tiersim
    return folder / "config.json", folder / "hf_quant_config.json"


def declares_formats(spec: ModelSpec) -> bool:
    """True when the checkpoint's config declares its own weight formats."""
    cfg, hf_quant = config_files(spec)
    if hf_quant.exists():
        return True
    if not cfg.exists():
        return False
    raw = json.loads(cfg.read_text())
    return bool(raw.get("quantization_config") or raw.get("text_config", {}).get(
        "quantization_config"))


def honours_formats(arch) -> bool:
    """True when tiersim reads the checkpoint's formats (its experts are not plain BF16)."""
    try:
        from tiersim.hardware.precisions import checkpoint_bits
    except ImportError:
        return False
    group = "experts" if arch.is_moe else "attention"
    return checkpoint_bits(arch, group) != 16.0


def four_bit(arch) -> bool:
    """True when the checkpoint's experts (or, dense, its attention) are 4-bit (MXFP4, NVFP4,
    INT4): what an ``fp4`` row may have run as shipped."""
    from tiersim.hardware.precisions import checkpoint_bits

    return checkpoint_bits(arch, "experts" if arch.is_moe else "attention") <= 4.5


def tier_precision(row: dict, spec: ModelSpec, arch) -> str:
    """The ``precision`` a tier serving this row uses (see :data:`ROW_PRECISION`).

    A checkpoint that declares its own formats must be served in them: until tiersim reads
    ``quantization_config`` such a row is unrepresentable.
    """
    if declares_formats(spec):
        if not honours_formats(arch):
            raise Unrepresentable("config.json's quantization_config (checkpoint formats) is "
                                  "not read yet")
        if row.get("precision") == "fp4" and not four_bit(arch):
            raise Unrepresentable("an FP4 run of a checkpoint that declares other formats, and "
                                  "no NVIDIA NVFP4 config of it to read")
        return "checkpoint"
    if not isinstance(row["precision"], str):  # no format given: the published checkpoint
        return "bf16"
    if row["precision"] not in ROW_PRECISION:
        raise Unrepresentable(f"precision {row['precision']!r} has no tiersim format")
    return ROW_PRECISION[row["precision"]]


#: The most clients a row's replay runs (12x the shipped rows' most, B200's 10,860): each is
#: ``per_client`` requests held in memory, and 10**8 of them took gigabytes and minutes.
MOST_CLIENTS = 2**17


def shape_problem(row: dict) -> str | None:
    """Why a row's run cannot be replayed as a closed loop (no clients or more than
    :data:`MOST_CLIENTS`, no prompt, no GPU, a parallel size below 1, or fewer than two output
    tokens: TPOT is the time between them), else ``None``."""
    for col, least in (("tp_size", 1), ("isl", 1), ("osl", 2)):
        value = _int_or_none(row.get(col))
        if value is None or value < least:
            return f"{col} {row.get(col)} (at least {least} needed)"
    for col in ("pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size"):  # where given
        value = _int_or_none(row.get(col))
        if value is not None and value < 1:
            return f"{col} {value} (at least 1 needed)"
    if clients(row) < 1:
        return f"no clients (batch_size {row.get('batch_size')})"
    if clients(row) > MOST_CLIENTS:
        return f"{clients(row):,} clients (at most {MOST_CLIENTS:,} are replayed)"
    return None


def case_of(row: dict) -> Case:
    """The :class:`Case` of a row, or :class:`Unrepresentable` with the reason."""
    if row["mode"] == "disagg":
        raise Unrepresentable("disaggregated prefill/decode serving is not modelled")
    if row["mode"] != "agg":
        raise Unrepresentable(f"mode {row['mode']!r}: only aggregated serving is modelled")
    if row["backend"] not in ENGINE_PROFILES:
        raise Unrepresentable(f"no tiersim profile for engine {row['backend']!r}")
    problem = shape_problem(row)
    if problem:
        raise Unrepresentable(problem)
    spec = row_spec(row)
    if spec is None:
        raise Unrepresentable(no_config_reason(row["model_path"]))
    system = row.get("system", FIT_SYSTEM)
    if system not in SYSTEM_GPU:
        raise Unrepresentable(f"no tiersim GPU for system {system!r}")
    if (row["backend"] != "vllm" and spec.name not in profile_models(row["backend"], system)
            and not (IMPORT_MISSING["on"] and aic_installed())):
        raise Unrepresentable(f"no {row['backend']} profile at this model's shapes")
    try:
        arch = get_model(model_source(spec))
    except Exception as exc:  # noqa: BLE001 -- the reason is the error's line
        raise Unrepresentable(_reason(exc)) from None
    longest = context_problem(row, arch)
    if longest:
        raise Unrepresentable(longest)
    tp, dp, ep = parallel_layout(row)
    precision = tier_precision(row, spec, arch)
    backend = vllm_moe_backend(row, arch, precision, tp * dp // ep)
    return Case(model_source(spec), precision, tp, dp, ep, row["backend"], SYSTEM_GPU[system],
                backend)


def context_problem(row: dict, arch) -> str | None:
    """Why a row's request is longer than its model serves (prompt + output above the config's
    context, or a LongRoPE model's ``context_limit``, the most a ``--max-model-len`` may ask):
    the engine refuses such a request, so no run measured it; ``None`` where it fits or the
    config gives no length."""
    most = arch.context_limit or arch.max_context
    isl, osl = int(row["isl"]), int(row["osl"])
    if not most or arch.context_assumed or isl + osl <= most:
        return None
    return (f"a request of {isl}+{osl} tokens is longer than {arch.name}'s context ({most:,} "
            "tokens), which the engine refuses")


#: A vLLM 0.12 version however a file spells it (``0.12.0``, ``v0.12.0``, ``0.12``,
#: ``0.12.1rc1``; not ``0.120``).
VLLM_0_12 = re.compile(r"v?0\.12(?!\d)", re.IGNORECASE)


def vllm_moe_backend(row: dict, arch, precision: str, moe_tp: int) -> str:
    """The MoE kernel the row's engine ran, by vLLM's own selection rule where its source was
    read: vLLM 0.12.0 (``Fp8MoEMethod`` / ``get_fp8_moe_backend``: DeepGEMM in the official
    image, ``VLLM_USE_DEEP_GEMM`` and ``VLLM_MOE_USE_DEEP_GEMM`` on by default, off only from
    MoE TP 8, and at every batch size since E8M0 is on by default on Hopper) runs the experts
    :func:`tiersim.perf.memory.check_moe_backend` lets run ``deepgemm`` on it; every other
    row runs what the profile's MoE table timed (``auto``: vLLM 0.17-0.24 prefer Triton for
    block FP8 under TP on Hopper)."""
    if row.get("backend") != "vllm" or not VLLM_0_12.match(_text(row.get("backend_version"))):
        return "auto"
    try:  # the experts split moe_tp ways, as one TP group
        check_moe_backend(arch, weight_formats(arch, precision), "deepgemm", moe_tp, 1, 1)
    except ValueError:
        return "auto"
    return "deepgemm"


def no_config_reason(model_path) -> str:
    """Why no config is found for ``model_path`` (see :func:`spec_for`): where it was looked
    for."""
    if not _text(model_path):
        return "no model_path"
    name = str(model_path).rsplit("/", 1)[-1]
    aic = ("aiconfigurator-core ships no " + str(model_path).replace("/", "--") + "_config.json"
           if aic_installed() else "aiconfigurator-core is not installed")
    return f"no config for {model_path}: no benchmarks/data/configs/{name}/config.json, and {aic}"


def _reason(exc: Exception) -> str:
    """The informative tail of a tiersim error line (the path prefix dropped)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text.split(": ", 1)[1] if text.startswith("/") and ": " in text else text


# ---------------------------------------------------------------- the simulated load generator


@dataclass(frozen=True)
class Protocol:
    """How the simulated load generator drives a row.

    ``per_client`` requests per client; ``stagger``: client ``c`` starts at ``c / concurrency`` of
    an estimated request cycle (else all at 0, the load generator's burst); ``all_rounds``:
    average over every request after the first ``warmup`` rounds (sent back to back before the
    measured ones, as ``aiperf --warmup-request-count warmup x concurrency``; else leave out each
    client's first and last); ``spread``: each
    request's prompt and output lengths are drawn uniformly from ``[(1 - spread) L, (1 + spread)
    L]`` (numpy Generator seeded by ``seed``; 0 = every request exactly ``isl`` / ``osl``).
    ``pool``: the distinct prompts every request draws from (0: each its own; ``None``: decided
    per campaign, :func:`row_protocol`); ``pool_per_client`` (when above 0, instead of
    ``pool``): that many distinct prompts per client, as ``aiperf --num-dataset-entries k x
    C``. ``drained_warmup``: the ``warmup`` rounds are a phase of their own, as aiperf runs its
    warm-up and profiling phases (every warm-up request finishes before the measured ones
    start, all clients at once again); else the measured rounds follow the warm-up ones back
    to back. :data:`AIPERF_CLIENT` is NVIDIA's published client so read.
    """

    stagger: bool = False
    per_client: int = UNFITTED_PER_CLIENT
    all_rounds: bool = True
    spread: float = 0.0
    seed: int = 0
    warmup: int = 0
    pool: int | None = None
    pool_per_client: int = 0
    drained_warmup: bool = False

    def __post_init__(self) -> None:
        if self.pool is not None and self.pool < 0:
            raise ValueError(f"--prompt-pool must be >= 0 (got {self.pool})")
        if self.pool_per_client < 0:
            raise ValueError(f"pool_per_client must be >= 0 (got {self.pool_per_client})")
        if not 0.0 <= self.spread < 1.0:
            raise ValueError(f"--length-spread must be in [0, 1) (got {self.spread})")
        if self.per_client < 1:
            raise ValueError(f"--per-client must be >= 1 (got {self.per_client})")
        if not 0 <= self.warmup < self.per_client:
            raise ValueError(f"--warmup-rounds must be in [0, per-client) (got {self.warmup})")
        if self.per_client < 3 and not self.all_rounds:
            raise ValueError(
                f"--per-client must be >= 3 to leave out warm-up and cool-down "
                f"(got {self.per_client}); or average all rounds"
            )

    def rounds(self) -> slice:
        """The rounds averaged."""
        if self.all_rounds:
            return slice(self.warmup, self.per_client)
        return slice(max(1, self.warmup), self.per_client - 1)

    def lengths(self, length: int, n: int, stream: int) -> np.ndarray:
        """``n`` request lengths around ``length`` (``stream`` 0: prompts, 1: outputs)."""
        if self.spread == 0.0:
            return np.full(n, length, dtype=np.int64)
        rng = np.random.default_rng([self.seed, stream])
        drawn = np.rint(length * rng.uniform(1 - self.spread, 1 + self.spread, n))
        return np.maximum(drawn, min(length, 2)).astype(np.int64)

    def pool_size(self, concurrency: int = 1) -> int:
        """How many distinct prompts a row of ``concurrency`` clients draws from (0: every
        request its own)."""
        if self.pool_per_client:
            return self.pool_per_client * concurrency
        return self.pool or 0

    def prompts(self, n: int, concurrency: int = 1) -> np.ndarray | None:
        """Which of the :meth:`pool_size` distinct prompts each of ``n`` requests sends (drawn
        uniformly with replacement, seeded, as aiperf 0.1's synthetic dataset does), or
        ``None`` when every request sends a prompt of its own (``pool`` 0; ``None`` is decided
        per campaign before a row is replayed, :func:`row_protocol`)."""
        size = self.pool_size(concurrency)
        if not size:
            return None
        return np.random.default_rng([self.seed, 2]).integers(0, size, n)


def fitted() -> dict:
    """The fit ``--fit`` wrote (``{}`` before the first fit)."""
    return json.loads(FIT_JSON.read_text()) if FIT_JSON.exists() else {}


def cycle_estimate(
    step, isl: int, osl: int, concurrency: int, max_tokens: int = MAX_BATCHED_TOKENS
) -> float:
    """One request's time in service at full batch: its prefill (as ``max_tokens``-token chunks)
    plus ``osl`` decode steps; it only spaces the clients' first requests (``stagger``)."""
    chunk = min(isl, max_tokens)
    prefill = step.step_time(StepShape(((chunk, 0),))) * -(-isl // max_tokens)
    ctx = concurrency * (isl + osl / 2)
    return prefill + osl * float(step.decode_times(concurrency, np.array([ctx]))[0])


def closed_loop_workload(
    isl: int, osl: int, concurrency: int, proto: Protocol, gap_s: float,
    measured_at: float | None = None,
) -> Workload:
    """``concurrency`` clients, ``proto.per_client`` requests each, sent back to back.

    Request ``r * concurrency + c`` is client ``c``'s ``r``-th: round 0 arrives at ``c * gap_s``,
    every later one when the same client's previous request finishes; with ``measured_at``,
    round ``proto.warmup`` (the first measured one) arrives then instead, all clients at once
    (a drained warm-up phase, :attr:`Protocol.drained_warmup`).
    """
    n = concurrency * proto.per_client
    idx = np.arange(n)
    follows = np.where(idx < concurrency, -1, idx - concurrency)
    arrival = np.where(idx < concurrency, idx * gap_s, 0.0)
    if measured_at is not None:
        restart = (idx >= proto.warmup * concurrency) & (idx < (proto.warmup + 1) * concurrency)
        follows = np.where(restart, -1, follows)
        arrival = np.where(restart, measured_at, arrival)
    prompt = proto.prompts(n, concurrency)
    drawn = n if prompt is None else proto.pool_size(concurrency)
    inputs, outputs = proto.lengths(isl, drawn, 0), proto.lengths(osl, drawn, 1)
    hashes = None
    if prompt is not None:  # a pool entry keeps its lengths; its blocks hash to its own ids
        inputs, outputs = inputs[prompt], outputs[prompt]
        hashes = [range(p << 20, (p << 20) + -(-int(k) // BLOCK_SIZE))
                  for p, k in zip(prompt, inputs)]
    return Workload(
        arrival_s=arrival.astype(np.float64),
        input_tokens=inputs,
        output_tokens=outputs,
        tier=np.zeros(n, dtype=np.int64),
        follows=follows,
        prefix_hashes=hashes,
        hash_block_tokens=BLOCK_SIZE,
    )


def first_requests(work: Workload, k: int) -> Workload:
    """The first ``k`` requests of ``work`` (every per-request field cut to them)."""
    n = len(work)
    cut = {f.name: getattr(work, f.name)[:k] for f in dataclasses.fields(work)
           if isinstance(getattr(work, f.name), (np.ndarray, list))
           and len(getattr(work, f.name)) == n}
    return dataclasses.replace(work, **cut)


def warmup_drained_at(tier: TierSpec, isl: int, osl: int, concurrency: int, proto: Protocol,
                      gap_s: float = 0.0) -> float | None:
    """When the last warm-up request finishes, where the warm-up is a phase of its own
    (:attr:`Protocol.drained_warmup`): the warm-up rounds replayed alone (the measured ones
    arrive only after them, so they run as in the whole replay); ``None`` otherwise."""
    if not (proto.drained_warmup and proto.warmup):
        return None
    work = closed_loop_workload(isl, osl, concurrency, proto, gap_s)
    res = simulate([tier], first_requests(work, proto.warmup * concurrency), sample_every=1e9)
    if res.dropped.any():  # its finish is NaN: the measured phase would arrive at NaN
        raise Unrepresentable(f"a request of {isl}+{osl} tokens exceeds the replica's KV cache")
    return float(np.max(res.finish_s))


def replay(tier: TierSpec, isl: int, osl: int, concurrency: int, proto: Protocol) -> dict:
    """Closed-loop replay of one tier: mean TTFT and TPOT (ms) over the measured rounds."""
    gap = 0.0
    if proto.stagger:
        budget = tier.limits.max_num_batched_tokens
        per_rank = -(-concurrency // tier.replicas)
        gap = cycle_estimate(tier.step_model, isl, osl, per_rank, budget) / concurrency
    if proto.pool_size(concurrency):  # vLLM V1 caches prefixes by default
        tier = dataclasses.replace(
            tier, limits=dataclasses.replace(tier.limits, enable_prefix_caching=True))
    work = closed_loop_workload(isl, osl, concurrency, proto, gap,
                                warmup_drained_at(tier, isl, osl, concurrency, proto, gap))
    res = simulate([tier], work, sample_every=1e9)  # no time series needed
    if res.dropped.any():
        raise Unrepresentable(f"a request of {isl}+{osl} tokens exceeds the replica's KV cache")

    def measured(a: np.ndarray) -> np.ndarray:
        return a.reshape(proto.per_client, concurrency)[proto.rounds()]

    first, finish = measured(res.first_token_s), measured(res.finish_s)
    decodes = np.maximum(measured(work.output_tokens) - 1, 1)
    return {
        "sim_ttft_ms": float(np.mean(first - measured(res.arrival_s))) * 1e3,
        "sim_tpot_ms": float(np.mean((finish - first) / decodes)) * 1e3,
        "preemptions": int(res.preemptions.sum()),
    }


@dataclass(frozen=True)
class Knobs:
    """Profile values of ``engine`` tried in place of its profile's (``None``: the profile's
    own); other engines keep theirs."""

    overhead_s: float | None = None
    overhead_per_layer_s: float = 0.0
    eager: EagerCost | None = None
    engine: str = "vllm"
    roofline: bool = False  # every engine on tiersim's roofline model, no profile at all


_PROFILES: dict = {}


def engine_profile(engine: str, knobs: Knobs = Knobs(), gpu: str = "h200"):
    """The engine's profile on ``gpu``, with the :class:`Knobs` given for it put in
    (``None``, the roofline model, with ``knobs.roofline``)."""
    if knobs.roofline:
        return None
    key = (engine, knobs, gpu)
    if key not in _PROFILES:
        system = next((s for s, g in SYSTEM_GPU.items() if g == gpu), None)
        if system is None:
            raise Unrepresentable(f"no measured rows' system for GPU {gpu!r}")
        path = profile_file(engine, system)
        if not Path(path).exists() and system != FIT_SYSTEM:
            if not (IMPORT_MISSING["on"] and aic_installed()):
                raise Unrepresentable(f"no {engine} profile for {system}; run --refresh-data "
                                      f"--system {system}")
            prof = empty_profile(engine, system)  # every table imported for its rows
        else:
            prof = resolve_profile(path)
        if knobs.overhead_s is not None and engine == knobs.engine:
            prof = dataclasses.replace(prof, overhead_s=knobs.overhead_s,
                                       overhead_per_layer_s=knobs.overhead_per_layer_s)
        if knobs.eager is not None and engine == knobs.engine:
            prof = dataclasses.replace(prof, eager=knobs.eager)
        _PROFILES[key] = prof
    return _PROFILES[key]


#: Import, from an installed aiconfigurator-core, the tables a row's model and layout look up
#: that its engine's profile lacks (``--no-import`` turns it off): any model NVIDIA measured
#: kernels for replays on them, not only the ones :data:`ENGINE_IMPORTS` and the shipped
#: profiles were built for.
IMPORT_MISSING = {"on": True}
_IMPORTED: dict = {}


def aic_installed() -> bool:
    """Whether aiconfigurator-core can be imported (its tables are then at hand)."""
    import importlib.util

    return importlib.util.find_spec("aiconfigurator_core") is not None


def empty_profile(engine: str, system: str):
    """A profile of ``engine`` on ``system``'s GPU with no tables yet (each row's are imported,
    :func:`with_missing_tables`) and the overhead and eager cost of the engine's H200 profile
    (fitted there, applied unchanged)."""
    from tiersim.perf.profile import Profile

    gpu = SYSTEM_GPU[system]
    name = f"{gpu}_aiconfigurator_{engine}"
    return with_h200_fit(Profile(name, gpu.upper(), {}, 0.0, "roofline", []), engine, system)


def with_missing_tables(profile, case: Case, kv_dtype: str):
    """``profile`` plus NVIDIA's tables of what ``case`` looks up and ``profile`` lacks,
    imported from aiconfigurator-core's data of the case's GPU and engine (remembered per
    profile); ``profile`` itself when nothing is missing, importing is off, or the package is
    not installed. A table the data lacks stays missing (the roofline or an anchor answers)."""
    if profile is None or not IMPORT_MISSING["on"] or not aic_installed():
        return profile
    from tiersim.perf.aiconfigurator import build_profile, table_requests
    from tiersim.perf.profile import table_name

    requests = table_requests(case.model, case.precision, case.tp, kv_dtype, case.gpu,
                              dp=case.dp, ep=case.ep, moe_backend=case.moe_backend)
    have = {t.name for t in profile.tables}
    need = [r for r in requests if table_name(*r[:3]) not in have]
    if not need:
        return profile
    key = (id(profile), tuple(sorted(table_name(*r[:3]) for r in need)))
    if key not in _IMPORTED:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            extra, _ = build_profile("imported", case.gpu, case.engine, need, (0.0, 0.0))
        provenance = profile.provenance or extra.provenance  # an empty profile takes the data's
        _IMPORTED[key] = dataclasses.replace(profile, tables=[*profile.tables, *extra.tables],
                                             provenance=provenance)
    return _IMPORTED[key]


#: TensorRT-LLM sizes its KV cache as a share of the memory left free once the weights are
#: loaded and the activations measured (``KvCacheConfig.free_gpu_memory_fraction``, default 0.9:
#: https://nvidia.github.io/TensorRT-LLM/llm-api/reference/KvCacheConfig.html); vLLM
#: (``gpu_memory_utilization``, 0.9) and SGLang (``mem_fraction_static``) take a share of the
#: whole GPU, the weights inside it, which is tiersim's rule (:func:`kv_capacity_blocks`).
TRTLLM_FREE_FRACTION = 0.9


def engine_kv_blocks(case: Case, kv_dtype: str, par: dict) -> int:
    """KV blocks of one DP rank of ``case``'s server, by its engine's memory rule: tiersim's
    (vLLM's) for vLLM and SGLang rows; for TensorRT-LLM rows :data:`TRTLLM_FREE_FRACTION` of
    the memory the weights and activations leave free. Before, TensorRT-LLM rows were sized by
    vLLM's rule too, 0.1 x the weights less: B200 DeepSeek-R1 at TP 4 held 40,544 tokens and
    the replay preempted hundreds of times (TTFT +2,358% to +11,019%)."""
    args = (get_model(case.model), case.precision, get_gpu(case.gpu), case.tp, BLOCK_SIZE)
    kw = {"kv_dtype": kv_dtype, "max_num_batched_tokens": MAX_BATCHED_TOKENS, **par}
    if case.engine != "trtllm":
        return kv_capacity_blocks(*args, **kw)
    free = kv_capacity_blocks(*args, gpu_memory_utilization=1.0, **kw)
    return max(1, math.floor(TRTLLM_FREE_FRACTION * free))


def replica_tier(case: Case, concurrency: int, kv_dtype: str, knobs: Knobs = Knobs()):
    """The tier of ONE measured server: ``dp`` replicas (DP ranks) of ``tp`` GPUs each.

    ``kv_dtype`` ``auto`` is vLLM's rule (the checkpoint's declared KV format, else BF16) for
    vLLM rows; TensorRT-LLM and SGLang rows keep FP8 KV there, as before ``auto`` existed.
    Returns the tier and its step model's ``sources()`` (table -> source label)."""
    par = {"dp": case.dp, "ep": case.ep} if case.dp > 1 or case.ep > 1 else {}
    if kv_dtype == "auto" and case.engine != "vllm":  # their FP8 engines' KV; a BF16 one's is BF16
        kv_dtype = "bf16" if case.precision == "bf16" else "fp8"
    try:
        profile = with_missing_tables(engine_profile(case.engine, knobs, case.gpu), case,
                                      kv_dtype)
        step = build_step_model(case.model, case.precision, case.gpu, tp=case.tp,
                                kv_dtype=kv_dtype, profile=profile,
                                moe_backend=case.moe_backend, **par)
        blocks = engine_kv_blocks(case, kv_dtype, par)
    except TypeError as exc:  # a keyword this tiersim does not take yet (dp / ep)
        raise Unrepresentable(f"attention-DP x EP replicas are not supported ({exc})") from None
    except Exception as exc:  # noqa: BLE001 -- the reason is the error's line
        raise Unrepresentable(_reason(exc)) from None
    # at most as many running requests as the step budget decodes at once (a scheduler limit)
    seqs = min(max(MAX_NUM_SEQS, concurrency), MAX_BATCHED_TOKENS)
    # vLLM's hybrid allocator: sliding-window layers hold a window's blocks (gpt-oss)
    window, full, slide = kv_groups(get_model(case.model)) if case.engine == "vllm" else (0, 1, 0)
    limits = SchedulerLimits(max_num_seqs=seqs,
                             max_num_batched_tokens=MAX_BATCHED_TOKENS, block_size=BLOCK_SIZE,
                             # vLLM v1 caches prefixes by default: fresh prompts never hit,
                             # but a preempted request comes back to its cached blocks
                             enable_prefix_caching=case.engine == "vllm",
                             window=window, full_groups=full, window_groups=slide)
    if window:
        blocks = kv_pages(get_model(case.model), blocks)
    lockstep = case.dp if get_model(case.model).is_moe else 1  # vLLM: MoE DP ranks step together
    tier = TierSpec(case.engine, replicas=case.dp, num_blocks=blocks, step_model=step,
                    limits=limits, lockstep=lockstep)
    return tier, step.sources()


def prefill_load(row: dict, kv_dtype: str) -> float:
    """The share of one replica's time that the row's measured request rate needs just to
    prefill fresh prompts, on the engine profile's kernel tables with no host cost (NaN where
    the row does not replay).

    Closed loop: ``clients / (TTFT + (osl - 1) x TPOT)`` requests a second over ``dp`` replicas
    (Little's law on the measured means; a burst-started run of ``k`` requests per client
    overstates the rate by up to about ``1/k``). A prompt no longer than the step budget is
    costed as its share of a step packed with as many such prompts as the budget holds, a longer
    one as its chunks of the budget: the cheapest schedules on the tables. Above 1 the tables
    say the server could not have computed every prompt: it found most of them cached (or the
    tables are too slow for this row, which one row cannot tell apart; see
    :func:`reused_prompt_campaigns`).
    """
    if isinstance(row.get("conflict"), str):
        return float("nan")
    try:
        case = case_of(row)
        knobs = Knobs(overhead_s=0.0, eager=EagerCost(), engine=case.engine)
        tier, _ = replica_tier(case, clients(row), kv_dtype, knobs)
    except Exception:  # noqa: BLE001 -- Unrepresentable or not: the row's replay says why
        return float("nan")
    isl, osl = int(row["isl"]), int(row["osl"])
    cycle_s = (row["silicon_ttft_ms"] + (osl - 1) * row["silicon_tpot_ms"]) / 1e3
    return clients(row) / cycle_s / case.dp * prompt_prefill_s(
        tier.step_model, isl, tier.limits.max_num_batched_tokens)


def prompt_prefill_s(step, isl: int, budget: int) -> float:
    """The least step time per fresh ``isl``-token prompt (see :func:`prefill_load`)."""
    if isl <= budget:
        packed = budget // isl
        return step.step_time(StepShape(((isl, 0),) * packed)) / packed
    return sum(step.step_time(StepShape(((min(budget, isl - start), start),)))
               for start in range(0, isl, budget))


def _load_star(args):
    return prefill_load(*args)


_LOADS: dict = {}


def reused_prompt_campaigns(df: pd.DataFrame, kv_dtype: str, jobs: int) -> dict[str, float]:
    """The campaigns (:func:`campaign`) that reused their prompts, each with its median
    :func:`prefill_load`: those of at least :data:`REUSE_MIN_ROWS` replayable rows whose median
    row's load exceeds :data:`REUSE_LOAD`. The median, as one row's load is an estimate from
    means over a burst-started run and kernel tables timed alone, and can be high because the
    tables are slow for that row; a typical row beyond what fresh prompts allow is not noise."""
    records = df.to_dict("records")
    key = (tuple(str(r.get("id")) for r in records), kv_dtype)
    if key not in _LOADS:  # a fit replays the same rows many times
        _LOADS[key] = _map(_load_star, [(r, kv_dtype) for r in records], jobs, chunksize=16)
    loads = pd.Series(_LOADS[key], index=[campaign(r) for r in records], dtype=float).dropna()
    typical = loads.groupby(level=0).agg(["median", "size"])
    return {name: float(row["median"]) for name, row in typical.iterrows()
            if row["size"] >= REUSE_MIN_ROWS and row["median"] > REUSE_LOAD}


def row_protocol(proto: Protocol, row: dict, reused: dict[str, float]) -> Protocol:
    """``proto`` for one row: with ``pool`` unset, aiperf's prompt pool for a campaign that
    reused its prompts and fresh prompts for any other."""
    if proto.pool is not None or proto.pool_per_client:
        return proto
    pool = AIPERF_PROMPT_POOL if campaign(row) in reused else 0
    return dataclasses.replace(proto, pool=pool)


#: ``sources()`` entries that are the engine's host time, not an operator table.
HOST_TIME = ("overhead", "eager")
#: How the label of a roofline family divided by the calibration starts.
CALIBRATED = "roofline; calibrated:"
#: How the label of DeepGEMM's experts starts, before the GEMM source it read.
DEEPGEMM = "deepgemm: "


def on_roofline(sources: dict[str, str]) -> list[str]:
    """The operator tables a step model answered with the roofline (its ``sources()``; a
    family a run with no profile divides by its H200 efficiency reads ``roofline;
    calibrated: ...``, still the roofline, and DeepGEMM's experts with no GEMM table of
    their shape read ``deepgemm: roofline...``)."""
    def roofline(label: str) -> bool:
        label = label.removeprefix(DEEPGEMM)
        return label == "roofline" or label.startswith(CALIBRATED)

    return [k for k, v in sources.items() if roofline(v) and k not in HOST_TIME]


def anchored(sources: dict[str, str]) -> list[str]:
    """The operator tables a step model read from a table of another shape (its ``sources()``
    label holds ``anchored:``, after any ``graph-read:`` or ``deepgemm:`` reading)."""
    return [k for k, v in sources.items() if "anchored:" in v]


def simulate_row(row: dict, kv_dtype: str, proto: Protocol, knobs: Knobs) -> dict:
    """tiersim's TTFT and TPOT (ms) for one row, or why it cannot be represented."""
    if isinstance(row.get("conflict"), str):
        return {"unrepresentable": row["conflict"]}
    try:
        case = case_of(row)
        tier, sources = replica_tier(case, clients(row), kv_dtype, knobs)
        out = replay(tier, int(row["isl"]), int(row["osl"]), clients(row), proto)
    except Unrepresentable as exc:
        return {"unrepresentable": str(exc)}
    except Exception as exc:  # noqa: BLE001 -- one row's failure is its line, not the run's end
        return {"unrepresentable": f"its replay failed: {_one_line(exc)}"}
    if not (np.isfinite(out["sim_ttft_ms"]) and np.isfinite(out["sim_tpot_ms"])):
        return {"unrepresentable": f"its replay gave TTFT {out['sim_ttft_ms']} ms, TPOT "
                                   f"{out['sim_tpot_ms']} ms"}
    out["roofline_tables"] = len(on_roofline(sources))
    out["tables"] = sum(k not in HOST_TIME for k in sources)
    out["anchored_tables"] = len(anchored(sources))
    return out


def _simulate_star(args):
    return simulate_row(*args)


def _map(fn, items: list, jobs: int, chunksize: int = 4) -> list:
    if jobs > 1 and len(items) > 1:
        with ProcessPoolExecutor(jobs) as pool:
            return list(pool.map(fn, items, chunksize=chunksize))
    return [fn(x) for x in items]


def run(
    df: pd.DataFrame, kv_dtype: str, proto: Protocol, jobs: int, knobs: Knobs = Knobs()
) -> pd.DataFrame:
    """Simulate every row (in ``jobs`` processes); adds predictions and signed errors, and
    ``prompt_pool`` (the distinct prompts a row's clients drew from; 0: every prompt fresh)."""
    by_campaign = proto.pool is None and not proto.pool_per_client
    reused = reused_prompt_campaigns(df, kv_dtype, jobs) if by_campaign else {}
    protos = [row_protocol(proto, r, reused) for r in df.to_dict("records")]
    args = [(r, kv_dtype, p, knobs) for r, p in zip(df.to_dict("records"), protos)]
    out = pd.DataFrame(_map(_simulate_star, args, jobs))
    for col in ("sim_ttft_ms", "sim_tpot_ms", "unrepresentable"):
        if col not in out:
            out[col] = np.nan
    res = pd.concat([df.reset_index(drop=True), out], axis=1)
    res["prompt_pool"] = [p.pool_size(clients(r)) for r, p in zip(df.to_dict("records"), protos)]
    res["campaign"] = [campaign(r) for r in df.to_dict("records")]
    res["campaign_load"] = res["campaign"].map(reused)
    return add_errors(res)


def add_errors(res: pd.DataFrame) -> pd.DataFrame:
    """Signed relative errors ``predicted / measured - 1`` of tiersim and aiconfigurator."""
    res = res.copy()
    res["ttft_err"] = res["sim_ttft_ms"] / res["silicon_ttft_ms"] - 1
    res["tpot_err"] = res["sim_tpot_ms"] / res["silicon_tpot_ms"] - 1
    if "aic_ttft_ms" in res:
        res["aic_ttft_err"] = res["aic_ttft_ms"] / res["silicon_ttft_ms"] - 1
        res["aic_tpot_err"] = res["aic_tpot_ms"] / res["silicon_tpot_ms"] - 1
    return res


# ---------------------------------------------------------------- reporting


def median_abs(errors: pd.Series) -> float:
    """Median of |error| in percent over the rows that have one (NaN when none)."""
    e = errors.dropna().abs()
    return float(np.median(e)) * 100 if len(e) else float("nan")


def _pct(x: float) -> str:
    return "n/a" if np.isnan(x) else f"{x:.1f}%"


def group_line(label: str, g: pd.DataFrame) -> str:
    """``label  n  tiersim TPOT / TTFT  aiconfigurator TPOT / TTFT`` over the replayed rows."""
    ok = g[g["sim_tpot_ms"].notna()]
    line = (f"{label:28} n={len(ok):3}  tiersim |TPOT| {_pct(median_abs(ok['tpot_err'])):>6} "
            f"|TTFT| {_pct(median_abs(ok['ttft_err'])):>6}")
    if "aic_tpot_err" in ok:
        n_aic = int(ok["aic_tpot_err"].notna().sum())
        line += (f"   aiconfigurator |TPOT| {_pct(median_abs(ok['aic_tpot_err'])):>6} "
                 f"|TTFT| {_pct(median_abs(ok['aic_ttft_err'])):>6}")
        if n_aic != len(ok):
            line += f" (n={n_aic})"
    if len(ok):
        line += (f"  tiersim median signed TPOT {median_signed(ok['tpot_err']):+.0f}% "
                 f"TTFT {median_signed(ok['ttft_err']):+.0f}%")
    if "backend_version" in ok and ok["backend_version"].notna().any():
        versions = sorted(str(v) for v in ok["backend_version"].dropna().unique())
        line += f"  [measured on {'/'.join(versions)}]"
    if "roofline_tables" in ok and (ok["roofline_tables"] > 0).any():
        roof = ok["roofline_tables"] > 0
        whole = roof & (ok["roofline_tables"] == ok["tables"]) if "tables" in ok else roof & False
        if whole.any():
            line += f"  [{int(whole.sum())} rows wholly on the roofline]"
        if (roof & ~whole).any():
            line += f"  [{int((roof & ~whole).sum())} rows partly on the roofline]"
    if "anchored_tables" in ok and (ok["anchored_tables"] > 0).any():
        line += (f"  [{int((ok['anchored_tables'] > 0).sum())} rows partly on anchored tables: "
                 "shapes the profile was not imported for]")
    return line


def median_signed(errors: pd.Series) -> float:
    """Median signed error in percent (positive: predicted slower than measured)."""
    e = errors.dropna()
    return float(np.median(e)) * 100 if len(e) else float("nan")


def final_line(res: pd.DataFrame, engine: str = "vllm") -> str:
    """``<engine> all median |TPOT error| = X%, |TTFT error| = Y% (n=N); aiconfigurator X2%,
    Y2%`` over the engine's replayed rows (aiconfigurator on the same rows)."""
    ok = res[(res["backend"] == engine) & res["sim_tpot_ms"].notna()]
    aic_tpot = median_abs(ok["aic_tpot_err"]) if "aic_tpot_err" in ok else float("nan")
    aic_ttft = median_abs(ok["aic_ttft_err"]) if "aic_ttft_err" in ok else float("nan")
    return (f"{engine} all median |TPOT error| = {_pct(median_abs(ok['tpot_err']))}, "
            f"|TTFT error| = {_pct(median_abs(ok['ttft_err']))} (n={len(ok)}); "
            f"aiconfigurator {_pct(aic_tpot)}, {_pct(aic_ttft)}")


def unrepresentable_lines(res: pd.DataFrame) -> list[str]:
    """One line per (engine, model, reason) of the rows tiersim could not replay."""
    bad = res[res["unrepresentable"].notna()]
    if bad.empty:
        return []
    lines = [f"not representable: {len(bad)} of {len(res)} rows"]
    for (engine, model, reason), g in bad.groupby(["backend", "model", "unrepresentable"],
                                                  sort=False):
        lines.append(f"  {engine:6} {model:16} {len(g):3} rows: {reason}")
    return lines


def ordered_models(models: set[str]) -> list[str]:
    """``models`` in :data:`MODEL_ORDER`, then any other by name."""
    return [m for m in MODEL_ORDER if m in models] + sorted(set(models) - set(MODEL_ORDER))


def summary_lines(res: pd.DataFrame) -> list[str]:
    """Per engine: one line per model it replayed and one for all its rows; then the
    unrepresentable rows; the vLLM line last (see :func:`final_line`)."""
    lines = []
    engines = sorted(res["backend"].unique(), key=lambda e: (e == "vllm", e))
    for engine in engines:
        g = res[res["backend"] == engine]
        replayed = set(g.loc[g["sim_tpot_ms"].notna(), "model"])
        for model in ordered_models(replayed):
            lines.append(group_line(f"{engine} {model}", g[g["model"] == model]))
        if engine != "vllm" and replayed:
            lines.append(final_line(res, engine))
        elif engine != "vllm":
            lines.append(f"{engine}: no row replayed (see below)")
        lines.append("")
    lines += reuse_lines(res)
    lines += engine_pair_lines(res)
    lines += unrepresentable_lines(res)
    if "vllm" in engines:
        lines.append(final_line(res, "vllm"))
    return lines


def reuse_lines(res: pd.DataFrame) -> list[str]:
    """The campaigns replayed with reused prompts (:func:`reused_prompt_campaigns`), if any."""
    if "campaign_load" not in res:
        return []
    reused = res[res["campaign_load"].notna() & res["sim_tpot_ms"].notna()]
    if reused.empty:
        return []
    lines = [f"replayed with reused prompts ({AIPERF_PROMPT_POOL} distinct, as aiperf's default "
             "client sends them, and prefix caching on): campaigns whose median row needs more "
             "than its server's time to prefill fresh prompts"]
    for name, g in reused.groupby("campaign", sort=True):
        lines.append(f"  {name}: {len(g)} rows, median prefill load "
                     f"{g['campaign_load'].iloc[0]:.2f}")
    return lines + [""]


#: The columns :func:`engine_pairs` reads (a frame without them has no pairs).
PAIR_COLUMNS = {"backend", "backend_version", "model_path", "model", "mode", "conflict", "tp_size",
                "isl", "osl", "silicon_tpot_ms", "sim_tpot_ms"}


def engine_pairs(res: pd.DataFrame) -> pd.DataFrame:
    """Measured decode of one checkpoint on one layout by two engines, at the client counts
    both ran.

    Rows are aggregated, with no layout conflict; grouped by checkpoint (``model_path``),
    ``(tp, attention dp)`` and engine (with its versions). For every two engines of a group, the
    window of client counts both ran (the larger of their fewest clients to the smaller of their
    most) keeps each engine's rows inside it; one output row per pair gives each side's median
    measured TPOT there, its rows and clients, tiersim's median predicted TPOT and median signed
    error over those of the same rows it replays (each engine on its own profile; NaN where it
    replays none), and whether the two sides share any ``(isl, osl)``. Empty when no checkpoint
    was measured on one layout by two engines at overlapping client counts.
    """
    if not PAIR_COLUMNS.issubset(res.columns):
        return pd.DataFrame()
    ok = res[(res["mode"] == "agg") & res["conflict"].isna() & (res["tp_size"] > 0)].copy()
    ok["dp"] = [aic_layout(r)[1] for r in ok.to_dict("records")]
    ok["clients"] = [clients(r) for r in ok.to_dict("records")]
    out = []
    for (path, tp, dp), g in ok.groupby(["model_path", "tp_size", "dp"], sort=True):
        engines = sorted(g["backend"].unique(), key=lambda e: (e != "vllm", e))
        for i, a in enumerate(engines):
            for b in engines[i + 1:]:
                ga, gb = g[g["backend"] == a], g[g["backend"] == b]
                lo = max(ga["clients"].min(), gb["clients"].min())
                hi = min(ga["clients"].max(), gb["clients"].max())
                if lo > hi:
                    continue
                wa = ga[ga["clients"].between(lo, hi)]
                wb = gb[gb["clients"].between(lo, hi)]
                if wa.empty or wb.empty:  # a side with no known client count (NaN window)
                    continue
                out.append({
                    "model": g["model"].iloc[0], "model_path": path, "tp": int(tp), "dp": int(dp),
                    "clients": (int(lo), int(hi)), "engine_a": _engine_name(wa),
                    "engine_b": _engine_name(wb), "n_a": len(wa), "n_b": len(wb),
                    "tpot_a_ms": float(wa["silicon_tpot_ms"].median()),
                    "tpot_b_ms": float(wb["silicon_tpot_ms"].median()),
                    "sim_a_ms": float(wa["sim_tpot_ms"].median()),
                    "sim_b_ms": float(wb["sim_tpot_ms"].median()),
                    "err_a": median_signed(wa["sim_tpot_ms"] / wa["silicon_tpot_ms"] - 1),
                    "err_b": median_signed(wb["sim_tpot_ms"] / wb["silicon_tpot_ms"] - 1),
                    "same_lengths": bool(_lengths(wa) & _lengths(wb)),
                })
    return pd.DataFrame(out)


def _lengths(g: pd.DataFrame) -> set[tuple[int, int]]:
    """The ``(isl, osl)`` pairs a group of rows ran."""
    return set(zip(g["isl"].astype(int), g["osl"].astype(int)))


def _engine_name(g: pd.DataFrame) -> str:
    """``engine version[/version...]`` of a group of rows (the engine alone where none says)."""
    versions = sorted(str(v) for v in g["backend_version"].dropna().unique())
    return " ".join([str(g["backend"].iloc[0])] + (["/".join(versions)] if versions else []))


def _sim(ms: float, err: float) -> str:
    return "not replayed" if np.isnan(ms) else f"tiersim {ms:.1f} ms, {err:+.0f}%"


def engine_pair_lines(res: pd.DataFrame) -> list[str]:
    """:func:`engine_pairs` as report lines: how far apart two engines' measured decode steps
    are on the same checkpoint, GPU and layout (a gap no engine-independent model closes)."""
    pairs = engine_pairs(res)
    if pairs.empty:
        return []
    lines = ["same checkpoint, GPU and layout, two engines: median TPOT measured at the client "
             "counts both ran (tiersim's median and its median signed error on the same rows), "
             "the measured ratio, and whether the two ran any same input/output lengths:"]
    for r in pairs.itertuples():
        lo, hi = r.clients
        span = f"{lo}" if lo == hi else f"{lo}-{hi}"
        lengths = "same lengths" if r.same_lengths else "no same lengths"
        lines.append(
            f"  {r.model} TP {r.tp}" + (f" x DP {r.dp}" if r.dp > 1 else "")
            + f", {span} clients: {r.engine_a} {r.tpot_a_ms:.1f} ms ({_sim(r.sim_a_ms, r.err_a)}, "
            f"n={r.n_a}) / {r.engine_b} {r.tpot_b_ms:.1f} ms ({_sim(r.sim_b_ms, r.err_b)}, "
            f"n={r.n_b}) = {r.tpot_a_ms / r.tpot_b_ms:.2f}; {lengths}")
    return lines + [""]


def row_lines(res: pd.DataFrame) -> list[str]:
    """One line per replayed row: measured, tiersim and aiconfigurator TTFT and TPOT."""
    lines = [f"{'engine':6} {'model':14} {'tp':>2} {'dp':>2} {'conc':>4} {'isl':>5} {'osl':>5} "
             f"{'TTFT ms':>8} {'sim':>8} {'err':>7} {'aic':>7}  {'TPOT ms':>7} {'sim':>7} "
             f"{'err':>7} {'aic':>7}"]
    ok = res[res["sim_tpot_ms"].notna()]
    for r in ok.itertuples():
        dp = aic_layout(r._asdict())[1]
        aic_ttft = _signed(getattr(r, "aic_ttft_err", np.nan))
        aic_tpot = _signed(getattr(r, "aic_tpot_err", np.nan))
        lines.append(
            f"{r.backend:6} {r.model:14} {r.tp_size:>2} {dp:>2} {clients(r._asdict()):>4} "
            f"{r.isl:>5} {r.osl:>5} {r.silicon_ttft_ms:8.1f} {r.sim_ttft_ms:8.1f} "
            f"{r.ttft_err:+7.1%} {aic_ttft:>7}  {r.silicon_tpot_ms:7.2f} {r.sim_tpot_ms:7.2f} "
            f"{r.tpot_err:+7.1%} {aic_tpot:>7}"
        )
    return lines


def _signed(x: float) -> str:
    """A signed error as ``+12.3%`` (``n/a`` where there is none)."""
    return "n/a" if np.isnan(x) else f"{x:+.1%}"


def moe_backend_rows(rows: pd.DataFrame) -> dict[str, int]:
    """The rows by the MoE kernel each is replayed with (:func:`case_of`'s ``moe_backend``), so
    a run's fidelity line can say when a model's figures were scored with another kernel than
    a tier's."""
    counts: dict[str, int] = {}
    for row in rows.to_dict("records"):
        backend = case_of(row).moe_backend
        counts[backend] = counts.get(backend, 0) + 1
    return counts


def formats_rows(rows: pd.DataFrame) -> dict[str, int]:
    """The rows by the weight formats each is replayed at (its :class:`Case`'s model and
    precision, in the words of ``WeightFormats.served``), so a run's fidelity line can say
    when a model's figures were scored at other formats than a tier serves."""
    from tiersim.hardware.precisions import weight_formats

    counts: dict[str, int] = {}
    for row in rows.to_dict("records"):
        case = case_of(row)
        served = weight_formats(get_model(case.model), case.precision).served
        counts[served] = counts.get(served, 0) + 1
    return counts


def check_entry(res: pd.DataFrame, engine: str, system: str,
                cpp: pd.Series | None = None, roofline: bool = False) -> dict:
    """What a run of tiersim on this profile prints about its fidelity (``tiersim.fidelity``):
    the replayed rows' median errors, per model and in all, tiersim's beside aiconfigurator's,
    and how many of each model's rows trained a fit (the rest are held out): ``--fit``'s on
    H200, ``--fit-cpp-moe``'s (``cpp``: the rows with C++-launched experts) on its system.
    ``roofline``: the rows were replayed on the calibrated roofline (``--roofline``), no
    tables, whose host time is the fits' (their training rows count as trained; its kernel
    efficiencies come from H200's operator tables, no serving row), and the entry says
    ``step_times: roofline`` and ``calibrated: true`` (a record written before the calibration
    lacks it, and a run folder holding one still prints the bare roofline's words)."""
    ok = res[(res["backend"] == engine) & res["sim_tpot_ms"].notna()]
    trained = pd.Series(False, index=ok.index)
    if system == FIT_SYSTEM and engine in FIT_TRAINING:
        for subset in FIT_TRAINING[engine]:
            trained |= training_mask(ok, subset)
    if system == FIT_CPP_MOE_SYSTEM and engine == "vllm" and cpp is not None:
        trained |= cpp[ok.index]

    def figures(g: pd.DataFrame) -> dict:
        """Row counts and median errors (percent, one decimal) of the rows ``g``."""
        out = {"rows": len(g), "held_out_rows": int((~trained[g.index]).sum()),
               "tpot_abs_median_pct": round(median_abs(g["tpot_err"]), 1),
               "ttft_abs_median_pct": round(median_abs(g["ttft_err"]), 1),
               "tpot_signed_median_pct": round(median_signed(g["tpot_err"]), 1),
               "ttft_signed_median_pct": round(median_signed(g["ttft_err"]), 1)}
        if "aic_tpot_err" in g and g["aic_tpot_err"].notna().any():
            out["aiconfigurator_tpot_abs_median_pct"] = round(median_abs(g["aic_tpot_err"]), 1)
            out["aiconfigurator_ttft_abs_median_pct"] = round(median_abs(g["aic_ttft_err"]), 1)
        return out

    models = {}
    for model in ordered_models(set(ok["model"])):
        g = ok[ok["model"] == model]
        models[model] = {"model_path": str(g["model_path"].iloc[0]),
                         "shape_id": rows_shape_id(g), **figures(g),
                         "moe_backend_rows": moe_backend_rows(g),
                         "formats_rows": formats_rows(g)}
    flag = ("" if system == FIT_SYSTEM else f" --system {system}") + " --roofline" * roofline
    entry = {"engine": engine, "gpu": SYSTEM_GPU[system].upper(), **figures(ok),
             "models": models,
             "measured": "NVIDIA's measured serving runs (aiconfigurator-core's silicon sample, "
                         f"{system} {engine} rows)",
             "command": f"python benchmarks/fidelity_silicon.py{flag} --write-check"}
    return {**entry, "step_times": "roofline", "calibrated": True} if roofline else entry


def rows_shape_id(rows: pd.DataFrame) -> str:
    """The shape identity (:func:`tiersim.fidelity.shape_id`) of the model ``rows`` (one
    model's) replay: what a run matches a tier's model against in the shipped record."""
    from tiersim.fidelity import shape_id

    return shape_id(get_model(model_source(row_spec(rows.iloc[0]))))


def write_check(res: pd.DataFrame, system: str, cpp: pd.Series | None = None,
                roofline: bool = False) -> Path:
    """Put this system's entry of every profile tiersim ships into the package's
    ``fidelity_check.json`` (other systems' entries are kept); with ``roofline``, the entry of
    the roofline model on this system's GPU (:func:`tiersim.fidelity.roofline_key`), from its
    vLLM rows: what a run on the roofline prints, shipped profile or not."""
    from tiersim.fidelity import CHECK_FILE, roofline_key

    doc = json.loads(CHECK_FILE.read_text()) if CHECK_FILE.exists() else {}
    doc.setdefault("schema", "tiersim.fidelity_check/1")
    profiles = doc.setdefault("profiles", {})
    if roofline:
        profiles[roofline_key(SYSTEM_GPU[system])] = check_entry(res, "vllm", system, cpp,
                                                                 roofline=True)
        CHECK_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        return CHECK_FILE
    shipped = bundled_profile(SYSTEM_GPU[system])
    for engine in sorted(res["backend"].unique()):
        path = Path(profile_file(engine, system))  # H200's vLLM profile is named, not a path
        if shipped is None or path.with_suffix(".json").name != shipped.name:
            continue  # a profile kept in benchmarks/data: no run of the package uses it
        profiles[path.stem] = check_entry(res, engine, system, cpp)
    CHECK_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return CHECK_FILE


def with_aic(df: pd.DataFrame, system: str = FIT_SYSTEM) -> pd.DataFrame:
    """The rows joined with aiconfigurator's cached estimates (by row ``id``; an id the cache
    holds twice, as a resumed refresh can write it, takes its last estimate). A
    ``--rows-file`` read beside the shipped cache joins an estimate only to a row with the
    inputs of the copied row it was computed for (:func:`copied_inputs_differ`)."""
    aic = load_aic(system).drop_duplicates("id", keep="last")
    keep = [c for c in ("id", "aic_ttft_ms", "aic_tpot_ms", "aic_quant") if c in aic]
    out = df.merge(aic[keep], on="id", how="left", validate="many_to_one")
    if DATA_FILES["rows"] is None or DATA_FILES["aic"] is not None:
        return out
    differ = copied_inputs_differ(out, system)
    other = differ.notna() & out["aic_ttft_ms"].notna() | differ.notna() & out[
        "aic_tpot_ms"].notna()
    if other.any():
        print(f"{rows_csv(system)}: {int(other.sum())} rows share an id with a copied {system} "
              f"row but not its inputs (e.g. {differ[other].iloc[0]}); aiconfigurator's cached "
              "estimate of that id is not theirs, left out (--aic-file PATH --refresh-aic "
              "estimates them)", file=sys.stderr)
        out.loc[other, [c for c in keep if c != "id"]] = np.nan
    return out


#: The columns an aiconfigurator estimate is computed from (a row's inputs, not its times).
AIC_INPUTS = [c for c in KEEP_COLUMNS if c not in ("id", "silicon_data_source", *TIME_COLUMNS)]


def copied_inputs_differ(df: pd.DataFrame, system: str) -> pd.Series:
    """Per row, the first of :data:`AIC_INPUTS` in which it differs from the copied
    ``system`` row of its id (``benchmarks/data/silicon_<gpu>.csv``), else NaN (the same
    inputs, or no copied row of that id)."""
    copied = read_rows_file(DATA / f"silicon_{SYSTEM_GPU[system]}.csv").reindex(
        columns=KEEP_COLUMNS).drop_duplicates("id", keep="last").set_index("id")
    numbers = [c for c in AIC_INPUTS if c in NUMBER_COLUMNS]
    copied[numbers] = copied[numbers].apply(pd.to_numeric, errors="coerce")
    copied[["tp_size", "batch_size", "isl", "osl"]] = copied[  # as load_rows fills them
        ["tp_size", "batch_size", "isl", "osl"]].fillna(0)
    theirs = copied.reindex(df["id"].astype(str))[AIC_INPUTS].set_axis(df.index)
    found = df["id"].astype(str).isin(copied.index).to_numpy()
    out = pd.Series(np.nan, index=df.index, dtype=object)
    for col in reversed(AIC_INPUTS):  # the first column that differs is the one named
        mine = df[col]
        same = (mine == theirs[col]) | (mine.isna() & theirs[col].isna())
        out[found & ~same.to_numpy()] = col
    return out


# ---------------------------------------------------------------- fitting the free parameters


def training_mask(df: pd.DataFrame, subset: dict = TRAINING) -> pd.Series:
    """True for the rows in ``subset`` (default :data:`TRAINING`) that are scored (a row whose
    layout is in doubt, ``conflict``, trains nothing) and that the fit read (:func:`fit_read`:
    a ``--rows-file``'s other rows are held out, whatever their model)."""
    mask = df["conflict"].isna() if "conflict" in df else pd.Series(True, index=df.index)
    mask &= fit_read(df)
    for col, value in subset.items():
        mask &= df[col].isin(value) if isinstance(value, tuple) else df[col] == value
    return mask


def fit_read(df: pd.DataFrame) -> pd.Series:
    """True for the rows the shipped fit read: every row of the copied rows; of a
    ``--rows-file``, those with the id and measured times of a copied :data:`FIT_SYSTEM` row
    (a newer sample's other runs of a training model were never fitted on)."""
    if DATA_FILES["rows"] is None:
        return pd.Series(True, index=df.index)
    copied = pd.read_csv(DATA / f"silicon_{SYSTEM_GPU[FIT_SYSTEM]}.csv",
                         usecols=["id", *TIME_COLUMNS])
    key = ["id", *TIME_COLUMNS]
    return pd.Series(pd.MultiIndex.from_frame(df[key]).isin(
        pd.MultiIndex.from_frame(copied[key])), index=df.index)


def _best(label: str, scores: list[tuple], unit: str) -> tuple:
    best = min(scores)
    print(f"  {label}: {unit.format(*best[1:])} (median error {best[0]:.1f}%)", flush=True)
    return best


def fit_overhead(train: pd.DataFrame, kv_dtype: str, jobs: int, proto: Protocol,
                 knobs: Knobs) -> Knobs:
    """``knobs`` with the overhead of :data:`FIT_OVERHEADS_S` x :data:`FIT_OVERHEADS_PER_LAYER_S`
    giving the smallest median |TPOT error| on ``train`` (TPOT is where a per-iteration cost
    shows most directly; ``train`` must hold models of several layer counts)."""
    scores = []
    for overhead in FIT_OVERHEADS_S:
        for per_layer in FIT_OVERHEADS_PER_LAYER_S:
            tried = dataclasses.replace(knobs, overhead_s=overhead,
                                        overhead_per_layer_s=per_layer)
            res = run(train, kv_dtype, proto, jobs, tried)
            scores.append((median_abs(res["tpot_err"]), overhead, per_layer))
    best = _best("overhead", scores, "{:.6f} s + {:.7f} s x layers")
    return dataclasses.replace(knobs, overhead_s=best[1], overhead_per_layer_s=best[2])


def fit_loadgen(train: pd.DataFrame, kv_dtype: str, jobs: int, knobs: Knobs) -> Protocol:
    """The load generator of :data:`FIT_PER_CLIENT` x :data:`FIT_SPREADS` with the smallest
    median |TTFT error| on ``train`` (the start-up burst shows in TTFT)."""
    scores = []
    for per_client in FIT_PER_CLIENT:
        for spread in FIT_SPREADS:
            proto = Protocol(per_client=per_client, spread=spread)
            res = run(train, kv_dtype, proto, jobs, knobs)
            scores.append((median_abs(res["ttft_err"]), per_client, spread))
    best = _best("load generator", scores, "{} requests per client, lengths +-{:.0%}")
    return Protocol(per_client=best[1], spread=best[2])


def fit_eager(train: pd.DataFrame, kv_dtype: str, jobs: int, proto: Protocol, knobs: Knobs,
              field: str, grid: tuple[float, ...]) -> EagerCost:
    """The eager cost with ``field`` from ``grid`` giving the smallest median |TTFT error| on
    ``train`` (an eager iteration is a prefill of more than 512 tokens: it shows in TTFT)."""
    scores = []
    for value in grid:
        eager = dataclasses.replace(knobs.eager, **{field: value})
        res = run(train, kv_dtype, proto, jobs, dataclasses.replace(knobs, eager=eager))
        scores.append((median_abs(res["ttft_err"]), value))
    value = _best(f"eager {field}", scores, "{:.6f} s")[1]
    return dataclasses.replace(knobs.eager, **{field: value})


def fit(df: pd.DataFrame, kv_dtype: str, jobs: int,
        engine: str = "vllm") -> tuple[Knobs, Protocol]:
    """Coordinate descent on ``engine``'s :data:`FIT_TRAINING` rows: the overhead on TPOT (dense
    and MoE rows), then the eager time per layer on TTFT (dense rows) and, for vLLM, the load
    generator (dense rows; other engines' rows come from the same benchmark client, so they
    keep vLLM's fitted one), then the eager time per MoE layer on TTFT (MoE rows), repeated
    until nothing moves (at most :data:`FIT_PASSES`)."""
    dense_rows, moe_rows = FIT_TRAINING[engine]
    train = df[training_mask(df, dense_rows)]
    moe_train = df[training_mask(df, moe_rows)]
    if train.empty or moe_train.empty:
        raise SystemExit(f"--fit --fit-engine {engine}: no {engine} training rows among the rows "
                         f"selected; drop --engine/--model or include {engine}")
    if engine in FIT_EAGER_ONLY:
        return fit_eager_grid(train, kv_dtype, jobs, engine), fitted_protocol()
    proto = Protocol(per_client=UNFITTED_PER_CLIENT) if engine == "vllm" else fitted_protocol()
    knobs = Knobs(overhead_s=None, eager=EagerCost(GRAPH_MAX_TOKENS, source="fitting"),
                  engine=engine)
    for i in range(FIT_PASSES):
        print(f"{engine} fit pass {i + 1} on {len(train)} + {len(moe_train)} training rows",
              flush=True)
        new = fit_overhead(pd.concat([train, moe_train]), kv_dtype, jobs, proto, knobs)
        new = dataclasses.replace(new, eager=fit_eager(
            train, kv_dtype, jobs, proto, new, "per_layer_s", FIT_EAGER_PER_LAYER_S))
        new_proto = fit_loadgen(train, kv_dtype, jobs, new) if engine == "vllm" else proto
        new = dataclasses.replace(new, eager=fit_eager(
            moe_train, kv_dtype, jobs, new_proto, new, "per_moe_layer_s",
            FIT_EAGER_PER_MOE_LAYER_S))
        if new == knobs and new_proto == proto:
            break
        knobs, proto = new, new_proto
    return knobs, proto


def fit_eager_grid(train: pd.DataFrame, kv_dtype: str, jobs: int, engine: str) -> Knobs:
    """``engine``'s knobs with the eager cost of its :data:`FIT_EAGER_ONLY` grid (every pair of
    per-layer and per-MoE-layer seconds, above its :data:`ENGINE_GRAPH_MAX_TOKENS` on H200)
    giving the smallest median |TTFT error| on ``train``, replayed with vLLM's fitted load
    generator; the overhead stays the profile's."""
    prof = resolve_profile(ENGINE_PROFILES[engine])
    knobs = Knobs(overhead_s=prof.overhead_s, overhead_per_layer_s=prof.overhead_per_layer_s,
                  engine=engine)
    graph = engine_graph(engine, SYSTEM_GPU[FIT_SYSTEM])
    proto = fitted_protocol()
    print(f"{engine} eager fit on {len(train)} training rows", flush=True)
    scores = []
    for per_layer, per_moe in itertools.product(*FIT_EAGER_ONLY[engine]):
        eager = EagerCost(per_layer_s=per_layer, per_moe_layer_s=per_moe, source="fitting",
                          **graph)
        res = run(train, kv_dtype, proto, jobs, dataclasses.replace(knobs, eager=eager))
        scores.append((median_abs(res["ttft_err"]), per_layer, per_moe))
    best = _best("eager", scores, "{:.6f} s x layers + {:.6f} s x MoE layers")
    return dataclasses.replace(knobs, eager=EagerCost(
        per_layer_s=best[1], per_moe_layer_s=best[2], source="fitting", **graph))


def fitted_protocol() -> Protocol:
    """The load generator ``--fit`` wrote for vLLM (the default before any fit)."""
    doc = fitted()
    return Protocol(per_client=doc.get("per_client", UNFITTED_PER_CLIENT),
                    spread=doc.get("length_spread", 0.0))


def fit_label(n_train: int, n_moe: int = 0, what: str = "per MoE layer",
              engine: str = "vllm") -> str:
    """The ``source`` the fitted values carry in the profile (``n_moe``: MoE rows used for
    ``what``)."""
    dense_rows, moe_rows = FIT_TRAINING[engine]
    flag = "" if engine == "vllm" else f" --fit-engine {engine}"
    label = (f"fitted: benchmarks/fidelity_silicon.py --fit{flag} on {n_train} silicon-sample "
             f"rows ({engine}, {subset_models(dense_rows)})")
    moe = subset_models(moe_rows)
    return label + (f" and, {what}, {n_moe} ({engine}, {moe})" if n_moe else "")


def subset_models(subset: dict) -> str:
    """A training subset's models, comma-separated, with the engine versions it is limited to
    (``DeepSeek-R1, GLM-5 (0.5.9 / glm5-hopper)``)."""
    models = subset["model"]
    text = models if isinstance(models, str) else ", ".join(models)
    versions = subset.get("backend_version")
    if versions:
        text += f" ({versions if isinstance(versions, str) else ' / '.join(versions)})"
    return text


def profile_path(engine: str) -> Path:
    """The profile file ``--fit`` writes for ``engine`` (vLLM: the shipped one)."""
    if engine != "vllm":
        return Path(ENGINE_PROFILES[engine])
    from tiersim.paths import find_bundled

    return Path(find_bundled("profiles", default_profile_name()))


def write_fit(knobs: Knobs, proto: Protocol, n_train: int, n_moe: int) -> None:
    """Write the fitted overhead and eager cost into the engine's profile, and the fit (for
    vLLM: with the load generator, which the default run reads) to FIT_JSON."""
    engine = knobs.engine
    eager_only = engine in FIT_EAGER_ONLY  # its rows fit both eager fields; overhead as it was
    n_moe = 0 if eager_only else n_moe
    path = profile_path(engine)
    kept = resolve_profile(path).eager  # --fit-cpp-moe's rate is its own fit's
    eager = dataclasses.replace(knobs.eager, source=fit_label(n_train, n_moe, engine=engine),
                                per_cpp_moe_layer_s=kept.per_cpp_moe_layer_s,
                                cpp_moe_source=kept.cpp_moe_source)
    doc = json.loads(path.read_text())
    if not eager_only:
        doc["overhead_s"] = {"value": knobs.overhead_s, "per_layer_s": knobs.overhead_per_layer_s,
                             "source": fit_label(n_train, n_moe, "for both terms", engine)}
    doc["eager_s"] = eager.to_json()
    doc = {k: doc[k] for k in ("schema", "name", "gpu", "provenance", "overhead_s", "eager_s",
                               "tables")}
    path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    dense_rows, moe_rows = FIT_TRAINING[engine]
    entry = {
        "overhead_s": knobs.overhead_s, "overhead_per_layer_s": knobs.overhead_per_layer_s,
        "eager_s": eager.to_json(), "training": dense_rows, "moe_training": moe_rows,
        "rows": n_train, "moe_rows": n_moe, "date": datetime.date.today().isoformat(),
    }
    if eager_only:
        entry["overhead_fitted"] = False  # the profile's own, kept
    fit_doc = fitted()
    if engine == "vllm":
        fit_doc.update({"per_client": proto.per_client, "length_spread": proto.spread}, **entry)
    else:
        fit_doc[engine] = entry
    FIT_JSON.write_text(json.dumps(fit_doc, indent=2) + "\n")
    print(f"{engine}: overhead_s = {knobs.overhead_s} + {knobs.overhead_per_layer_s} x layers, "
          f"eager_s = {eager.to_json()} -> {path}; per_client = {proto.per_client}, "
          f"length_spread = {proto.spread} -> {FIT_JSON}")
    propagate_fit(engine)


def cpp_moe_rows(df: pd.DataFrame, kv_dtype: str, jobs: int) -> pd.Series:
    """Which rows replay a MoE model whose experts launch C++ kernels alone (the profile's MoE
    table names such a kernel, :func:`tiersim.perf.profile_data.cpp_launched`, and the row
    does not run DeepGEMM's path)."""
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        flags = list(pool.map(_cpp_moe_star, [(r, kv_dtype) for r in df.to_dict("records")]))
    return pd.Series(flags, index=df.index, dtype=bool)


def _cpp_moe_star(args) -> bool:
    row, kv_dtype = args
    if isinstance(row.get("conflict"), str):
        return False
    try:
        case = case_of(row)
        tier, _ = replica_tier(case, clients(row), kv_dtype)
    except Exception:  # noqa: BLE001 -- Unrepresentable or not: no training row
        return False
    step = tier.step_model
    cpp_moe = getattr(step.ops, "cpp_moe", None)
    return bool(cpp_moe and step.moe_backend != "deepgemm" and cpp_moe())


def fit_cpp_moe(df: pd.DataFrame, kv_dtype: str, jobs: int, proto: Protocol) -> None:
    """Fit vLLM's eager host time per MoE layer of C++-launched experts on the
    :data:`FIT_CPP_MOE_SYSTEM` rows that run them (smallest median |TTFT error| over
    :data:`FIT_CPP_MOE_LAYER_S`, every other value the profile's), and write it into every
    vLLM profile."""
    train = df[(df["backend"] == "vllm") & cpp_moe_rows(df, kv_dtype, jobs)]
    if train.empty:
        raise SystemExit(f"--fit-cpp-moe: no vllm {FIT_CPP_MOE_SYSTEM} row runs C++-launched "
                         "experts among the rows selected; drop --engine/--model")
    shipped = engine_profile("vllm", Knobs(), SYSTEM_GPU[FIT_CPP_MOE_SYSTEM]).eager
    models = ", ".join(sorted(train["model"].unique()))
    print(f"vllm C++ MoE eager fit on {len(train)} {FIT_CPP_MOE_SYSTEM} rows ({models})",
          flush=True)
    scores = []
    for value in FIT_CPP_MOE_LAYER_S:
        eager = dataclasses.replace(shipped, per_cpp_moe_layer_s=value, cpp_moe_source="fitting")
        res = run(train, kv_dtype, proto, jobs, Knobs(eager=eager))
        scores.append((median_abs(res["ttft_err"]), value))
    value = _best("eager per_cpp_moe_layer_s", scores, "{:.6f} s")[1]
    label = (f"fitted: benchmarks/fidelity_silicon.py --fit-cpp-moe on {len(train)} "
             f"silicon-sample rows (vllm, {FIT_CPP_MOE_SYSTEM}: {models}), per MoE layer of "
             "experts launched from C++ alone (Marlin, FlashInfer)")
    write_cpp_moe(value, label, len(train), models)


def write_cpp_moe(value: float, label: str, n_train: int, models: str) -> None:
    """Put the C++ MoE rate into every vLLM profile (labelled as applied unchanged to the
    other systems' rows) and record it in FIT_JSON."""
    paths = {FIT_SYSTEM: profile_path("vllm")}
    paths.update({system: Path(profile_file("vllm", system)) for system in SYSTEM_IMPORTS})
    for system, path in paths.items():
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        eager = doc["eager_s"]
        source = eager.pop("source")  # kept last, where EagerCost.to_json puts it
        eager.update({"per_cpp_moe_layer_s": value,
                      "cpp_moe_source": cpp_moe_label(label, system),
                      "source": source})
        path.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
        print(f"vllm: per_cpp_moe_layer_s = {value} -> {path}")
    fit_doc = fitted()
    fit_doc["cpp_moe"] = {"per_cpp_moe_layer_s": value, "system": FIT_CPP_MOE_SYSTEM,
                          "rows": n_train, "models": models,
                          "date": datetime.date.today().isoformat()}
    FIT_JSON.write_text(json.dumps(fit_doc, indent=2) + "\n")


def aiperf_client_text(proto: Protocol) -> str:
    """How ``--aiperf-client``'s load generator drives a row (:data:`AIPERF_CLIENT`)."""
    if proto.pool_per_client:
        prompts = f"prompts drawn at random from {proto.pool_per_client} per client"
    elif proto.pool:
        prompts = f"prompts drawn at random from {proto.pool}"
    else:
        prompts = "each request its own prompt"
    return (f"NVIDIA's aiperf client (--aiperf-client): {proto.warmup} warm-up requests per "
            f"client, drained, then {proto.per_client - proto.warmup} measured, all clients "
            f"starting together each time, exact lengths, {prompts}")


def fit_report(df: pd.DataFrame, res: pd.DataFrame, proto: Protocol,
               cpp: pd.Series | None = None) -> list[str]:
    """The free parameters in use, and per fitted engine the training and held-out lines (the
    fit's check); ``cpp``: the rows whose experts launch C++ kernels alone (:func:`cpp_moe_rows`),
    held out from ``--fit-cpp-moe``'s fit."""
    lines = [f"load generator: {proto.per_client} requests per client, all clients at t=0, "
             f"lengths +-{proto.spread:.0%}"]
    if proto.drained_warmup:
        lines = [f"load generator: {aiperf_client_text(proto)}"]
    for engine, (dense_rows, moe_rows) in FIT_TRAINING.items():
        if not (res["backend"] == engine).any():
            continue
        train = training_mask(df, dense_rows).to_numpy()
        moe = training_mask(df, moe_rows).to_numpy()
        held = res[~train & ~moe & (res["backend"] == engine).to_numpy()]
        prof = resolve_profile(ENGINE_PROFILES[engine])
        eager = prof.eager
        by_tp = "".join(f"; {n} at TP {tp}" for tp, n in eager.graph_max_tokens_by_tp)
        lines.append(
            f"{engine} per-iteration overhead: {prof.overhead_s * 1e3:.2f} ms + "
            f"{prof.overhead_per_layer_s * 1e6:.1f} us x layers ({prof.overhead_label()}); eager "
            f"iterations (> {eager.graph_max_tokens} tokens{by_tp}): "
            f"{eager.per_layer_s * 1e3:.2f} ms x layers + {eager.per_moe_layer_s * 1e3:.2f} ms x "
            "MoE layers" + cpp_rate(eager))
        if engine in FIT_EAGER_ONLY:
            lines.append(group_line(f"training (eager): {engine} {subset_models(dense_rows)}",
                                    res[train]))
        else:
            lines += [group_line(f"training: {engine} {subset_models(dense_rows)}", res[train]),
                      group_line(f"training (overhead, MoE eager): {engine} "
                                 f"{subset_models(moe_rows)}", res[moe])]
        lines.append(group_line(f"held out: every other {engine} row", held))
        if engine == "vllm" and cpp is not None and eager.per_cpp_moe_layer_s is not None:
            lines.append(group_line(
                f"held out from --fit-cpp-moe ({FIT_CPP_MOE_SYSTEM}): vllm rows with C++ "
                "experts", res[cpp.to_numpy() & (res["backend"] == "vllm").to_numpy()]))
    return lines


def cpp_rate(eager: EagerCost) -> str:
    """`` (C++-launched experts: X ms x MoE layers)`` where the profile gives that rate."""
    if eager.per_cpp_moe_layer_s is None:
        return ""
    return f" (C++-launched experts: {eager.per_cpp_moe_layer_s * 1e3:.2f} ms x MoE layers)"


def other_system_report(res: pd.DataFrame, system: str, proto: Protocol,
                        roofline: bool = False, cpp: pd.Series | None = None) -> list[str]:
    """Another GPU's rows: held out (the free parameters were fitted on H200), but on
    :data:`FIT_CPP_MOE_SYSTEM` the vLLM rows with C++-launched experts (``cpp``), whose eager
    host time per MoE layer ``--fit-cpp-moe`` fits there."""
    if cpp is not None and system == FIT_CPP_MOE_SYSTEM and not roofline:
        return cpp_fit_report(res, system, proto, cpp)
    client = (f"load generator as fitted on {FIT_SYSTEM} ({proto.per_client} requests per client, "
              f"lengths +-{proto.spread:.0%})")
    if proto.drained_warmup:
        client = f"load generator: {aiperf_client_text(proto)}"
    if roofline:
        held = ("every row held out but the C++ MoE rate's training rows (--fit-cpp-moe)"
                if system == FIT_CPP_MOE_SYSTEM else "every row held out")
        lines = [f"{system}: {held}; {client}; step times: tiersim's roofline model of the "
                 f"{SYSTEM_GPU[system].upper()}, no tables, calibrated on {FIT_SYSTEM} (kernel "
                 "efficiencies from its operator tables, vLLM's host time as fitted)"]
    else:
        fitted_part = (f"overhead and eager cost as fitted on {FIT_SYSTEM}; {client}"
                       if proto.drained_warmup else f"overhead, eager cost and {client}")
        lines = [f"{system}: every row held out; {fitted_part}; operator "
                 f"tables: NVIDIA's {SYSTEM_GPU[system].upper()} ones"]
    held_out = "" if roofline and system == FIT_CPP_MOE_SYSTEM else "held out: "
    for engine in sorted(res["backend"].unique()):
        g = res[res["backend"] == engine]
        if g["sim_tpot_ms"].notna().any():
            lines.append(group_line(f"{held_out}every {system} {engine} row", g))
    return lines


def cpp_fit_report(res: pd.DataFrame, system: str, proto: Protocol,
                   cpp: pd.Series) -> list[str]:
    """:data:`FIT_CPP_MOE_SYSTEM`'s rows: the training rows of ``--fit-cpp-moe`` apart."""
    cpp = cpp.to_numpy() & (res["backend"] == "vllm").to_numpy()
    lines = [f"{system}: vllm rows whose experts launch C++ kernels alone are the training rows "
             "of their eager host time per MoE layer (--fit-cpp-moe); every other value, and "
             f"the load generator ({proto.per_client} requests per client, lengths "
             f"+-{proto.spread:.0%}), fitted on {FIT_SYSTEM}; operator tables: NVIDIA's "
             f"{SYSTEM_GPU[system].upper()} ones",
             group_line(f"training (C++ MoE eager): {system} vllm rows with C++ experts",
                        res[cpp])]
    for engine in sorted(res["backend"].unique()):
        g = res[~cpp & (res["backend"] == engine).to_numpy()]
        if g["sim_tpot_ms"].notna().any():
            lines.append(group_line(f"held out: every other {system} {engine} row", g))
    return lines


# ---------------------------------------------------------------- command line


def protocol_from_args(args: argparse.Namespace) -> Protocol:
    """The :class:`Protocol` the command line asks for: the fitted load generator, or
    ``--steady-state`` (staggered clients, first and last request of each left out)."""
    fit_doc = fitted()
    if args.aiperf_client:
        preset = dict(AIPERF_CLIENT)
        if args.prompt_pool is not None:  # 0: aiperf 0.3's shuffled entries, each sent once
            preset.update(pool=args.prompt_pool, pool_per_client=0)
        return Protocol(seed=args.seed, **preset)
    if args.steady_state:
        per_client = 6 if args.per_client is None else args.per_client
        spread = 0.0 if args.length_spread is None else args.length_spread
        return Protocol(stagger=True, per_client=per_client, all_rounds=False, spread=spread,
                        seed=args.seed, pool=args.prompt_pool)
    per_client = (fit_doc.get("per_client", UNFITTED_PER_CLIENT) if args.per_client is None
                  else args.per_client)
    spread = fit_doc.get("length_spread", 0.0) if args.length_spread is None else args.length_spread
    return Protocol(per_client=per_client + args.warmup_rounds, spread=spread, seed=args.seed,
                    warmup=args.warmup_rounds, pool=args.prompt_pool)


def build_parser() -> argparse.ArgumentParser:
    """The command line (see module docstring)."""
    # a usage error is one Error: line, exit 1, as tiersim's (argparse's: a usage block first)
    ap = OneLineParser(prog="python benchmarks/fidelity_silicon.py",
                       description=__doc__.splitlines()[0])
    ap.add_argument("--system", default=FIT_SYSTEM, choices=sorted(SYSTEM_GPU),
                    help="whose rows to replay (default h200_sxm, where the free parameters are "
                    "fitted; other systems' rows are replayed with that fit, all held out)")
    ap.add_argument("--refresh-data", action="store_true",
                    help="recopy rows and model configs from an installed aiconfigurator-core "
                    "(with another --system: its rows, and its profiles from NVIDIA's tables of "
                    "that GPU)")
    ap.add_argument("--refresh-aic", action="store_true",
                    help="recompute aiconfigurator's estimates (needs aiconfigurator-core)")
    ap.add_argument("--fit", action="store_true",
                    help="fit overhead and requests per client on the training rows, print the "
                    "held-out figures, write them to the profile and benchmarks/data/fit.json")
    ap.add_argument("--fit-cpp-moe", action="store_true",
                    help=f"fit vLLM's eager host time per MoE layer of experts launched from "
                    f"C++ alone (Marlin, FlashInfer) on the {FIT_CPP_MOE_SYSTEM} rows that run "
                    "them (give --system b200_sxm), write it to every vLLM profile")
    ap.add_argument("--fit-engine", default="vllm", choices=sorted(FIT_TRAINING),
                    help="the engine --fit fits (default vllm; trtllm keeps vLLM's load "
                         "generator)")
    ap.add_argument("--kv-dtype", default="auto", choices=["auto", "fp8", "bf16"],
                    help="KV-cache dtype of the measured servers (default auto: for vLLM rows the "
                    "format the checkpoint declares, else BF16, as vLLM's --kv-cache-dtype auto; "
                    "fp8 for TensorRT-LLM and SGLang rows)")
    ap.add_argument("--steady-state", action="store_true",
                    help="staggered clients, each one's first and last request left out")
    ap.add_argument("--per-client", type=int, help="requests per client (default: the fit's)")
    ap.add_argument("--length-spread", type=real_number,
                    help="draw lengths uniformly within +-this fraction of isl/osl (default 0)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the length draws")
    ap.add_argument("--warmup-rounds", type=int, default=0,
                    help="requests per client sent first and left out of the means (default 0)")
    ap.add_argument("--prompt-pool", type=int,
                    help="every row's requests draw their prompts from this many distinct ones "
                    "and the server caches prefixes (0: every prompt fresh; default: aiperf's "
                    f"{AIPERF_PROMPT_POOL} for a campaign whose measured rate needs more than "
                    "its server's time to prefill fresh prompts, else fresh)")
    ap.add_argument("--aiperf-client", action="store_true",
                    help="replay every row as NVIDIA's published aiperf client sends it: 2 "
                    "warm-up requests per client, drained, then 10 measured, all clients "
                    "starting together each time, exact lengths, prompts drawn at random from "
                    "12 per client (--prompt-pool N: from N; 0: each request its own)")
    ap.add_argument("--overhead-ms", type=real_number,
                    help="vLLM's whole per-iteration overhead, in ms, in place of its "
                         "profile's fitted constant + per-layer terms (the per-layer term is "
                         "set to 0)")
    ap.add_argument("--roofline", action="store_true",
                    help="replay on tiersim's calibrated roofline model alone (no measured "
                         "tables): what a run with no profile gets")
    ap.add_argument("--no-import", action="store_true",
                    help="replay on the saved profiles only; by default a row's tables that its "
                         "engine's profile lacks are imported from an installed "
                         "aiconfigurator-core (any model NVIDIA measured kernels for replays)")
    ap.add_argument("--engine", action="append", help="only these engines (repeatable)")
    ap.add_argument("--model", action="append", help="only these models (repeatable)")
    ap.add_argument("--rows", action="store_true", help="print one line per replayed row")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--csv", help="also write per-row results to this CSV")
    ap.add_argument("--rows-file", metavar="PATH",
                    help="replay the measured rows of this CSV instead of the copied ones (the "
                    "silicon sample's columns, e.g. a newer aiconfigurator-core's "
                    "systems/silicon_sample.csv; only its --system rows are replayed)")
    ap.add_argument("--aic-file", metavar="PATH",
                    help="aiconfigurator's estimates of those rows, joined by id (default: the "
                    "cached ones in benchmarks/data); what --refresh-aic writes with --rows-file")
    ap.add_argument("--write-check", action="store_true",
                    help="record the figures of the profile tiersim ships for this system in "
                    "tiersim/data/fidelity_check.json (what `tiersim run` prints about its "
                    "step times' fidelity); with --roofline, the roofline model's on this "
                    "system's vLLM rows (what a run on the roofline prints)")
    return ap


def number_problem(args: argparse.Namespace) -> str | None:
    """Why ``--overhead-ms`` (a finite number of milliseconds >= 0) or ``--length-spread``
    (from 0 to below 1) cannot be replayed with, quoting the value as typed (read by
    :func:`tiersim.calibrate.cli.real_number`: ``-50``, ``1e400, beyond a float``; it read
    ``-50.0`` and ``inf``); None when both can."""
    if args.overhead_ms is not None and not 0 <= args.overhead_ms < float("inf"):
        return (f"--overhead-ms must be a finite number >= 0 (got "
                f"{as_written(args.overhead_ms)})")
    if args.length_spread is not None and not 0 <= args.length_spread < 1:
        return f"--length-spread must be in [0, 1) (got {as_written(args.length_spread)})"
    return None


def rows_file_checks(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Point :func:`rows_csv` / :func:`aic_csv` at ``--rows-file`` / ``--aic-file``; refuse
    what would write the copied data from another file's rows."""
    DATA_FILES["rows"] = Path(args.rows_file) if args.rows_file else None
    DATA_FILES["aic"] = Path(args.aic_file) if args.aic_file else None
    if not args.rows_file:
        return
    for flag, given in (("--refresh-data", args.refresh_data), ("--fit", args.fit),
                        ("--fit-cpp-moe", args.fit_cpp_moe), ("--write-check", args.write_check)):
        if given:
            ap.error(f"{flag} writes benchmarks/data or the package from the copied rows; "
                     "drop --rows-file")
    if args.refresh_aic and not args.aic_file:
        ap.error("--refresh-aic with --rows-file needs --aic-file PATH (where to write the "
                 "estimates; the cached ones are of the copied rows)")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point (see module docstring)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    IMPORT_MISSING["on"] = not args.no_import
    problem = number_problem(args)
    if problem:
        ap.error(problem)
    args.overhead_ms, args.length_spread = map(plain_float, (args.overhead_ms,
                                                             args.length_spread))
    try:
        proto = protocol_from_args(args)
    except ValueError as exc:
        ap.error(str(exc))
    if args.aiperf_client:
        given = [flag for flag, value in (
            ("--per-client", args.per_client), ("--length-spread", args.length_spread),
            ("--warmup-rounds", args.warmup_rounds or None),
            ("--steady-state", args.steady_state or None), ("--fit", args.fit or None),
            ("--fit-cpp-moe", args.fit_cpp_moe or None),
            ("--write-check", args.write_check or None)) if value is not None]
        if given:
            ap.error(f"--aiperf-client sets the client itself; drop {' and '.join(given)}")
    if args.fit and args.prompt_pool is not None:
        ap.error("--fit replays each campaign with the prompts the reuse rule gives it; "
                 "drop --prompt-pool")
    if args.fit and args.system != FIT_SYSTEM:
        ap.error(f"--fit fits on {FIT_SYSTEM} rows only; other systems' rows are held out")
    if args.fit_cpp_moe and (args.system != FIT_CPP_MOE_SYSTEM or args.fit
                             or args.prompt_pool is not None):
        ap.error(f"--fit-cpp-moe fits on {FIT_CPP_MOE_SYSTEM} rows: give --system "
                 f"{FIT_CPP_MOE_SYSTEM}, without --fit or --prompt-pool")
    rows_file_checks(ap, args)
    for flag, out in (("--csv", args.csv), ("--aic-file", args.refresh_aic and args.aic_file)):
        if out and not Path(out).resolve().parent.is_dir():
            ap.error(f"{flag} {out}: no folder {Path(out).resolve().parent} to write it in")
    if args.refresh_data:
        refresh_data(args.system)
    df = rows = load_rows(args.system)
    if df.empty:
        print(f"{rows_csv(args.system)}: no {args.system} rows to replay", file=sys.stderr)
        return 1
    if args.refresh_aic:
        refresh_aic(df, args.jobs, system=args.system)
    if args.engine:
        df = df[df["backend"].isin(args.engine)]
    if args.model:
        df = df[df["model"].isin(args.model)]
    if df.empty:
        known = ", ".join(sorted(rows["model"].unique()))
        print(f"{rows_csv(args.system)}: no row matches --engine/--model; its models: {known}",
              file=sys.stderr)
        return 1
    if args.write_check and (args.engine or args.model or args.fit
                             or args.fit_cpp_moe or args.overhead_ms is not None
                             or args.steady_state):
        ap.error("--write-check records the shipped settings over every row: give it alone "
                 "(with --system, --jobs, --roofline)")
    if args.write_check and args.roofline:  # the roofline's record is of vLLM rows alone
        df = df[df["backend"] == "vllm"]
    df = with_aic(df.reset_index(drop=True), args.system)
    if args.roofline and (args.fit or args.overhead_ms is not None):
        ap.error("--fit and --overhead-ms set a profile's overhead; --roofline replays without "
                 "a profile")
    knobs = Knobs(overhead_s=None if args.overhead_ms is None else args.overhead_ms / 1e3,
                  roofline=args.roofline)
    if args.fit:
        knobs, proto = fit(df, args.kv_dtype, args.jobs, args.fit_engine)
        dense_rows, moe_rows = FIT_TRAINING[args.fit_engine]
        write_fit(knobs, proto, int(training_mask(df, dense_rows).sum()),
                  int(training_mask(df, moe_rows).sum()))
        _PROFILES.clear()  # the written profile is now the engine's own
        # replay what ships: the written profile, whose eager cost also keeps --fit-cpp-moe's
        # rate, which the fitted knobs lack (they would charge C++-launched experts Triton's)
        knobs = Knobs()
    if args.fit_cpp_moe:
        fit_cpp_moe(df, args.kv_dtype, args.jobs, proto)
        _PROFILES.clear()
    res = run(df, args.kv_dtype, proto, args.jobs, knobs)
    if args.rows:
        print("\n".join(row_lines(res)) + "\n")
    trained = any(training_mask(df, rows[0]).any() for rows in FIT_TRAINING.values())
    reports = args.overhead_ms is None and not args.steady_state and not args.roofline
    wants_cpp = (reports and (args.system == FIT_CPP_MOE_SYSTEM or trained)
                 or args.roofline and args.write_check and args.system == FIT_CPP_MOE_SYSTEM)
    cpp = cpp_moe_rows(df, args.kv_dtype, args.jobs) if wants_cpp else None
    if args.system != FIT_SYSTEM:
        print("\n".join(other_system_report(res, args.system, proto, args.roofline, cpp))
              + "\n")
    elif trained and reports:
        print("\n".join(fit_report(df, res, proto, cpp)) + "\n")
    print("\n".join(summary_lines(res)))
    if args.write_check:
        print(f"wrote {write_check(res, args.system, cpp, args.roofline)}")
    if args.csv:
        res.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
