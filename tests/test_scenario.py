"""Scenario loading: valid files load; every problem is one line naming file, line and key."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import REPO, tiny_doc
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersim.errors import ScenarioError
from tiersim.scenario import Scenario, format_loc, load_scenario, scenario_from_dict

ZERO_FIX = ("a tier runs 1 replica or more; to keep a tier out of the routed fleet, move it "
            "under baselines: (sized only as a uniform fleet for the saving) or remove it "
            "(tiersim plan chooses every tier's replicas, zero included, whatever count is "
            "written)")  # fresh55a: the fix a planner writing replicas: 0 was not told

BASE = """\
name: t
seed: 0
profile: null
trace: {path: azure2023_code.parquet}
tiers:
  - name: w4a16
    precision: w4a16
    replicas: 1
    cost_per_gpu_hour: 3.5
  - name: bf16
    precision: bf16
    replicas: 1
    cost_per_gpu_hour: 3.5
"""


def error_of(scenario_file, text: str) -> str:
    """The one-line error of loading ``text`` (file named x.yaml)."""
    path = scenario_file(text=text, name="x.yaml")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message[len(f"{path}: "):]


@pytest.mark.parametrize("name", ["default.yaml", "tiny.yaml", "routing_example.yaml"])
def test_bundled_scenarios_load(name):
    scenario = load_scenario(REPO / "scenarios" / name)
    assert isinstance(scenario, Scenario)
    assert [t.precision for t in scenario.tiers][-1] == "bf16"


def test_default_scenario_is_the_documented_fleet():
    s = load_scenario(REPO / "scenarios" / "default.yaml")
    assert (s.model, s.gpu, s.seed) == ("Qwen3-Coder-30B-A3B", "H200", 0)
    assert [t.precision for t in s.tiers] == ["fp8", "bf16"]  # as planned (plan_default.yaml)
    assert s.trace.path == "azure2023_code.parquet"


def test_unknown_key_names_line_and_suggests(scenario_file):
    text = BASE.replace("    replicas: 1\n    cost_per_gpu_hour: 3.5\n  - name: bf16",
                        "    replica: 1\n    cost_per_gpu_hour: 3.5\n  - name: bf16")
    assert error_of(scenario_file, text) == (
        "line 8: tiers[0].replica: unknown key (did you mean 'replicas'?)"
    )


def test_unknown_top_level_key_lists_nothing_close(scenario_file):
    message = error_of(scenario_file, BASE + "colour: blue\n")
    assert message.startswith("line 14: colour: unknown key (known keys: accuracy_floor, ")


def test_bad_value_names_bound_and_value(scenario_file):
    text = BASE.replace("    replicas: 1\n    cost_per_gpu_hour: 3.5\n",
                        "    replicas: 0\n    cost_per_gpu_hour: 3.5\n", 1)
    assert error_of(scenario_file, text) == ("line 8: tiers[0].replicas: must be >= 1 (got 0): "
                                             + ZERO_FIX)


def test_wrong_type(scenario_file):
    text = BASE.replace("seed: 0", "seed: zero")
    assert error_of(scenario_file, text) == (
        "line 2: seed: input should be a valid integer, unable to parse string as an integer "
        "(got 'zero')"
    )


def test_literal_choices_are_listed(scenario_file):
    text = BASE + "cost_model: free\n"
    assert error_of(scenario_file, text) == (
        "line 14: cost_model: must be one of 'attributed', 'provisioned' or 'fixed_per_request' "
        "(got 'free')"
    )


def test_missing_key_points_at_its_parent(scenario_file):
    text = BASE.replace("    precision: w4a16\n", "")
    assert error_of(scenario_file, text) == "line 6: tiers[0].precision: required key is missing"


def test_tier_that_does_not_fit_says_by_how_much(scenario_file):
    text = BASE.replace("    precision: bf16\n", "    precision: bf16\n"
                        "    gpu_memory_utilization: 0.4\n")
    assert error_of(scenario_file, text) == (
        "line 10: tiers[1]: tier 'bf16': Qwen3-Coder-30B-A3B at BF16 does not fit on 1x H200: "
        "weights 61.1 GB + reserve 2.0 GB > usable 60.3 GB (short by 2.8 GB); set "
        "gpu_memory_utilization to at least 0.419 (it is 0.4), or use gpus_per_replica 2, a "
        "smaller precision or a GPU with more memory"
    )


def test_unknown_precision_comes_from_the_catalogue(scenario_file):
    text = BASE.replace("precision: bf16", "precision: bf17")
    message = error_of(scenario_file, text)
    assert message.startswith("line 11: tiers[1].precision: unknown precision 'bf17'")


def test_router_rule_errors_name_the_router(scenario_file):
    text = BASE + "router: {policy: static_split}\n"
    assert error_of(scenario_file, text) == (
        "line 14: router: policy static_split needs fractions, e.g. fractions: [0.5, 0.5]"
    )


def test_union_errors_point_inside_the_value(scenario_file):
    text = BASE + "router: {policy: threshold, thresholds: {w4a16: high}}\n"
    message = error_of(scenario_file, text)
    assert message.startswith("line 14: router.thresholds.w4a16: input should be a valid number")


def test_scheduler_budget_must_cover_the_batch(scenario_file):
    text = BASE.replace("    cost_per_gpu_hour: 3.5\n  - name: bf16",
                        "    cost_per_gpu_hour: 3.5\n    scheduler: {max_num_seqs: 64, "
                        "max_num_batched_tokens: 32}\n  - name: bf16")
    assert error_of(scenario_file, text) == (
        "line 10: tiers[0].scheduler.max_num_batched_tokens: must be >= max_num_seqs (64) so "
        "every running request can decode each step (got 32)"
    )  # round 50: named at the key it is about, its value as written (was at scheduler)


def test_duplicate_tier_names(scenario_file):
    text = BASE.replace("name: bf16", "name: w4a16")
    assert error_of(scenario_file, text) == (
        "line 10: tiers[1].name: duplicate tier name 'w4a16' (also tiers[0]; names must differ "
        "across tiers and baselines)"
    )


@pytest.mark.parametrize(("name", "shown"), [
    ("e\\u0301", "'e\\u0301' reads the same as tiers[0]'s '\\xe9'"),  # composed vs decomposed
    ("\\xe9 ", "'\\xe9 ' reads the same as tiers[0]'s '\\xe9'"),
    ("\\uff45\\u0301", "'\\uff45\\u0301' reads the same as tiers[0]'s '\\xe9'"),  # full width
])
def test_tier_names_that_read_the_same_are_duplicates(scenario_file, name, shown):
    """Two tiers shown under one label in every table (once accepted as two names)."""
    text = BASE.replace("name: w4a16", "name: \"\\xe9\"").replace("name: bf16",
                                                                  f"name: \"{name}\"")
    assert error_of(scenario_file, text) == (
        f"line 10: tiers[1].name: tier name {shown} (they differ only in Unicode form, width or "
        "surrounding spaces); names must differ visibly across tiers and baselines")


MERGED = """\
name: t
profile: null
trace: {path: azure2023_code.parquet}
tiers:
  - name: bf16
    <<: {precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}
"""


@pytest.mark.parametrize(("edit", "expected"), [
    (("replicas: 1", 'replicas: "2"'),  # was read as 2: the quotes were looked for elsewhere
     "line 6: tiers[0].replicas: must be a number, not a string ('2'); write it without quotes"),
    (("3.5}", "3.5, bogus: 1}"),  # was named at the tier's line 5, which holds no bogus
     "line 6: tiers[0].bogus: unknown key (known keys: accuracy, balancer, cost_per_gpu_hour, "
     "cost_per_request_usd, data_parallel, disaggregation, expert_parallel, "
     "gpu_memory_utilization, gpus_per_replica, kv_dtype, model, moe_backend, name, "
     "output_length_multiplier, precision, replicas, scheduler, speculative)"),
])
def test_a_key_a_merge_brings_is_checked_and_named_where_it_is_written(scenario_file, edit,
                                                                       expected):
    assert error_of(scenario_file, MERGED.replace(*edit)) == expected


BASELINE = "baselines:\n  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5}\n"


def test_a_baseline_only_tier_loads_beside_the_tiers(scenario_file):
    s = load_scenario(scenario_file(text=BASE + BASELINE, name="x.yaml"))
    assert [t.name for t in s.tiers] == ["w4a16", "bf16"]
    assert [t.name for t in s.baselines] == ["fp8"]
    assert [t.name for t in s.with_baselines().tiers] == ["w4a16", "bf16", "fp8"]


@pytest.mark.parametrize(("edit", "expected"), [
    (("name: fp8", "name: bf16"), "line 15: baselines[0].name: duplicate tier name 'bf16' "
     "(also tiers[1]; names must differ across tiers and baselines)"),
    (("replicas: 1, cost", "replica: 1, cost"), "line 15: baselines[0].replica: unknown key "
     "(did you mean 'replicas'?)"),
    (("precision: fp8", "precision: fp9"), "line 15: baselines[0].precision: unknown precision "
     "'fp9'; known precisions: bf16, fp8, w4a16, nvfp4, fp8_block, mxfp4, checkpoint"),
    (("replicas: 1, cost", "replicas: 2000, cost"), "line 15: baselines[0].replicas: 2000 "
     "replicas is above limits.max_replicas (1024); set limits: {max_replicas: N} to allow "
     "more"),
])
def test_a_bad_baseline_is_one_line_naming_its_key(scenario_file, edit, expected):
    assert error_of(scenario_file, BASE + BASELINE.replace(*edit)) == expected


def test_duplicate_yaml_keys(scenario_file):
    assert error_of(scenario_file, BASE + "seed: 1\n") == (
        "line 14: seed: duplicate key (remove one of them)"
    )


def test_yaml_syntax_error(scenario_file):
    message = error_of(scenario_file, BASE.replace("seed: 0", "seed: [0"))
    assert message.startswith("line 3: invalid YAML: ")


@pytest.mark.parametrize("text,got", [("", "an empty file"), ("- 1\n- 2\n", "list")])
def test_top_level_must_be_a_mapping(scenario_file, text, got):
    assert error_of(scenario_file, text) == f"top level must be a mapping of keys (got {got})"


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match=r"nope\.yaml: file not found$"):
        load_scenario(tmp_path / "nope.yaml")


def test_from_dict_names_the_source_without_lines():
    doc = tiny_doc()
    doc["tiers"][1]["replicas"] = -2
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(doc, "sweep point 3")
    assert str(info.value) == ("sweep point 3: tiers[1].replicas: must be >= 1 (got -2): "
                                 + ZERO_FIX)


def test_from_dict_keeps_the_source_for_relative_paths():
    scenario = scenario_from_dict(tiny_doc(), "scenarios/tiny.yaml")
    assert scenario.source == "scenarios/tiny.yaml"


def test_format_loc():
    assert format_loc(("tiers", 1, "scheduler", "block_size")) == "tiers[1].scheduler.block_size"
    assert format_loc(()) == "(top level)"


@settings(max_examples=25, deadline=None)
@given(st.integers(-5, 40))
def test_replicas_bound_holds_for_any_value(replicas):
    doc = tiny_doc()
    doc["tiers"][0]["replicas"] = replicas
    if replicas >= 1:
        assert scenario_from_dict(doc, "p").tiers[0].replicas == replicas
    else:
        with pytest.raises(ScenarioError,
                           match=rf"must be >= 1 \(got {replicas}\): {re.escape(ZERO_FIX)}$"):
            scenario_from_dict(doc, "p")


def test_router_options_are_checked_against_the_tiers_at_load(scenario_file):
    text = BASE + "router:\n  policy: uniform\n  tier: fp8\n"
    assert error_of(scenario_file, text) == (
        "line 16: router.tier: unknown tier 'fp8'; tiers are w4a16, bf16"
    )


def _leaf_paths(node, prefix=()):
    """Every path to a value inside a nested dict/list document."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaf_paths(value, prefix + (i,))


JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
                 st.text(max_size=8), st.lists(st.integers(-2, 3), max_size=3),
                 st.dictionaries(st.text(max_size=6), st.integers(), max_size=2))


@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_any_corrupted_scenario_is_valid_or_one_scenario_error_line(data):
    doc = tiny_doc()
    paths = [p for p in _leaf_paths(doc) if p]
    path = data.draw(st.sampled_from(paths))
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = data.draw(JUNK)
    try:
        scenario_from_dict(doc, "fuzz.yaml")
    except ScenarioError as err:
        assert "\n" not in str(err)
        assert str(err).startswith("fuzz.yaml: ")


@pytest.mark.parametrize("key,value,expected", [
    ("tiers", 5, "tiers: must be a list (got 5)"),
    ("trace", None, "trace: must be a mapping of keys (got null)"),
    ("trace", {"path": "t.csv", "window": [1]},
     "trace.window[1]: value missing: the list is too short"),
    ("trace", {"path": "t.csv", "window": [5, 1]},
     "trace.window: must be [start_s, end_s] with 0 <= start < end (got [5, 1])"),
    ("gpu", "A100", "gpu: unknown GPU 'A100'; known GPUs: H200, H100, B200, B300"),
])
def test_shape_errors_say_what_is_expected(key, value, expected):
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(tiny_doc(**{key: value}), "x.yaml")
    assert str(info.value) == f"x.yaml: {expected}"


def test_default_profile_is_the_one_shipped_for_the_scenarios_gpu(monkeypatch):
    doc = tiny_doc()
    del doc["profile"]
    assert scenario_from_dict(doc, "p").profile == "h200_aiconfigurator_vllm"
    doc["gpu"] = "H100 SXM"
    assert scenario_from_dict(doc, "p").profile == "h100_aiconfigurator_vllm"
    doc["gpu"] = "B200"
    assert scenario_from_dict(doc, "p").profile == "b200_aiconfigurator_vllm"
    import tiersim.perf

    monkeypatch.delitem(tiersim.perf.GPU_PROFILES, "B200")  # a GPU with none: the roofline
    assert scenario_from_dict(doc, "p").profile is None


def test_an_unknown_draft_model_is_named_at_its_key():
    doc = tiny_doc()
    doc["tiers"][1]["speculative"] = {"k": 3, "draft_model": "Nope-1B", "acceptance": 0.5}
    with pytest.raises(ScenarioError, match=r"^x.yaml: tiers\[1\].speculative.draft_model: "
                       r"unknown model 'Nope-1B'; known models: "):
        scenario_from_dict(doc, "x.yaml")


def test_an_explicit_profile_or_null_is_kept_on_any_gpu():
    assert scenario_from_dict(tiny_doc(gpu="H100", profile=None), "p").profile is None
    doc = tiny_doc(gpu="H100", profile="h200_aiconfigurator_vllm")
    with pytest.raises(ScenarioError, match=r"^p: profile: .*measured on H200, not H100"):
        scenario_from_dict(doc, "p")


def test_a_named_profile_for_another_gpu_is_an_error():
    doc = tiny_doc(gpu="B200", profile="h200_aiconfigurator_vllm")
    with pytest.raises(ScenarioError, match=r"^p: profile: .*measured on H200, not B200"):
        scenario_from_dict(doc, "p")


def test_the_readme_example_scenario_is_valid():
    text = (REPO / "README.md").read_text()
    block = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    scenario = scenario_from_dict(yaml.safe_load(block), "README.md")
    assert [t.name for t in scenario.tiers] == ["w4a16", "bf16"]
    assert [t.name for t in scenario.baselines] == ["fp8"]


MERGED_TIERS = """\
name: merged
model: Qwen3-Coder-30B-A3B
gpu: H200
profile: null
trace: {path: azure2023_code.parquet, window: [240, 360]}
tiers:
  - &small {name: w4a16, precision: w4a16, replicas: 1, cost_per_gpu_hour: 3.5}
  - &big {name: bf16, precision: bf16, replicas: 2, cost_per_gpu_hour: 4.5}
  - <<: [*big, *small]
    name: mix
router: {policy: static_split, fractions: [0.4, 0.3, 0.3]}
"""


def test_a_merge_list_takes_each_key_from_its_earliest_mapping(scenario_file):
    """YAML's rule: the mapping's own keys, then the earlier mapping of the list. PyYAML 6.0.4
    let the later mapping win for every key longer than one character (yaml/pyyaml#953)."""
    mix = load_scenario(scenario_file(MERGED_TIERS)).tiers[2]
    assert (mix.name, mix.precision, mix.replicas, mix.cost_per_gpu_hour) == ("mix", "bf16", 2,
                                                                              4.5)
    flipped = MERGED_TIERS.replace("[*big, *small]", "[*small, *big]")
    mix = load_scenario(scenario_file(flipped)).tiers[2]
    assert (mix.name, mix.precision, mix.replicas, mix.cost_per_gpu_hour) == ("mix", "w4a16", 1,
                                                                              3.5)


MERGE_FIX = ("; '<<' merges maps (<<: *anchor): give it a map or a list of maps, or quote the "
             "key ('<<') if it is text")
"""The fix a merge of something other than a map is told (round 36)."""


def test_a_merge_of_something_not_a_mapping_is_one_line(scenario_file):
    path = scenario_file(MERGED_TIERS.replace("[*big, *small]", "[*big, 3]"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (f"{path}: line 9: invalid YAML: expected a mapping for merging, "
                              f"but found scalar{MERGE_FIX}")
    path = scenario_file(MERGED_TIERS.replace("[*big, *small]", "3"))
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value) == (f"{path}: line 9: invalid YAML: expected a mapping or list of "
                              f"mappings for merging, but found scalar{MERGE_FIX}")


@pytest.mark.parametrize("written", ["off", "Off", "no", "false", "'off'"])
def test_sessions_source_off_unquoted_is_off(scenario_file, written):
    """``source: off`` as docs/agentic.md writes it was refused: YAML 1.1 reads unquoted off
    (and no, false) as False."""
    path = scenario_file(text=BASE + f"workload: {{sessions: {{source: {written}}}}}\n")
    assert load_scenario(path).workload.sessions.source == "off"


@pytest.mark.parametrize("written", ["on", "yes", "true"])
def test_sessions_source_true_is_one_line(scenario_file, written):
    text = BASE + f"workload:\n  sessions:\n    source: {written}\n"
    assert error_of(scenario_file, text) == (
        "line 16: workload.sessions.source: true (YAML reads unquoted on, yes and true as "
        "true) names no source; write one of 'auto', 'trace', 'generate' or 'off'")
