"""Round 29 (sglm): the SGLang profiles in benchmarks/data carry NVIDIA's measured sets.

The shipped vLLM profiles and, since this round, the TensorRT-LLM ones hold every GQA attention
shape, the dense-GEMM grid and the other measured sets NVIDIA's tables have
(``import_aiconfigurator``'s ``measured``). The H200 SGLang profile held only the shapes of its
models, and H100 and B200 had no SGLang profile at all (each row imported its own tables into
an empty one), so a shape a row looked up that NVIDIA had not measured was read from a
neighbour among those few tables or from the roofline. SGLang's profiles of all three GPUs are
now built, and saved, with the measured sets.
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))
import fidelity_silicon as fs  # noqa: E402

from tiersim.perf.profile import load_profile  # noqa: E402


def test_an_unfitted_overhead_moves_to_another_gpu_as_a_savable_profile(tmp_path):
    """SGLang's per-iteration overhead is the roofline's (not fitted): ``with_h200_fit``
    labelled it 'roofline; applied unchanged to h100_sxm rows', a source no profile may carry,
    so saving SGLang's H100 profile ended in a ProfileError. A fitted source is still labelled
    as moved; an unfitted one stays what it is."""
    from tiersim.perf.profile import Profile, save_profile

    moved = fs.with_h200_fit(Profile("p", "H100", {}, 0.0, "roofline", []), "sglang", "h100_sxm")
    assert moved.overhead_source == "roofline"
    assert moved.eager.source.endswith("; applied unchanged to h100_sxm rows")
    save_profile(moved, tmp_path / "h100.json")
    assert load_profile(tmp_path / "h100.json").overhead_source == "roofline"
