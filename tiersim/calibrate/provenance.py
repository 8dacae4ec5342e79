"""Where a harness profile was measured: device, driver, CUDA, torch, clocks and date.

No host name, user name or path is recorded. ``nvidia-smi`` is queried when present; its absence
(or failure) is tolerated and noted.
"""

from __future__ import annotations

import datetime
import platform
import subprocess

import torch

import tiersim

SMI_FIELDS = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm",
              "clocks.max.mem", "power.limit", "temperature.gpu")


def nvidia_smi(index: int = 0) -> dict[str, str]:
    """The GPU's fields from ``nvidia-smi --query-gpu`` ({} when unavailable)."""
    cmd = ["nvidia-smi", f"--id={index}", f"--query-gpu={','.join(SMI_FIELDS)}",
           "--format=csv,noheader"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    values = [v.strip() for v in out.strip().splitlines()[0].split(",")] if out.strip() else []
    return dict(zip(SMI_FIELDS, values, strict=False))


def gpu_short_name(full: str) -> str:
    """'NVIDIA H200' -> 'H200'; other names unchanged."""
    return full.removeprefix("NVIDIA ").strip()


def collect(device: torch.device) -> dict:
    """Provenance fields of the profile schema for ``device``."""
    base = {
        "source": "harness",
        "torch": torch.__version__,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        "tool": f"tiersim.calibrate {tiersim.__version__}",
        "python": platform.python_version(),
    }
    if device.type != "cuda":
        cpu = platform.processor() or platform.machine()
        return {**base, "gpu_name": "cpu", "driver": "", "cuda": "", "clocks": "",
                "device": f"CPU {cpu}, {torch.get_num_threads()} torch threads"}
    index = device.index or 0
    props = torch.cuda.get_device_properties(index)
    smi = nvidia_smi(index)
    clocks = ("" if not smi else
              f"sm {smi.get('clocks.sm', '?')} (max {smi.get('clocks.max.sm', '?')}), "
              f"mem {smi.get('clocks.mem', '?')} (max {smi.get('clocks.max.mem', '?')}), "
              f"power limit {smi.get('power.limit', '?')}, {smi.get('temperature.gpu', '?')} C "
              f"at start")
    return {**base, "gpu_name": props.name, "driver": smi.get("driver_version", ""),
            "cuda": torch.version.cuda or "", "clocks": clocks or "nvidia-smi unavailable",
            "device": (f"{props.name}, compute capability {props.major}.{props.minor}, "
                       f"{props.multi_processor_count} SMs, "
                       f"{props.total_memory / 2**30:.0f} GiB")}


def clocks_now(index: int = 0) -> str:
    """Current SM and memory clocks by nvidia-smi ('' when unavailable), to note after a run."""
    smi = nvidia_smi(index)
    return f"sm {smi['clocks.sm']}, mem {smi['clocks.mem']}" if "clocks.sm" in smi else ""
