"""Round 30 review (helper rev): bugs found reading the last two sessions' changes."""

from __future__ import annotations

import numpy as np
from conftest import BUNDLED_H200_PROFILE

from tiersim.perf import build_step_model
from tiersim.perf.aiconfigurator import aic_model_path
from tiersim.perf.assembly import deepgemm_rows
from tiersim.perf.profile import load_profile

QWEN_FP8 = "aic:Qwen--Qwen3-235B-A22B-FP8"


def test_deepgemm_experts_under_data_parallel_read_the_rank_step_graph_or_eager():
    """With attention DP the experts compute every rank's tokens (``T x dp``), but a step
    replays a CUDA graph by one rank's ``T``, as the eager host cost is charged: a 300-token
    step at DP 2 (600 tokens at the experts, above the 512-token graph limit) is a graph step,
    and its DeepGEMM expert GEMMs are read graph, not eager (TP 1 x DP 2, EP 2: 0.567 ms a
    MoE layer read eager before, 0.530 ms graph)."""
    step = build_step_model(aic_model_path(QWEN_FP8), "checkpoint", "h200", 1,
                            profile=load_profile(BUNDLED_H200_PROFILE), dp=2, ep=2,
                            moe_backend="deepgemm")
    tokens = np.array([300.0])
    assert step.ops._graph_max == 512 and not step.ops.eager_s(tokens).any()  # a graph step
    rows = deepgemm_rows(tokens * 2, step._local_experts, step.model.top_k)

    def gemms(step_tokens):
        return sum(float(step.ops.gemm(rows, *shape, "fp8_block", tokens=step_tokens)[0])
                   for shape in (step._expert_up, step._expert_down))

    graph, eager = gemms(tokens), gemms(tokens * 2)
    assert graph < eager
    passes = float(step._routed_experts(tokens * 2, step_tokens=tokens)[0]) - graph
    assert 0 < passes < 0.1 * graph
    layer = float(step._moe_layer(tokens)[0])
    router = float(step.ops.gemm(tokens, *step._router, "bf16")[0])
    shared = 0.0
    if step.model.shared_intermediate:
        shared = sum(float(step.ops.gemm(tokens, *s, step._fmt("shared_experts"))[0])
                     for s in (step._shared_gate_up, step._shared_down))
    assert np.isclose(layer, router + graph + passes + shared)


def test_out_as_the_home_folder_is_refused_as_such_before_a_file_there(tmp_path, monkeypatch):
    """``--out ~`` holding a user's report.html was told to move that file (``would overwrite
    this file ... move the file``); moved, the same command then refused the home folder
    itself. The home folder is refused first, whatever it holds."""
    import pytest

    from tiersim.errors import TiersimError
    from tiersim.outputs import claim_out_dir

    home = tmp_path / "home"
    home.mkdir()
    (home / "report.html").write_text("my notes\n")
    monkeypatch.setenv("HOME", str(home))
    for kind in ("run", "plan", "sweep"):
        with pytest.raises(TiersimError) as refused:
            claim_out_dir(home, kind)
        assert "is your home folder" in str(refused.value)
        assert "move the file" not in str(refused.value)
    assert (home / "report.html").read_text() == "my notes\n"


def test_out_through_a_sweeps_points_and_back_out_is_not_inside_points(tmp_path):
    """``--out sw/points/../run1`` is ``sw/run1``, beside the sweep's points, not among them:
    it was refused as lying inside ``sw/points`` (the path as typed was read component by
    component, ``..`` included). A path that does end inside points is still refused."""
    import pytest

    from tiersim.errors import TiersimError
    from tiersim.outputs import claim_out_dir

    sweep = tmp_path / "sw"
    (sweep / "points").mkdir(parents=True)
    (sweep / "sweep.json").write_text("{}\n")
    claim_out_dir(sweep / "points" / ".." / "run1", "run")  # no refusal
    with pytest.raises(TiersimError, match="lies inside"):
        claim_out_dir(sweep / "run1" / ".." / "points" / "run2", "run")
