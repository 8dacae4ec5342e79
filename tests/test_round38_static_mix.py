"""A saving against a static split names the uniform fleets the split mixes (``static_split_mix``).

The default job's routed fleet (FP8 10 + BF16 7) read "saves 5.56 %" against a static split in
``tiersim run`` and 5.06 % in ``tiersim plan``, with nothing saying why: the run mixes the
scenario's tiers only (32.3 % FP8 + 67.7 % BF16), the plan also its cheaper baseline fleets
(NVFP4 on 4 GPUs a replica). Found by an independent recomputation of every figure of the
default job (round 38, helper check45).
"""

from __future__ import annotations

import json

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli import main
from tiersim.results import mix_words
from tiersim.routing.metrics import static_split_saving


def test_a_split_of_two_fleets_names_both_with_the_shares_that_reach_the_accuracy():
    """Fleets a (70 %, 10 USD/hour) and b (90 %, 20): 80 % is half of each, 15 USD/hour."""
    out = static_split_saving("provisioned", 0.8, (1.0, 12.0),
                              [(1.0, 10.0, 0.7), (2.0, 20.0, 0.9)], ["a", "b"])
    assert out["static_split_mix"] == pytest.approx({"a": 0.5, "b": 0.5})
    assert out["static_split_cost_per_hour_usd"] == pytest.approx(15.0)
    assert out["vs_static_split_frac"] == pytest.approx(1 - 12.0 / 15.0)


def test_a_fleet_that_reaches_the_accuracy_alone_is_the_whole_split():
    """b (85 %, 9 USD/hour) alone is cheaper than any mix with a (70 %, 10)."""
    out = static_split_saving("provisioned", 0.8, (1.0, 12.0),
                              [(1.0, 10.0, 0.7), (0.9, 9.0, 0.85)], ["a", "b"])
    assert out["static_split_mix"] == {"b": 1.0}


def test_without_names_or_without_a_split_the_mix_is_unknown():
    assert static_split_saving("provisioned", 0.8, (1.0, 12.0),
                               [(1.0, 10.0, 0.7), (2.0, 20.0, 0.9)])["static_split_mix"] is None
    assert static_split_saving("provisioned", 0.95, (1.0, 12.0), [(1.0, 10.0, 0.7)],
                               ["a"])["static_split_mix"] is None


def test_the_mix_in_words():
    assert mix_words({"bf16": 0.6769713262, "fp8": 0.3230286738}) == "67.7% bf16 + 32.3% fp8"
    assert mix_words({"bf16": 1.0}) == "100.0% bf16"
    assert mix_words(None) == ""
    assert mix_words({"bf16": None}) == "- bf16"  # a summary edited to a null share


def test_a_run_writes_the_mix_of_its_own_tiers_and_the_report_names_it(tmp_path):
    """The tiny scenario's split: its own tiers, in shares whose accuracy reaches the routed one
    (a fleet alone where that is cheaper)."""
    out = tmp_path / "o"
    assert main(["run", str(write_yaml(tmp_path / "s.yaml", tiny_doc())), "--out", str(out)]) == 0
    saving = json.loads((out / "summary.json").read_text())["savings"]
    mix = saving["static_split_mix"]
    assert set(mix) <= set(saving["uniform"]) and sum(mix.values()) == pytest.approx(1.0)
    mixed = sum(share * saving["uniform"][name]["accuracy"] for name, share in mix.items())
    assert mixed >= saving["accuracy"] - 1e-9
    page = (out / "report.html").read_text()
    row = ("<tr><td>static split of equal accuracy (share of the requests)</td>"
           f"<td>{mix_words(mix)}</td></tr>")
    assert row in page
