"""Real per-request correctness labels: RouteLLM's MMLU weak/strong table.

Source: lm-sys/RouteLLM, commit 0b64fda, Apache-2.0. Weak = Mixtral-8x7B-Instruct-v0.1,
strong = gpt-4-1106-preview. One CSV per MMLU subject (``prompt``, then one boolean column per
model); the prompts listed in ``contaminated_prompts.jsonl`` are dropped.

The package ships a compact derived copy (``tiersim/data/routellm_mmlu.parquet``: subject,
prompt, prompt_chars, weak_correct, strong_correct) so it works without the raw files;
:func:`build_compact` regenerates it from the raw CSVs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

WEAK_COLUMN = "mistralai/Mixtral-8x7B-Instruct-v0.1"
STRONG_COLUMN = "gpt-4-1106-preview"
PACKAGED = Path(__file__).resolve().parent.parent / "data" / "routellm_mmlu.parquet"


def raw_mmlu_dir(repo_root: Path | None = None) -> Path:
    """The raw MMLU label folder in the shared data checkout next to the repository."""
    root = repo_root or Path(__file__).resolve().parents[2]
    return root.parent / "shared" / "data" / "labels" / "routellm" / "mmlu"


def read_raw_mmlu(mmlu_dir: Path) -> pd.DataFrame:
    """Read every ``mmlu_<subject>.csv`` in ``mmlu_dir``, dropping contaminated prompts."""
    contaminated = set()
    cpath = mmlu_dir / "contaminated_prompts.jsonl"
    if cpath.exists():
        with cpath.open() as fh:
            contaminated = {json.loads(line)["eval_prompt"] for line in fh if line.strip()}
    frames = []
    for path in sorted(mmlu_dir.glob("mmlu_*.csv")):
        raw = pd.read_csv(path, compression=None)
        frames.append(
            pd.DataFrame(
                {
                    "subject": path.stem.removeprefix("mmlu_"),
                    "prompt": raw["prompt"].astype(str),
                    "weak_correct": raw[WEAK_COLUMN].astype(bool),
                    "strong_correct": raw[STRONG_COLUMN].astype(bool),
                }
            )
        )
    df = pd.concat(frames, ignore_index=True)
    df = df[~df["prompt"].isin(contaminated)].reset_index(drop=True)
    df["prompt_chars"] = df["prompt"].str.len().astype("int32")
    df["subject"] = df["subject"].astype("category")
    return df[["subject", "prompt", "prompt_chars", "weak_correct", "strong_correct"]]


def build_compact(mmlu_dir: Path | None = None, out: Path = PACKAGED) -> Path:
    """Write the compact derived label file shipped with the package; returns its path."""
    df = read_raw_mmlu(mmlu_dir or raw_mmlu_dir())
    df.to_parquet(out, compression="zstd", index=False)
    return out


def load_mmlu_labels(prefer_raw: bool = False) -> pd.DataFrame:
    """The RouteLLM MMLU labels (contaminated prompts dropped).

    Reads the packaged compact file; with ``prefer_raw`` and the shared data present, reads the
    raw CSVs instead (same rows).
    """
    raw = raw_mmlu_dir()
    if prefer_raw and raw.exists():
        return read_raw_mmlu(raw)
    from tiersim.arrowfile import arrow_file

    with arrow_file(PACKAGED) as handle:
        return pd.read_parquet(handle)


def as_trace(
    labels: pd.DataFrame, tier_names: tuple[str, str] = ("weak", "strong")
) -> pd.DataFrame:
    """The labels as a canonical-table fragment: ``correct_<tier>`` floats, prompt, subject,
    ``input_tokens`` (prompt characters / 4, at least 1) and a ``request_id``."""
    out = pd.DataFrame(
        {
            "request_id": range(len(labels)),
            "input_tokens": (labels["prompt_chars"] // 4).clip(lower=1).astype("int32"),
            "subject": labels["subject"],
            "prompt": labels["prompt"],
            f"correct_{tier_names[0]}": labels["weak_correct"].astype("float32"),
            f"correct_{tier_names[1]}": labels["strong_correct"].astype("float32"),
        }
    )
    return out
