"""Round 48, hostile input (helper fuzz14): the leftovers of round 47 and a fresh round. Each
test names what a user saw before its fix."""

from __future__ import annotations

import json

import pytest
from conftest import copy_folder
from test_hostile_inputs import one_error_line, run_cli, tiny_with
from test_round47_fuzz13 import fp8_run_on

from tiersim.cli import main
from tiersim.errors import yaml_written
from tiersim.perf import roofline_calibration as rc
from tiersim.scenario import read_yaml_value

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


@pytest.mark.parametrize(("argv", "said"), [
    (["--window", "0", "1e-300"], "--window: 0 1e-300 is 1e-300 s long, shorter than the "
                                  "microsecond tiersim's clock resolves, so no rate can be read "
                                  "over it; give a window at least 1e-06 s long"),
    (["--window", "240", "240.0000005"], "--window: 240 240.0000005 is 5e-07 s long, shorter "
                                         "than the microsecond tiersim's clock resolves, so no "
                                         "rate can be read over it; give a window at least "
                                         "1e-06 s long"),
    (["--window", "240", "240.0001", "--time-scale", "1000"],
     "--window: 240 240.0001 is 1e-07 s long replayed at --time-scale 1000, shorter than the "
     "microsecond tiersim's clock resolves, so no rate can be read over it; give a window at "
     "least 0.001 s long"),
])
def test_a_window_shorter_than_a_microsecond_has_no_rate(capsys, argv, said):
    """``tiersim trace inspect --window 0 1e-300`` printed '1e+300 req/s': the one request at
    time 0 over a window of 1e-300 s. A window shorter than a microsecond (replayed: divided by
    --time-scale), the finest step the simulated clock keeps, is now the flag's fault, one
    line with the length to give; a microsecond's window is read."""
    line = one_error_line(*run_cli(capsys, "trace", "inspect", "azure2023_code", *argv))
    assert line == f"Error: {said}"
    capsys.readouterr()
    # Round 49: one request has no rate (a rate needs two arrivals), so the microsecond's window
    # read is one holding two requests (1.299312 and 1.299337 s), 1 ms replayed 1000 times faster
    assert main(["trace", "inspect", "azure2023_code", "--window", "1.299", "1.3",
                 "--time-scale", "1000", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["rows"], stats["rate_rps"]) == (2, 2 / ((1.3 - 1.299) / 1000))


@pytest.mark.parametrize(("argv", "said"), [
    (["sweep", "s.yaml", "-o", "o", "-w", "1_0"], "--workers: 1_0 has a _ that does not group "
                                                 "thousands (8_192 does); write 10; see tiersim "
                                                 "sweep --help"),
    (["trace", "inspect", "azure2023_code", "--window", "2_40", "270"],
     "--window: 2_40 has a _ that does not group thousands (8_192 does); write 240; see tiersim "
     "trace inspect --help"),
    (["plan", "s.yaml", "-o", "o", "--slo-ttft-p99", "0.9_5"],
     "--slo-ttft-p99: 0.9_5 has a _ that does not group thousands (8_192 does); write 0.95; see "
     "tiersim plan --help"),
    (["analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--dc", "1e1_0"],
     "--dc: 1e1_0 has a _ that does not group thousands (8_192 does); write 1e10; see tiersim "
     "analytic --help"),
])
def test_a_number_flag_with_a_separator_that_groups_no_thousands_is_refused(
        tmp_path, capsys, monkeypatch, argv, said):
    """``-w 1_0`` ran 10 workers, ``--window 2_40 270`` read 240, ``0.9_5`` 0.95: Python's and
    YAML 1.1's readings, of a separator nobody writes so (a typo is likelier). Every number
    flag reads its text by tiersim.numbers' one rule, a scenario's too: an ``_`` may only group
    thousands (``8_192``, ``0.000_001``); any other is one line naming the flag and the number
    to write. Nothing is made."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with())
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_scenario_number_reads_by_the_flags_rule(tmp_path, capsys, monkeypatch):
    """The scenario's numbers follow the same rule: ``replicas: 1_0`` is refused with the same
    words (YAML 1.1 read 10), ``1_000`` stays a number, and a name ``1_0`` is the text as
    written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("replicas: 1", "replicas: 1_0")))
    assert one_error_line(*run_cli(capsys, "run", "s.yaml", "--no-baselines")) == (
        "Error: s.yaml: line 16: tiers[0].replicas: 1_0 has a _ that does not group thousands "
        "(8_192 does); write 10")
    assert read_yaml_value("[1_000, 0.000_001, 1_0, 1_0.5]") == [1000, 1e-6, "1_0", "1_0.5"]


SHIPPED_CALIBRATION = json.loads(rc.CALIBRATION_FILE.read_text())


CAL_FIX = ("reinstall tiersim, or rewrite it with python benchmarks/roofline_ratios.py --write "
           "in tiersim's source repository")


@pytest.mark.parametrize(("fmt", "written", "said"), [
    ("fp8", "bf16", "compute.fp8: must be 'fp8', the dtype FP8 computes in on H200 (tiersim's "
                    "GPU catalogue), where the factors were set (got 'bf16')"),
    ("w4a16", "fp8", "compute.w4a16: must be 'bf16', the dtype W4A16 computes in on H200 "
                     "(tiersim's GPU catalogue), where the factors were set (got 'fp8')"),
    ("nvfp4", "fp4", "compute.nvfp4: must be 'bf16', the dtype NVFP4 computes in on H200 "
                     "(tiersim's GPU catalogue), where the factors were set (got 'fp4')"),
])
def test_a_calibration_compute_dtype_the_gpu_contradicts_is_refused(
        tmp_path, capsys, monkeypatch, calibration_file, fmt, written, said):
    """``compute.fp8: "bf16"`` in tiersim/data/roofline_calibration.json was accepted: a known
    dtype, but not the one FP8 computes in on the file's H200, so no FP8 tier ever matched it
    and FP8's calibration factors were silently off (and ``nvfp4: "fp4"`` would have applied
    H200's NVFP4 factors on a Blackwell GPU). The file's dtype must be the one tiersim's GPU
    catalogue says the format computes in on its source GPU: one line with the fix."""
    doc = json.loads(json.dumps(SHIPPED_CALIBRATION))
    doc["compute"][fmt] = written
    line = fp8_run_on(json.dumps(doc), tmp_path, capsys, monkeypatch, calibration_file)
    assert line == f"Error: {calibration_file}: {said}; {CAL_FIX}"


UNDERFLOW = ("is nearer 0 than any number tiersim holds (the least is about 5e-324), so it would "
             "read as 0; write 0 if that is meant")


@pytest.mark.parametrize(("old", "new", "said"), [
    ("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 1.0e-400",
     f"line 17: tiers[0].cost_per_gpu_hour: 1.0e-400 {UNDERFLOW}"),
    ("fractions: [0.5, 0.5]", "fractions: [1.0e-400, 1]",
     f"line 25: router.fractions[0]: 1.0e-400 {UNDERFLOW}"),
    ("ttft_p99_s: 2.0", "ttft_p99_s: !!float 1e-400", f"line 28: slo.ttft_p99_s: 1e-400 "
                                                      f"{UNDERFLOW}"),
])
def test_a_scenario_number_nearer_0_than_a_float_is_refused(tmp_path, capsys, monkeypatch, old,
                                                            new, said):
    """``cost_per_gpu_hour: 1.0e-400`` ran a free tier and ``fractions: [1.0e-400, 1]`` sent it
    nothing, without a word (YAML reads the number as 0.0), and ``ttft_p99_s: 1.0e-400`` said
    'must be > 0.0 (got 0.0)', a value not written. A number other than 0 nearer 0 than any
    float is refused as one past the largest is, as written; 0 and subnormals stay numbers."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with((old, new)))
    assert one_error_line(*run_cli(capsys, "run", "s.yaml", "--out", "o")) == (
        f"Error: s.yaml: {said}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
    assert read_yaml_value("[0.0e-400, 5e-324, 1.0e-5]") == [0.0, 5e-324, 1e-5]


@pytest.mark.parametrize(("argv", "said"), [
    (["plan", "s.yaml", "-o", "o", "--slo-ttft-p99", "1e-400"],
     f"--slo-ttft-p99: 1e-400 {UNDERFLOW}; see tiersim plan --help"),
    (["plan", "s.yaml", "-o", "o", "--accuracy-floor", "1e-400"],  # ran with a floor of 0
     f"--accuracy-floor: 1e-400 {UNDERFLOW}; see tiersim plan --help"),
    (["sweep", "s.yaml", "-o", "o", "-w", "1e-400"],
     f"--workers: 1e-400 {UNDERFLOW}; see tiersim sweep --help"),
])
def test_a_number_flag_nearer_0_than_a_float_is_refused(tmp_path, capsys, monkeypatch, argv,
                                                        said):
    """``--slo-ttft-p99 1e-400`` said '(got 0.0)', and ``--accuracy-floor 1e-400`` planned for
    a floor of 0; the flag's text is now refused as a scenario's is."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with())
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize(("window", "got"), [("[360, 240]", "[360, 240]"),
                                             ("[-1, 240.5]", "[-1, 240.5]"),
                                             ("[100, 100]", "[100, 100]")])
def test_a_window_out_of_order_is_named_at_its_own_key(tmp_path, capsys, monkeypatch, window,
                                                       got):
    """``window: [360, 240]`` was named at ``trace:``'s line ('line 9: trace: window must be
    ... (got [360.0, 240.0])'), with floats the file did not write; it is named at
    ``trace.window``'s own line and key, its numbers as written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("window: [240, 360]", f"window: {window}")))
    assert one_error_line(*run_cli(capsys, "run", "s.yaml")) == (
        "Error: s.yaml: line 11: trace.window: must be [start_s, end_s] with 0 <= start < end "
        f"(got {got})")


@pytest.mark.parametrize("command", [["run", "--no-baselines", "--no-report"],
                                     ["sweep", "-w", "1", "--no-baselines", "--no-report"],
                                     ["plan", "--no-report"]], ids=["run", "sweep", "plan"])
def test_an_out_stepping_back_out_of_a_missing_folder_writes_nothing(tmp_path, capsys,
                                                                     monkeypatch, command):
    """``--out x/../..`` (``x`` not there) passed every check of the folder it names (none
    looked: the path did not exist), then creating ``x`` made it name ``..``, and `tiersim run`
    wrote its results there among a project's files. Such a path is now one line naming the
    folder it names; nothing is made, ``x`` neither."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "notes.txt").write_text("mine\n")
    (project / "sub" / "s.yaml").write_text(tiny_with())
    monkeypatch.chdir(project / "sub")
    line = one_error_line(*run_cli(capsys, command[0], "s.yaml", "--out", "x/../..",
                                   *command[1:]))
    assert line == ("Error: x/../..: --out steps back out of x, a folder that does not exist, "
                    "so it names ..; give that folder as --out if it is meant, else the new "
                    "folder's own path (nothing was written)")
    assert sorted(p.name for p in project.rglob("*")) == ["notes.txt", "s.yaml", "sub"]


@pytest.mark.parametrize(("argv", "said"), [
    (["report", ""], "DIRECTORY is empty (an unset shell variable?): an empty path reads as the "
                     "current folder; give the value"),
    (["trace", "inspect", ""], "PATH is empty (an unset shell variable?): an empty path reads "
                               "as the current folder; give the value"),
    (["sweep", "", "-o", "o"], "SCENARIO is empty (an unset shell variable?): an empty path "
                               "reads as the current folder; give the value"),
    (["run", ""], "SCENARIO is empty (an unset shell variable?): an empty path reads as the "
                  "current folder; give the value, or leave the argument out"),  # optional
])
def test_an_empty_required_argument_is_not_told_to_be_left_out(tmp_path, capsys, monkeypatch,
                                                               argv, said):
    """``tiersim report ""`` was told 'give the value, or leave the argument out', and left
    out it is 'DIRECTORY: required, and not given': a fix that fails. A required argument is
    told only to give its value; `run`'s, which defaults to the bundled job, keeps both."""
    monkeypatch.chdir(tmp_path)
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert not list(tmp_path.iterdir())


NOT_WHOLE = "is not a whole number (only a float's 16 digits would round it to {}); write the " \
            "whole number meant"


@pytest.mark.parametrize(("argv", "said"), [
    (["plan", "s.yaml", "-o", "o", "--max-replicas", "2.99999999999999999999"],
     "--max-replicas: 2.99999999999999999999 " + NOT_WHOLE.format(3)
     + "; see tiersim plan --help"),
    (["sweep", "s.yaml", "-o", "o", "-w", "2.0000000000000001"],
     "--workers: 2.0000000000000001 " + NOT_WHOLE.format(2) + "; see tiersim sweep --help"),
    (["plan", "s.yaml", "-o", "o", "--choose", "router.policy=uniform", "--choose",
      "router.tier=0.99999999999999999999"],
     "--choose router.policy='uniform' router.tier=0.99999999999999999999: router.tier: "
     "0.99999999999999999999 " + NOT_WHOLE.format(1)),
])
def test_a_whole_number_flag_whole_only_as_a_float_is_refused(tmp_path, capsys, monkeypatch,
                                                              argv, said):
    """``--max-replicas 2.99999999999999999999`` planned with at most 2 replicas: its float is
    3.0, a whole number, and the exact reading then cut the decimal to 2 (``int(Decimal)``);
    ``--choose router.tier=0.99999999999999999999`` chose tier 1. Text that is whole only to a
    float's 16 digits is refused where a whole number goes, saying so; nothing is made."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with())
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize(("old", "new", "said"), [
    ("replicas: 1", "replicas: 1.99999999999999999999",
     "line 16: tiers[0].replicas: 1.99999999999999999999 " + NOT_WHOLE.format(2)),
    ("seed: 0", "seed: 7.00000000000000000001", "line 4: seed: 7.00000000000000000001 "
                                                + NOT_WHOLE.format(7)),
])
def test_a_scenario_whole_number_whole_only_as_a_float_is_refused(tmp_path, capsys,
                                                                  monkeypatch, old, new, said):
    """``replicas: 1.99999999999999999999`` ran 2 replicas without a word (YAML read 2.0,
    which pydantic takes as 2). A field that takes whole numbers refuses such text at its line;
    a float field reads it as the float it is (``cost_per_gpu_hour: 2.99999999999999999999``
    runs)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with((old, new)))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--no-baselines"))
    assert line == f"Error: s.yaml: {said}"
    (tmp_path / "s.yaml").write_text(tiny_with(("cost_per_gpu_hour: 3.50",
                                                "cost_per_gpu_hour: 2.99999999999999999999")))
    code, err = run_cli(capsys, "run", "s.yaml", "--no-baselines", "--no-report")
    assert code == 0, err


@pytest.mark.parametrize(("old", "new", "said"), [
    ("ttft_p99_s: 2.0", "ttft_p99_s: 0.001", "slo.ttft_p99_s 0.001 in scenario.yaml, 2.0"),
    ("replicas: 1", "replicas: 3", "tier w4a16's replicas 3 in scenario.yaml, 1"),
    ("precision: bf16", "precision: fp8", "tier bf16's precision 'fp8' in scenario.yaml, 'bf16'"),
    ("gpu: H200", "gpu: B200", "gpu 'B200' in scenario.yaml, 'H200'"),
    # prices: summary.json records them since round 49
    ("cost_per_gpu_hour: 3.5", "cost_per_gpu_hour: 2.0",
     "tier w4a16's cost_per_gpu_hour 2.0 in scenario.yaml, 3.5"),
    ("cost_per_gpu_hour: 3.5", "cost_per_gpu_hour: 3.5\n  cost_per_request_usd: 0.01",
     "tier w4a16's cost_per_request_usd 0.01 in scenario.yaml, none"),
])
def test_a_run_folders_edited_scenario_settings_are_not_shown_as_its_provenance(
        manifested_run, tmp_path, capsys, old, new, said):
    """manifest.json vouches for summary.json, not scenario.yaml, and `tiersim report` checked
    only the scenario's name, seed and tier names against the run: an SLO, a replica count, a
    precision or the GPU edited in scenario.yaml was shown on the page as the run's provenance,
    beside results made under the others. Each setting summary.json records is now checked."""
    folder = tmp_path / "r"
    copy_folder(manifested_run, folder)
    text = (folder / "scenario.yaml").read_text()
    assert old in text
    (folder / "scenario.yaml").write_text(text.replace(old, new, 1))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder}: scenario.yaml describes another run than summary.json "
                    f"({said} in summary.json, whose run manifest.json vouches for); put back "
                    f"the scenario.yaml the run wrote, or rerun `tiersim run --out {folder}`")
    assert not (folder / "report.html").exists()


def test_arrivals_closer_than_a_microsecond_have_no_rate(tmp_path, capsys, monkeypatch):
    """Four arrivals 1e-300 s apart read '1.33e+300 req/s' over their span (a --window as cut
    to the trace's arrivals too): one instant to the simulated clock, whose finest step is a
    microsecond. Over less than that no rate is read, as over a span of 0."""
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    pd.DataFrame({"request_id": [0, 1, 2, 3], "arrival_s": [0.0, 1e-300, 2e-300, 3e-300],
                  "input_tokens": [100] * 4, "output_tokens": [10] * 4}).to_parquet("t.parquet")
    capsys.readouterr()
    assert main(["trace", "inspect", "t.parquet", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["span_s"], stats["rate_rps"], stats["rate_basis"]) == (3e-300, None, None)
    assert main(["trace", "inspect", "t.parquet", "--json", "--window", "0", "1"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["window_cut"], stats["rate_rps"]) == ([0.0, 3e-300], None)


def test_a_float_written_past_a_floats_digits_runs_and_is_written_as_its_float(
        tmp_path, capsys, monkeypatch):
    """A float field keeps ``2.99999999999999999999`` as the float 3.0 it reads as (only whole
    number fields refuse it); the sweep writing its points' scenarios failed on it ('cannot
    represent an object') while the value was marked for those checks. It runs, and each copy
    of the scenario writes 3.0."""
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(extra="sweep:\n  tiers.bf16.cost_per_gpu_hour: "
                                                     "[2.99999999999999999999, 3.5]\n"))
    code, err = run_cli(capsys, "sweep", "s.yaml", "-o", "o", "-w", "1", "--no-baselines",
                        "--no-report")
    assert code == 0, err
    table = pd.read_parquet(tmp_path / "o" / "sweep.parquet")
    assert table["tiers.bf16.cost_per_gpu_hour"].tolist() == [3.0, 3.5]
    assert "- 3.0\n" in (tmp_path / "o" / "scenario.yaml").read_text()
    assert run_cli(capsys, "report", "o")[0] == 0
