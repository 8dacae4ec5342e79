"""Round 48, hostile input (helper fuzz14): the leftovers of round 47 and a fresh round. Each
test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.errors import yaml_written

AXIS = "sweep: 'tiers.bf16.replicas': tiers[1].replicas: "


@pytest.mark.parametrize(("values", "said"), [
    ("[1, true]", "a number is expected here, not a YAML boolean (true/false) (value true)"),
    ("[1, null]", "input should be a valid integer (got null) (value null)"),
    ("[1, ~]", "input should be a valid integer (got null) (value ~)"),
    ('[1, "two"]', "input should be a valid integer, unable to parse string as an integer "
                   "(got 'two') (value \"two\")"),
    ("[1, two]", "input should be a valid integer, unable to parse string as an integer "
                 "(got 'two') (value two)"),
    ("[1, &v true]", "a number is expected here, not a YAML boolean (true/false) (value "
                         "true)"),
    ("[1, {a: null}]", "input should be a valid integer (got {a: null}) (value {a: null})"),
])
def test_a_sweep_axis_value_is_quoted_as_the_yaml_that_wrote_it(tmp_path, capsys, monkeypatch,
                                                                values, said):
    """An axis value the scenario refused was quoted as Python writes it: '(value True)',
    '(got None) (value None)', "(value {'a': None})", words of no YAML the user wrote. The
    value is now quoted as the file writes it (quotes as written, ``~`` as ``~``), and the
    scenario's own "got" in YAML's spelling (``null``, ``true``), as ``tiersim run`` says it."""
    monkeypatch.chdir(tmp_path)
    text = tiny_with(extra=f"sweep:\n  tiers.bf16.replicas: {values}\n")
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "-w", "1",
                                   "--no-baselines", "--no-report"))
    assert line == f"Error: s.yaml: line {text.count(chr(10))}: {AXIS}{said}"
    assert not (tmp_path / "o").exists()


def test_a_block_list_axis_value_is_spelt_as_yaml_writes_it(tmp_path, capsys, monkeypatch):
    """A value written over several lines (a block list) cannot be quoted from one line of the
    file; it is spelt in YAML's flow style, not Python's ('[True, None]')."""
    monkeypatch.chdir(tmp_path)
    text = tiny_with(extra="sweep:\n  router.fractions:\n    - [0.5, 0.5]\n    -\n      - true"
                           "\n      - null\n")
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "-w", "1",
                                   "--no-baselines", "--no-report"))
    assert line == ("Error: s.yaml: line 31: sweep: 'router.fractions': router.fractions: a "
                    "number is expected here, not a YAML boolean (true/false) (value [true, "
                    "null])")


@pytest.mark.parametrize(("sweep", "said"), [
    ("  seed: ~\n", "sweep: 'seed': values must be a non-empty list (got null)"),
    ("  seed: [0, no, false]\n", "sweep: 'seed': value false is listed twice (items 1 and 2); "
                                 "list each value once"),
    ("  seed.x: [1]\n", "sweep: 'seed.x': 'seed' is a value (0), not a map"),
    ("  router.policy.x: [1]\n", "sweep: 'router.policy.x': 'router.policy' is a value "
                                 "('static_split'), not a map"),
])
def test_the_sweeps_own_refusals_spell_values_as_yaml(tmp_path, capsys, monkeypatch, sweep,
                                                      said):
    """The sweep's own lines quoted values as Python ('(got None)', 'value [0,false]' as JSON):
    every value a sweep line quotes is now spelt as YAML writes it."""
    monkeypatch.chdir(tmp_path)
    text = tiny_with(extra="sweep:\n" + sweep)
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "-w", "1",
                                   "--no-baselines", "--no-report"))
    assert line == f"Error: s.yaml: line {text.count(chr(10))}: {said}"


@pytest.mark.parametrize(("value", "text"), [
    (None, "null"), (True, "true"), (False, "false"), ("it's", "'it''s'"),
    ("a\x1bb", '"a\\u001bb"'), (float("inf"), ".inf"), (float("nan"), ".nan"),
    ({"policy": None, "no": 1, 1: "x", "a b": [True]},
     "{policy: null, 'no': 1, 1: 'x', 'a b': [true]}"),
])
def test_yaml_written(value, text):
    assert yaml_written(value) == text
