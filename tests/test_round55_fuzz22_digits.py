"""Round 55, hostile-input round (fuzz22): numbers written in digits other than 0-9.

Full-width digits (``１``, what a Japanese or Chinese input method types) and another script's
(Arabic-Indic ``٣``) got the generic "unable to parse string as an integer (got '１')", with no
fix, in a scenario and in every number flag; Python's own ``int`` reads them, YAML and tiersim
do not. Each is now told the number to write in 0-9.
"""

from __future__ import annotations

import pytest
from test_hostile_inputs import run_cli

from tiersim.numbers import misspelt

WORDS = "is written in digits other than 0-9 (full-width, or another script's), which " \
        "tiersim does not read"


def _last_line(capsys, *args) -> str:
    code, err = run_cli(capsys, *args)
    assert code == 1, err
    return err.splitlines()[-1]


@pytest.mark.parametrize(("text", "line"), [
    ("１", f"１ {WORDS}; write 1"),
    ("３．５０", f"３．５０ {WORDS}; write 3.50"),
    ("٣", f"٣ {WORDS}; write 3"),
    ("−１", f"−１ {WORDS}; write -1"),
    ("３,５０", f"３,５０ {WORDS}, and in 0-9 3,50 has a decimal comma, which tiersim does not "
              "read; write 3.50"),
    ("０１０", f"０１０ {WORDS}, and in 0-9 010 has a leading zero, which YAML 1.1 reads as "
             "octal (8); write 10"),
    ("10²", None),  # a superscript is no decimal digit: not read as 102
])
def test_the_reason_names_the_number_in_0_9(text, line):
    """The words, and the number written in ASCII digits (or that form's own refusal)."""
    assert misspelt(text) == line


def test_a_scenario_number_in_full_width_digits_is_told_the_number(tmp_path, capsys):
    """`replicas: １` and `cost_per_gpu_hour: ３.５０` were "input should be a valid integer,
    unable to parse string as an integer (got '１')"."""
    bad = tmp_path / "s.yaml"
    bad.write_text("name: t\ntiers:\n  - name: a\n    precision: bf16\n    replicas: １\n"
                   "    cost_per_gpu_hour: 3.5\n", encoding="utf-8")
    assert _last_line(capsys, "run", bad, "--out", tmp_path / "o") == (
        f"Error: {bad}: line 5: tiers[0].replicas: １ {WORDS}; write 1")
    assert not (tmp_path / "o").exists()


def test_a_number_flag_in_full_width_digits_is_told_what_to_type(tmp_path, capsys):
    """Every number flag read the same generic words; a flag of several numbers (`--window`,
    `--gpus-per-replica`) says which to type for which, and `--gpus-per-replica １,２` is
    typed whole (it was told to type 1)."""
    out = str(tmp_path / "p")
    cases = (
        (("plan", "tiny", "--max-replicas", "４", "--out", out),
         f"Error: --max-replicas: ４ {WORDS}; type --max-replicas 4; see tiersim plan --help"),
        (("plan", "tiny", "--hours-per-month", "７３０", "--out", out),
         f"Error: --hours-per-month: ７３０ {WORDS}; type --hours-per-month 730; see tiersim "
         "plan --help"),
        (("plan", "tiny", "--gpus-per-replica", "１，２", "--out", out),
         f"Error: --gpus-per-replica: １，２ {WORDS}; type --gpus-per-replica 1,2"),
        (("plan", "tiny", "--current", "bf16=５ｘ２", "--out", out),
         f"Error: --current 'bf16=５ｘ２': ５ｘ２ {WORDS}; type --current bf16=5x2"),
        (("trace", "inspect", "tiny", "--window", "0", "６０"),
         f"Error: --window: ６０ {WORDS}; type 60 for ６０; see tiersim trace inspect --help"),
    )
    for args, line in cases:
        assert _last_line(capsys, *args) == line
    assert not (tmp_path / "p").exists()


def test_the_harness_seed_in_full_width_digits_is_told_what_to_type(tmp_path, capsys):
    """`python -m tiersim.calibrate --seed ３`: argparse's "argument --seed: input should be a
    valid integer, unable to parse string as an integer"."""
    from tiersim.calibrate import main

    with pytest.raises(SystemExit) as exit_:
        main(["--quick", "--device", "cpu", "--seed", "３", "--out", str(tmp_path / "p.json")])
    assert exit_.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"Error: argument --seed: ３ {WORDS}; type --seed 3; see tiersim calibrate --help")
    assert not (tmp_path / "p.json").exists()
