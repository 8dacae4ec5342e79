"""Round 55, misc55: a plan says which GPU counts a tier was not sized at, and why.

``tiersim plan plan_default.yaml`` printed "uniform w4a16 (20 x 1 GPU)" beside "uniform
nvfp4@4 (4 x 4 GPU)": W4A16 was sized at 1 and 2 GPUs per replica only (over 4 or 8 its
128-weight groups split into partial ones per GPU, which vLLM's Marlin kernels refuse:
:func:`tiersim.perf.memory.block_split_problem`), and nothing said why the two 4-bit formats
were sized differently. The uniform line, its report row and plan.json
(``gpus_per_replica_left_out``) now say so, from the same refusal.

Every figure is modelled (tiny's two minutes of Azure code traffic, roofline step times).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import tiny_doc, write_yaml

from tiersim.cli.plan import format_plan, plan_capacity

CLAUSE = ("not sized on 4 or 8 GPUs per replica: its W4A16 expert width 768 over 4 GPUs is 192 "
          "per GPU, not whole 128-wide quantisation groups: vLLM's Marlin MoE kernel refuses "
          "that split")


def _plan(folder: Path, **doc):
    folder.mkdir(parents=True, exist_ok=True)
    path = write_yaml(folder / "s.yaml", tiny_doc(**doc))
    result = plan_capacity(path, out_dir=folder / "plan", report=True)
    return (format_plan(result), json.loads((folder / "plan" / "plan.json").read_text()),
            (folder / "plan" / "report.html").read_text())


@pytest.fixture(scope="module")
def tiny_plan(tmp_path_factory):
    return _plan(tmp_path_factory.mktemp("leftout"))


def test_the_uniform_line_names_the_counts_left_out_and_why(tiny_plan):
    text, _, _ = tiny_plan
    lines = [line for line in text.splitlines() if line.startswith("  uniform ")]
    assert lines == [
        f"  uniform w4a16 (1 x 1 GPU; {CLAUSE}): meets every constraint at the plan's cost per "
        "hour (a tie): 0.0932 % dearer than the plan over the trace, but both 3.5 USD/hour: the "
        "gap is the drain after the last arrival, 106 s against 105.9 s, not a cheaper fleet; "
        "the plan is kept as the cheaper over the trace, cost 0.103 USD",
        "  uniform bf16 (1 x 1 GPU): meets every constraint, cost 0.103 USD"]


def test_plan_json_gives_each_count_and_its_refusal(tiny_plan):
    _, doc, _ = tiny_plan
    w4 = next(u for u in doc["uniform"] if u["design"] == "w4a16")
    assert w4["gpus_per_replica_tried"] == {"w4a16": [1]}
    left = w4["gpus_per_replica_left_out"]["w4a16"]
    assert list(left) == ["4", "8"]
    assert left["8"] == ("its W4A16 expert width 768 over 8 GPUs is 96 per GPU, not whole "
                         "128-wide quantisation groups: vLLM's Marlin MoE kernel refuses that "
                         "split (vLLM then runs a slower kernel than the one tiersim times, or "
                         "fails to load); set expert_parallel, or split it over 1 or 2 GPUs")
    # a design holding w4a16 carries it too; a fleet without it has no such key
    both = next(r for r in doc["runners_up"] if r["design"] == "w4a16+bf16")
    assert both["gpus_per_replica_left_out"] == w4["gpus_per_replica_left_out"]
    assert "gpus_per_replica_left_out" not in doc["plan"]  # bf16 alone
    assert not any("gpus_per_replica_left_out" in u for u in doc["uniform"]
                   if u["design"] == "bf16")


def test_the_report_row_says_what_the_console_says(tiny_plan):
    """The report's "Other designs" row gives it beside the fleet's size, as the console's
    brackets do."""
    _, _, html = tiny_plan
    assert f"<td>w4a16 1; {CLAUSE}</td>".replace("'", "&#x27;") in html


def test_counts_not_asked_for_are_not_named(tmp_path):
    """``limits.gpus_per_replica: [1, 2]``: 4 and 8 are not the sizing's, so nothing was left
    out."""
    text, doc, _ = _plan(tmp_path, limits={"gpus_per_replica": [1, 2]})
    assert "not sized on" not in text
    assert not any("gpus_per_replica_left_out" in u for u in doc["uniform"])
