"""Hostile and odd inputs, round 24: how scenario YAML is read (YAML 1.1's readings)."""

from __future__ import annotations

import pytest
from conftest import TINY
from test_round19 import error_line, run_cli


def _edited(tmp_path, old: str, new: str) -> tuple:
    """tiny.yaml with its first ``old`` line replaced by ``new`` (lines), and that line's
    number."""
    lines = TINY.read_text().splitlines()
    number = next(i for i, ln in enumerate(lines, 1) if ln.strip().removeprefix("- ") == old)
    head = lines[number - 1][:lines[number - 1].index(old)]
    indent = " " * len(head)
    lines[number - 1:number] = [(indent if i else head) + ln
                                for i, ln in enumerate(new.splitlines())]
    path = tmp_path / "s.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, number


@pytest.mark.parametrize(("old", "new", "line"), [
    ("name: bf16", "name: no", "tiers[1].name: input should be a valid string (got false); "
     "YAML reads no unquoted as false: write 'no' in quotes if it is text"),
    ("gpu: H200", "gpu: on", "gpu: input should be a valid string (got true); YAML reads on "
     "unquoted as true: write 'on' in quotes if it is text"),
    # round 48: 1_0 groups no thousands and is text now; 1_000 is the number YAML reads
    # round 50: a number is quoted as the file writes it (was "got 1000", "got 1000.0")
    ("name: tiny", "name: 1_000", "name: input should be a valid string (got 1_000); YAML "
     "reads 1_000 unquoted as a number: write '1_000' in quotes if it is text"),
    ("name: bf16", "name: 1.0e+3", "tiers[1].name: input should be a valid string (got "
     "1.0e+3); YAML reads 1.0e+3 unquoted as a number: write '1.0e+3' in quotes if it is text"),
    ("policy: static_split", "policy: uniform\ntier: yes", "router.tier: a name or a number is "
     "expected here, not a YAML boolean (true/false); YAML reads yes unquoted as true: write "
     "'yes' in quotes if it is text"),
])
def test_text_yaml_reads_as_another_type_says_how_it_was_read(tmp_path, capsys, old, new,
                                                              line):
    """A tier named ``no`` (or ``1_0``) reached the line as 'got False' ('got 10'), naming
    nothing the user wrote and not saying to quote it; a tier named ``yes`` given as the
    router's tier was 'a number is expected here', where a tier's name is as good."""
    path, number = _edited(tmp_path, old, new)
    number += new.count("\n")
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == f"Error: {path}: line {number}: {line}"
    assert not (tmp_path / "out").exists()


def test_a_boolean_for_a_number_only_field_is_not_told_to_quote_it(tmp_path, capsys):
    """Quotes are the fix only where a field takes text: ``replicas: yes`` keeps its line."""
    path, number = _edited(tmp_path, "replicas: 1", "replicas: yes")
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == (f"Error: {path}: line {number}: tiers[0].replicas: a number is expected "
                   "here, not a YAML boolean (true/false)")


def test_plan_choose_refuses_a_yaml_boolean_for_a_tier(tmp_path, capsys):
    """``--choose router.tier=no,yes`` planned tier False and True, which pydantic reads as
    the tier indexes 0 and 1 (plan.json: ``"tier": false``), where a scenario's
    ``router.tier: no`` is refused."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY.read_text().replace("policy: static_split", "policy: uniform")
                    .replace("fractions: [0.5, 0.5]", ""))
    got = error_line(*run_cli(capsys, "plan", path, "--out", tmp_path / "pl", "--no-report",
                              "--choose", "router.tier=w4a16,no"))
    assert got == ("Error: --choose router.tier=false: router.tier: a "
                   "name or a number is expected here, not a YAML boolean (true/false); YAML "
                   "reads unquoted yes, no, on and off as booleans: quote a name ('no')")
    assert not (tmp_path / "pl").exists()


def test_a_yaml_date_in_a_sweep_axis_is_shown_as_written(tmp_path, capsys):
    """The axis value of the line read '(value datetime.date(2024, 1, 1))', naming no YAML the
    user wrote (a scenario's own line says 2024-01-01 since round 21)."""
    path = tmp_path / "s.yaml"
    text = TINY.read_text().rstrip("\n") + "\nsweep:\n  trace.window: [[240, 2024-01-01]]\n"
    path.write_text(text)
    number = text.count("\n")
    got = error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "sw", "--no-report",
                              "--workers", "1"))
    assert got == (f"Error: {path}: line {number}: sweep: 'trace.window': trace.window[1]: "
                   "input should be a valid number (got 2024-01-01, which YAML reads unquoted "
                   "as a date or time) (value [240, 2024-01-01])")
    assert not (tmp_path / "sw").exists()


def test_a_yaml_date_in_plan_choose_is_shown_as_written(tmp_path, capsys):
    """``--choose router.floor=2024-01-01`` was named 'router.floor=datetime.date(2024, 1,
    1)'."""
    got = error_line(*run_cli(capsys, "plan", TINY, "--out", tmp_path / "pl", "--no-report",
                              "--choose", "router.floor=2024-01-01"))
    assert got == ("Error: --choose router.floor=2024-01-01: router.floor: input should be a "
                   "valid number (got 2024-01-01, which YAML reads unquoted as a date or time)")


@pytest.mark.parametrize("value", ["<<", "[<<]"])
def test_a_plain_merge_sign_as_a_value_is_text(tmp_path, capsys, value):
    """YAML 1.1 reads a plain ``<<`` as its merge type wherever it stands; as a value (not a
    key) PyYAML cannot build it, and the line said to remove a '!' tag the file does not
    have. It is text there, as YAML 1.2 reads it (and as ``=`` already is)."""
    path, number = _edited(tmp_path, "gpu: H200", f"gpu: {value}")
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    what = ("unknown GPU '<<'; known GPUs: H200, H100, B200, B300" if value == "<<"
            else "input should be a valid string (got ['<<'])")
    assert got == f"Error: {path}: line {number}: gpu: {what}"


@pytest.mark.parametrize(("old", "new", "line"), [
    ("fractions: [0.5, 0.5]", "fractions: {0: 0.5, 1: 0.5}",
     "router.fractions: key 0 is a number, where the keys are names; write the name, or quote "
     "it ('0') if it is one"),
    ("fractions: [0.5, 0.5]", "fractions: {w4a16: 0.5, 1_000: 0.5}",  # 1_0 is text (round 48)
     "router.fractions: key 1_000 is a number, where the keys are names; write the name, or "
     "quote it ('1_000') if it is one"),
])
def test_a_number_key_where_names_are_keys_is_named_as_a_key(tmp_path, capsys, old, new,
                                                             line):
    """``fractions: {0: 0.5, 1: 0.5}`` was 'router.fractions[0]: input should be a valid
    string (got 0)': a list index where fractions may be a list, and the key as YAML read it
    (1_0 as 10)."""
    path, number = _edited(tmp_path, old, new)
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == f"Error: {path}: line {number}: {line}"


def test_a_long_key_is_cut_in_its_error_line(tmp_path, capsys):
    """A key of 200,000 characters (an explicit ``? key`` has no length limit in YAML) was
    quoted whole: a 'line' of 200 kB."""
    path, number = _edited(tmp_path, "seed: 0", "seed: 0\n? " + "a" * 200_000 + "\n: 1")
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == (f"Error: {path}: line {number + 1}: {'a' * 37}...: unknown key (known keys: "
                   "accuracy_floor, accuracy_values, baselines, cost_model, gpu, limits, model, "
                   "name, plan, profile, router, seed, slo, sweep, tiers, trace, workload)")


def test_an_empty_key_is_not_named_the_top_level(tmp_path, capsys):
    """``"": 1`` was '(top level): unknown key', as if the file itself were wrong."""
    path, number = _edited(tmp_path, "seed: 0", 'seed: 0\n"": 1')
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == (f"Error: {path}: line {number + 1}: '': unknown key (known keys: "
                   "accuracy_floor, accuracy_values, baselines, cost_model, gpu, limits, model, "
                   "name, plan, profile, router, seed, slo, sweep, tiers, trace, workload)")


@pytest.mark.parametrize("key", ["a" * 200_000, "tiers." + "a" * 200_000 + ".replicas"])
def test_a_long_sweep_axis_path_is_not_quoted_whole(tmp_path, capsys, key):
    """An axis key of 200,000 characters was quoted whole (twice: a 400 kB line)."""
    path = tmp_path / "s.yaml"
    text = TINY.read_text().rstrip("\n") + f"\nsweep:\n  ? {key}\n  : [1, 2]\n"
    path.write_text(text)
    got = error_line(*run_cli(capsys, "sweep", path, "--out", tmp_path / "sw", "--no-report"))
    assert got == (f"Error: {path}: line {text.count(chr(10)) - 1}: sweep: an axis path of "
                   f"{len(key):,} characters is no scenario field's (at most 256); name a field, "
                   "such as tiers.bf16.replicas")


def test_a_long_number_key_is_cut_where_it_is_told_to_be_quoted(tmp_path, capsys):
    """A key YAML reads as a float, 200,000 digits long, was quoted whole in its fix."""
    key = "1." + "0" * 200_000 + "1"
    path, number = _edited(tmp_path, "seed: 0", f"seed: 0\n? {key}\n: 1")
    got = error_line(*run_cli(capsys, "run", path, "--out", tmp_path / "out"))
    assert got == (f"Error: {path}: line {number + 1}: {key[:37]}...: YAML reads this key as a "
                   f"number, not a name; quote it if it is one ('{key[:37]}...'), or remove it")
