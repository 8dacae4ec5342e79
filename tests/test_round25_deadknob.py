"""Round 25 (deadknob): a scenario key that is accepted and changes nothing a command writes is
noted in one line naming the key and the fix, in a run, a sweep's points and a plan alike (they
share the classifier's training)."""

from __future__ import annotations

import json

from conftest import run_cli, tiny_doc, write_yaml


def classifier_run(tmp_path, classifier: dict) -> tuple[str, list[str]]:
    """``tiersim run`` of the tiny scenario behind the threshold router with ``classifier``
    options: its stderr and summary.json's notes."""
    doc = tiny_doc(router={"policy": "threshold", "classifier": classifier})
    path = write_yaml(tmp_path / "s.yaml", doc)
    done = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-report",
                   "--no-baselines")
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    return " ".join(done.stderr.split()), summary.get("notes", [])


ECE_NOTE = ("s.yaml: router.classifier.ece_bins sizes the bins of the classifier's held-out "
            "calibration error, which no command writes (summary.json and the report show "
            "none), so it changes nothing; remove it")


def test_ece_bins_is_noted_as_changing_nothing(tmp_path):
    err, notes = classifier_run(tmp_path, {"ece_bins": 20})
    assert ECE_NOTE in notes
    assert ECE_NOTE.split(": ", 1)[1] in err


def test_a_listed_feature_group_without_its_column_is_noted(tmp_path):
    err, notes = classifier_run(tmp_path, {"features": ["input_tokens", "subject"]})
    expected = ("s.yaml: router.classifier.features lists subject, and the trace has no column "
                "for it (a subject column), so it changes nothing; add the column, or remove "
                "the group")
    assert expected in notes
    assert expected.split(": ", 1)[1] in err


def test_text_max_features_without_prompt_text_is_noted(tmp_path):
    err, notes = classifier_run(tmp_path, {"text_max_features": 100})
    expected = ("s.yaml: router.classifier.text_max_features bounds the vocabulary of the "
                "prompt text, and the classifier reads none (the trace has no prompt column), "
                "so it changes nothing; add prompts, or remove it")
    assert expected in notes
    assert expected.split(": ", 1)[1] in err
    assert not [n for n in notes if "features lists" in n]  # the default groups are not noted
