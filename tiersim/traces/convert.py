"""Regenerate the bundled traces in this folder from the public source files.

Usage, from the repository root with tiersim installed: ``python traces/convert.py [SOURCE_DIR]``
(default ``../shared/data/traces`` beside the
repository). Each source file is checked against its SHA-256 below, read with
``tiersim.trace`` (the same loaders users get), and written as canonical Parquet (zstd) with its
origin in the Parquet key-value metadata. See README.md here for what each file is.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pandas as pd

from tiersim.trace import load_lengths, load_trace, write_canonical

HERE = Path(__file__).resolve().parent
DEFAULT_SOURCE = HERE.parents[2] / "shared" / "data" / "traces"  # beside the checkout

AZURE = "Azure/AzurePublicDataset data/ @7909210 (Patel et al., Splitwise, ISCA 2024), CC-BY-4.0"
MOONCAKE = "kvcache-ai/Mooncake FAST25-release/traces/ @3cca71d (Qin et al., FAST 2025), Apache-2.0"
SHAREGPT = "microsoft/sarathi-serve data/processed_traces/ @72339db, Apache-2.0"

# output name -> (source file, sha256, origin, task_type or None, length-only?)
BUNDLE = {
    "azure2023_code.parquet": (
        "AzureLLMInferenceTrace_code.csv",
        "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6", AZURE, "code", False),
    "azure2023_conv.parquet": (
        "AzureLLMInferenceTrace_conv.csv",
        "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8", AZURE, "conv", False),
    "mooncake_synthetic.parquet": (
        "synthetic_trace.jsonl",
        "bd070915a98fc0ed264d7cfef2ce746002eb3076a695ec31ba2674c0111ec131", MOONCAKE, None, False),
    "sharegpt_lengths.parquet": (
        "sharegpt_8k_filtered_stats_llama2_tokenizer.csv",
        "6d6c296302a853e2669a674a96f269283e60c57e60363bd450588a1066919f9f", SHAREGPT, None, True),
}


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def convert_one(source: Path, task_type: str | None, length_only: bool) -> pd.DataFrame:
    """The canonical table of one source file (token lengths only for a length-only file)."""
    if length_only:
        return load_lengths(source)
    df = load_trace(source)
    if task_type is not None:
        df["task_type"] = pd.Categorical([task_type] * len(df))
    return df


def convert_all(source_dir: Path = DEFAULT_SOURCE, out_dir: Path = HERE) -> list[Path]:
    """Check, convert and write every bundled trace; returns the written paths."""
    written = []
    for out_name, (src_name, digest, origin, task_type, length_only) in BUNDLE.items():
        source = source_dir / src_name
        if not source.is_file():
            raise SystemExit(f"{source}: not found; give the folder holding the public source "
                             f"files ({', '.join(v[0] for v in BUNDLE.values())}) as the "
                             "argument")
        if sha256(source) != digest:
            raise SystemExit(f"{source}: SHA-256 differs from the pinned one; wrong file?")
        df = convert_one(source, task_type, length_only)
        meta = {"source": f"{origin}: {src_name}", "source_sha256": digest}
        written.append(write_canonical(df, out_dir / out_name, meta))
        print(f"{out_dir / out_name}: {len(df):,} rows from {src_name}")
    return written


if __name__ == "__main__":
    convert_all(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_SOURCE)
