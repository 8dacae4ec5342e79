"""Tests of the HTML report: content per kind of directory, self-containment, errors.

The ``make_*_dir`` helpers build a run, sweep and plan directory for these tests and the browser
test: the run with the real simulator on ``scenarios/tiny.yaml`` (seconds), the sweep and plan
with the synthetic point runner.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tiersim.errors import TiersimError
from tiersim.report import write_report
from tiersim.report.figures import build_panels
from tiersim.report.load import load_dir
from tiersim.sweep.run import run_sweep
from tiersim.sweep.testing import synthetic_runner

ROOT = Path(__file__).resolve().parents[1]
_CACHE: dict[str, dict[str, bytes]] = {}


def make_run_dir(path: Path) -> Path:
    """A run directory (summary.json, requests.parquet, timeseries.parquet, scenario.yaml):
    scenarios/tiny.yaml is run into the first ``path`` asked for (a pytest ``tmp_path``, which
    pytest removes) and its files are kept in memory for the later ones."""
    if "run" not in _CACHE:
        from tiersim.runner import run_scenario
        from tiersim.scenario import load_scenario

        scenario = ROOT / "scenarios" / "tiny.yaml"
        run_scenario(load_scenario(scenario), out_dir=path, scenario_path=scenario)
        shutil.copy(scenario, path / "scenario.yaml")
        _CACHE["run"] = {f.name: f.read_bytes() for f in path.iterdir() if f.is_file()}
        return path
    path.mkdir(parents=True)
    for name, data in _CACHE["run"].items():
        (path / name).write_bytes(data)
    return path


def make_sweep_dir(path: Path) -> Path:
    """A 12-point synthetic sweep over injected FPR and bf16 replicas."""
    doc = {"name": "fpr-sweep", "seed": 2,
           "tiers": [{"name": "w4a16", "replicas": 2, "accuracy": 0.7},
                     {"name": "bf16", "replicas": 2, "accuracy": 0.9}],
           "router": {"confusion": {"fpr": 0.0}}, "slo": {"ttft_p99_s": 0.5, "tpot_p99_s": 0.05},
           "sweep": {"router.confusion.fpr": [0.0, 0.1, 0.2, 0.3],
                     "tiers.bf16.replicas": [1, 2, 4]}}
    run_sweep(doc, path, workers=1, runner=synthetic_runner, validator=None, report=False,
              source="fpr-sweep.yaml")
    return path


def make_plan_dir(path: Path) -> Path:
    """A capacity plan over the planner's closed-form fake evaluator (no simulation)."""
    from tiersim.plan import Constraints, Planner
    from tiersim.plan.testing import FakeEvaluator, FakeTier, fake_scenario
    from tiersim.results import dumps

    tiers = [FakeTier("w4a16", accuracy=0.8, cost_per_gpu_hour=2.0),
             FakeTier("bf16", accuracy=0.95, cost_per_gpu_hour=4.0)]
    scenario = fake_scenario(tiers, ttft=0.5, tpot=0.05, floor=0.85)
    result = Planner(scenario, Constraints.of(scenario), FakeEvaluator(tiers)).plan()
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(dumps(result.to_json()))
    return path


@pytest.mark.parametrize("make,keys", [
    (make_run_dir, {"frontier", "latency_cdf", "p99_per_tier", "load_over_time"}),
    (make_sweep_dir, {"frontier", "fpr_sweep", "sweep_metrics"}),
    (make_plan_dir, {"plan_search"}),
])
def test_panels_per_kind_of_directory(tmp_path, make, keys):
    data = load_dir(make(tmp_path / "d"))
    panels = build_panels(data)
    assert keys <= {p.key for p in panels}
    for panel in panels:
        layout = panel.fig.layout
        assert layout.title.text, panel.key
        assert panel.caption.endswith("."), panel.key
        xs = [layout[k].title.text for k in layout if k.startswith("xaxis")]
        ys = [layout[k].title.text for k in layout if k.startswith("yaxis")]
        assert any(xs) and all(ys), (panel.key, xs, ys)


def test_report_is_self_contained(tmp_path):
    report = write_report(make_run_dir(tmp_path / "run"))
    text = report.read_text()
    assert text.count("Plotly.newPlot") >= 4
    assert len(re.findall(r"plotly\.js v\d", text)) == 1, "plotly.js inlined exactly once"
    assert not re.search(r"<script[^>]+src=", text), "no external scripts"
    assert not re.search(r"""<link[^>]+href=["']https?:""", text), "no external styles"
    for needle in ("Scenario and provenance", "azure2023_code.parquet", "Headline", "TTFT p99",
                   "roofline", "Per tier"):
        assert needle in text, needle


def test_sweep_report_lists_points_and_axes(tmp_path):
    text = write_report(make_sweep_dir(tmp_path / "sweep")).read_text()
    assert "router.confusion.fpr" in text and "Points" in text
    assert "Router false positives" in text


def test_plan_report_shows_margins(tmp_path):
    text = write_report(make_plan_dir(tmp_path / "plan")).read_text()
    assert "Capacity plan" in text and "Margin on each constraint" in text
    assert "One replica fewer" in text


def test_empty_directory_is_one_line_error(tmp_path):
    with pytest.raises(TiersimError, match="no results here"):
        write_report(tmp_path)
    with pytest.raises(TiersimError, match="no such folder"):
        write_report(tmp_path / "missing")


def test_report_of_a_scenario_yaml_only_run(tmp_path):
    """A run directory without requests or time series still gives a page (tables only)."""
    run = make_run_dir(tmp_path / "run")
    (run / "requests.parquet").unlink()
    (run / "timeseries.parquet").unlink()
    text = write_report(run).read_text()
    assert "Headline" in text
    assert yaml.safe_load((run / "scenario.yaml").read_text())["name"] == "tiny"


def test_frontier_draws_analytic_curve_from_summary(tmp_path):
    """A summary carrying tiersim.analytic.summary() output gets its curves drawn dotted."""
    import json

    from tiersim.analytic import TwoType
    from tiersim.analytic import summary as analytic_summary
    from tiersim.report.figures import frontier

    run = make_run_dir(tmp_path / "run")
    summary = json.loads((run / "summary.json").read_text())
    cheap, top = summary["savings"]["uniform"]["w4a16"], summary["savings"]["uniform"]["bf16"]
    model = TwoType(p=0.7, eps=0.0, delta=(top["accuracy"] - cheap["accuracy"]) / 0.3,
                    c0=cheap["cost_usd"], dc=top["cost_usd"] - cheap["cost_usd"],
                    a_top=top["accuracy"])
    summary["analytic"] = analytic_summary(model)
    (run / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(TiersimError, match="does not belong to run"):
        load_dir(run)  # an edited summary no longer matches the run's manifest
    (run / "manifest.json").unlink()  # a hand-made folder: no manifest to check
    fig = frontier(load_dir(run)).fig
    dotted = {t.name: t for t in fig.data if t.line.dash == "dot"}
    assert set(dotted) == {"analytic: oracle_frontier", "analytic: static_frontier"}
    oracle = dotted["analytic: oracle_frontier"]  # eps = 0: the kink reaches the top's accuracy
    assert len(oracle.x) == 2 and oracle.y[-1] == pytest.approx(top["accuracy"])
    assert oracle.x[-1] == pytest.approx(model.c0 + 0.3 * model.dc)  # all-top costs more: off


def test_a_saving_of_float_noise_reads_0_percent_as_the_console_prints_it(tmp_path):
    """A saving of -4.4e-16 (float noise: the fleet is the uniform one) is '0 %', not
    '-4.441e-16'; other savings are percents to 3 digits, as ``tiersim run`` prints them."""
    import json

    from tiersim.report.page import fmt, percent

    run = make_run_dir(tmp_path / "run")
    (run / "manifest.json").unlink()  # the summary is edited by hand below
    summary = json.loads((run / "summary.json").read_text())
    summary["savings"].update(vs_uniform_frac=-4.440892098500626e-16,
                              vs_static_split_frac=0.2345, routed_slo_met=True,
                              routed_floor_met=True)
    (run / "summary.json").write_text(json.dumps(summary))
    text = write_report(run).read_text()
    assert '<td>saved vs that tier</td><td class="num">0 %</td>' in text
    assert ('<td>saved vs a static split of equal accuracy</td><td class="num">23.4 %</td>'
            in text)
    assert "4.441e-16" not in text
    assert [fmt(v) for v in (-4.4e-16, 3e-13, 1e-11, percent(0.5), percent(None))] == [
        "0", "0", "1.00e-11", "50.0 %", "-"]  # 3 figures, as the console prints 2e-9


def test_summary_manifest_and_report_record_the_trace_read(tmp_path):
    """summary.json's and manifest.json's ``trace``: the file's name, the format read under
    ``format: auto`` and the SHA-256 of its bytes; the report's provenance shows them."""
    import hashlib
    import json

    run = make_run_dir(tmp_path / "run")
    bundled = ROOT / "tiersim" / "traces" / "azure2023_code.parquet"
    expected = {"file": "azure2023_code.parquet", "format": "canonical",
                "sha256": hashlib.sha256(bundled.read_bytes()).hexdigest()}
    assert json.loads((run / "summary.json").read_text())["trace"] == expected
    assert json.loads((run / "manifest.json").read_text())["trace"] == expected
    text = write_report(run).read_text()
    assert "<td>trace format read</td><td>canonical</td>" in text
    assert (f"<td>trace SHA-256</td><td>{expected['sha256']} (azure2023_code.parquet)</td>"
            in text)
