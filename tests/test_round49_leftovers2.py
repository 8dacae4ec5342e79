"""Round 49, more leftovers of round 48 (helper left49b). Each test names what a user saw before
its fix."""

from __future__ import annotations

import json

import pytest
from conftest import TINY, copy_folder
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
     "tiersim analytic: --dc: must be from 0 to 1e12 (got 1e400, beyond a float)"),
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


def _dropping_split_plan():
    """A plan whose split tier drops requests at every split (as plan.json holds it: an
    infinite score as null; in memory, before it is written, as infinity)."""
    from tiersim.results import PlanResult

    splits = [{"label": "aggregated", "prefill_replicas": 0, "decode_replicas": 0,
               "score": float("inf"), "ttft_p99_s": 0.424, "tpot_p99_s": 0.0212},
              {"label": "1P 2D", "prefill_replicas": 1, "decode_replicas": 2, "score": None,
               "ttft_p99_s": 0.76, "tpot_p99_s": 0.0235},
              {"label": "2P 1D", "prefill_replicas": 2, "decode_replicas": 1, "score": None,
               "ttft_p99_s": None, "tpot_p99_s": None}]
    chosen = {"design": "bf16@3", "replicas": {"bf16": 3}, "gpus_per_replica": {"bf16": 1},
              "per_tier": {"bf16": {"replicas": 3, "prefill": 0}}, "cost_usd": 5.938,
              "cost_model": "provisioned"}
    return PlanResult(scenario="disagg", constraints={"ttft_p99_s": 2.0, "tpot_p99_s": 0.1},
                      plan=chosen,
                      disaggregation={"tier": "bf16", "chosen": splits[0], "splits": splits})


STAR = ("*: the split drops requests, so it misses the SLOs whatever its score, which is of the "
        "p99s of the requests it served")


def test_a_planned_split_that_drops_shows_its_starred_score():
    """``tiersim disagg`` shows a split that drops requests with the score of its p99s,
    starred (round 49), but ``plan``'s split line still read 'aggregated score inf; 1P 2D
    score inf; 2P 1D score inf', nothing telling the splits apart. It reads as disagg's."""
    from tiersim.cli.plan_text import format_plan

    lines = format_plan(_dropping_split_plan()).splitlines()
    assert lines[-1] == ("  bf16 split: aggregated (of aggregated score 0.212*; 1P 2D score "
                         "0.380*; 2P 1D score -*; score = worse of p99 TTFT and TPOT over their "
                         f"SLOs; {STAR})")


def test_a_planned_split_that_drops_shows_its_starred_score_in_the_report():
    """The plan report's split table read 'inf' in each dropping split's score cell."""
    from tiersim.report.page import plan_section

    page = plan_section(_dropping_split_plan())
    assert ("<p>chosen: aggregated (score = worse of p99 TTFT and TPOT over their SLOs; *: the "
            "split drops requests, so it misses the SLOs whatever its score, which is of the "
            "p99s of the requests it served)</p>") in page
    assert ("<tr><td>aggregated</td><td class=\"num\">0.424</td><td class=\"num\">0.0212</td>"
            "<td>0.212*</td></tr><tr><td>1P 2D</td><td class=\"num\">0.760</td><td class=\"num\">"
            "0.0235</td><td>0.380*</td></tr><tr><td>2P 1D</td><td>-</td><td>-</td><td>-*</td>"
            "</tr>") in page
    assert ">inf<" not in page


def test_a_planned_split_that_drops_nothing_has_no_star():
    """Splits that drop nothing read as before: their scores, no star, no legend of one."""
    from tiersim.cli.plan_text import format_plan
    from tiersim.report.page import plan_section

    plan = _dropping_split_plan()
    for row, score in zip(plan.disaggregation["splits"], (0.212, 0.38, 1.5), strict=True):
        row["score"] = score
        row["ttft_p99_s"] = row["ttft_p99_s"] or 3.0
    line = format_plan(plan).splitlines()[-1]
    assert line == ("  bf16 split: aggregated (of aggregated score 0.212; 1P 2D score 0.380; "
                    "2P 1D score 1.50; score = worse of p99 TTFT and TPOT over their SLOs)")
    page = plan_section(plan)
    assert "*" not in page.split("Prefill/decode split")[1]


def _refused_as_edited(folder, said: str) -> str:
    """The line ``tiersim report`` refuses a run folder with, whose scenario.yaml states
    ``said`` other than its summary.json."""
    return (f"Error: {folder}: scenario.yaml describes another run than summary.json ({said} "
            "in summary.json, whose run manifest.json vouches for); put back the scenario.yaml "
            f"the run wrote, or rerun `tiersim run --out {folder}`")


@pytest.mark.parametrize(("edit", "said"), [
    ("cost_model: attributed\n", "cost_model 'attributed' in scenario.yaml, 'provisioned'"),
    ("cost_model: fixed_per_request\n",
     "cost_model 'fixed_per_request' in scenario.yaml, 'provisioned'"),
])
def test_a_run_folders_edited_cost_model_is_refused(manifested_run, tmp_path, capsys, edit,
                                                    said):
    """``cost_model: attributed`` added to a run folder's scenario.yaml (a provisioned run)
    reported without a word, its page naming the edited cost model as the run's provenance
    beside a headline cost made in the other; an edited GPU, SLO, precision, replica count or
    price is refused. summary.json records the run's cost model: it is checked too."""
    folder = copy_folder(manifested_run, tmp_path / "r")
    assert json.loads((folder / "summary.json").read_text())["cost_model"] == "provisioned"
    text = (folder / "scenario.yaml").read_text()
    assert "cost_model" not in text  # the run's scenario sets none: provisioned, the default
    (folder / "scenario.yaml").write_text(text + edit)
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == _refused_as_edited(folder, said)
    assert not (folder / "report.html").exists()


def test_a_cost_model_removed_reads_as_the_default(tmp_path, capsys, monkeypatch):
    """A run under ``cost_model: attributed`` whose scenario.yaml lost the key reads as the
    default (provisioned), which is not the run's; the key as the run wrote it reports."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(TINY.read_text() + "cost_model: attributed\n")
    assert run_cli(capsys, "run", "s.yaml", "--out", "o", "--no-report", "--no-baselines")[0] == 0
    folder = tmp_path / "o"
    text = (folder / "scenario.yaml").read_text()
    assert "cost_model: attributed\n" in text
    code, err = run_cli(capsys, "report", folder)
    assert (code, err) == (0, "")
    (folder / "scenario.yaml").write_text(text.replace("cost_model: attributed\n", ""))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == _refused_as_edited(folder, "cost_model 'provisioned' in scenario.yaml, "
                                              "'attributed'")


def test_a_summary_without_a_manifest_and_another_cost_model_is_refused(hand_edited_run,
                                                                        tmp_path, capsys):
    """Without manifest.json, a summary.json of another cost model than scenario.yaml's (one
    copied in from another run) is refused as another seed or GPU is."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    summary = json.loads((folder / "summary.json").read_text())
    summary["cost_model"] = "attributed"
    (folder / "summary.json").write_text(json.dumps(summary))
    line = one_error_line(*run_cli(capsys, "report", folder))
    assert line == (f"Error: {folder}: summary.json and scenario.yaml describe different runs "
                    "(cost_model 'attributed' in summary.json, 'provisioned' in scenario.yaml) "
                    "and there is no manifest.json to tell which is right; rerun `tiersim run "
                    f"--out {folder}` to write one run's files")
