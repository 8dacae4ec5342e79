"""Round 23: one scenario through run, sweep, plan, analytic and report gives the same figures,
and each figure reads as its verdict does.

Each test drives the command in-process through ``tiersim.cli.main`` (or the function it calls)
and reads what the user sees.
"""

from __future__ import annotations

import html
import json
import re

from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def run(capsys, *argv) -> tuple[int, str, str]:
    """``tiersim ARGV`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cells(page: str) -> list[str]:
    """The text of a report page's table cells, in order."""
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", page)]


def test_a_floor_missed_by_less_than_the_printed_digits_is_printed_apart(tmp_path, capsys,
                                                                          monkeypatch):
    """tiny.yaml (accuracy 0.9440381595) under a floor of 0.94404 printed "accuracy floor
    94.4 %: MISSED" below "accuracy 94.40 %", "accuracy 94.4 % under 94.4 %" as the reason
    its saving was not comparable, and the report's router table "accuracy 0.944", "accuracy
    floor 0.944", "floor met: no". The floor and the accuracy beside it are now printed to the
    digits that tell them apart."""
    monkeypatch.setenv("COLUMNS", "400")
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(accuracy_floor=0.94404))
    code, out, err = run(capsys, "run", path, "--out", tmp_path / "o")
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["accuracy"] == 0.9440381595
    assert summary["router"]["floor_met"] is False
    assert "accuracy floor 94.4040 %" in out
    assert "accuracy 94.4038 % under 94.404 %" in out
    assert "(cost provisioned; floor 94.404 %:" in out
    shown = cells((tmp_path / "o" / "report.html").read_text())
    at = shown.index("accuracy floor")
    assert shown[at + 1] == "0.944040"  # the console's 94.4040 %
    assert shown[shown.index("accuracy"):shown.index("accuracy") + 2] == ["accuracy", "0.944038"]
    assert "accuracy 94.4038 % under 94.404 %" in " ".join(shown)


def test_a_floor_met_or_missed_by_more_keeps_its_digits(tmp_path, capsys, monkeypatch):
    """A floor the printed digits already tell apart is printed as before (94.0 %, 95.0 %)."""
    monkeypatch.setenv("COLUMNS", "400")
    for floor, words in ((0.94, "accuracy floor 94.0 %"), (0.95, "accuracy floor 95.0 %")):
        path = write_yaml(tmp_path / f"{floor}.yaml", tiny_doc(accuracy_floor=floor))
        code, out, err = run(capsys, "run", path, "--out", tmp_path / str(floor),
                             "--no-baselines", "--no-report")
        assert code == 0, err
        assert words in out


def _dearer_bf16() -> dict:
    """tiny.yaml under attributed cost with its bf16 tier at 10 USD/GPU-hour: a trade for
    `tiersim analytic` to model."""
    doc = tiny_doc(cost_model="attributed")
    doc["tiers"][1]["cost_per_gpu_hour"] = 10.0
    return doc


def test_analytic_prints_the_two_type_parameters_as_the_report_does(tmp_path, capsys):
    """`tiersim analytic --scenario` on tiny.yaml under attributed cost printed "eps = 0.0001"
    (four decimals) where the run's report of the same scenario shows 7.755e-05, and a smaller
    loss would print as "eps = 0.0000", no loss at all; p, eps and delta are now printed to
    the report's four significant digits. bf16 is priced dearer than tiny's 3.5 USD/GPU-hour:
    since the roofline's calibration its busy time is no longer above w4a16's, and tiers of one
    price leave no trade to model."""
    path = write_yaml(tmp_path / "s.yaml", _dearer_bf16())
    code, out, err = run(capsys, "analytic", "--scenario", path)
    assert code == 0, err
    assert "p = 0.7823   eps = 7.755e-05   delta = 0.07523   " in out
    code, _, err = run(capsys, "run", path, "--out", tmp_path / "o")
    assert code == 0, err
    shown = cells((tmp_path / "o" / "report.html").read_text())
    at = shown.index("two-type parameters p / eps / delta")
    assert shown[at + 1] == "0.7823 / 7.755e-05 / 0.07523"


def test_plan_prints_a_floor_as_it_was_given(tmp_path, capsys, monkeypatch):
    """`tiersim plan tiny.yaml --accuracy-floor 0.94885` printed "w4a16+bf16: accuracy < floor
    0.9488 with the router fitted to 0.94885 (...)": one floor, two values in one line, the one
    called the floor under the one given. A floor is now printed at the decimals it was given
    with (four at least, as before: 0.8000)."""
    monkeypatch.setenv("COLUMNS", "400")
    from conftest import cheap_first_tiers

    # w4a16 at 2.50 USD/GPU-hour, the cheaper per request as listed (round 53's price at the
    # load's decode batch makes it the dearer at tiny's one price, and the router leaves it idle)
    doc = tiny_doc(tiers=cheap_first_tiers())
    code, out, err = run(capsys, "plan", write_yaml(tmp_path / "s.yaml", doc), "--out",
                         tmp_path / "p", "--max-replicas", "1", "--gpus-per-replica", "1",
                         "--accuracy-floor", "0.94885", "--no-report")
    assert code == 0, err
    assert ("w4a16+bf16: accuracy < floor 94.885% with the router fitted to 0.94885 (94.428%)"
            in out)


def test_plan_floor_digits():
    """The accuracy beside a floor it missed is printed at the decimals that tell them apart."""
    from tiersim.results import floor_pair

    assert floor_pair(0.79, 0.8) == ("79.00%", "80.00%")  # in percent, as the plan's lines
    assert floor_pair(0.94884, 0.94885) == ("94.884%", "94.885%")
    assert floor_pair(0.9488, 0.94885) == ("94.880%", "94.885%")
    assert floor_pair(0.94884999, 0.94885) == ("94.884999%", "94.885%")
    assert floor_pair(0.8 - 1e-12, 0.8) == ("80.00%", "80.00%")  # within the tolerance: met
    assert floor_pair(0.79, 0.8, percent=False) == ("0.7900", "0.8000")  # tiersim analytic
    assert floor_pair(0.9488, 0.94885, percent=False) == ("0.94880", "0.94885")


def test_plan_prints_a_p99_over_its_slo_apart_from_it(tmp_path, capsys, monkeypatch):
    """`tiersim plan tiny.yaml --slo-tpot-p99 0.02218999` (uniform w4a16's p99 TPOT was then
    0.02218999097) printed "uniform w4a16 ...: latency still missed ... (tpot_p99_s 0.02219 vs
    limit 0.02219)", and the plan's own line "tpot_p99_s: 0.01868 vs limit 0.02219": a limit
    printed other than given, and a p99 that missed printed equal to it. The limit is now
    printed as given and a p99 over it at the digits that tell them apart, as a run's
    "not comparable" words print its p99 (summary.json's ten digits at most). Here the limit
    sits just under uniform bf16's p99 TPOT (0.07823767421 since the roofline's calibration)."""
    monkeypatch.setenv("COLUMNS", "400")
    code, out, err = run(capsys, "plan", write_yaml(tmp_path / "s.yaml", tiny_doc()), "--out",
                         tmp_path / "p", "--max-replicas", "1", "--gpus-per-replica", "1",
                         "--slo-tpot-p99", "0.07823767", "--no-report")
    assert code == 0, err
    # 3 figures, as run prints
    assert "  tpot_p99_s: 0.0437 vs limit 0.07823767 (modelled)\n" in out
    assert "(tpot_p99_s 0.078237674 vs limit 0.07823767)" in out
    assert "(tpot_p99_s 0.0955 vs limit 0.07823767)" in out


def test_the_uniform_fleets_floor_is_printed_apart_from_their_accuracies(tmp_path, capsys,
                                                                          monkeypatch):
    """tiny.yaml at a floor of 0.9500001 printed "uniform fleets ... (floor 95 %: ...)" above
    "all bf16 ... meets floor: no ... 95.00 %", in the console and the report. The floor is
    printed to the digits that tell it from every accuracy the table judges by it."""
    monkeypatch.setenv("COLUMNS", "400")
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(accuracy_floor=0.9500001))
    code, out, err = run(capsys, "run", path, "--out", tmp_path / "o")
    assert code == 0, err
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["savings"]["uniform"]["bf16"]["accuracy"] == 0.95
    assert "(cost provisioned; floor 95.00001 %:" in out
    shown = cells((tmp_path / "o" / "report.html").read_text())
    assert "floor 95.00001 %: the scenario's accuracy_floor" in shown


def test_plan_accuracy_line_prints_the_floor_as_given(tmp_path, capsys):
    """`tiersim plan tiny.yaml --accuracy-floor 0.94995` printed "expected accuracy: 95.00% vs
    floor 94.99%" (and the plan's other lines "floor 0.94995"): the floor is now printed as
    given, at two decimals of a percent at least (93.00%, as before)."""
    code, out, err = run(capsys, "plan", write_yaml(tmp_path / "s.yaml", tiny_doc()), "--out",
                         tmp_path / "p", "--max-replicas", "1", "--gpus-per-replica", "1",
                         "--accuracy-floor", "0.94995", "--no-report")
    assert code == 0, err
    # round 53: the plan's 95% interval beside its accuracy (modelled, tied to the priors),
    # with the floor inside it
    assert ("  expected accuracy: 95.00% (95% CI 93.16% - 95.77%, the floor inside it) vs "
            "floor 94.995%; source: prior\n") in out


def test_analytic_prints_its_floor_as_given(tmp_path, capsys):
    """`tiersim analytic --scenario ... --floor 0.94885` printed "at floor 0.9488: ...", as the
    plan printed "floor 0.9488" beside "fitted to 0.94885"; both now print a floor through
    :func:`tiersim.results.floor_pair` (the decimals it was given with, four at least)."""
    path = write_yaml(tmp_path / "s.yaml", _dearer_bf16())
    code, out, err = run(capsys, "analytic", "--scenario", path, "--floor", "0.94885")
    assert code == 0, err
    assert "\nat floor 0.94885: oracle " in out
    code, out, err = run(capsys, "analytic", "--scenario", path, "--floor", "0.8")
    assert code == 0, err
    assert "\nat floor 0.8000: oracle " in out
