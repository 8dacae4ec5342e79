"""Round 21 (serving techniques and routing inputs): hostile and silently-ignored settings."""

from __future__ import annotations

import pytest
from conftest import run_cli
from test_step_tiers_check import agentic_file, steps

from tiersim.errors import ScenarioError
from tiersim.inputs import check_step_tiers
from tiersim.scenario import load_scenario


def test_step_tiers_naming_a_middle_step_the_generator_cannot_make_is_one_line(tmp_path):
    """With ``max_steps: 2`` a generated task is its planning and final steps only, but a
    ``step_tiers`` entry for a step-mix type (tool_call) was accepted and routed nothing."""
    path = agentic_file(tmp_path, "{planning: bf16, final: bf16, tool_call: fp8}")
    path.write_text(path.read_text().replace("tool_s_median: 2.0}",
                                             "tool_s_median: 2.0, max_steps: 2}"))
    scn = load_scenario(path)
    with pytest.raises(ScenarioError) as info:
        check_step_tiers(scn, steps(["planning", "final"]), str(path))
    assert str(info.value) == (
        f"{path}: router.step_tiers.tool_call: workload.sessions.generate makes no "
        "'tool_call' step; its step types are final, planning")


STEP_TRACE = ("request_id,arrival_s,input_tokens,output_tokens,step_type\n"
              + "".join(f"{i},{i * 0.5},200,20,{'planning' if i % 2 else 'code'}\n"
                        for i in range(40)))


def test_a_step_type_router_with_a_generated_response_cache_runs(tmp_path):
    """``response_cache: {popularity: ...}`` beside ``policy: step_type`` (a trace with a
    step_type column, no sessions) was refused as "router.step_fallback: key and popularity
    both choose the keys": the fallback router was rebuilt from every field, the unset default
    ``key`` included."""
    (tmp_path / "steps.csv").write_text(STEP_TRACE)
    path = tmp_path / "s.yaml"
    path.write_text(
        "trace: {path: steps.csv}\n"
        "tiers:\n"
        "  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5}\n"
        "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n"
        "router:\n"
        "  policy: step_type\n"
        "  step_tiers: {planning: bf16}\n"
        "  response_cache: {mode: lru, size: 100, popularity: {distinct: 5}}\n")
    out = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines",
                  "--no-report")
    assert out.returncode == 0, out.stderr
    assert "response_cache" in (tmp_path / "o" / "summary.json").read_text()


def _layout_notes(tier_update: dict) -> list[str]:
    """The notes :func:`check_layouts` raises for the tiny scenario, its bf16 tier updated."""
    import warnings

    from conftest import tiny_doc

    from tiersim.errors import Note
    from tiersim.scenario import Scenario, check_layouts

    doc = tiny_doc()
    doc["tiers"][1].update(tier_update)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_layouts(Scenario.model_validate(doc))
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_a_prefix_aware_balancer_without_prefix_caching_is_noted():
    """``balancer: prefix_aware`` on a tier that caches no prefix balances exactly as
    least_tokens does (no replica has anything cached): it was accepted without a word."""
    assert _layout_notes({"balancer": "prefix_aware", "replicas": 2}) == [
        "tier bf16: balancer prefix_aware counts the prompt tokens each replica has cached, "
        "and the tier caches none (no enable_prefix_caching: true), so it balances as "
        "least_tokens does; turn prefix caching on, or use balancer: least_tokens"]


@pytest.mark.parametrize("update", [
    {"balancer": "prefix_aware", "replicas": 2,
     "scheduler": {"enable_prefix_caching": True}},
    {"balancer": "least_tokens", "replicas": 2},
])
def test_a_balancer_that_reads_what_it_needs_gets_no_note(update):
    assert _layout_notes(update) == []


SESSION_TRACE = ("request_id,arrival_s,input_tokens,output_tokens,session_id,step,"
                 "prefix_hashes\n"
                 '0,0,1000,50,1,0,"[1, 2]"\n1,0,1600,50,1,1,"[1, 2, 3, 4]"\n'
                 '2,1,1000,50,2,0,"[1, 5]"\n3,1,1600,50,2,1,"[1, 5, 6, 7]"\n')
PLAIN_TRACE = ("request_id,arrival_s,input_tokens,output_tokens\n"
               "0,0,1000,50\n1,0,1600,50\n2,1,1000,50\n")


def _sessions_run(tmp_path, trace: str, sessions: str):
    """``tiersim run`` of a one-tier scenario over ``trace`` with ``workload.sessions``."""
    (tmp_path / "t.csv").write_text(trace)
    path = tmp_path / "s.yaml"
    path.write_text("trace: {path: t.csv}\n"
                    "workload:\n"
                    f"  sessions: {sessions}\n"
                    "tiers:\n"
                    "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5,\n"
                    "     scheduler: {enable_prefix_caching: true}}\n")
    out = run_cli("run", str(path), "--out", str(tmp_path / "o"), "--no-baselines",
                  "--no-report")
    return path, out


@pytest.mark.parametrize("key", ["system_prompt_tokens: 2000", "context: logged"])
def test_a_session_key_on_a_trace_without_sessions_is_one_line(tmp_path, key):
    """Under ``source: auto`` (the default) a trace without session_id and step columns runs
    no sessions, so ``system_prompt_tokens`` and ``context`` were accepted and never read."""
    path, out = _sessions_run(tmp_path, PLAIN_TRACE, "{" + key + "}")
    name = key.split(":")[0]
    assert out.returncode == 1
    assert out.stderr == (
        f"Error: {path}: line 3: workload.sessions.{name}: the trace has no session_id and "
        "step columns, so source auto runs no sessions and never reads it; remove it, or give "
        "the trace those columns\n")
    assert not (tmp_path / "o").exists()


def test_a_system_prompt_beside_the_traces_own_hashes_is_one_line(tmp_path):
    """Under ``context: logged`` a trace's own prefix hashes name every block of each prompt
    (its system prompt's too), so ``system_prompt_tokens`` was accepted and never read."""
    path, out = _sessions_run(tmp_path, SESSION_TRACE,
                              "{source: trace, context: logged, system_prompt_tokens: 2000}")
    assert out.returncode == 1
    assert out.stderr == (
        f"Error: {path}: line 3: workload.sessions.system_prompt_tokens: the trace's own prefix "
        "hashes (prefix_hashes, or Mooncake's hash_ids) name every block of each logged "
        "prompt, its system prompt's too, so system_prompt_tokens is never read; remove it, or "
        "remove the hash column to have tiersim hash each prompt with its system prompt\n")
    assert not (tmp_path / "o").exists()


def test_the_traces_own_hashes_under_context_logged_still_run(tmp_path):
    _, out = _sessions_run(tmp_path, SESSION_TRACE, "{source: trace, context: logged}")
    assert out.returncode == 0, out.stderr


def _difficulty_notes(cfg) -> list[str]:
    """The notes :func:`prepare_workload` raises drawing difficulty from ``cfg``."""
    import warnings

    import numpy as np
    from test_difficulty import make_tiers, make_trace

    from tiersim.errors import Note
    from tiersim.routing import prepare_workload

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prepare_workload(make_trace(50), make_tiers(0.5, 0.6), cfg, np.random.default_rng(0),
                         source="s.yaml")
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


@pytest.mark.parametrize(("kind", "keys", "readers"), [
    ("two_type", {"p_hopeless": 0.2}, ("p_hopeless", "kind three_type")),
    ("three_type", {"beta_a": 3.0, "beta_b": 4.0}, ("beta_a, beta_b", "kind continuous")),
    ("continuous", {"p_easy": 0.5}, ("p_easy", "kinds two_type and three_type")),
])
def test_a_difficulty_key_the_kind_does_not_read_is_noted(kind, keys, readers):
    """``kind: two_type`` with ``p_hopeless: 0.2`` drew no hopeless request, without a word
    (and so for the Beta shape beside a discrete kind, or p_easy beside continuous)."""
    from tiersim.routing.config import DifficultyConfig

    named, by = readers
    assert _difficulty_notes(DifficultyConfig(kind=kind, **keys)) == [
        f"s.yaml: workload.difficulty.{named} {'is' if ',' not in named else 'are'} read only "
        f"by {by}, and kind is {kind}, so {'it changes' if ',' not in named else 'they change'}"
        f" nothing; remove {'it' if ',' not in named else 'them'}, or change kind"]


def test_difficulty_keys_the_kind_reads_get_no_note():
    from tiersim.routing.config import DifficultyConfig

    assert _difficulty_notes(DifficultyConfig(kind="three_type", p_easy=0.6, p_hopeless=0.1,
                                              hint_auroc=0.7)) == []
    assert _difficulty_notes(DifficultyConfig(kind="continuous", beta_a=3.0)) == []


def _tier_notes(cfg, *accuracies) -> list[str]:
    """The notes :func:`prepare_workload` raises for tiers of ``accuracies``."""
    import warnings

    import numpy as np
    from test_difficulty import make_tiers, make_trace

    from tiersim.errors import Note
    from tiersim.routing import prepare_workload

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prepare_workload(make_trace(50), make_tiers(*accuracies), cfg, np.random.default_rng(0),
                         source="s.yaml")
    return [str(w.message) for w in caught if issubclass(w.category, Note)]


def test_top_accuracy_with_every_tier_accuracy_set_is_noted():
    """``top_accuracy`` scales the priors of tiers without an accuracy; with every tier's set
    it was accepted and never read."""
    from tiersim.routing.config import DifficultyConfig

    assert _tier_notes(DifficultyConfig(top_accuracy=0.6), 0.5, 0.6) == [
        "s.yaml: workload.difficulty.top_accuracy scales the precision prior of a tier that "
        "sets no accuracy, and every tier sets its own, so it changes nothing; remove it, or "
        "drop a tier's accuracy to use the prior"]
    assert _tier_notes(DifficultyConfig(top_accuracy=0.6), 0.5, None) == []


def test_curve_width_with_every_tier_a_table_is_noted():
    """``curve_width`` shapes the curve a single accuracy number is fitted by; with every
    tier's accuracy a table per class it was accepted and never read."""
    from tiersim.routing.config import DifficultyConfig

    table = {"easy": 0.9, "hard": 0.5}
    assert _tier_notes(DifficultyConfig(curve_width=0.5), table, table) == [
        "s.yaml: workload.difficulty.curve_width shapes the curve one accuracy number is "
        "fitted by, and every tier's accuracy is a table per class, so it changes nothing; "
        "remove it, or give a tier one number"]
    assert _tier_notes(DifficultyConfig(curve_width=0.5), table, 0.6) == []


def test_a_cheapest_tier_never_wrong_anywhere_is_not_told_to_add_requests():
    """Labels on which the cheapest tier is right on every request of the trace (not only of
    the training split) were told "use more requests", which cannot help: more of the same
    labels hold no wrong answer either."""
    import numpy as np
    from test_classifier_small_class import TIERS, table

    from tiersim.errors import Note
    from tiersim.routing.classifier import train_classifier

    with pytest.warns(Note) as notes:
        train_classifier(table(40, 0), TIERS, None, np.random.default_rng(0), "s.yaml")
    assert [str(n.message) for n in notes] == [
        "s.yaml: router.classifier: the cheapest tier cheap is wrong on 0 of the 20 training "
        "requests, too few of one kind to learn from or calibrate on, so every request gets "
        "the same probabilities (the split's rates) and routing cannot tell requests apart; "
        "it is wrong on 0 of all 40 requests, so more requests like these cannot help: a "
        "classifier needs requests the cheapest tier answers right and wrong"]
