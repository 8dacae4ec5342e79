"""Round 23 hostile-input fixes of ``tiersim report``: hand-edited result files a page reads.

Each test drives the command in-process through ``tiersim.cli.main`` and asserts the exact
one line the user sees and exit status 1, or reads the page it wrote.
"""

from __future__ import annotations

import copy
import json

import pytest
from test_round5_analytic_report_plan import error_line, run

from tiersim.cli import main

# --------------------------------------------------------------------------- plan.json

CHOSEN = {"design": "bf16", "tiers": ["bf16"], "replicas": {"bf16": 2},
          "gpus_per_replica": {"bf16": 1}, "router": {}, "cost_model": "provisioned",
          "cost_usd": 1.0, "cost_per_hour_usd": 7.0, "ttft_p99_s": 0.2, "tpot_p99_s": 0.01,
          "margins": {"ttft_p99_s": {"limit": 2.0, "value": 0.2, "margin": 1.8, "met": True}},
          "savings": {"baseline_uniform_tier": "bf16", "baseline_uniform_cost_usd": 1.0,
                      "vs_uniform_usd": 0.0, "vs_uniform_frac": 0.0,
                      "vs_static_split_usd": None, "vs_static_split_frac": None},
          "one_fewer": {"bf16": {"replicas": 1, "misses": True, "verdict": "misses: TTFT"}}}
UNIFORM = {"design": "bf16", "replicas": {"bf16": 2}, "router": {}, "cost_usd": 1.0,
           "ttft_p99_s": 0.2, "missed": "meets every constraint"}
FEASIBLE = {"scenario": "s.yaml", "constraints": {"ttft_p99_s": 2.0, "tpot_p99_s": 0.1},
            "plan": CHOSEN, "reason": None, "simulations": 3, "wall_s": 0.5,
            "runners_up": [], "uniform": [UNIFORM], "evaluated": [dict(UNIFORM)]}


def edited(path: str, value):
    """FEASIBLE with the value at ``path`` (keys and list indexes joined by '|') replaced."""
    doc = copy.deepcopy(FEASIBLE)
    *parents, last = path.split("|")
    node = doc
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    return doc


PLAN_VALUE_CASES = {
    "a saving as text": ("plan|savings|vs_uniform_frac", "x",
                         "plan.savings.vs_uniform_frac: expected a number, got the text 'x'"),
    "replicas as text": ("plan|replicas|bf16", "two",
                         "plan.replicas.bf16: expected a whole number >= 0, got the text "
                         "'two'"),
    "negative replicas": ("plan|replicas|bf16", -2,
                          "plan.replicas.bf16: expected a whole number >= 0, got the number -2"),
    "half a replica": ("plan|replicas|bf16", 1.5,
                       "plan.replicas.bf16: expected a whole number >= 0, got the number 1.5"),
    "GPUs per replica as text": ("plan|gpus_per_replica|bf16", "x",
                                 "plan.gpus_per_replica.bf16: expected a whole number >= 0, got "
                                 "the text 'x'"),
    "a negative cost": ("plan|cost_usd", -5.0,
                        "plan.cost_usd: expected a number >= 0, got the number -5"),
    "a margin's limit as text": ("plan|margins|ttft_p99_s|limit", "2 s",
                                 "plan.margins.ttft_p99_s.limit: expected a number, got the "
                                 "text '2 s'"),
    "met as text": ("plan|margins|ttft_p99_s|met", "yes",
                    "plan.margins.ttft_p99_s.met: expected true or false, got the text 'yes'"),
    "one fewer's replicas as text": ("plan|one_fewer|bf16|replicas", "1",
                                     "plan.one_fewer.bf16.replicas: expected a whole number "
                                     ">= 0, got the text '1'"),
    "a design as a list": ("uniform|0|design", ["bf16"],
                           "uniform[0].design: expected a text, got a list"),
    "a uniform fleet's replicas as text": ("uniform|0|replicas|bf16", "2",
                                           "uniform[0].replicas.bf16: expected a whole number "
                                           ">= 0, got the text '2'"),
    "an evaluated fleet's negative cost": ("evaluated|0|cost_usd", -1,
                                           "evaluated[0].cost_usd: expected a number >= 0, got "
                                           "the number -1"),
}


@pytest.mark.parametrize("case", PLAN_VALUE_CASES)
def test_a_plan_value_of_the_wrong_kind_is_one_line(capsys, tmp_path, case):
    """Every value of plan.json the page shows has its kind and range checked: a saving as
    text ended the report in a ValueError traceback, and replicas as text, a negative cost or
    a margin's limit as text were shown on the page as if the plan had found them."""
    path, value, message = PLAN_VALUE_CASES[case]
    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps(edited(path, value)))
    line = error_line(capsys, "report", folder)
    assert line == (f"Error: {folder / 'plan.json'}: {message}; rerun `tiersim plan` to "
                    "rewrite it")
    assert not (folder / "report.html").exists()


def test_the_feasible_plan_of_these_cases_is_reported(capsys, tmp_path):
    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps(FEASIBLE))
    code, _, err = run(capsys, "report", folder)
    assert code == 0, err
    assert "<td>tier bf16</td><td>2 x 1 GPU</td>" in (folder / "report.html").read_text()


# --------------------------------------------------------------------------- summary.json


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run folder of the tiny scenario (written once per module; tests copy it)."""
    from conftest import tiny_doc, write_yaml

    root = tmp_path_factory.mktemp("run")
    scenario = write_yaml(root / "s.yaml", tiny_doc())
    assert main(["run", str(scenario), "--out", str(root / "out"), "--no-report"]) == 0
    return root / "out"


def edited_run(tiny_run, tmp_path, path: str, value):
    """A copy of ``tiny_run`` without its manifest (a folder no manifest checks, as an older
    tiersim wrote) whose summary.json holds ``value`` at ``path`` ('|'-joined keys)."""
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(tiny_run, folder)
    (folder / "manifest.json").unlink()
    doc = json.loads((folder / "summary.json").read_text())
    *parents, last = path.split("|")
    node = doc
    for key in parents:
        node = node[key]
    node[last] = value
    (folder / "summary.json").write_text(json.dumps(doc))
    return folder


SUMMARY_OBJECT_CASES = {
    "router as text": ("router", "x", "'router' must be a JSON object, got \"x\""),
    "router as a list": ("router", [1], "'router' must be a JSON object, got [1]"),
    "savings as text": ("savings", "x", "'savings' must be a JSON object, got \"x\""),
    "uniform fleets as a list": ("savings|uniform", [1],
                                 "'savings.uniform' must map tier names to objects, got [1]"),
    "a uniform fleet as text": ("savings|uniform|bf16", "x",
                                "'savings.uniform.bf16' must be a JSON object, got \"x\""),
}


@pytest.mark.parametrize("case", SUMMARY_OBJECT_CASES)
def test_a_summary_part_that_is_no_object_is_named(capsys, tmp_path, tiny_run, case):
    """A router, savings or uniform fleet that is no JSON object is named with what it holds,
    as 'sources' or 'profile' is; it read "'list' object has no attribute 'get'"."""
    path, value, message = SUMMARY_OBJECT_CASES[case]
    folder = edited_run(tiny_run, tmp_path, path, value)
    line = error_line(capsys, "report", folder)
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({message}); rerun "
                    "`tiersim run` to rewrite it")


INTERVAL_CASES = [
    ([0.99, 0.1], "'router.accuracy_ci95' must be two fractions between 0 and 1, the low end "
                  "first, got [0.99, 0.1]"),
    ([-0.5, 0.9], "'router.accuracy_ci95[0]' must be a fraction between 0 and 1, got -0.5"),
    ([0.9, 1.5], "'router.accuracy_ci95[1]' must be a fraction between 0 and 1, got 1.5"),
]


@pytest.mark.parametrize(("interval", "message"), INTERVAL_CASES)
def test_an_accuracy_interval_no_run_writes_is_refused(capsys, tmp_path, tiny_run, interval,
                                                       message):
    """The accuracy's 95% interval holds two fractions, the low end first; [0.99, 0.1] was
    shown as '0.99 - 0.1' and [-0.5, 0.9] judged the floor by its low end as written. An end
    outside [0, 1] is named by its place, as every fraction of a summary is."""
    folder = edited_run(tiny_run, tmp_path, "router|accuracy_ci95", interval)
    line = error_line(capsys, "report", folder)
    assert line == (f"Error: {folder / 'summary.json'}: malformed summary ({message}); rerun "
                    "`tiersim run` to rewrite it")


# --------------------------------------------------------------------------- sweep provenance


def _cell(page: str, item: str) -> str:
    """The provenance table's value of ``item``."""
    import html

    return html.unescape(page.split(f"<td>{item}</td><td>")[1].split("</td>")[0])


def test_a_swept_setting_is_not_shown_as_the_sweeps_own():
    """A sweep's provenance showed the base scenario's trace, seed and model beside an axis
    that varied them (no point ran the trace named), and the first point's profile as the
    profile of every point (a GPU axis gives each GPU its own default profile)."""
    from pathlib import Path

    import pandas as pd

    from tiersim.report.load import ReportData
    from tiersim.report.page import provenance

    sweep = pd.DataFrame({"trace.path": ["a.parquet", "b.parquet"], "seed": [1, 2],
                          "gpu": ["H200", "B200"], "profile.name": ["h200_x", "b200_x"]})
    data = ReportData(Path("."), sweep=sweep, sweep_axes=["trace.path", "seed", "gpu"],
                      scenario={"name": "s", "trace": {"path": "base.parquet"}, "seed": 0,
                                "gpu": "H200", "model": "m"})
    page = provenance(data)
    assert _cell(page, "trace") == "varied by the sweep (axis trace.path)"
    assert _cell(page, "seed") == "varied by the sweep (axis seed)"
    assert _cell(page, "GPU") == "varied by the sweep (axis gpu)"
    assert _cell(page, "calibration profile") == "varied across the points: h200_x, b200_x"
    assert _cell(page, "model") == "m"


# --------------------------------------------------------------------------- scenario.yaml

SCENARIO_CASES = {
    "trace as text": ({"trace": "x"}, "trace: expected a mapping, got the text 'x'"),
    "trace as a list": ({"trace": [1]}, "trace: expected a mapping, got a list"),
    "router as text": ({"router": "x"}, "router: expected a mapping, got the text 'x'"),
    "slo as text": ({"slo": "x"}, "slo: expected a mapping, got the text 'x'"),
    "an SLO as text": ({"slo": {"ttft_p99_s": "2 s"}},
                       "slo.ttft_p99_s: expected a number, got the text '2 s'"),
}


@pytest.mark.parametrize("case", SCENARIO_CASES)
def test_a_run_folders_scenario_of_the_wrong_shape_is_one_line(capsys, tmp_path, tiny_run,
                                                                case):
    """scenario.yaml is no file the manifest checks; a part the page reads that is no mapping
    (or an SLO as text) ended the report in an AttributeError, TypeError or ValueError."""
    import shutil

    import yaml

    change, message = SCENARIO_CASES[case]
    folder = tmp_path / "run"
    shutil.copytree(tiny_run, folder)
    doc = yaml.safe_load((folder / "scenario.yaml").read_text())
    (folder / "scenario.yaml").write_text(yaml.safe_dump({**doc, **change}))
    line = error_line(capsys, "report", folder)
    assert line == (f"Error: {folder / 'scenario.yaml'}: {message}; rerun the command that "
                    "wrote it")


# --------------------------------------------------------------------------- sweep.parquet


def write_sweep(folder, columns: dict, axes: bytes):
    """``folder/sweep.parquet`` holding ``columns``, with ``axes`` as its axis metadata."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    table = pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           b"tiersim.sweep.axes": axes})
    pq.write_table(table, folder / "sweep.parquet")
    return folder


POINTS = {"point_id": ["a", "b"], "status": ["ok", "ok"], "index": [0, 1], "fpr": [0.1, 0.2],
          "cost_usd": [1.0, 2.0], "accuracy": [0.8, 0.9]}

SWEEP_FLAG_CASES = {
    "SLO met as text": ({"savings.routed_slo_met": ["False", "True"]},
                        "column 'savings.routed_slo_met' holds 'False' (row 0), not true or "
                        "false"),
    "floor met as a number": ({"router.floor_met": [0.0, 1.0]},
                              "column 'router.floor_met' holds 0.0 (row 0), not true or false"),
    "dropped as text": ({"dropped": ["3", "0"]},
                        "column 'dropped' holds '3' (row 0), not a number"),
    "an SLO as text": ({"slo_ttft_p99_s": ["2 s", "2 s"]},
                       "column 'slo_ttft_p99_s' holds '2 s' (row 0), not a number"),
}


@pytest.mark.parametrize("case", SWEEP_FLAG_CASES)
def test_a_sweep_column_the_front_judges_by_holds_its_kind(capsys, tmp_path, case):
    """The columns that say whether a point missed its SLOs or floor (kept off the Pareto
    front) hold flags and numbers: 'False' as text read as true, and a point that missed its
    SLOs was drawn on the front; a dropped count or SLO as text was not judged at all."""
    change, message = SWEEP_FLAG_CASES[case]
    folder = write_sweep(tmp_path / "sw", {**POINTS, **change}, b'["fpr"]')
    line = error_line(capsys, "report", folder)
    assert line == f"Error: {folder / 'sweep.parquet'}: {message}; rerun the sweep"


@pytest.mark.parametrize("key", ["ok", "baseline_only"])
def test_an_evaluated_fleets_flag_as_text_is_one_line(capsys, tmp_path, key):
    """The plan search figure draws a fleet by its ``ok`` and ``baseline_only`` flags: "false"
    as text read as true, so a fleet that missed was drawn as one that met every constraint."""
    folder = tmp_path / "pl"
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps(edited(f"evaluated|0|{key}", "false")))
    line = error_line(capsys, "report", folder)
    assert line == (f"Error: {folder / 'plan.json'}: evaluated[0].{key}: expected true or false, "
                    "got the text 'false'; rerun `tiersim plan` to rewrite it")


@pytest.mark.parametrize("change, what, theirs, ours", [
    ({"seed": 5}, "seed", "5", "0"),
    ({"name": "other"}, "scenario", "'other'", "'tiny'"),
])
def test_a_scenario_yaml_of_another_run_beside_a_manifest_is_refused(capsys, tmp_path, tiny_run,
                                                                     change, what, theirs, ours):
    """manifest.json vouches for summary.json, not scenario.yaml: an edited or copied-in
    scenario.yaml of another seed or name was shown as the run's provenance (seed 5 for a run
    of seed 0), as a folder without a manifest refuses it."""
    import shutil

    import yaml

    folder = tmp_path / "run"
    shutil.copytree(tiny_run, folder)
    doc = yaml.safe_load((folder / "scenario.yaml").read_text())
    (folder / "scenario.yaml").write_text(yaml.safe_dump({**doc, **change}, sort_keys=False))
    line = error_line(capsys, "report", folder)
    assert line == (f"Error: {folder}: scenario.yaml describes another run than summary.json "
                    f"({what} {theirs} in scenario.yaml, {ours} in summary.json, whose run "
                    "manifest.json vouches for); put back the scenario.yaml the run wrote, or "
                    f"rerun `tiersim run --out {folder}`")
