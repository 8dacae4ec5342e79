"""Hardware catalogue: GPUs, numeric precisions and model architectures."""

from __future__ import annotations

from tiersim.hardware.gpus import GPU, GPUS, get_gpu
from tiersim.hardware.models import MODELS, ModelArch, get_model
from tiersim.hardware.precisions import PRECISIONS, Precision, get_precision, kv_dtype_bytes

__all__ = [
    "GPU",
    "GPUS",
    "MODELS",
    "PRECISIONS",
    "ModelArch",
    "Precision",
    "get_gpu",
    "get_model",
    "get_precision",
    "kv_dtype_bytes",
]
