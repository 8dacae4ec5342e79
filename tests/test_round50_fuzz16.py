"""Round 50, hostile input (helper fuzz16). Each test names what a user saw before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"
POLICIES = ("'uniform', 'static_split', 'threshold', 'lagrangian', 'oracle', 'cascade', "
            "'floor', 'budget' or 'step_type'")


@pytest.mark.parametrize(("name", "old", "new", "said"), [
    ("tiny", "policy: static_split", "policy: .nan",
     f"line 24: router.policy: must be one of {POLICIES} (got .nan); YAML reads .nan unquoted "
     "as a number: write '.nan' in quotes if it is text"),
    ("tiny", "precision: bf16", "precision: -.inf",
     "line 19: tiers[1].precision: input should be a valid string (got -.inf); YAML reads -.inf "
     "unquoted as a number: write '-.inf' in quotes if it is text"),
    ("tiny", "path: azure2023_code.parquet", "path: 1e999",
     "line 10: trace.path: input should be a valid string (got 1e999); YAML reads 1e999 "
     "unquoted as a number: write '1e999' in quotes if it is text"),
    ("response_cache", "mode: top_n", "mode: 1e999",
     "line 29: router.response_cache.mode: must be one of 'top_n' or 'lru' (got 1e999); YAML "
     "reads 1e999 unquoted as a number: write '1e999' in quotes if it is text"),
    ("prefix_cache", "enable_prefix_caching: true", "enable_prefix_caching: 1e999",
     "line 21: tiers[0].scheduler.enable_prefix_caching: must be true or false (got 1e999)"),
    ("kv_offload", "kv_offload_overlap: true", "kv_offload_overlap: .nan",
     "line 30: tiers[0].scheduler.kv_offload_overlap: must be true or false (got .nan)"),
    ("response_cache", "cost_model: attributed", "cost_model: .NaN",
     "line 36: cost_model: must be one of 'attributed', 'provisioned' or 'fixed_per_request' "
     "(got .NaN); YAML reads .NaN unquoted as a number: write '.NaN' in quotes if it is text"),
])
def test_a_nan_or_infinity_where_text_goes_is_told_as_a_number_there_is(
        tmp_path, capsys, monkeypatch, name, old, new, said):
    """``.nan``, ``.inf`` or ``1e999`` at a key that takes text (a policy, a precision, a trace
    path, a response cache's mode) or true/false was told "must be a finite number (got
    .nan)": a key that takes no number at all, so the fix named was none. It is now told as
    ``3`` there is: the words the key takes, and that YAML read the value as a number ("(got
    .inf)" for 1e999 before, a value the file does not hold)."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / f"{name}.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"
    assert not (tmp_path / "o").exists()


def test_a_number_key_still_wants_a_finite_number(tmp_path, capsys, monkeypatch):
    """A key that takes a number keeps its own words for ``1e999``."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "response_cache.yaml").read_text()
    (tmp_path / "s.yaml").write_text(text.replace("size: 20", "size: 1e999", 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert line == ("Error: s.yaml: line 30: router.response_cache.size: must be a finite "
                    "number (got 1e999, beyond a float)")


@pytest.mark.parametrize(("axis", "said"), [
    ("router.response_cache.mode: [1e999, lru]", "router.response_cache.mode: must be one of "
     "'top_n' or 'lru' (got 1e999) (value 1e999)"),
    ("zip: [{router.response_cache.mode: [.nan, lru], seed: [1, 2]}]",
     "router.response_cache.mode: must be one of 'top_n' or 'lru' (got .nan) (value .nan)"),
])
def test_a_sweep_value_nan_where_text_goes_is_told_as_a_number_there_is(
        tmp_path, capsys, monkeypatch, axis, said):
    """A sweep axis over a text key with ``.nan`` or ``1e999`` among its values was told
    "sweep.router.response_cache.mode[0]: must be a finite number"; it is now told as a ``3``
    there is, and no folder is made."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "response_cache.yaml").read_text()
    (tmp_path / "s.yaml").write_text(text + f"\nsweep:\n  {axis}\n")
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o"))
    key = axis.split(":")[0] if not axis.startswith("zip") else "router.response_cache.mode"
    assert line == f"Error: s.yaml: line 43: sweep: '{key}': {said}"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("address", [":", ":x", "[]:"])
def test_a_ray_address_of_no_host_and_no_port_is_refused_in_one_line(tmp_path, capsys,
                                                                     monkeypatch, address):
    """``--address :`` (or ``:x``, ``[]:``: no host, no port or not a number) went to Ray,
    which logged its own traceback ("ValueError: Malformed host: ") above tiersim's line; it
    is refused as ``:6379`` is, before Ray is started."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor",
                                   "ray", "--address", address))
    assert line == (f"Error: --address {address!r}: names no host before the port; give "
                    "host:port of a running Ray cluster, or leave it out")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("old", "new", "line", "said"), [
    ("step_tiers: {planning: bf16,", "step_tiers: {planning: true,", 45,
     "router.step_tiers.planning: a name or a number is expected here, not a YAML boolean "
     "(true/false); YAML reads true unquoted as true: write 'true' in quotes if it is text"),
    ("step_tiers: {planning: bf16, recovery: bf16, final: bf16, tool_call: fp8}",
     "step_tiers:\n    planning: bf16\n    code: yes", 47,
     "router.step_tiers.code: a name or a number is expected here, not a YAML boolean "
     "(true/false); YAML reads yes unquoted as true: write 'yes' in quotes if it is text"),
])
def test_a_yaml_boolean_for_a_step_tier_says_a_name_goes_there(tmp_path, capsys, monkeypatch,
                                                               old, new, line, said):
    """``step_tiers: {planning: true}`` (or a tier named ``yes`` there, unquoted) was told
    "router.step_tiers: a number is expected here": a step type's tier is a tier's name or
    index, as ``router.tier``'s is, and the line names the step type now, with the quotes a
    name YAML read as a boolean needs."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "agentic.yaml").read_text()
    assert old in text
    (tmp_path / "s.yaml").write_text(text.replace(old, new, 1))
    got = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert got == f"Error: s.yaml: line {line}: {said}"
    assert not (tmp_path / "o").exists()


def test_a_fleet_too_big_for_the_memory_left_is_refused_before_the_trace_is_read(
        tmp_path, capsys, monkeypatch):
    """Each tier is held to 100,000 engine replicas (replicas x data_parallel), but not the
    fleet: 64 tiers at that limit, 6.4 million at about 3.2 KB each (two tiers of 65,536
    peaked 421 MB above one replica a tier), took memory until there was none. A fleet whose
    engine replicas cannot fit in what the process may still take, at 3,000 bytes each at
    least, is refused at once, naming the fix; one byte more room and it runs."""
    from tiersim import inputs

    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text().replace(
        "replicas: 1\n", "replicas: 4\n    gpus_per_replica: 8\n    data_parallel: 8\n")
    (tmp_path / "s.yaml").write_text(text)
    need = 2 * 4 * 8 * 3000
    monkeypatch.setattr(inputs, "memory_room",
                        lambda: (need - 1, "its address-space limit, ulimit -v"))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o", "--no-baselines"))
    assert line == ("Error: s.yaml: line 13: tiers: the fleet's 64 engine replicas (replicas x "
                    "data_parallel, over its 2 tiers) need at least about 0.0 GB at about 3000 "
                    "bytes a replica, more than the 0.0 GB this process may still use (its "
                    "address-space limit, ulimit -v); lower replicas or data_parallel, or run "
                    "where more memory is allowed")
    assert not (tmp_path / "o").exists()
    monkeypatch.setattr(inputs, "memory_room",
                        lambda: (need, "its address-space limit, ulimit -v"))
    assert run_cli(capsys, "run", "s.yaml", "--out", "o", "--no-baselines",
                   "--no-report")[0] == 0


@pytest.mark.parametrize(("replicas", "tier", "said"), [
    (100, "bf16", "tier 'bf16' aggregated and 63 of its 99 prefill/decode splits, spread evenly "
     "(at most 63 are tried)"),
    (9, None, "tier 'w4a16' aggregated and its 8 prefill/decode splits"),
])
def test_disagg_says_up_front_how_many_runs_it_makes(tmp_path, capsys, monkeypatch, replicas,
                                                     tier, said):
    """``tiersim disagg`` of a tier of 300 replicas ran 64 full runs of the scenario one after
    another (75 s over an hour of the tiny scenario's trace), printing nothing until all had
    run; more than 8 runs are now named before the first starts (the runs are stopped here)."""
    import tiersim.disagg
    from tiersim.errors import TiersimError

    def stop(*_args, **_kwargs):
        raise TiersimError("stopped before the first run")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tiersim.disagg, "compare_splits", stop)
    text = (SCENARIOS / "tiny.yaml").read_text().replace("replicas: 1\n", f"replicas: {replicas}\n")
    (tmp_path / "s.yaml").write_text(text)
    code, err = run_cli(capsys, "disagg", "s.yaml", *(["--tier", tier] if tier else []))
    assert code == 1
    assert err.splitlines() == [
        f"note: simulating {replicas if replicas < 64 else 64} runs of the scenario, one after "
        f"another: {said}; the table is printed once all have run",
        "Error: stopped before the first run"]


def test_disagg_of_a_refused_tier_prints_no_such_note(tmp_path, capsys, monkeypatch):
    """A tier that cannot be split is refused in its one line, no note before it (eight runs
    or fewer are not noted: test_round22_serving's disagg prints nothing on stderr)."""
    monkeypatch.chdir(tmp_path)
    text = (SCENARIOS / "tiny.yaml").read_text().replace("replicas: 1\n", "replicas: 100\n")
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "disagg", "s.yaml", "--tier", "nope"))
    assert line == "Error: s.yaml: --tier: no tier named 'nope'; tiers are w4a16, bf16"
