"""Round 23 of hostile input on replica layouts and memory fit: a tier's GPUs, data and expert
parallelism, memory utilisation and the model's widths they split. Each a failure found from
outside and fixed, with the exact line a user sees."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import tiny_doc, write_yaml
from test_hostile_inputs import run_cli

CONFIGS = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "configs"


def _config(tmp_path: Path, name: str, **fields) -> Path:
    """A copy of the benchmark config ``name`` with ``fields`` replaced, under tmp_path/name."""
    cfg = json.loads((CONFIGS / name / "config.json").read_text())
    cfg.update(fields)
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder / "config.json"


def _run(tmp_path, capsys, tier: dict, model: str | None = None) -> tuple[int, str]:
    """``tiersim run`` of one tier (``tier`` over a bf16 tier of one replica) of the tiny
    scenario, on ``model`` where given: (exit status, stderr on one line)."""
    doc = tiny_doc(router={"policy": "uniform"})
    if model is not None:
        doc["model"] = model
    doc["tiers"] = [{"name": "a", "precision": "bf16", "replicas": 1,
                     "cost_per_gpu_hour": 3.5, **tier}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    return code, " ".join(err.split())


def test_a_moe_models_dense_mlp_width_the_gpus_do_not_divide_is_refused(tmp_path, capsys):
    """A MoE model's leading dense layers are split tensor-parallel as a dense model's MLP
    (vLLM's MergedColumnParallelLinear divides the width by tp, an assertion where it does
    not); tiersim checked the dense MLP width of dense models only, and ran DeepSeek-V3 with a
    dense width of 18,440 over 16 GPUs."""
    model = _config(tmp_path, "DeepSeek-V3", intermediate_size=18440)
    code, err = _run(tmp_path, capsys, {"gpus_per_replica": 16, "expert_parallel": True},
                     str(model))
    assert code == 1, err
    assert ("line 16: tiers[0].gpus_per_replica: tier 'a': DeepSeek-V3 cannot be split over "
            "16 GPUs: MLP width 18440 is not divisible by 16; use gpus_per_replica in "
            "{1, 2, 4, 8}") in err, err
    assert "Traceback" not in err


def test_a_moe_models_shared_expert_width_the_gpus_do_not_divide_is_refused(tmp_path, capsys):
    """Shared experts are one dense MLP of their summed width, split tensor-parallel (vLLM's
    DeepseekV2MLP / Qwen2MoeMLP): a width tp does not divide cannot be loaded."""
    model = _config(tmp_path, "Qwen3.5-397B-A17B")
    cfg = json.loads(model.read_text())
    cfg["text_config"]["shared_expert_intermediate_size"] = 1000
    model.write_text(json.dumps(cfg))
    code, err = _run(tmp_path, capsys, {"gpus_per_replica": 16, "expert_parallel": True},
                     str(model))
    assert code == 1, err
    assert ("tiers[0].gpus_per_replica: tier 'a': Qwen3.5-397B-A17B cannot be split over 16 "
            "GPUs: shared-expert width 1000 is not divisible by 16; use gpus_per_replica in "
            "{1, 2, 4, 8}") in err, err


def test_block_fp8_shared_experts_split_into_partial_blocks_are_noted(tmp_path, capsys):
    """Shared experts are a linear layer of their own: block FP8 over 16 GPUs leaves Qwen3.5's
    1,024-wide shared experts 64 per GPU, which vLLM's Fp8LinearMethod refuses as it refuses a
    dense MLP's partial blocks; the note checked the routed experts and dense MLPs only (with
    expert_parallel the routed ones stay whole, so nothing was said)."""
    model = _config(tmp_path, "Qwen3.5-397B-A17B")
    code, err = _run(tmp_path, capsys, {"precision": "fp8_block", "gpus_per_replica": 16,
                                        "expert_parallel": True}, str(model))
    assert code == 0, err
    assert ("note: tier a: its block-FP8 shared-expert width 1,024 over 16 GPUs is 64 per GPU, "
            "not whole 128-wide blocks: vLLM refuses to load that split in the versions that "
            "check it; split it over 1 or 2 or 4 or 8 GPUs") in err, err


def test_a_gpu_memory_utilization_of_the_whole_gpu_is_refused_as_vllm_refuses_it(tmp_path,
                                                                                   capsys):
    """vLLM starts only where the GPU's free memory is at least gpu_memory_utilization of its
    total ('Free memory on device ... on startup is less than desired GPU memory utilization'),
    and its own CUDA context is already there, so 1 never starts; tiersim ran it with a KV
    cache of every byte the weights left."""
    code, err = _run(tmp_path, capsys, {"gpu_memory_utilization": 1})
    assert code == 1, err
    assert ("line 16: tiers[0].gpu_memory_utilization: must be below 1 (got 1): vLLM refuses "
            "to start where the GPU's free memory is less than that share of its total, and "
            "its own CUDA context is already there; use at most 0.99") in err, err


def test_a_gpu_memory_utilization_in_percent_is_told_as_a_share(tmp_path, capsys):
    code, err = _run(tmp_path, capsys, {"gpu_memory_utilization": 90})
    assert code == 1, err
    assert ("tiers[0].gpu_memory_utilization: must be below 1 (got 90): it is a share of the "
            "GPU's memory, 0.9 for 90 %") in err, err


def test_an_uneven_expert_split_is_not_called_impossible(tmp_path, capsys):
    """vLLM places experts unevenly where the GPUs do not divide them (determine_expert_map:
    the first ``experts % ep`` GPUs one more); the refusal said 128 experts 'cannot be split
    over 6 GPUs', which vLLM does. tiersim sizes and times an even share, so it still refuses,
    saying why."""
    code, err = _run(tmp_path, capsys, {"gpus_per_replica": 6, "data_parallel": 6,
                                        "expert_parallel": True})
    assert code == 1, err
    assert ("tiers[0].gpus_per_replica: tier 'a': Qwen3-Coder-30B-A3B: 128 experts over 6 GPUs "
            "are 22 on some and 21 on others (vLLM gives the first GPUs one more), and tiersim "
            "models an even share only; drop expert_parallel") in err, err


def test_a_fit_error_under_data_parallelism_says_the_gpus_are_one_ranks(tmp_path, capsys):
    """A replica of 2 GPUs over 2 data-parallel ranks was said not to fit 'on 1x H200', with
    the scenario saying 2 GPUs: each rank holds its own copy of the weights on its 1 GPU."""
    code, err = _run(tmp_path, capsys, {"gpus_per_replica": 2, "data_parallel": 2},
                     "Llama-3.1-70B")
    assert code == 1, err
    assert ("tiers[0]: tier 'a': Llama-3.1-70B at BF16 does not fit on 1x H200 (each of "
            "data_parallel 2 ranks): weights 141.1 GB + reserve 3.6 GB > usable 135.7 GB "
            "(short by 9.0 GB); use gpus_per_replica 4, a smaller precision or a GPU with "
            "more memory") in err, err
