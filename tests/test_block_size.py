"""A scheduler ``block_size`` vLLM would refuse (3, 0, 1000) is refused in one located line
naming the accepted sizes, in run, plan and sweep alike (it was accepted silently: vLLM's
``CacheConfig.block_size`` takes only 1, 8, 16, 32, 64, 128 or 256 tokens)."""

from __future__ import annotations

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def tiny_with_block_size(value) -> dict:
    """The tiny scenario with its second tier's ``scheduler.block_size`` set to ``value``."""
    doc = tiny_doc()
    doc["tiers"][1]["scheduler"] = {"block_size": value}
    return doc


@pytest.mark.parametrize("value", [3, 0, 1000, 24])
@pytest.mark.parametrize("command", ["run", "plan", "sweep"])
def test_a_block_size_vllm_refuses_is_refused(tmp_path, capsys, value, command):
    doc = tiny_with_block_size(value)
    if command == "sweep":
        doc["sweep"] = {"seed": [1, 2]}
    path = write_yaml(tmp_path / "x.yaml", doc)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1)
                if "block_size:" in text)
    assert main([command, str(path), "--out", str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err == (
        f"Error: {path}: line {line}: tiers[1].scheduler.block_size: must be one of vLLM's "
        f"block sizes 1, 8, 16, 32, 64, 128 or 256 tokens (got {value})\n")
    assert not (tmp_path / "o").exists()


def test_a_sweep_axis_over_block_sizes_is_checked_at_every_value(tmp_path, capsys):
    doc = tiny_doc()
    doc["sweep"] = {"tiers.bf16.scheduler.block_size": [16, 12]}
    path = write_yaml(tmp_path / "x.yaml", doc)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'tiers.bf16.scheduler.block_size'" in err
    assert "must be one of vLLM's block sizes 1, 8, 16, 32, 64, 128 or 256 tokens (got 12)" in err
    assert not (tmp_path / "o").exists()


def test_every_vllm_block_size_is_accepted():
    from tiersim.scenario import VLLM_BLOCK_SIZES, Scenario

    for size in VLLM_BLOCK_SIZES:
        Scenario.model_validate(tiny_with_block_size(size))
