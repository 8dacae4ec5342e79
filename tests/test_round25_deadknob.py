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


def layout_notes(doc: dict) -> list[str]:
    """The notes :func:`tiersim.scenario.check_layouts` raises for ``doc``."""
    import warnings

    from tiersim.errors import Note
    from tiersim.scenario import Scenario, check_layouts

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_layouts(Scenario.model_validate(doc))
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_an_slo_in_milliseconds_is_noted():
    notes = layout_notes(tiny_doc(slo={"ttft_p99_s": 200, "tpot_p99_s": 50}))
    assert notes == [
        "slo.ttft_p99_s is 200 s, at or above 100 s: it is in seconds, so if milliseconds "
        "were meant, write 0.2",
        "slo.tpot_p99_s is 50 s, at or above 1 s: it is in seconds, so if milliseconds were "
        "meant, write 0.05"]
    assert layout_notes(tiny_doc(slo={"ttft_p99_s": 30, "tpot_p99_s": 0.5})) == []


def test_a_price_per_gpu_hour_in_cents_is_noted():
    doc = tiny_doc()
    doc["tiers"][1]["cost_per_gpu_hour"] = 3500
    assert layout_notes(doc) == [
        "tier bf16: cost_per_gpu_hour is 3,500 USD, at or above 1,000 USD: it is the price of "
        "one GPU for one hour (a few USD), so if cents were meant, write 35"]


def test_a_lookup_and_a_tool_time_in_milliseconds_are_noted():
    doc = tiny_doc(router={"policy": "static_split", "fractions": [0.5, 0.5],
                           "response_cache": {"size": 10, "lookup_s": 5,
                                              "popularity": {"distinct": 10}}},
                   workload={"sessions": {"source": "generate",
                                          "generate": {"tasks": 3, "tool_s_median": 2000}}})
    assert layout_notes(doc) == [
        "router.response_cache.lookup_s is 5 s, at or above 1 s: it is in seconds, so if "
        "milliseconds were meant, write 0.005",
        "workload.sessions.generate.tool_s_median is 2,000 s, at or above 1,000 s: it is in "
        "seconds, so if milliseconds were meant, write 2"]


def test_a_unit_note_reaches_the_run(tmp_path):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(slo={"ttft_p99_s": 500, "tpot_p99_s": 0.1}))
    done = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-report",
                   "--no-baselines")
    assert done.returncode == 0, done.stderr
    note = ("slo.ttft_p99_s is 500 s, at or above 100 s: it is in seconds, so if milliseconds "
            "were meant, write 0.5")
    assert note in json.loads((tmp_path / "o" / "summary.json").read_text())["notes"]
    assert note in " ".join(done.stderr.split())


def test_a_balancer_over_one_prefill_replica_is_noted():
    doc = tiny_doc()
    doc["tiers"][1].update(replicas=3, balancer="round_robin",
                           disaggregation={"prefill_replicas": 1, "decode_replicas": 2})
    assert layout_notes(doc) == [
        "tier bf16: balancer round_robin picks one of the tier's prefill replicas for each "
        "request (its decode replicas by least outstanding tokens), and it has one "
        "(disaggregation.prefill_replicas 1), so the key changes nothing; give the tier more "
        "prefill replicas, or remove the key"]
    doc["tiers"][1]["disaggregation"] = {"prefill_replicas": 2, "decode_replicas": 1}
    assert layout_notes(doc) == []


def test_class_difficulty_beside_tables_only_is_noted(tmp_path):
    doc = tiny_doc(workload={"difficulty": {"class_difficulty": {"easy": 0.45, "hard": 0.55}}})
    doc["tiers"][0]["accuracy"] = {"easy": 0.95, "hard": 0.5}
    doc["tiers"][1]["accuracy"] = {"easy": 1.0, "hard": 0.8}
    path = write_yaml(tmp_path / "s.yaml", doc)
    done = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-report",
                   "--no-baselines")
    assert done.returncode == 0, done.stderr
    expected = ("s.yaml: workload.difficulty.class_difficulty places the classes on the "
                "difficulty axis the curve one accuracy number is fitted by, and every tier's "
                "accuracy is a table per class, so it changes nothing; remove it, or give a "
                "tier one number")
    assert expected in json.loads((tmp_path / "o" / "summary.json").read_text())["notes"]
    assert expected.split(": ", 1)[1] in " ".join(done.stderr.split())


def test_sized_gpu_counts_under_no_baselines_are_noted(tmp_path):
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(limits={"gpus_per_replica": [1, 2]}))
    done = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-report",
                   "--no-baselines")
    assert done.returncode == 0, done.stderr
    expected = ("s.yaml: limits.gpus_per_replica sizes the uniform baselines (and tiersim "
                "plan's designs), and --no-baselines sizes none, so it changes nothing here; "
                "run without --no-baselines to use it")
    assert expected in json.loads((tmp_path / "o" / "summary.json").read_text())["notes"]
    assert expected.split(": ", 1)[1] in " ".join(done.stderr.split())
