"""Default per-precision accuracy, derived from qllm-eval (labelled "prior" everywhere).

Source: thu-nics/qllm-eval (MIT), tables of aggregate accuracy of 10 model families on 8 tasks
at FP16 and quantised settings (``<task>_w.txt``: FP16, W8, W4, W3, W2 weight-only;
``<task>_wa.txt``: FP16, W8A8, W4A8, W4A4). A cell ``a/b`` holds two scores; the first is used.

The prior for a precision is the median, over (model, task) pairs whose FP16 accuracy is at least
30% (well above chance on most tasks), of accuracy(quantised) / accuracy(FP16). tiersim maps its
precisions onto qllm-eval's settings: ``bf16`` <- FP16, ``fp8`` <- W8A8, ``w8a16`` <- W8,
``w4a16`` <- W4, ``nvfp4`` <- W4A8 (a proxy: qllm-eval has no FP4 with block scales; its W4A4 is
per-channel INT4 and collapses to chance, which NVFP4 does not).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

PRIORS_FILE = Path(__file__).resolve().parent.parent / "data" / "precision_priors.json"
SETTINGS = {
    "w": ["fp16", "w8", "w4", "w3", "w2"],
    "wa": ["fp16", "w8a8", "w4a8", "w4a4"],
}
PRECISION_TO_SETTING = {
    "bf16": "fp16",
    "fp16": "fp16",
    "fp8": "w8a8",
    "w8a16": "w8",
    "int8": "w8a8",
    "w4a16": "w4",
    "int4": "w4",
    "nvfp4": "w4a8",
}
MIN_FP16_ACCURACY = 30.0


def _cell(text: str) -> float:
    """First number of a qllm-eval cell (``'46.69/45.89'`` -> 46.69); NaN when empty."""
    text = text.strip()
    return float(text.split("/")[0]) if text else float("nan")


def read_table(path: Path) -> dict[str, list[float]]:
    """One qllm-eval table as ``{model: [accuracy per setting]}``."""
    rows = {}
    for line in path.read_text().splitlines():
        if line.strip():
            parts = line.split("\t")
            rows[parts[0]] = [_cell(p) for p in parts[1:]]
    return rows


def derive_priors(ladder_dir: Path) -> dict:
    """Relative accuracy per qllm-eval setting (median ratio to FP16) and the pair counts."""
    ratios: dict[str, list[float]] = {}
    for kind, names in SETTINGS.items():
        for path in sorted(ladder_dir.glob(f"*_{kind}.txt")):
            if path.stem.startswith("mmlu-calib"):
                continue
            for values in read_table(path).values():
                base = values[0]
                if not base >= MIN_FP16_ACCURACY:
                    continue
                for name, value in zip(names[1:], values[1:], strict=False):
                    if np.isfinite(value):
                        ratios.setdefault(name, []).append(value / base)
    settings = {k: round(float(np.median(v)), 4) for k, v in ratios.items()}
    settings["fp16"] = 1.0
    return {
        "label": "prior",
        "source": "thu-nics/qllm-eval (MIT), median accuracy ratio to FP16, FP16 >= 30%",
        "relative_accuracy": settings,
        "pairs": {k: len(v) for k, v in ratios.items()},
        "precision_to_setting": PRECISION_TO_SETTING,
    }


def write_priors(ladder_dir: Path, out: Path = PRIORS_FILE) -> Path:
    """Regenerate the packaged priors file from the raw qllm-eval tables."""
    out.write_text(json.dumps(derive_priors(ladder_dir), indent=1, sort_keys=True) + "\n")
    return out


def relative_accuracy(precision: str) -> float:
    """Prior accuracy of ``precision`` relative to BF16 (1.0 for BF16); unknown names raise."""
    data = json.loads(PRIORS_FILE.read_text())
    setting = data["precision_to_setting"].get(precision.lower())
    if setting is None:
        from tiersim.hardware.precisions import PRECISIONS  # the names a tier can take

        known = ", ".join(sorted(set(data["precision_to_setting"]) & set(PRECISIONS)))
        raise KeyError(f"no accuracy prior for precision {precision!r}; known: {known}")
    return float(data["relative_accuracy"][setting])
