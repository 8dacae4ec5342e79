"""A layout refusal (tensor, data or expert parallelism a model cannot take) is located at the
key it asks the user to change, with that key's YAML line, and lists the counts that work."""

from __future__ import annotations

import dataclasses
import json

import pytest
from conftest import tiny_doc, write_yaml
from test_hostile_inputs import one_error_line, run_cli

from tiersim.errors import FitError
from tiersim.hardware import get_model
from tiersim.perf.memory import check_parallel

MIXTRAL = {"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
           "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
           "max_position_embeddings": 32768}


def _mixtral(tmp_path, **edits) -> str:
    """A Mixtral-shaped config (8 experts) written to ``tmp_path/mixtral/config.json``; its
    path relative to ``tmp_path``."""
    (tmp_path / "mixtral").mkdir()
    (tmp_path / "mixtral" / "config.json").write_text(json.dumps({**MIXTRAL, **edits}))
    return "mixtral/config.json"


def _error(tmp_path, capsys, doc) -> tuple[str, str]:
    """(the one error line of running ``doc``, the scenario file's text)."""
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "run", path, "--no-baselines", "--no-report"))
    return line, path.read_text()


def _line_of(text: str, snippet: str) -> int:
    """The 1-based line of the only line of ``text`` that holds ``snippet``."""
    found = [n for n, line in enumerate(text.splitlines(), 1) if snippet in line]
    assert len(found) == 1, found
    return found[0]


def test_a_tensor_split_refusal_names_gpus_per_replica_and_its_line(tmp_path, capsys):
    doc = tiny_doc(model="Llama-3.1-70B")
    doc["tiers"][1]["gpus_per_replica"] = 3
    line, text = _error(tmp_path, capsys, doc)
    assert line == (
        f"Error: {tmp_path / 's.yaml'}: line {_line_of(text, 'gpus_per_replica: 3')}: "
        "tiers[1].gpus_per_replica: tier 'bf16': Llama-3.1-70B cannot be split over 3 GPUs: "
        "64 attention heads are not divisible by 3; use gpus_per_replica in "
        "{1, 2, 4, 8, 16, 32, 64}")


def test_an_expert_count_refusal_names_gpus_per_replica_and_the_counts(tmp_path, capsys):
    doc = tiny_doc(model=_mixtral(tmp_path))
    doc["tiers"][1].update(gpus_per_replica=16, expert_parallel=True)
    line, text = _error(tmp_path, capsys, doc)
    assert line == (
        f"Error: {tmp_path / 's.yaml'}: line {_line_of(text, 'gpus_per_replica: 16')}: "
        "tiers[1].gpus_per_replica: tier 'bf16': mixtral: 8 experts cannot be split over "
        "16 GPUs; use gpus_per_replica in {1, 2, 4, 8}, or drop expert_parallel")


def test_the_expert_counts_listed_are_gpu_counts_of_the_data_parallel_ranks(tmp_path):
    model = get_model(str(tmp_path / _mixtral(tmp_path)))
    with pytest.raises(FitError) as info:
        check_parallel(model, tp=8, dp=2, ep=16)
    assert info.value.key == ("gpus_per_replica",)
    assert str(info.value) == (
        "mixtral: 8 experts cannot be split over 16 GPUs; use gpus_per_replica in "
        "{2, 4, 8}, or drop expert_parallel")


def test_an_expert_width_refusal_names_expert_parallel_and_the_counts():
    odd = dataclasses.replace(get_model("Qwen3-Coder-30B-A3B"), name="odd",
                              expert_intermediate=1000)
    with pytest.raises(FitError) as info:
        check_parallel(odd, tp=16)
    assert info.value.key == ("expert_parallel",)
    assert str(info.value) == (
        "odd: expert width 1000 is not divisible by the experts' tensor parallelism 16 "
        "(tp x data_parallel / expert_parallel); set expert_parallel: true, or use "
        "gpus_per_replica in {1, 2, 4, 8}")


def test_an_expert_width_no_gpu_count_splits_says_only_expert_parallel():
    qwen = get_model("Qwen3-Coder-30B-A3B")
    with pytest.raises(FitError) as info:
        check_parallel(qwen, tp=1, dp=512)
    assert str(info.value).endswith("(tp x data_parallel / expert_parallel); set "
                                    "expert_parallel: true")


def test_an_expert_width_refusal_in_a_scenario_is_at_expert_parallel(tmp_path, capsys):
    """The key is located at its tier's line where the YAML does not set it."""
    doc = tiny_doc(model=_mixtral(tmp_path, intermediate_size=1000))
    doc["tiers"][1]["gpus_per_replica"] = 16
    line, text = _error(tmp_path, capsys, doc)
    assert line.startswith(f"Error: {tmp_path / 's.yaml'}: line "
                           f"{_line_of(text, 'name: bf16')}: tiers[1].expert_parallel: tier "
                           "'bf16': mixtral: expert width 1000 is not divisible")


def test_a_layout_key_survives_pickling():
    import pickle

    err = pickle.loads(pickle.dumps(FitError("m", key=("data_parallel",))))
    assert (str(err), err.key) == ("m", ("data_parallel",))


def test_plan_locates_a_layout_refusal_at_its_key_too(tmp_path, capsys):
    """The planner, which tries larger GPU counts, said only "tier 'bf16': ..." when none
    split the experts."""
    doc = tiny_doc(model=_mixtral(tmp_path))
    doc["tiers"][1].update(gpus_per_replica=16, expert_parallel=True)
    path = write_yaml(tmp_path / "s.yaml", doc)
    line = one_error_line(*run_cli(capsys, "plan", path, "--out", tmp_path / "plan"))
    assert line.startswith(
        f"Error: {path}: line {_line_of(path.read_text(), 'gpus_per_replica: 16')}: "
        "tiers[1].gpus_per_replica: tier 'bf16': mixtral: 8 experts cannot be split over ")
    assert not (tmp_path / "plan").exists()
