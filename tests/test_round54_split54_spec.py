"""Round 54 (split54): the summary reader holds a speculative tier's tokens per verify step
(``spec_tokens_per_step``, realised, and ``spec_expected_tokens_per_step``, the formula's) to
1 to k + 1 for the k its ``techniques`` names: a verify step emits the target's own token and
at most its k drafts. Before, it checked them only as numbers >= 0, and a hand edit of 0.5 or
9 (k=3) reached the console and the report as the engine's draws."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import copy_folder, tiny_doc
from test_hostile_inputs import one_error_line, run_cli


@pytest.fixture(scope="module")
def spec_run(tmp_path_factory):
    """tiny with its bf16 tier speculative (k=3, acceptance 0.7): the run's folder."""
    from tiersim.cli import main

    root = tmp_path_factory.mktemp("split54spec")
    doc = tiny_doc()
    doc["trace"]["window"] = [240, 270]
    doc["tiers"][1]["speculative"] = {"k": 3, "acceptance": 0.7, "head_cost": 0.05}
    path = root / "spec.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = root / "run"
    assert main(["run", str(path), "--out", str(out), "--no-baselines", "--no-report"]) == 0
    return out


def _edited(spec_run, tmp_path, edit):
    """A copy of the run with ``edit`` applied to its bf16 tier's summary object, as if by
    hand (no manifest)."""
    doc = json.loads((spec_run / "summary.json").read_text())
    edit(doc["tiers"]["bf16"])
    folder = copy_folder(spec_run, tmp_path / "r")
    (folder / "manifest.json").unlink()  # the manifest refuses any edit
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


@pytest.mark.parametrize(("key", "value", "shown"), [
    ("spec_tokens_per_step", 0.5, "0.5"),
    ("spec_tokens_per_step", 0, "0"),
    ("spec_tokens_per_step", 9, "9"),
    ("spec_tokens_per_step", 4.01, "4.01"),
    ("spec_expected_tokens_per_step", 0.99, "0.99"),
    ("spec_expected_tokens_per_step", 5, "5"),
])
def test_tokens_per_step_outside_one_to_k_plus_one_is_refused(spec_run, tmp_path, capsys, key,
                                                              value, shown):
    """One line naming the field, the bounds for the tier's k and the figure as written."""
    folder = _edited(spec_run, tmp_path, lambda tier: tier.update({key: value}))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ('tiers.bf16.{key}' "
                    f"must lie between 1 and 4 (k + 1, for the tier's spec decode k=3), got "
                    f"{shown}); rerun `tiersim run` to rewrite it")


def test_the_bounds_themselves_read(spec_run, tmp_path):
    """1 (no draft accepted) and k + 1 (every draft accepted) are figures a run can write."""
    from tiersim.results import RunResult

    doc = json.loads((spec_run / "summary.json").read_text())
    doc["tiers"]["bf16"].update(spec_tokens_per_step=1, spec_expected_tokens_per_step=4)
    tier = RunResult.from_json(doc).tiers[1]
    assert (tier.spec_tokens_per_step, tier.spec_expected_tokens_per_step) == (1.0, 4.0)


def test_spec_figures_without_the_tiers_k_are_refused(spec_run, tmp_path, capsys):
    """Figures of a tier whose ``techniques`` names no k (edited away) cannot be held to
    it: refused in one line that says what the key must name."""
    folder = _edited(spec_run, tmp_path, lambda tier: tier.pop("techniques"))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary "
                    "('tiers.bf16.techniques' must name the tier's draft length (spec decode "
                    "k=3, say) beside its spec_tokens_per_step, got null); rerun `tiersim run` "
                    "to rewrite it")
