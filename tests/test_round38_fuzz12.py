"""Round 38, hostile input (helper fuzz12): characters and files an error line must survive.
Each test names what a user saw before its fix."""

from __future__ import annotations

import pytest
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.calibrate.cli import main as harness_main


def run_harness(capsys, *argv: str) -> tuple[int, str]:
    """``tiersim calibrate ARGV`` (the harness's parser) in this process: (exit status,
    stderr); a usage error's SystemExit read as its status."""
    capsys.readouterr()
    try:
        code = harness_main(list(argv))
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("separator", ["\u2028", "\u2029"], ids=["line", "paragraph"])
def test_a_line_separator_in_a_path_is_written_as_its_escape(tmp_path, capsys, monkeypatch,
                                                              separator):
    """``tiersim report`` of a folder whose name holds U+2028 (or U+2029) printed the
    character as it is: the one error line was two for any reader that honours Unicode's line
    breaks (Python's splitlines, an editor). Such a separator is now written as its escape, as
    a control or format character is."""
    monkeypatch.chdir(tmp_path)
    name = f"d{separator}ir"
    line = one_error_line(*run_cli(capsys, "report", name))
    shown = name.encode("unicode_escape").decode("ascii")
    assert line == (f"Error: {shown}: no such folder; give the --out folder of a run, sweep "
                    "or plan")


HARNESS_NUMBERS = {
    "--seed of 5,000 digits": (["--seed", "9" * 5000],
                               "argument --seed: a whole number of 5,000 digits is beyond any "
                               "setting; see tiersim calibrate --help"),
    "--seed of 400 digits": (["--seed", "9" * 400],
                             f"--seed: must be from 0 to 2**63 - 1 (got {'9' * 37}...)"),
    "--tp of 400 digits": (["--tp", "1" * 400],
                           f"--tp {'1' * 37}...: tiny heads=4 is not divisible; use a tp that "
                           "divides it"),
    "--budget-s of 400 digits": (["--budget-s", "1" * 400],
                                 "argument --budget-s: a whole number of 400 digits is beyond "
                                 "any setting; see tiersim calibrate --help"),
    "--seed in hexadecimal": (["--seed", "0x10"],
                              "argument --seed: 0x10 is hexadecimal; write 16; see tiersim "
                              "calibrate --help"),
    "--tp with a leading zero": (["--tp", "010"],
                                 "argument --tp: 010 has a leading zero, which YAML 1.1 reads as "
                                 "octal (8); write 10; see tiersim calibrate --help"),
    "--tp of a fraction": (["--tp", "1.5"],
                           "argument --tp: input should be a valid integer, got a number with a "
                           "fractional part; see tiersim calibrate --help"),
    "--tp of nan": (["--tp", "nan"],
                    "argument --tp: input should be a finite number; see tiersim calibrate "
                    "--help"),
}


@pytest.mark.parametrize(("args", "said"), HARNESS_NUMBERS.values(), ids=HARNESS_NUMBERS)
def test_the_harness_reads_its_number_options_by_tiersims_rule(tmp_path, capsys, monkeypatch,
                                                                args, said):
    """``tiersim calibrate`` read --seed and --tp with Python's int and --budget-s with float:
    a 5,000-digit --seed was quoted whole in its error line (argparse's 'invalid int value:
    '999...''), 400 digits of --seed or --tp were quoted whole by the range and divisibility
    checks, a 400-digit --budget-s read as 'got inf', ``0x10`` read as no int, and ``010`` as
    10 where tiersim's flags refuse it. The three are now read as every other tiersim number
    flag reads its text (tiersim.numbers), and a long value is cut."""
    monkeypatch.chdir(tmp_path)
    code, err = run_harness(capsys, "--device", "cpu", "--quick", *args, "--out", "p.json")
    assert one_error_line(code, err) == f"Error: {said}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("option", "written", "value"),
                         [("--seed", "1e3", 1000), ("--tp", "1e0", 1)])
def test_the_harness_reads_a_whole_number_with_an_exponent(tmp_path, capsys, monkeypatch, option,
                                                           written, value):
    """``--seed 1e3`` (or ``--tp 1e0``) was refused ('invalid int value'), where every other
    tiersim flag reads 1e3 as 1000; it is that number now, as the profile records it."""
    import json

    monkeypatch.chdir(tmp_path)
    code, err = run_harness(capsys, "--device", "cpu", "--quick", option, written, "--out",
                            "p.json")
    assert code == 0, err
    provenance = json.loads((tmp_path / "p.json").read_text())["provenance"]
    assert provenance[option.removeprefix("--")] == value


NINES = "9" * 400
"""A whole number written in 400 digits: beyond the largest float (about 1.8e308)."""

BEYOND_FLOAT = (f"must be a finite number (got {'9' * 77}...: 400 digits, beyond the largest a "
                "number may be, about 1.8e308)")


@pytest.mark.parametrize(("argv", "said"), [
    (["plan", "tiny", "--slo-ttft-p99", NINES, "--out", "o"], "--slo-ttft-p99: a whole number "
     "of 400 digits is beyond any setting; see tiersim plan --help"),
    (["analytic", "--p", NINES, "--eps", "0", "--delta", "0"], "--p: a whole number of 400 "
     "digits is beyond any setting; see tiersim analytic --help"),
    (["trace", "inspect", "tiny", "--window", "0", NINES], "--window: a whole number of 400 "
     "digits is beyond any setting; see tiersim trace inspect --help"),
], ids=["plan --slo-ttft-p99", "analytic --p", "trace inspect --window"])
def test_a_number_flag_of_digits_beyond_a_float_says_so(tmp_path, capsys, monkeypatch, argv,
                                                        said):
    """A number flag given a whole number of 400 digits read 'input should be a valid number'
    (pydantic's words for a float it cannot make), of a value that is one. It now says the
    number is beyond any setting, as a flag of more digits than Python reads does."""
    monkeypatch.chdir(tmp_path)
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert list(tmp_path.iterdir()) == []


def test_a_scenario_number_of_digits_beyond_a_float_says_so(tmp_path, capsys, monkeypatch):
    """``slo.ttft_p99_s`` written as 400 nines read 'input should be a valid number (got
    999...)'; as ``1e400`` is, it is now no finite number, saying why."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("ttft_p99_s: 2.0", f"ttft_p99_s: {NINES}")))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml"))
    assert line == f"Error: s.yaml: line 28: slo.ttft_p99_s: {BEYOND_FLOAT}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize(("segment", "items"), [
    ("tiers.².replicas", "'tiers' (has items: w4a16, bf16)"),
    ("tiers.--1.replicas", "'tiers' (has items: w4a16, bf16)"),
    ("router.fractions.²", "'router.fractions' (has items: 0, 1)"),
    ("tiers.\u0660.replicas", "'tiers' (has items: w4a16, bf16)"),
], ids=["superscript", "two minus signs", "list of numbers", "arabic-indic zero"])
def test_a_sweep_axis_index_of_digits_int_cannot_read_is_no_item(tmp_path, capsys, monkeypatch,
                                                                  segment, items):
    """A sweep axis whose list index was a superscript (``tiers.².replicas``) or carried two
    minus signs (``tiers.--1``) ended ``tiersim sweep`` in a traceback ('ValueError: invalid
    literal for int() with base 10: '²'' from axes._is_index, which took str.isdigit, after
    stripping every '-', for what int reads), and an Arabic-Indic zero was read as index 0.
    An index is now written in the digits 0-9, as every number tiersim reads is; any other
    segment is a name, and one no item has is refused naming the items."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(extra=f"sweep:\n  {segment}: [1, 2]\n"))
    named = segment.split(".")[-2 if segment.startswith("tiers") else -1]
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o"))
    assert line == f"Error: s.yaml: line 31: sweep: {segment!r}: no item {named!r} in {items}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize("key", ["\u00b2", "\u0663"], ids=["superscript", "arabic-indic three"])
def test_a_router_key_of_digits_int_cannot_read_is_named(tmp_path, capsys, monkeypatch, key):
    """A step_tiers key written as a superscript (``'²': zz``) ended tiersim run in a
    traceback ('ValueError: invalid literal for int() with base 10: '²'' from
    scenario_checks._router_problem, which read each part of the router's error place with
    str.isdigit as a list index). The part is a name unless written in the digits 0-9; the
    router's own line is shown."""
    from test_hostile_inputs import ROOT

    monkeypatch.chdir(tmp_path)
    agentic = (ROOT / "tiersim" / "scenarios" / "agentic.yaml").read_text()
    old = "step_tiers: {planning: bf16,"
    assert old in agentic
    (tmp_path / "s.yaml").write_text(agentic.replace(old, f"step_tiers: {{'{key}': zz, "
                                                          "planning: bf16,"))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml"))
    assert line == (f"Error: s.yaml: line 45: router.step_tiers.{key}: unknown tier 'zz'; tiers "
                    "are fp8, bf16; top and cheapest name the last and the first")


def test_a_ray_folder_named_with_a_superscript_pid_is_no_traceback(tmp_path):
    """A folder ``tiersim-ray-²-abc`` in RAY_TMPDIR ended ``tiersim sweep --executor ray`` in
    a traceback ('ValueError: invalid literal for int() with base 10: '²'' from
    executors._stale, which took str.isdigit for a pid int reads). Such a name holds no pid:
    the folder is judged as one named without its sweep's pid is (by how long it was quiet),
    so a new one is kept."""
    from tiersim.sweep import executors

    (tmp_path / "tiersim-ray-\u00b2-abc").mkdir()
    assert executors.remove_stale_ray_folders(str(tmp_path)) == []
    assert (tmp_path / "tiersim-ray-\u00b2-abc").is_dir()


def test_a_lock_file_holding_a_superscript_is_no_tiersim_lock(tmp_path, capsys, monkeypatch):
    """An --out folder's ``.lock`` holding ``²`` passed for a pid (str.isdigit), so the user's
    file was taken as tiersim's lock and overwritten (and, were the folder locked meanwhile,
    int('²') raised a traceback). It is refused as any other file of that name is."""
    from test_hostile_inputs import ROOT

    monkeypatch.chdir(tmp_path)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / ".lock").write_text("\u00b2")
    line = one_error_line(*run_cli(capsys, "run", ROOT / "tiersim" / "scenarios" / "tiny.yaml",
                                   "--out", "o"))
    assert line == ("Error: o/.lock: holds no tiersim lock (tiersim writes its pid there) and "
                    "would be overwritten; move the file, or use another --out folder (nothing "
                    "was written)")
    assert [p.name for p in (tmp_path / "o").iterdir()] == [".lock"]
    assert (tmp_path / "o" / ".lock").read_text() == "\u00b2"
