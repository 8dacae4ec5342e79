"""Round 21 (models2) of hostile input, each a failure found from outside and fixed: the exact
line a user sees, or the number that was wrong. Hugging Face config.json reading."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_round19 import _config, error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


def _scenario(tmp_path, model: Path, precision: str = "w4a16") -> Path:
    """tiny.yaml serving the config.json at ``model``, its first tier at ``precision``."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY.replace("model: Qwen3-Coder-30B-A3B", f"model: {model.parent}")
                    .replace("precision: w4a16", f"precision: {precision}", 1))
    return path


# ------------------------------------------------------------------ sizes past a float


@pytest.mark.parametrize(("key", "value", "got"), [
    ("intermediate_size", 10**400, "1" + "0" * 36 + "..."),
    ("hidden_size", 2**53 + 1, "9007199254740993"),
], ids=["10**400", "2**53+1"])
def test_a_size_past_any_model_is_one_line_not_an_overflow(tmp_path, capsys, key, value, got):
    """intermediate_size 10**400 was read, and sizing the tier divided it into a float:
    OverflowError and a traceback."""
    from tiersim.errors import TiersimError
    from tiersim.hardware.hf_config import load_hf_config

    path = _config(tmp_path, **{key: value})
    message = (f"key {key!r}: must be a positive integer of at most 9,007,199,254,740,992 "
               f"(got {got}); give the value the model card states")
    with pytest.raises(TiersimError) as info:
        load_hf_config(path)
    assert str(info.value) == f"{path}: {message}"
    scenario = _scenario(tmp_path, path)
    assert error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "-o",
                               tmp_path / "o")) == (
        f"Error: {scenario}: line 5: model: {path}: {message}")
    assert not (tmp_path / "o").exists()


def test_a_huge_but_finite_size_still_reads_and_does_not_fit(tmp_path, capsys):
    """Up to the bound a size reads, and a model that large is refused as not fitting."""
    path = _config(tmp_path, num_hidden_layers=10**12)
    scenario = _scenario(tmp_path, path)
    line = error_line(*run_cli(capsys, "run", scenario, "--no-baselines", "-o", tmp_path / "o"))
    assert "does not fit on 1x H200" in line
