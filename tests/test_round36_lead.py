"""Round 36, lead: a match budget whose timeout lands where it is swallowed still ends the read."""

from __future__ import annotations

import signal
import time

import pytest

from tiersim.hardware.hf_modules import RegexTimeout, regex_budget

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGVTALRM"), reason="no CPU-time timer")


def test_a_timeout_raised_inside_code_that_swallows_it_is_raised_at_the_blocks_end():
    """The full suite once ran the budget test while hypothesis' garbage-collector callback
    was running: the timer's RegexTimeout was raised inside that callback, which swallows
    exceptions ("Exception ignored in gc_callback"), and the 0.001 s budget let a read of
    0.38 s of CPU through. Here the block swallows the timeout itself, as that callback did."""
    swallowed = []
    with pytest.raises(RegexTimeout), regex_budget(0.001):
        start = time.process_time()
        while time.process_time() - start < 0.05 and not swallowed:
            try:
                sum(range(10_000))
            except RegexTimeout:
                swallowed.append(True)
    assert swallowed
    assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0


def test_a_block_within_its_budget_raises_nothing():
    with regex_budget(5.0):
        sum(range(1000))
    assert signal.getitimer(signal.ITIMER_VIRTUAL)[0] == 0


def test_a_model_folder_with_no_config_names_the_folder_and_the_fix(tmp_path, capsys):
    """``model: .`` (or any folder without a config.json) read "model: config.json: cannot read
    a model config (No such file or directory)", naming neither the folder nor what to give."""
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import one_error_line, run_cli

    (tmp_path / "m").mkdir()
    scenario = write_yaml(tmp_path / "s.yaml", tiny_doc(model=str(tmp_path / "m")))
    line = one_error_line(*run_cli(capsys, "run", scenario, "--no-baselines"))
    assert line == (f"Error: {scenario}: line 3: model: {tmp_path}/m: a folder with no "
                    "config.json in it; give the model's config.json, the folder holding it "
                    "(Hugging Face's layout) or a catalogue model's name")
