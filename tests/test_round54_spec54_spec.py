"""Round 54 (spec54): a speculative tier's realised draws in summary.json, the console and the
report: tokens per verify step from the engine's own counts beside the formula's expectation,
and the share of drafted tokens accepted (vLLM's acceptance rate). fresh54 found no output gave
them and patched the engine to see them (modelled figures)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import copy_folder, tiny_doc
from test_hostile_inputs import one_error_line, run_cli

SPEC = {"k": 3, "acceptance": 0.7, "head_cost": 0.05}


@pytest.fixture(scope="module")
def spec_run(tmp_path_factory):
    """tiny (roofline, 120 s of the Azure code trace) with its bf16 tier speculative (k=3,
    acceptance 0.7, a draft head): (folder, console output)."""
    from tiersim.cli import main

    root = tmp_path_factory.mktemp("spec54")
    doc = tiny_doc()
    doc["tiers"][1]["speculative"] = dict(SPEC)
    path = root / "spec.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = root / "run"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["run", str(path), "--out", str(out), "--no-baselines"]) == 0
    return out, buf.getvalue()


def test_summary_holds_the_realised_draws_of_the_speculative_tier_only(spec_run):
    """The engine's counts reach summary.json for the speculative tier; a plain tier writes
    none of the four keys (so the goldens of scenarios without one do not move)."""
    doc = json.loads((spec_run[0] / "summary.json").read_text())
    plain, spec = doc["tiers"]["w4a16"], doc["tiers"]["bf16"]
    assert not [k for k in plain if k.startswith("spec_")]
    assert spec["spec_verify_steps"] == 2546
    assert spec["spec_expected_tokens_per_step"] == pytest.approx(1 + 0.7 + 0.49 + 0.343)
    # the draws, as vLLM counts them (before a request's last step is cut to its output length):
    # within a standard error (0.025) of the formula's 2.533 here; cut, 2.458 (short outputs)
    assert spec["spec_tokens_per_step"] == pytest.approx(2.5436, abs=5e-5)
    # accepted / drafted: each step emits its accepted drafts plus the target's own token
    assert spec["spec_draft_acceptance"] == pytest.approx(
        (spec["spec_tokens_per_step"] - 1) / 3)


def test_the_console_line_names_the_figures_and_says_they_are_modelled(spec_run):
    """One line per speculative tier, after the prefix-cache lines (exact text)."""
    text = " ".join(spec_run[1].split())
    assert ("speculative decoding bf16: 2.544 tokens per verify step over 2,546 steps, against "
            "2.533 from the formula for the tier's k and acceptance; 51.5 % of drafted tokens "
            "accepted (vLLM's acceptance rate, not the per-position acceptance: "
            "docs/serving.md in tiersim's source repository); modelled, from the engine's "
            "draws") in text
    assert "speculative decoding w4a16" not in text


def test_the_report_has_a_speculative_decoding_table(spec_run):
    """The report's run page gives the same figures, to three decimals, with its source."""
    page = (spec_run[0] / "report.html").read_text()
    assert ("<h3>Speculative decoding</h3><table><tr><th>tier</th><th>verify steps</th>"
            "<th>tokens per verify step (realised)</th><th>formula&#x27;s expectation (the "
            "tier&#x27;s k and acceptance)</th><th>drafted tokens accepted (fraction; "
            "vLLM&#x27;s acceptance rate)</th></tr><tr><td>bf16</td><td class=\"num\">2,546"
            "</td><td>2.544</td><td>2.533</td><td>0.515</td></tr></table>") in page
    assert ("Source: modelled, from the engine's acceptance draws; the acceptance rate is "
            "accepted over drafted tokens, not the per-position <code>acceptance</code> "
            "(docs/serving.md in tiersim's source repository).") in page


def test_a_summary_from_before_the_figures_reads_without_them(spec_run):
    """An older summary (no spec_ keys) still reads: no line, no table."""
    from tiersim.cli.run_summary import spec_lines
    from tiersim.report.page import spec_section
    from tiersim.results import RunResult

    doc = json.loads((spec_run[0] / "summary.json").read_text())
    for key in [k for k in doc["tiers"]["bf16"] if k.startswith("spec_")]:
        del doc["tiers"]["bf16"][key]
    run = RunResult.from_json(doc)
    assert spec_lines(run) == []
    assert spec_section(run) == ""
    assert RunResult.from_json(run.to_json()).tiers[1].spec_verify_steps is None


@pytest.mark.parametrize(("key", "value", "problem"), [
    ("spec_draft_acceptance", 1.5, "must be a fraction between 0 and 1, got 1.5"),
    ("spec_verify_steps", -3, "must be a count >= 0, got -3"),
    ("spec_verify_steps", 2.5, "must be a number, got 2.5"),
    ("spec_tokens_per_step", "2.5", 'must be a number, got "2.5"'),
])
def test_the_reader_refuses_a_figure_no_run_writes(spec_run, tmp_path, capsys, key, value,
                                                   problem):
    """The summary reader checks the new keys as it checks every other: one line, exit 1."""
    doc = json.loads((spec_run[0] / "summary.json").read_text())
    doc["tiers"]["bf16"][key] = value
    folder = copy_folder(spec_run[0], tmp_path / "r")
    (folder / "manifest.json").unlink()  # as edited by hand (the manifest refuses any edit)
    (folder / "summary.json").write_text(json.dumps(doc))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ('tiers.bf16.{key}' "
                    f"{problem}); rerun `tiersim run` to rewrite it")


def test_the_expectation_follows_each_requests_own_rate():
    """Where a trace column sets a request's rate, the formula's expectation is each step's
    at that rate, summed over the steps (not the scenario's rate)."""
    from tiersim.engine import SchedulerLimits, SpecDecoding
    from tiersim.engine.request import Req
    from tiersim.engine.spec_decode import SpecScheduler

    sd = SpecDecoding(3, (0.7,), seed=1)
    accept = np.array([0.2, np.nan])  # request 1: the scenario's 0.7
    sched = SpecScheduler(SchedulerLimits(max_num_seqs=8, max_num_batched_tokens=512), 10**5,
                          sd, accept=accept)
    steps = {}
    for i in range(2):
        assert sched.add(Req(i, prompt=16, output=400, arrival=0.0))
    while not sched.idle():
        plan = sched.schedule(0.0)
        for req in sched._decoders:
            steps[req.idx] = steps.get(req.idx, 0) + 1
        sched.complete(plan, 1, 0.0, 0.0)
    assert sched.verify_steps == steps[0] + steps[1]
    assert sched.spec_expected == pytest.approx(
        steps[0] * (1 + 0.2 + 0.04 + 0.008) + steps[1] * 2.533)
