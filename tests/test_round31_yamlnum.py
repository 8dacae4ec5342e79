"""Numbers in a scenario YAML read as the user wrote them, by the one rule the number flags
read theirs with (:mod:`tiersim.numbers`): ``1e3`` is 1000; ``1__0``, ``10_``, ``010`` (octal 8
to YAML 1.1), ``1:30`` (base 60) and ``0x10`` are refused, naming the file, the key, the value
as written and the number to write, on the command line alike; a YAML boolean or null where a
name or a value is wanted says how YAML read it."""

from __future__ import annotations

import pytest
from conftest import TINY
from test_quoted_numbers import edited, line_of
from test_round19 import error_line, run_cli

from tiersim.cli.usage import UsageError, read_flag_number
from tiersim.errors import ScenarioError
from tiersim.scenario import load_scenario


def refusal(path) -> str:
    """The one-line error of loading the scenario at ``path``, less the file's name."""
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    assert str(err.value).startswith(f"{path}: ")
    return str(err.value).removeprefix(f"{path}: ")


MISSPELT = [
    ("1__0", "1__0 has a _ that is not between two digits; write 10"),
    ("10_", "10_ has a _ that is not between two digits; write 10"),
    ("010", "010 has a leading zero, which YAML 1.1 reads as octal (8); write 10"),
    ("1:30", "1:30 is base 60 to YAML 1.1 (90); write 90"),
    ("0x10", "0x10 is hexadecimal; write 16"),
    ("0b11", "0b11 is binary; write 3"),
]
"""Spellings of a whole number YAML 1.1 or a flag read some other way (``1__0`` and ``10_`` were
10 in a scenario and refused on a flag; ``010`` was 8 to YAML 1.1, then 10; ``0x10`` 16 in a
scenario and refused on a flag), with the reason each is refused for."""


@pytest.mark.parametrize(("written", "why"), MISSPELT)
def test_a_misspelt_whole_number_in_a_scenario_is_refused_with_the_number_to_write(
        tmp_path, written, why):
    """``replicas: 1__0`` on the second tier was 10 replicas; now one line names the key."""
    path = edited(tmp_path, ("precision: bf16\n    replicas: 1",
                             f"precision: bf16\n    replicas: {written}"))
    assert refusal(path) == f"line {line_of(path, written)}: tiers[1].replicas: {why}"


@pytest.mark.parametrize(("old", "new", "key", "why"), [
    ("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 1__0.5", "tiers[0].cost_per_gpu_hour",
     "1__0.5 has a _ that is not between two digits; write 10.5"),
    ("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 1:30.5", "tiers[0].cost_per_gpu_hour",
     "1:30.5 is base 60 to YAML 1.1 (90.5); write 90.5"),
    ("window: [240, 360]", "window: [240, 0x168]", "trace.window[1]",
     "0x168 is hexadecimal; write 360"),
    ("seed: 0", "seed: 007", "seed", "007 has a leading zero; write 7"),
    ("fractions: [0.5, 0.5]", "fractions: [0.5, 0_.5]", "router.fractions[1]",
     "0_.5 has a _ that is not between two digits; write 0.5"),
])
def test_a_misspelt_number_names_its_key_wherever_it_is(tmp_path, old, new, key, why):
    """A price, a list item, the seed; ``007`` (octal 7 = decimal 7) is refused for its
    leading zero alone."""
    path = edited(tmp_path, (old, new))
    assert refusal(path) == f"line {line_of(path, new)}: {key}: {why}"


def test_a_misspelt_number_exits_1_with_one_line_and_no_traceback(tmp_path, capsys):
    path = edited(tmp_path, ("replicas: 1", "replicas: 1__0"))
    assert error_line(*run_cli(capsys, "run", path, "--no-baselines", "--no-report")) == (
        f"Error: {path}: line {line_of(path, '1__0')}: tiers[0].replicas: 1__0 has a _ that "
        "is not between two digits; write 10")


def test_a_number_with_an_exponent_and_no_point_is_that_number(tmp_path):
    """``1e1`` (no point) was the text '1e1' to YAML 1.1: ``replicas: 1e0`` and ``seed: 1e3``
    were 'input should be a valid integer, unable to parse string as an integer (got
    '1e0')'; they are 1 and 1000 (YAML 1.2 reads them so, and every number flag)."""
    path = edited(tmp_path, ("replicas: 1", "replicas: 1e0"), ("seed: 0", "seed: 1e3"),
                  ("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 35e-1"))
    scenario = load_scenario(path)
    assert (scenario.tiers[0].replicas, scenario.seed) == (1, 1000)
    assert scenario.tiers[0].cost_per_gpu_hour == 3.5
    assert refusal(edited(tmp_path, ("name: tiny", "name: 1e3"))) == (  # round 50: as written
        "line 3: name: input should be a valid string (got 1e3); YAML reads 1e3 unquoted as "
        "a number: write '1e3' in quotes if it is text")


def test_single_underscores_and_a_sign_stay_numbers(tmp_path):
    path = edited(tmp_path, ("seed: 0", "seed: 8_192"), ("replicas: 1", "replicas: +1"),
                  ("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 1_000.5"))
    scenario = load_scenario(path, fit=False)
    assert (scenario.seed, scenario.tiers[0].replicas) == (8192, 1)
    assert scenario.tiers[0].cost_per_gpu_hour == 1000.5


@pytest.mark.parametrize("name", ["010", "0x10", "1:30", "1__0", "08"])
def test_a_name_that_looks_like_a_misspelt_number_is_a_name(tmp_path, name):
    """``name: 0x10`` was refused as the number 16 (quote it); it is the name it spells."""
    scenario = load_scenario(edited(tmp_path, ("- name: w4a16", f"- name: {name}")))
    assert scenario.tiers[0].name == name


@pytest.mark.parametrize(("written", "why"), MISSPELT)
def test_a_number_flag_refuses_a_misspelling_as_a_scenario_does(capsys, written, why):
    """``--dc 010`` was 10 and ``--dc 0x10`` 'input should be a valid number'; each flag
    says what a scenario says about the same text."""
    flags = ["analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3"]
    assert error_line(*run_cli(capsys, *flags, "--dc", written)) == (
        f"Error: --dc: {why}; see tiersim analytic --help")
    assert error_line(*run_cli(capsys, "plan", TINY, "--max-replicas", written)) == (
        f"Error: --max-replicas: {why}; see tiersim plan --help")


@pytest.mark.parametrize("written", ["7", "8_192", "+3", "1e3", "2.0", "1__0", "010", "1:30",
                                     "0x10", "1.5", "abc"])
def test_a_whole_number_reads_alike_in_a_scenario_and_on_a_flag(tmp_path, written):
    """The one rule: ``seed: X`` in a scenario and an int flag given X take the same number or
    refuse it for the same reason (``1e3`` was refused on a flag and text in a scenario;
    ``1__0`` 10 in a scenario and refused on a flag)."""
    path = edited(tmp_path, ("seed: 0", f"seed: {written}"))
    try:
        in_file = load_scenario(path, fit=False).seed
    except ScenarioError as err:
        in_file = str(err).removeprefix(f"{path}: line 4: seed: ").split(" (got ")[0]
    try:
        on_flag = read_flag_number(int, None, None, written)
    except UsageError as err:
        on_flag = err.message[:1].lower() + err.message[1:]
    assert in_file == on_flag


def test_an_int_flag_takes_a_whole_number_with_an_exponent(capsys):
    """``--workers 1e3`` was 'input should be a valid integer'; a scenario's ``1e3`` is 1000."""
    assert read_flag_number(int, 1, None, "1e3") == 1000
    assert error_line(*run_cli(capsys, "plan", TINY, "--max-replicas", "1.5")) == (
        "Error: --max-replicas: input should be a valid integer, got a number with a "
        "fractional part; see tiersim plan --help")


def test_plan_choose_and_gpus_per_replica_read_numbers_by_the_same_rule(capsys):
    """``--choose router.floor=0.9,1__0`` tried a floor of 10 ('must be <= 1.0 (got 10)'),
    and ``--gpus-per-replica 1,010`` sized tiers of 10 GPUs."""
    assert error_line(*run_cli(capsys, "plan", TINY, "--choose", "router.floor=0.9,1__0")) == (
        "Error: --choose router.floor='1__0': router.floor: 1__0 has a _ that is not between "
        "two digits; write 10")
    assert error_line(*run_cli(capsys, "plan", TINY, "--gpus-per-replica", "1,010")) == (
        "Error: --gpus-per-replica: 010 has a leading zero, which YAML 1.1 reads as octal (8); "
        "write 10")


def test_trace_inspect_window_reads_numbers_by_the_same_rule(capsys):
    assert error_line(*run_cli(capsys, "trace", "inspect", "azure2023_code.parquet",
                               "--window", "0x10", "300")) == (
        "Error: --window: 0x10 is hexadecimal; write 16; see tiersim trace inspect --help")


def test_a_saved_scenario_quotes_a_name_that_reads_as_a_number(tmp_path):
    """A tier named '1e3' (quoted) is written quoted into a run's scenario.yaml
    (``yaml.safe_dump`` left it plain, a number to this reader), so the copy reads back."""
    from tiersim.runner import scenario_yaml

    scenario = load_scenario(edited(tmp_path, ("- name: w4a16", "- name: '1e3'")))
    copy = tmp_path / "copy.yaml"
    copy.write_text(scenario_yaml(scenario))
    assert "name: '1e3'" in copy.read_text()
    assert load_scenario(copy).tiers[0].name == "1e3"


def test_a_flag_of_thousands_of_digits_is_one_line(capsys):
    """A 5,000-digit ``--max-replicas`` ended in Python's words ('use
    sys.set_int_max_str_digits()') once read by the rule; it says what is wrong."""
    assert error_line(*run_cli(capsys, "plan", TINY, "--max-replicas", "9" * 5000)) == (
        "Error: --max-replicas: a whole number of 5,000 digits is beyond any setting; see "
        "tiersim plan --help")


@pytest.mark.parametrize(("written", "reads"), [("no", "false"), ("on", "true")])
def test_a_yaml_boolean_for_a_choice_of_names_says_to_quote_it(tmp_path, written, reads):
    """``policy: no`` said 'must be one of 'uniform', ... (got False)': a False the user never
    wrote, and no word of the quotes a name YAML reads as a boolean needs (as a tier's name
    says)."""
    path = edited(tmp_path, ("policy: static_split", f"policy: {written}"))
    assert refusal(path) == (
        f"line {line_of(path, 'policy:')}: router.policy: must be one of 'uniform', "
        "'static_split', 'threshold', 'lagrangian', 'oracle', 'cascade', 'floor', 'budget' or "
        f"'step_type' (got {reads}); YAML reads {written} unquoted as {reads}: write "
        f"'{written}' in quotes if it is text")


@pytest.mark.parametrize(("old", "new", "key", "error"), [
    ("replicas: 1", "replicas: ~", "tiers[0].replicas",
     "input should be a valid integer (got null); ~ is YAML's null (no value): write the value"),
    ("- name: w4a16", "- name: null", "tiers[0].name",
     "input should be a valid string (got null); null is YAML's null (no value): write the "
     "value"),
    ("policy: static_split", "policy:", "router.policy",
     "must be one of 'uniform', 'static_split', 'threshold', 'lagrangian', 'oracle', "
     "'cascade', 'floor', 'budget' or 'step_type' (got null); nothing after the colon is "
     "YAML's null (no value): write the value"),
])
def test_a_yaml_null_where_a_value_is_required_says_so(tmp_path, old, new, key, error):
    """``replicas: ~`` said 'input should be a valid integer (got None)': a None the user never
    wrote; the line says that ``~`` (``null``, or nothing after the colon) is no value."""
    path = edited(tmp_path, (old, new))
    assert refusal(path) == f"line {line_of(path, new)}: {key}: {error}"


def test_a_yaml_null_where_none_is_allowed_is_still_none(tmp_path):
    assert load_scenario(edited(tmp_path, ("profile: null", "profile: ~"))).profile is None
