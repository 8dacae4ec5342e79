"""Round 49, more leftovers of round 48 (helper left49b). Each test names what a user saw before
its fix."""

from __future__ import annotations

import pytest
from conftest import TINY
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.cli.plan_choose import _parse_choose
from tiersim.errors import TiersimError


@pytest.mark.parametrize(("value", "got"), [
    ("1e400", "1e400, beyond a float"),
    ("-1e400", "-1e400, beyond a float"),
    ("!!float 1e400", "1e400, beyond a float"),
    (".inf", ".inf"),
    ("-.inf", "-.inf"),
    (".NaN", ".NaN"),
])
def test_a_scenario_number_no_float_holds_is_quoted_as_written(tmp_path, capsys, monkeypatch,
                                                               value, got):
    """``cost_per_gpu_hour: 1e400`` said 'must be a finite number (got inf)', and ``.NaN``
    '(got nan)': values not written (Python's spelling of the float read). The value is quoted
    as the file writes it, a decimal number beyond a float's range saying so."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("cost_per_gpu_hour: 3.50",
                                                f"cost_per_gpu_hour: {value}")))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--no-baselines", "--out", "o"))
    assert line == (f"Error: s.yaml: line 17: tiers[0].cost_per_gpu_hour: must be a finite "
                    f"number (got {got})")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_sweep_value_no_float_holds_is_quoted_as_written(tmp_path, capsys, monkeypatch):
    """A sweep axis' ``[1.0, 1e400]`` said 'sweep.tiers.0.cost_per_gpu_hour[1]: must be a
    finite number (got inf)'."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(
        extra="\nsweep:\n  tiers.0.cost_per_gpu_hour: [1.0, 1e400]\n"))
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o"))
    assert line == ("Error: s.yaml: line 32: sweep.tiers.0.cost_per_gpu_hour[1]: must be a "
                    "finite number (got 1e400, beyond a float)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_model_no_float_holds_is_quoted_as_written(tmp_path, capsys, monkeypatch):
    """``model: 1e400`` said '(got inf)' of the model's name it was meant as."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with(("model: Qwen3-Coder-30B-A3B", "model: 1e400")))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--no-baselines", "--out", "o"))
    assert line == ("Error: s.yaml: line 5: model: must name a catalogue model or the path of a "
                    "Hugging Face config.json (got 1e400); YAML reads 1e400 unquoted as a "
                    "number: write '1e400' in quotes if it is text")


@pytest.mark.parametrize(("values", "said"), [
    (".nan", "value 1: must be a finite number (got .nan)"),
    ("0.1,1e400", "value 2: must be a finite number (got 1e400, beyond a float)"),
    ("0.1,-.Inf", "value 2: must be a finite number (got -.Inf)"),
])
def test_a_choose_value_no_float_holds_is_quoted_as_written(values, said):
    """``--choose router.lambda=.nan`` said '(got nan)', and ``1e400`` '(got inf)'."""
    with pytest.raises(TiersimError) as err:
        _parse_choose([f"router.lambda={values}"])
    assert str(err.value) == f"--choose router.lambda: {said}"


@pytest.mark.parametrize(("argv", "said"), [
    (("plan", TINY, "--slo-ttft-p99", "1e400"),
     "--slo-ttft-p99: must be a finite number > 0 (got 1e400, beyond a float)"),
    (("plan", TINY, "--slo-tpot-p99", ".NaN"),
     "--slo-tpot-p99: must be a finite number > 0 (got .NaN)"),
    (("plan", TINY, "--accuracy-floor", "-1e400"),
     "--accuracy-floor: must be a number from 0 to 1 (got -1e400, beyond a float)"),
    (("analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--dc", "1e400"),
     "tiersim analytic: --dc: must be from 0 to 1e+12 (got 1e400, beyond a float)"),
    (("analytic", "--p", "0.8", "--eps", "0.01", "--delta", "0.3", "--floor", "Infinity"),
     "tiersim analytic: --floor: must be from 0 to 1 (got Infinity)"),
    (("trace", "inspect", "azure2023_code", "--time-scale", "1e400"),
     "--time-scale: must be a number from 0.001 to 1000 (got 1e400, beyond a float)"),
    (("calibrate", "--quick", "--device", "cpu", "--budget-s", "1e400", "--out", "p.json"),
     "--budget-s: must be a finite number of seconds > 0 (got 1e400, beyond a float)"),
    (("calibrate", "--quick", "--device", "cpu", "--budget-s", ".inf", "--out", "p.json"),
     "--budget-s: must be a finite number of seconds > 0 (got .inf)"),
])
def test_a_flag_number_no_float_holds_is_quoted_as_typed(tmp_path, capsys, monkeypatch, argv,
                                                         said):
    """``--slo-ttft-p99 1e400`` said '(got inf)', ``--slo-tpot-p99 .NaN`` '(got nan)', and so
    did analytic's and calibrate's number flags: the value is quoted as typed."""
    monkeypatch.chdir(tmp_path)
    assert one_error_line(*run_cli(capsys, *argv)) == f"Error: {said}"
    assert list(tmp_path.iterdir()) == []
