"""Round 49 review: bugs found reading the round's changes, each pinned by a test."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

from tiersim.errors import yaml_written

ROOT = Path(__file__).resolve().parents[1]
TINY_TEXT = (ROOT / "tiersim" / "scenarios" / "tiny.yaml").read_text()


@pytest.mark.parametrize("name", ["azure2023_code.parquet\t", "it's.csv "])
def test_a_trace_path_with_a_blank_around_it_is_quoted_as_yaml_writes_it(
        tmp_path, capsys, monkeypatch, name):
    """The refusal of ``trace.path: "azure2023_code.parquet\\t"`` quoted the value as Python
    writes it ('azure2023_code.parquet\\t', which YAML reads with a backslash and a t), where
    every value in a message is spelt as YAML writes it ("azure2023_code.parquet\\t"; an
    apostrophe doubled in single quotes: 'it''s.csv ')."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "it's.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1,10,5\n")
    quoted = name.replace("\t", "\\t")
    (tmp_path / "s.yaml").write_text(TINY_TEXT.replace("path: azure2023_code.parquet",
                                                       f'path: "{quoted}"', 1))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert f"trace file not found: {yaml_written(name)} has a space" in line


@pytest.mark.parametrize("name", ["h200_aiconfigurator_vllm\t", "it's.json "])
def test_a_profile_name_with_a_blank_around_it_is_quoted_as_yaml_writes_it(
        tmp_path, capsys, monkeypatch, name):
    """As for a trace path: ``profile: "h200_aiconfigurator_vllm\\t"`` was quoted
    'h200_aiconfigurator_vllm\\t' (Python's spelling), not "h200_aiconfigurator_vllm\\t"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "it's.json").write_text("{}")
    quoted = name.replace("\t", "\\t")
    text = TINY_TEXT.replace("profile: null", f'profile: "{quoted}"', 1)
    (tmp_path / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o"))
    assert f"profile: {yaml_written(name)} has a space (or another blank)" in line


def test_a_written_number_can_be_copied_and_pickled():
    """:class:`~tiersim.numbers.WrittenNumber` (a flag's ``1e400``, kept with its text) is the
    one float kept with its text whose ``__new__`` needs the text: ``copy.deepcopy`` and
    ``pickle`` (a Ray worker's arguments, a deep-copied options namespace) called it with the
    number alone and raised "missing 1 required positional argument: 'text'"."""
    import copy
    import pickle

    from tiersim.numbers import WrittenNumber, as_written

    number = WrittenNumber(float("inf"), "1e400")
    for again in (copy.deepcopy(number), pickle.loads(pickle.dumps(number))):
        assert type(again) is WrittenNumber and again == float("inf")
        assert as_written(again) == "1e400, beyond a float"


def test_a_setting_a_policy_does_not_read_is_left_out_below_its_top_key():
    """``--choose router.policy=floor,cascade --choose router.cascade.threshold=0.3,0.5``: a
    floor design's setting holds ``cascade.threshold`` (the path --choose gave, less
    ``router.``), which the floor router never reads; :func:`read_setting` looked the whole
    dotted path up among the keys each policy reads, found no reader, and kept it. plan.json's
    runner-up read ``{'cascade.threshold': 0.3, 'floor': 0.82, 'policy': 'floor'}``, and the
    floor designs were sized once per threshold (:func:`_sized_key` told them apart)."""
    from tiersim.plan.designs import read_setting
    from tiersim.plan.planner import _sized_key

    low = (("cascade.threshold", 0.3), ("floor", 0.8), ("policy", "floor"))
    high = (("cascade.threshold", 0.5), ("floor", 0.8), ("policy", "floor"))
    assert read_setting(low) == {"floor": 0.8, "policy": "floor"}
    assert _sized_key({"a": 0}, low) == _sized_key({"a": 0}, high)
    # a key every policy reads (confusion.*) stays, and a cascade keeps its own block's keys
    cascade = (("cascade.threshold", 0.3), ("confusion.fpr", 0.1), ("floor", 0.8),
               ("policy", "cascade"))
    assert read_setting(cascade) == {"cascade.threshold": 0.3, "confusion.fpr": 0.1,
                                     "policy": "cascade"}


@pytest.mark.parametrize(("share", "places", "shown"), [
    (2007 / 20000, 2, "10.03%"), (16093 / 20000, 2, "80.46%"), (0.1065, 1, "10.6%"),
    (213 / 2000, 1, "10.6%"), (0.5, 1, "50.0%"), (0.9996, 1, "99.96%"), (0.003, 0, "0.3%")])
def test_percent_text_rounds_the_share_as_figure_text_and_the_report_do(share, places, shown):
    """``percent_text`` (the plan's accuracy line, a static split's mix, a tier's share in its
    SLO note) printed ``format(share, ".2%")``, which rounds the float product share * 100: an
    accuracy of 2,007 / 20,000 read "10.04%" in the plan's lines, "10.03 %" on ``tiersim
    run``'s console (:func:`figure_text`, which rounds the share itself since this round) and
    0.1003 in the report. Now the share itself is rounded, as they do."""
    from tiersim.report.page import Digits, fmt
    from tiersim.results import figure_text, percent_text

    assert percent_text(share, places) == shown
    if places == 2:  # four figures, as an accuracy is shown
        assert figure_text(share, "%", 100, digits=4) == shown
        assert fmt(Digits(share, 4)) == f"{float(shown.removesuffix('%')) / 100:.4f}"


def test_a_profile_beside_the_scenario_with_a_blank_around_its_name_says_so(
        tmp_path, capsys, monkeypatch):
    """``profile: "p.json "`` with p.json beside the scenario said the blank was the difference
    only when run from the scenario's own folder: the blank check looked for p.json in the
    working folder, and ``tiersim run d/s.yaml`` read "profile: p.json : no such profile file
    or bundled profile; bundled: b200_aiconfigurator_vllm, ...", the space unseen."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "p.json").write_text("{}")
    text = TINY_TEXT.replace("profile: null", 'profile: "p.json "', 1)
    (tmp_path / "d" / "s.yaml").write_text(text)
    line = one_error_line(*run_cli(capsys, "run", "d/s.yaml", "--out", "o"))
    assert line.startswith("Error: d/s.yaml: line 7: profile: 'd/p.json ' has a space (or "
                           "another blank) at its start or end, which the file d/p.json has "
                           "not; remove it")  # then where a relative path is looked for


def test_a_json_number_too_long_before_a_syntax_error_is_one_error_line(tmp_path):
    """A JSON file holding a whole number of more than 4,300 digits and, after it, a syntax
    error: the message for the number parsed the text again to find its key, and that parse
    stopped at the syntax error with json's own JSONDecodeError ("Expecting value: line 1
    column 5014"), raised from the handler, so no one error line but a traceback."""
    from tiersim.errors import TiersimError
    from tiersim.jsonio import parse_json

    text = '{"a": ' + "1" * 5000 + ', "b": }'
    with pytest.raises(TiersimError, match=r"^x\.json: .*4,300 digits"):
        parse_json(text, "x.json", "a profile")
