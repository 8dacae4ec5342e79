"""Round 49, the leftovers of round 48 (helper left49). Each test names what a user saw before
its fix."""

from __future__ import annotations

import json

import pytest
from conftest import copy_folder
from test_disagg_score_text import disagg_lines
from test_hostile_inputs import one_error_line, run_cli, tiny_with

from tiersim.cli import main
from tiersim.cli.plan_choose import _parse_choose
from tiersim.disagg import SplitResult
from tiersim.errors import TiersimError


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_one_request_in_a_cut_window_has_no_rate(tmp_path, capsys):
    """One request in a window cut to the trace's last arrival read '1.79e+04 req/s': one
    request over the 56 us from the window's start to itself. A rate needs at least two
    arrivals spanning time; the row now says there is one request and a note says why."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1.5,10,5\n3.000056,20,7\n")
    code, out, err = cli(capsys, "trace", "inspect", trace, "--window", "3", "100", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert (stats["rows"], stats["rate_rps"]) == (1, None)
    assert stats["notes"] == ["one request: a rate needs at least two arrivals spanning time, "
                              "so none is given"]
    code, out, err = cli(capsys, "trace", "inspect", trace, "--window", "3", "100")
    assert code == 0, err
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip()
            for line in out.splitlines() if line.count("│") == 3}
    assert rows["rate (requests / window)"] == "n/a (one request)"
    assert "req/s" not in out
    # two requests in the same window still have a rate
    code, out, err = cli(capsys, "trace", "inspect", trace, "--window", "1", "100", "--json")
    assert json.loads(out)["rate_rps"] == 2 / 2.000056


CHOOSE_FORM = ("write PATH=VALUE1,VALUE2, a list value in brackets (e.g. router.lambda=0.1,0.2 "
               "or router.thresholds=[0.2,0.5],[0.3,0.6])")


@pytest.mark.parametrize(("option", "said"), [
    ("router.lambda=0.1,1e-400", "--choose router.lambda: value 2: 1e-400 is nearer 0 than any "
                                 "number tiersim holds (the least is about 5e-324), so it would "
                                 "read as 0; write 0 if that is meant"),
    ("router.lambda={a: 1, a: 2}", "--choose router.lambda: value 1.a: duplicate key (remove "
                                   "one of them)"),
    # the form wrong: the hint stays
    ("router.lambda", f"--choose 'router.lambda': {CHOOSE_FORM}"),
    ("router.lambda=", f"--choose 'router.lambda=': {CHOOSE_FORM}"),
    ("router.lambda=0.1,,0.2", "--choose router.lambda: cannot read '0.1,,0.2' as YAML values; "
                               "quote a text value that holds brackets, braces, commas or a "
                               f"colon ('a[1]'); {CHOOSE_FORM}"),
])
def test_a_choose_value_refused_ends_with_its_own_fix(option, said):
    """``--choose router.lambda=0.1,1e-400`` said what to write for 1e-400 and then 'write
    PATH=VALUE1,VALUE2, a list value in brackets (...)', though PATH=VALUES was written right:
    the form's hint now follows only a wrong form."""
    with pytest.raises(TiersimError) as err:
        _parse_choose([option])
    assert str(err.value) == said


def test_a_run_folder_records_each_tiers_prices(manifested_run):
    """``cost_per_gpu_hour`` edited in a run folder's scenario.yaml reported without a word:
    summary.json recorded no tier's price to check it against, and the page showed the edited
    price beside costs made with the other. summary.json now records each tier's prices
    (``cost_per_gpu_hour``, ``cost_per_request_usd``), checked as the GPU, SLOs, precision and
    replicas are (the edits refused: tests/test_round48_fuzz14.py's price cases)."""
    summary = json.loads((manifested_run / "summary.json").read_text())
    assert summary["tiers"]["w4a16"]["cost_per_gpu_hour"] == 3.5
    assert summary["tiers"]["w4a16"]["cost_per_request_usd"] is None


def test_a_summary_without_prices_reports_as_before(hand_edited_run, tmp_path, capsys):
    """A run folder written before summary.json recorded prices has none to check: an edited
    price reports as it did, and the note names the checks it made (no prices)."""
    folder = copy_folder(hand_edited_run, tmp_path / "r")
    summary = json.loads((folder / "summary.json").read_text())
    for tier in summary["tiers"].values():
        del tier["cost_per_gpu_hour"], tier["cost_per_request_usd"]
    (folder / "summary.json").write_text(json.dumps(summary))
    text = (folder / "scenario.yaml").read_text()
    assert "cost_per_gpu_hour: 3.5" in text
    (folder / "scenario.yaml").write_text(text.replace("cost_per_gpu_hour: 3.5",
                                                       "cost_per_gpu_hour: 2.0", 1))
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err
    assert err == (f"note: {folder}: no manifest.json, so only the scenario name, seed, GPU, "
                   "SLOs, cost model, tiers (their precision and replicas) and request count "
                   "show that its "
                   "files come from one run; rerun `tiersim run` into it for a checked folder\n")
    assert (folder / "report.html").is_file()


@pytest.mark.parametrize("importer", [False, True])
def test_calibrate_out_stepping_back_out_of_a_missing_folder_says_so(tmp_path, capsys,
                                                                    monkeypatch, importer):
    """``tiersim calibrate --out x/../../p.json`` said 'folder x/../.. does not exist; create it
    first', though that folder (the one above) exists: the system cannot step back out of
    ``x``, which does not. The line now names ``x`` and the path meant, as ``run --out`` does."""
    (tmp_path / "w").mkdir()
    monkeypatch.chdir(tmp_path / "w")
    out = "x/../../p.json"
    argv = (["calibrate", "--from", "aiconfigurator", "--out", out] if importer
            else ["calibrate", "--quick", "--device", "cpu", "--out", out])
    line = one_error_line(*run_cli(capsys, *argv))
    assert line == ("Error: --out x/../../p.json: steps back out of x, a folder that does not "
                    "exist, so it names ../p.json; give that path as --out if it is meant")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w"]
    assert not any((tmp_path / "w").iterdir())


@pytest.mark.parametrize(("old", "new", "said"), [
    ("name: tiny", "name: 1e-400", "line 3: name: input should be a valid string (got 1e-400); "
                                   "YAML reads 1e-400 unquoted as a number: write '1e-400' in "
                                   "quotes if it is text"),
    ("- name: w4a16", "- name: 1e400", "line 14: tiers[0].name: input should be a valid string "
                                       "(got 1e400); YAML reads 1e400 unquoted as a number: "
                                       "write '1e400' in quotes if it is text"),
    ("name: tiny", "name: .nan", "line 3: name: input should be a valid string (got .nan); YAML "
                                 "reads .nan unquoted as a number: write '.nan' in quotes if it "
                                 "is text"),
    # a number's own key keeps the number's words
    ("cost_per_gpu_hour: 3.50", "cost_per_gpu_hour: 1e-400",
     "line 17: tiers[0].cost_per_gpu_hour: 1e-400 is nearer 0 than any number tiersim holds "
     "(the least is about 5e-324), so it would read as 0; write 0 if that is meant"),
])
def test_a_name_no_float_holds_is_told_to_be_quoted(tmp_path, capsys, monkeypatch, old, new,
                                                    said):
    """``name: 1e-400`` read '1e-400 is nearer 0 than any number tiersim holds ... write 0 if
    that is meant' (and ``name: .nan`` 'must be a finite number (got nan)'): a name is text,
    and YAML read the bare text as a number. It is told to be quoted, as ``name: 1e3`` is."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with((old, new)))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--no-baselines", "--out", "o"))
    assert line == f"Error: s.yaml: {said}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


@pytest.mark.parametrize(("value", "got"), [
    ("0.99999999999999999999", "0.99999999999999999999, 1 as a float"),
    ("1.00000000000000000001", "1.00000000000000000001, 1 as a float"),
    ("1.0", "1.0"),
    ("1", "1"),
])
def test_a_gpu_memory_utilization_of_1_is_quoted_as_written(tmp_path, capsys, monkeypatch,
                                                           value, got):
    """``gpu_memory_utilization: 0.99999999999999999999`` said 'must be below 1 (got 1)', a
    value not written: the text reads as the float 1. The value is quoted as written, with the
    float it reads as where that differs."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(tiny_with((
        "cost_per_gpu_hour: 3.50",
        f"cost_per_gpu_hour: 3.50\n    gpu_memory_utilization: {value}")))
    line = one_error_line(*run_cli(capsys, "run", "s.yaml", "--no-baselines", "--out", "o"))
    assert line == (f"Error: s.yaml: line 18: tiers[0].gpu_memory_utilization: must be below 1 "
                    f"(got {got}): vLLM refuses to start where the GPU's free memory is less "
                    "than that share of its total, and its own CUDA context is already there; "
                    "use at most 0.99")


def test_disagg_splits_that_all_drop_show_the_scores_they_rank_by(tmp_path, monkeypatch,
                                                                    capsys):
    """Every split of a tier whose max_model_len drops the same long requests (at any split)
    read 'inf' in the score column and 'score inf' in the verdict, while the splits ranked by
    their p99s: nothing told them apart. A split that drops shows the score of its p99s,
    starred, and the legend says what the star and the ranking are."""
    inf = float("inf")
    rows = [SplitResult(0, 0, 0.024, 0.0212, 0.023, 0.0212, 100, inf, dropped=90),
            SplitResult(1, 2, 0.038, 0.0235, 0.023, 0.0212, 100, inf, dropped=90),
            SplitResult(2, 1, None, None, None, None, 0, inf, dropped=190)]
    lines = disagg_lines(rows, 3, "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.1}\n", tmp_path,
                         monkeypatch, capsys)
    assert [line.split()[-1] for line in lines[1:4]] == ["0.212*", "0.235*", "-*"]
    assert lines[4] == ("best: aggregated (drops 90 of the tier's requests, so it misses the "
                        "SLOs; score 0.212*)")
    assert lines[5] == ("score = worse of p99 TTFT and TPOT over their SLOs (TTFT 2 s, TPOT "
                        "0.1 s): below 1 meets both; splits rank by fewest dropped requests, "
                        "then lowest score; *: the split drops requests, so it misses the SLOs "
                        "whatever its score, which is of the p99s of the requests it served")
    assert "inf" not in "\n".join(lines)


def test_the_estimated_savings_name_the_cost_they_are_in(manifested_run, tmp_path, capsys):
    """With --no-baselines the estimated-savings table said 'cost model: attributed' under a
    provisioned headline, as though the run were costed so: the estimate scales each tier's
    per-token attributed cost whatever the run's cost model. The row now says so."""
    folder = copy_folder(manifested_run, tmp_path / "r")
    summary = json.loads((folder / "summary.json").read_text())
    assert (summary["cost_model"], summary["savings"]["method"],
            summary["savings"]["cost_model"]) == ("provisioned", "estimated", "attributed")
    code, err = run_cli(capsys, "report", folder)
    assert code == 0, err
    page = (folder / "report.html").read_text()
    assert ("<td>cost model</td><td>attributed (modelled busy GPU time x $/GPU-hour), not this "
            "run&#x27;s provisioned cost: the estimate scales each tier&#x27;s per-token "
            "attributed cost</td>") in page
