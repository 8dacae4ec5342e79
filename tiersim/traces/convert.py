"""Regenerate the bundled traces in this folder from the public source files.

Usage, from a source checkout's root with tiersim installed:
``python tiersim/traces/convert.py [SOURCE_DIR] [--out DIR]`` (SOURCE_DIR defaults to
``../shared/data/traces`` beside the checkout, DIR to this folder). An installed copy (a wheel's,
in site-packages) has no such default and refuses to write into the installed package: give it
SOURCE_DIR and ``--out``. Each source file is checked against its SHA-256 below, read with
``tiersim.trace`` (the same loaders users get), and written as canonical Parquet (zstd) with its
origin in the Parquet key-value metadata. See README.md here for what each file is.
"""

from __future__ import annotations

import argparse
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


def in_checkout(package: Path) -> bool:
    """Whether ``package`` (this folder) sits in a source checkout (a pyproject.toml above
    the tiersim package) rather than in an installed wheel."""
    return (package.parents[1] / "pyproject.toml").is_file()


def check_sources(source_dir: Path) -> None:
    """Stop with one line naming every public source file ``source_dir`` lacks."""
    missing = [v[0] for v in BUNDLE.values() if not (source_dir / v[0]).is_file()]
    if missing:
        raise SystemExit(f"{source_dir}: lacks {', '.join(missing)}; give the folder holding "
                         "the public source files (traces/README.md says where each is from) "
                         "as SOURCE_DIR")


def convert_all(source_dir: Path = DEFAULT_SOURCE, out_dir: Path = HERE) -> list[Path]:
    """Check, convert and write every bundled trace; returns the written paths."""
    check_sources(source_dir)
    written = []
    for out_name, (src_name, digest, origin, task_type, length_only) in BUNDLE.items():
        source = source_dir / src_name
        if sha256(source) != digest:
            raise SystemExit(f"{source}: SHA-256 differs from the pinned one; wrong file?")
        df = convert_one(source, task_type, length_only)
        meta = {"source": f"{origin}: {src_name}", "source_sha256": digest}
        written.append(write_canonical(df, out_dir / out_name, meta))
        print(f"{out_dir / out_name}: {len(df):,} rows from {src_name}")
    return written


class _Parser(argparse.ArgumentParser):
    """Arguments whose errors are one line and exit 1, as tiersim's commands' are."""

    def error(self, message: str):
        """Stop with ``message`` on one line."""
        raise SystemExit(f"convert.py: {message}")


def main(argv: list[str]) -> list[Path]:
    """Parse ``[SOURCE_DIR] [--out DIR]`` and convert; an installed copy (no checkout around
    it) needs SOURCE_DIR and refuses to write into the installed package."""
    parser = _Parser(description="Regenerate tiersim's bundled traces from their sources.")
    parser.add_argument("source_dir", nargs="?", type=Path, help="the public source files")
    parser.add_argument("--out", type=Path, default=HERE, help="where to write the traces")
    args = parser.parse_args(argv)
    if not in_checkout(HERE):
        if args.out.resolve() == HERE:
            raise SystemExit(f"{HERE}: is the installed tiersim package, not a source "
                             "checkout; run convert.py from a source checkout, or pass --out "
                             "DIR to write the traces elsewhere")
        if args.source_dir is None:
            raise SystemExit("convert.py: no SOURCE_DIR given, and an installed copy has no "
                             "default (a source checkout's is ../shared/data/traces); give the "
                             "folder holding the public source files")
    return convert_all(args.source_dir or DEFAULT_SOURCE, args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
