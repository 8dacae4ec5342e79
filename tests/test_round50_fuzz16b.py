"""Round 50, hostile input (helper fuzz16b): items helper fuzz16 left as suspicious, each the
exact line a user sees now, or the behaviour that was wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"


def _edited(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """Bundled scenario ``name`` with ``old`` replaced by ``new`` (once), as s.yaml."""
    text = (SCENARIOS / f"{name}.yaml").read_text()
    assert old in text
    path = tmp_path / "s.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


# ---------------------------------------------------------------------------------------------
# 1. the prefix-hash budget of generated sessions, checked before any task is made

def test_generated_sessions_sure_to_pass_the_hash_budget_are_refused_before_any_task(
        tmp_path, capsys, monkeypatch):
    """100,000 tasks of about 40 steps were refused "by step 35 of session 40114" after 20-28 s
    of making tasks, while docs/security.md said the budget was "checked before any is made".
    1,000 tasks drawn as these are now put the count far over the limit before any task is
    made (about 3.5 s here, most of it the start-up), and nothing is written."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "agentic", "generate: {tasks: 150, task_rate_rps: 0.5, "
            "middle_steps_mean: 4.0,", "generate: {tasks: 100000, task_rate_rps: 100, "
            "middle_steps_mean: 40, max_steps: 100,")
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o", "--no-baselines"))
    assert line == (
        "Error: s.yaml: line 26: workload.sessions.generate: 100,000 tasks' prompts, each with "
        "its context, would hold about 64,000,000,000 tokens in all (about 1,249 prefix blocks "
        "of 512 tokens a task, over 1,000 tasks drawn as these are), more than the "
        "25,600,000,000 tokens tiersim hashes for prefix caching in one run; lower tasks, "
        "middle_steps_mean, max_steps or max_context_tokens")
    assert not (tmp_path / "o").exists()


def test_the_up_front_estimate_leaves_a_run_that_fits_to_run(monkeypatch):
    """Tasks whose estimate does not clear the limit by 5 standard errors are made, and the
    count kept as they are made decides: the sample refuses nothing that may fit."""
    import numpy as np

    from tiersim.workload import sessions

    cfg = sessions.SessionGenerator(tasks=5000, middle_steps_mean=3, max_steps=6)
    names = ["planning", *sessions.mix_order(cfg.step_mix), "final"]
    mix_p = np.array([cfg.step_mix[k] for k in names[1:-1]])
    # about 5,000 x 9 blocks: a limit at the estimate is not surely passed
    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", 1)
    with pytest.raises(sessions.ScenarioError, match="would hold about"):
        sessions._check_hashes_up_front(cfg, names, mix_p, 0, "s.yaml")
    rng = np.random.default_rng(0)
    blocks = []
    for _ in range(sessions.SAMPLE_TASKS):
        new, out, _ = sessions._draw_task(cfg, rng, names, mix_p, 0)[1]
        prompts = np.cumsum(new) + np.concatenate(([0], np.cumsum(out)[:-1]))
        blocks.append(int(np.sum(-(-prompts // 512))))
    monkeypatch.setattr(sessions, "MAX_PREFIX_HASHES", int(np.mean(blocks) * cfg.tasks))
    sessions._check_hashes_up_front(cfg, names, mix_p, 0, "s.yaml")  # not refused


# ---------------------------------------------------------------------------------------------
# 2. a model check's values as the file writes them, at the key it is about

@pytest.mark.parametrize(("new", "line", "got"), [
    ("acceptance: -1,", 28, "-1"),
    ("acceptance: 1e308,", 28, "1e308"),
    ("acceptance: [0.5, 1e308],", 28, "[0.5, 1e308]"),
    ("acceptance: 1.50,", 28, "1.50"),
])
def test_a_speculative_acceptance_out_of_range_is_told_as_written_at_its_key(
        tmp_path, capsys, monkeypatch, new, line, got):
    """``acceptance: -1`` read "(got -1.0)" and ``1e308`` "(got 1e+308)", values the file does
    not hold, and both were named at ``speculative``, not at ``acceptance``: the check is the
    speculative block's (it needs ``k``), and it quoted the value it had converted."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "spec_decode", "acceptance: 0.7,", new)
    said = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert said == (f"Error: s.yaml: line {line}: tiers[0].speculative.acceptance: must be one "
                    f"rate or k=3 rates, each in [0, 1] (got {got})")
    assert not (tmp_path / "o").exists()


def test_an_acceptance_in_block_style_is_named_at_its_own_line(tmp_path, capsys, monkeypatch):
    """In block style the acceptance's own line is named (it was the speculative key's)."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "spec_decode", "speculative: {k: 3, acceptance: 0.7, head_cost: 0.05}",
            "speculative:\n      k: 3\n      acceptance: -1")
    said = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert said == ("Error: s.yaml: line 30: tiers[0].speculative.acceptance: must be one "
                    "rate or k=3 rates, each in [0, 1] (got -1)")


def test_a_number_beyond_a_key_s_bound_is_quoted_as_written(tmp_path, capsys, monkeypatch):
    """A key's own bound quoted ``head_cost: 1e308`` as Python writes the float, 1e+308."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "spec_decode", "head_cost: 0.05", "head_cost: 1e308")
    said = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert said == ("Error: s.yaml: line 28: tiers[0].speculative.head_cost: must be <= 10.0 "
                    "(got 1e308)")


@pytest.mark.parametrize(("old", "new", "said"), [
    # the other model checks that quote a child's value: data_parallel 3.0 read "(3)"
    ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "    replicas: 1\n    gpus_per_replica: 4\n    data_parallel: 3.0\n"
     "    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "line 18: tiers[0].data_parallel: data_parallel (3.0) must divide gpus_per_replica (4); "
     "with 4 GPUs it may be 1, 2 or 4"),
    # named at scheduler, 1.6e1 read "(16)"
    ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "    replicas: 1\n    scheduler: {max_num_seqs: 64, max_num_batched_tokens: 1.6e1}\n"
     "    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "line 17: tiers[0].scheduler.max_num_batched_tokens: must be >= max_num_seqs (64) so "
     "every running request can decode each step (got 1.6e1)"),
    # max_num_batched_tokens left at its default: named at max_num_seqs, which was written
    ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "    replicas: 1\n    scheduler: {max_num_seqs: 1.0e4}\n"
     "    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "line 17: tiers[0].scheduler.max_num_seqs: must be <= max_num_batched_tokens (8192, its "
     "default) so every running request can decode each step (got 1.0e4); lower it, or raise "
     "max_num_batched_tokens"),
])
def test_other_model_checks_quote_their_values_as_written(tmp_path, capsys, monkeypatch, old,
                                                          new, said):
    """Every model-level check that quotes a child key's value now quotes it as the file writes
    it, at that key (tiersim.errors.KeyedError's ``values``)."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "tiny", old, new)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"


@pytest.mark.parametrize(("old", "new", "said"), [
    # a field's own check quoted the floats it had read: 3.6e2 as 360, 12.0 as 12
    ("window: [240, 360]", "window: [3.6e2, 2.4e2]",
     "line 11: trace.window: must be [start_s, end_s] with 0 <= start < end (got [3.6e2, "
     "2.4e2])"),
    ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
     "    replicas: 1\n    scheduler: {block_size: 12.0}\n    cost_per_gpu_hour: 3.50\n"
     "  - name: bf16",
     "line 17: tiers[0].scheduler.block_size: must be one of vLLM's block sizes 1, 8, 16, 32, "
     "64, 128 or 256 tokens (got 12.0)"),
])
def test_a_field_check_quotes_its_value_as_written(tmp_path, capsys, monkeypatch, old, new,
                                                   said):
    """A field's own check (after pydantic read it) quotes the value as the file writes it."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "tiny", old, new)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"


@pytest.mark.parametrize(("old", "new", "said"), [
    # named at router.fractions, "-0.5"
    ("fractions: [0.5, 0.5]", "fractions: [-0.50, 1.5]",
     "line 25: router.fractions[0]: fractions must be >= 0 and sum to 1 (got -0.50)"),
    # "-1e+300"
    ("fractions: [0.5, 0.5]", "fractions: {w4a16: -1e300, bf16: 0.5}",
     "line 25: router.fractions.w4a16: fractions must be >= 0 and sum to 1 (got -1e300)"),
    # named at router.thresholds, "1.5"
    ("policy: static_split\n  fractions: [0.5, 0.5]",
     "policy: threshold\n  thresholds: [0.5, 1.50]",
     "line 25: router.thresholds[1]: thresholds are probabilities in [0, 1] (got 1.50)"),
    # named at class_difficulty, "class_difficulty.easy must be in [0, 1] (got 2)"
    ("router:", "workload: {difficulty: {class_difficulty: {easy: 2.0}}}\nrouter:",
     "line 23: workload.difficulty.class_difficulty.easy: must be in [0, 1] (got 2.0)"),
])
def test_a_routing_check_names_the_item_and_quotes_it_as_written(tmp_path, capsys, monkeypatch,
                                                                 old, new, said):
    """The routing checks of a list or map's items named the whole key and quoted the item as
    Python wrote the float (six digits: -1e+300, 2)."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "tiny", old, new)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"


def test_a_keyed_error_pickles_with_its_values():
    """A sweep's worker hands errors back pickled: the values and key come back too."""
    import pickle

    from tiersim.errors import KeyedError

    err = KeyedError(("a",), "x ({v})", {"v": (("a",), 2.0)})
    back = pickle.loads(pickle.dumps(err))
    assert (back.key, str(back), back.told({"a": 2})) == (("a",), "x (2.0)", "x (2)")


# ---------------------------------------------------------------------------------------------
# 3. a NaN where a tier's name or index goes; -0.0 is tier 0, as 1.0 is tier 1

@pytest.mark.parametrize(("new", "key", "written"), [
    ("step_tiers: {planning: .nan,", "step_tiers.planning", ".nan"),
    ("step_tiers: {planning: -.inf,", "step_tiers.planning", "-.inf"),
    ("step_tiers: {planning: 1e999,", "step_tiers.planning", "1e999"),
])
def test_a_nan_where_a_tier_goes_says_a_name_goes_there_too(tmp_path, capsys, monkeypatch, new,
                                                            key, written):
    """``step_tiers: {planning: .nan}`` read "must be a finite number (got .nan)": a tier's
    name goes there as well as its index, so the fix may be quotes."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "agentic", "step_tiers: {planning: bf16,", new)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == (f"Error: s.yaml: line 45: router.{key}: a name or a finite number is "
                    f"expected here, not {written}; YAML reads {written} unquoted as a number: "
                    f"write '{written}' in quotes if it is text")


def test_router_tier_nan_says_so_too(tmp_path, capsys, monkeypatch):
    """``router.tier`` takes a tier's name or index too."""
    monkeypatch.chdir(tmp_path)
    _edited(tmp_path, "agentic", "tool_call: fp8}", "tool_call: fp8}\n  tier: .nan")
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == ("Error: s.yaml: line 46: router.tier: a name or a finite number is "
                    "expected here, not .nan; YAML reads .nan unquoted as a number: write "
                    "'.nan' in quotes if it is text")


@pytest.mark.parametrize(("written", "index"), [("-0.0", 0), ("0.0", 0), ("1.0", 1),
                                                ("1e0", 1)])
def test_a_whole_float_tier_index_is_that_index_as_everywhere(tmp_path, written, index):
    """A whole number written as a float is that whole number at every whole-number key
    (``replicas: 2.0`` is 2), so ``-0.0`` (equal to 0) is tier 0, as ``1.0`` is tier 1."""
    path = _edited(tmp_path, "agentic", "step_tiers: {planning: bf16,",
                   f"step_tiers: {{planning: {written},")
    assert load_scenario(path).router.step_tiers["planning"] == index


# ---------------------------------------------------------------------------------------------
# 4. report of a sweep's folder whose sweep.json is gone

def test_report_of_a_sweep_folder_without_sweep_json_says_how_to_rebuild_it(
        tmp_path, capsys, monkeypatch):
    """``tiersim report`` on a folder with a sweep's ``points/`` and no sweep.json said "no
    results here": rerunning the sweep into the folder rebuilds it from the points (they are
    not run again)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sw" / "points").mkdir(parents=True)
    for name in ("a1b2c3d4e5f6.json", "0f1e2d3c4b5a.json"):
        (tmp_path / "sw" / "points" / name).write_text("{}")
    line = one_error_line(*run_cli(capsys, "report", "sw"))
    assert line == ("Error: sw: a sweep's folder without its sweep.json (2 points stored, no "
                    "sweep.parquet); run its `tiersim sweep` command again with this --out "
                    "folder to rebuild it (it resumes from the points stored), and the report is "
                    "written at the end")


# ---------------------------------------------------------------------------------------------
# 6. --address host: names no port

@pytest.mark.parametrize("address", ["localhost:", "ray://localhost:", "[::1]:"])
def test_a_ray_address_with_no_port_after_its_colon_is_refused_before_ray(
        tmp_path, capsys, monkeypatch, address):
    """``--address localhost:`` went to Ray, whose error named an address never typed
    (``full address = 192.0.2.2:``); it is refused before Ray, as ``:`` is."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor",
                                   "ray", "--address", address))
    assert line == (f"Error: --address {address!r}: names no port after the colon; give "
                    "host:port of a running Ray cluster, or leave it out")
    assert not (tmp_path / "o").exists()


def test_a_ray_address_in_the_environment_with_no_port_is_named_there(tmp_path, capsys,
                                                                     monkeypatch):
    """The same address in ``RAY_ADDRESS`` is named as the environment's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAY_ADDRESS", "localhost:")
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor",
                                   "ray"))
    assert line == ("Error: RAY_ADDRESS='localhost:' (in the environment): names no port after "
                    "the colon; set it to host:port of a running Ray cluster, or unset it to "
                    "start a local Ray")
