"""Round 36, helper check-results: every figure of the report's closed-form table says where it
comes from, with the prices that let a reader recompute dC* from the page.

Before, the table read "closed form dC* (USD) | 0.00884" and "two-type parameters p / eps /
delta | 0.7378 / 0.02 / 0.2" with no source: nothing said that p, eps and delta are estimated
from the run's per-request correctness (on the scenario's table, a prior or labels), nor which
costs dC* scales (under provisioned cost dc is the top uniform fleet's USD/hour over the cheap
one's on the cheap fleet's duration, so the analytic curve's all-top end sits left of the
uniform top fleet's own cost in the same frontier figure).
"""

from __future__ import annotations

import html
import json
import re

from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def closed_form_rows(page: str) -> dict[str, list[str]]:
    """The report's "Against the closed form" table: item -> its other cells."""
    part = page[page.index("<h3>Against the closed form</h3>"):]
    part = part[:part.index("</table>")]
    rows = {}
    for row in re.findall(r"<tr>(.*?)</tr>", part):
        cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
                 for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)]
        rows[cells[0]] = cells[1:]
    return rows


def test_the_closed_form_table_says_where_each_figure_comes_from(tmp_path, capsys):
    """tiny.yaml with w4a16 at 3.0 USD per GPU-hour (bf16 3.5, both 1 x 1 GPU, provisioned):
    c0 is the uniform w4a16 fleet's cost, dc = c0 x (3.5 / 3.0 - 1) (the closed form of the
    two rates), and dC* = p (1 - p)(delta - eps) / (p eps + (1 - p) delta) x dc from the
    figures the page shows; each row names its source."""
    doc = tiny_doc()
    doc["tiers"][0]["cost_per_gpu_hour"] = 3.0
    out = tmp_path / "o"
    capsys.readouterr()
    assert main(["run", str(write_yaml(tmp_path / "s.yaml", doc)), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    rows = closed_form_rows((out / "report.html").read_text())
    assert rows["item"] == ["value", "source"]
    c0 = summary["savings"]["uniform"]["w4a16"]["cost_usd"]
    dc = c0 * (3.5 / 3.0 - 1.0)
    assert rows["closed form dC* (USD)"][1] == (
        "two-type closed form of p / eps / delta below and the uniform fleets sized by "
        f"simulation (provisioned): c0 {c0:.4g} USD (all w4a16), dc {dc:.4g} USD (all bf16's "
        "USD/hour over all w4a16's, on all w4a16's duration)")
    assert rows["two-type parameters p / eps / delta"][1] == (
        "estimated from this run's requests' correctness on w4a16 and bf16 (prior)")
    assert rows["this run's saving vs a static split (simulated, USD)"][1] == (
        "this run's cost against the static split of its sized uniform fleets, over the trace")
    p, eps, delta = map(float, rows["two-type parameters p / eps / delta"][0].split(" / "))
    shown = float(rows["closed form dC* (USD)"][0])
    closed = p * (1 - p) * (delta - eps) / (p * eps + (1 - p) * delta) * dc
    assert abs(shown - closed) <= 0.005 * closed  # the page's 3 figures of 4-figure inputs


def prior_baseline_doc() -> dict:
    """tiny.yaml's two routed tiers with accuracy tables, beside a W4A16 baseline-only tier
    with none (its accuracy is the precision prior)."""
    doc = tiny_doc(workload={"difficulty": {"kind": "two_type", "p_easy": 0.7}},
                   baselines=[{"name": "w4only", "precision": "w4a16", "replicas": 1,
                               "cost_per_gpu_hour": 3.5}])
    doc["tiers"][0]["accuracy"] = {"easy": 0.99, "hard": 0.6}
    doc["tiers"][1]["accuracy"] = {"easy": 1.0, "hard": 0.8}
    return doc


def test_a_baseline_tiers_accuracy_says_it_is_the_prior(tmp_path, capsys, monkeypatch):
    """A baseline-only tier with no accuracy table reads the precision prior, while the routed
    tiers read the scenario's table; the console's uniform fleets table printed its accuracy
    (93.36 %, the baseline of the saving on conv_plan's trace) beside theirs under one source,
    the headline's "scenario". Now summary.json gives each sized fleet's accuracy_source and
    the table's title says which fleet reads which. W4A16's prior is qllm-eval's W4 ratio
    (0.9827) of the 0.95 the prior gives BF16: 0.933565 on every request."""
    monkeypatch.setenv("COLUMNS", "400")
    doc = prior_baseline_doc()
    out = tmp_path / "o"
    capsys.readouterr()
    assert main(["run", str(write_yaml(tmp_path / "s.yaml", doc)), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    uniform = json.loads((out / "summary.json").read_text())["savings"]["uniform"]
    assert {name: u["accuracy_source"] for name, u in uniform.items()} == {
        "w4a16": "scenario", "bf16": "scenario", "w4only": "prior"}
    assert abs(uniform["w4only"]["accuracy"] - 0.95 * 0.9827) < 1e-9
    assert "; accuracy from w4a16, bf16: scenario; w4only: prior)" in printed
    page = (out / "report.html").read_text()
    # in the console's order (the run's tiers cheapest first, then the baseline-only tier):
    # before round 49 the report read summary.json's sorted keys, "bf16, w4a16: scenario"
    assert ("<td>accuracy of the uniform fleets</td><td>w4a16, bf16: scenario; w4only: "
            "prior</td>") in page


def test_a_plans_baseline_fleet_says_its_accuracy_is_the_prior(tmp_path, capsys, monkeypatch):
    """The same scenario through `tiersim plan`: "uniform w4only (1 x 1 GPU): ..., cost ...
    USD" gave the prior's 93.36 % (0.95 x 0.9827) beside the plan's "source: scenario" with
    nothing saying it is no scenario figure. plan.json's uniform entries now carry their
    accuracy_source, and the console line and the report's "Other designs" cell of a fleet
    whose source is not the plan's end "; accuracy from prior"."""
    monkeypatch.setenv("COLUMNS", "400")
    doc = prior_baseline_doc()
    out = tmp_path / "p"
    capsys.readouterr()
    assert main(["plan", str(write_yaml(tmp_path / "s.yaml", doc)), "--out", str(out),
                 "--max-replicas", "1", "--gpus-per-replica", "1"]) == 0
    printed = capsys.readouterr().out
    plan = json.loads((out / "plan.json").read_text())
    assert plan["plan"]["accuracy_sources"]["source"] == "scenario"
    sources = {u["design"]: u["accuracy_source"] for u in plan["uniform"]}
    assert sources == {"w4a16": "scenario", "bf16": "scenario", "w4only": "prior"}
    accuracy = {u["design"]: u["accuracy"] for u in plan["uniform"]}
    assert abs(accuracy["w4only"] - 0.95 * 0.9827) < 1e-9
    lines = {line.split(" (")[0].strip(): line for line in printed.splitlines()
             if line.startswith("  uniform ")}
    assert lines["uniform w4only"].endswith("; accuracy from prior")
    assert "accuracy from" not in lines["uniform bf16"] + lines["uniform w4a16"]
    page = (out / "report.html").read_text()
    other = page[page.index("<h3>Other designs</h3>"):]
    row = re.search(r"<tr><td>w4only</td>.*?</tr>", other).group(0)
    assert row.endswith("; accuracy from prior</td></tr>")
