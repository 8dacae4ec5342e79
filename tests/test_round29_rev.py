"""Round 29 (helper rev): review of the round's changes on main."""

from __future__ import annotations

import dataclasses

import pytest
from test_fidelity import fs

from tiersim.perf import build_step_model
from tiersim.perf.base import StepShape

# ---------------------------------------------------------------- CUDA-graph size at DP layouts


@pytest.mark.parametrize("tp, dp, eager", [(1, 2, True), (1, 4, False), (2, 2, False),
                                           (4, 1, False), (1, 8, False)])
def test_sglang_graph_size_reads_the_replicas_gpus_at_an_attention_dp_layout(tp, dp, eager):
    """SGLang's cuda_graph_max_bs follows its ``--tp``, which under ``--enable-dp-attention``
    counts every GPU of the replica (``tp x dp``), not one rank's attention TP: a replica of 4
    or more H200s captures graphs of up to 512 requests a rank, so 300 decodes a rank are
    graph-replayed at TP 1 x DP 4 (they were read as eager, at TP 1's 256), and eager only
    where the replica has fewer than 4 GPUs."""
    prof = fs.resolve_profile(fs.ENGINE_PROFILES["sglang"])
    one_size = dataclasses.replace(prof, eager=dataclasses.replace(prof.eager,
                                                                   graph_max_tokens_by_tp=()))
    shape = StepShape(((1, 1500),) * 300)
    times = [build_step_model("qwen3-coder-30b-a3b", "fp8", "h200", tp=tp, dp=dp,
                              profile=p).step_time(shape) for p in (prof, one_size)]
    model = build_step_model("qwen3-coder-30b-a3b", "fp8", "h200", tp=tp, dp=dp).model
    extra = prof.eager.seconds(model.layers, model.moe_layers) if eager else 0.0
    assert times[0] - times[1] == pytest.approx(extra, rel=1e-6, abs=1e-12)


def test_a_dense_models_dp_ranks_read_the_graph_size_of_their_own_tp():
    """A dense model's DP ranks are separate engines (SGLang's router DP: each ``--tp 2``), so
    TP 2 x DP 2 reads TP 2's 256 and a 300-decode step of a rank stays eager."""
    prof = fs.resolve_profile(fs.ENGINE_PROFILES["sglang"])
    one_size = dataclasses.replace(prof, eager=dataclasses.replace(prof.eager,
                                                                   graph_max_tokens_by_tp=()))
    shape = StepShape(((1, 1500),) * 300)
    times = [build_step_model("llama-3.1-8b", "fp8", "h200", tp=2, dp=2,
                              profile=p).step_time(shape) for p in (prof, one_size)]
    assert times[0] - times[1] == pytest.approx(prof.eager.seconds(32, 0), rel=1e-6)


# ---------------------------------------------------------------- --out of placeholder files


@pytest.mark.parametrize("kind", ["run", "sweep", "plan"])
@pytest.mark.parametrize("names", [(".gitkeep",), (".gitignore",), (".keep",), (".DS_Store",),
                                   (".gitignore", ".DS_Store")])
def test_an_out_folder_of_placeholder_files_only_is_still_written(tmp_path, kind, names):
    """A results folder a project keeps in git (``results/.gitkeep``, or a ``.gitignore`` of
    ``*``) or that a file browser has opened (``.DS_Store``) is an empty folder to its user:
    eaa41f6 refused it as 'what no tiersim command wrote'; it is claimed as before."""
    from tiersim.outputs import claim_out_dir

    out = tmp_path / "results"
    out.mkdir()
    for name in names:
        (out / name).write_text("*\n")
    claim_out_dir(out, kind)
    assert sorted(p.name for p in out.iterdir()) == sorted(names)


def test_placeholder_files_beside_a_projects_files_are_still_refused(tmp_path):
    """Beside other files they do not make a project's folder an --out folder."""
    from tiersim.errors import TiersimError
    from tiersim.outputs import claim_out_dir

    out = tmp_path / "project"
    out.mkdir()
    for name in (".gitignore", "a.py"):
        (out / name).write_text("x\n")
    with pytest.raises(TiersimError, match=r"--out holds what no tiersim command wrote \(a\.py\)"):
        claim_out_dir(out, "run")


# ---------------------------------------------------------------- a window's ends, every digit


def test_the_step_tiers_window_note_shows_the_window_as_given(tmp_path):
    """31bb9bc shows a trace window with every digit its ends were given (the loader's
    ``_shown``); the step-tiers note under a window kept ``:g``: ``trace.window [4, 1e+09)``
    for ``[4.000000001, 1000000010.5)``, a window that seemed to hold a step at 4 s."""
    from test_step_tiers_check import agentic_file, steps

    from tiersim.errors import Note
    from tiersim.inputs import check_step_tiers
    from tiersim.scenario import load_scenario

    path = agentic_file(tmp_path, "{planning: bf16, recovery: fp8}", trace=True)
    scn = load_scenario(path)
    window = (4.000000001, 1000000010.5)
    scn = scn.model_copy(update={"trace": scn.trace.model_copy(update={"window": window})})
    with pytest.warns(Note, match=r"router.step_tiers.recovery: no step in trace.window "
                      r"\[4\.000000001, 1000000010\.5\) has type 'recovery'"):
        check_step_tiers(scn, steps(["planning", "final"]), str(path))


# ---------------------------------------------------------------- a stopped sweep's folder


def test_a_stopped_sweeps_folder_with_a_note_is_resumed_into(tmp_path):
    """A sweep stopped before its sweep.json (Ctrl-C, or a point that failed: the lock it made
    goes with it) leaves its finished points in points/; the sweep resumes from them, and
    eaa41f6 let that folder be resumed, but not once its user had put a note beside them:
    'holds what no tiersim command wrote (notes.txt) and no tiersim results'. A points folder
    of point records is a sweep's results, as the sweep's own check takes it."""
    from tiersim.atomic import write_point
    from tiersim.outputs import claim_out_dir

    out = tmp_path / "sweep"
    write_point(out, {"point_id": "p0001", "values": {}})
    (out / "notes.txt").write_text("stopped at 1 of 4\n")
    claim_out_dir(out, "sweep")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "points"]


def test_an_empty_points_folder_beside_a_projects_files_is_still_refused(tmp_path):
    """A folder named points with no point record in it makes no project's folder a sweep's."""
    from tiersim.errors import TiersimError
    from tiersim.outputs import claim_out_dir

    out = tmp_path / "project"
    (out / "points").mkdir(parents=True)
    (out / "a.py").write_text("x\n")
    with pytest.raises(TiersimError, match=r"--out holds what no tiersim command wrote \(a\.py\)"):
        claim_out_dir(out, "sweep")
