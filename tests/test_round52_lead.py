"""Round 52, lead: the uniform fleets' p99s beside the routed fleet's.

A planner asked "what do I give up in p99 latency against BF16 alone?" and the run could not
answer: the uniform fleets were sized by simulation, but summary.json, the console and the
report gave only their sizes, costs and accuracy (fresh52). Each sized fleet's p99 TTFT and TPOT
now sit in ``savings.uniform.<tier>``, one console line under the uniform-fleets table and two
report columns.
"""

from __future__ import annotations

import json
import re

from conftest import tiny_doc, write_yaml

from tiersim.cli import main


def _run(tmp_path, capsys, *flags: str, **edits) -> tuple[str, dict, str]:
    """``tiersim run`` of the tiny scenario (edited): its console, summary.json and report."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(**edits))
    capsys.readouterr()
    code = main(["run", str(path), "--out", str(tmp_path / "r"), *flags])
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    return out.out, summary, (tmp_path / "r" / "report.html").read_text()


def test_a_sized_uniform_fleets_p99s_are_its_own_run(tmp_path, capsys):
    """The p99s in ``savings.uniform.bf16`` are those of a run of that fleet on its own (the
    same trace and seed, every request to bf16 at the size the run found), and the console
    line and the report give them with the routed fleet's."""
    out, summary, page = _run(tmp_path, capsys)
    bf16 = summary["savings"]["uniform"]["bf16"]
    alone = tiny_doc(tiers=[{"name": "bf16", "precision": "bf16", "replicas": bf16["replicas"],
                             "cost_per_gpu_hour": 3.5}],
                     router={"policy": "uniform"})
    (tmp_path / "alone").mkdir()
    _, own, _ = _run(tmp_path / "alone", capsys, "--no-baselines", **alone)
    assert bf16["ttft_p99_s"] == own["ttft_p99_s"]
    assert bf16["tpot_p99_s"] == own["tpot_p99_s"]
    line = " ".join(out[out.index("p99 TTFT / TPOT (SLOs"):].split("wrote")[0].split())
    assert line == ("p99 TTFT / TPOT (SLOs 2.00 s / 100 ms): all w4a16 0.578 s / 95.5 ms; "
                    "all bf16 0.334 s / 78.2 ms; routed (this run) 0.277 s / 43.7 ms")
    cells = re.findall(r"<td>bf16</td>(.*?)</tr>", page)[-1]
    assert cells.endswith('<td>0.334 s</td><td>78.2 ms</td>')
    assert "<th>TTFT p99</th><th>TPOT p99</th>" in page


def test_an_estimate_gives_no_uniform_p99s(tmp_path, capsys):
    """``--no-baselines`` sizes no uniform fleet: no p99 keys, no console line, no columns."""
    out, summary, page = _run(tmp_path, capsys, "--no-baselines")
    for fleet in summary["savings"]["uniform"].values():
        assert "ttft_p99_s" not in fleet and "tpot_p99_s" not in fleet
    assert "p99 TTFT / TPOT (SLOs" not in out
    assert "<th>TTFT p99</th>" not in page


def test_a_sweeps_points_say_what_each_run_says_of_itself(tmp_path):
    """The sweep report's Points table gave each point's figures but not its verdicts: a
    three-point sweep of ``router.confusion.fpr`` whose every point missed its floor and p99
    TPOT read like three plans (fresh52). Each point now shows the FPR as counts, whether it
    met its SLOs and floor, and its saving, as ``tiersim run`` prints them."""
    import pandas as pd

    from tiersim.report.load import ReportData
    from tiersim.report.page import point_verdicts, sweep_headline

    sweep = pd.DataFrame({
        "point_id": ["p0", "p1", "p2", "p3"], "status": ["ok"] * 4, "seed": [0, 1, 2, 3],
        "accuracy": [0.79, 0.80, 0.81, 0.80], "accuracy_floor": [0.8] * 4,
        "router.fpr": [0.4, 0.0, 0.1, None], "router.fpr_among": [10, 10, 10, None],
        "savings.routed_slo_met": [False, True, True, True],
        "savings.routed_floor_met": [False, True, True, True],
        "savings.vs_uniform_frac": [0.25, 0.25, -0.032, None],
        "savings.vs_uniform_usd": [1.0, 1.0, -0.1, None],
        "savings.saving_basis": ["per_hour"] * 4,
        "savings.baseline_uniform_tier": ["bf16", "bf16", "bf16", None]})
    assert point_verdicts(sweep) == {
        "router FPR as counts": ["4 of 10", "0 of 10", "1 of 10", "-"],
        "meets SLOs": ["no", "yes", "yes", "yes"],
        "meets accuracy floor 80.0 %": ["no", "yes", "yes", "yes"],  # fresh52b: names it
        "saved vs uniform": ["not comparable: misses its SLOs and its accuracy floor",
                             "25.0 % per hour vs bf16", "costs 3.20 % more per hour vs bf16",
                             "-"]}
    page = sweep_headline(ReportData(tmp_path, sweep=sweep, sweep_axes=["seed"]))
    assert ("<th>router FPR as counts</th><th>meets SLOs</th><th>meets accuracy floor 80.0 %</th>"
            "<th>saved vs uniform</th><th>status</th>") in page
    no_floor = sweep.assign(accuracy_floor=None).drop(columns="router.fpr_among")
    assert list(point_verdicts(no_floor)) == ["meets SLOs", "saved vs uniform"]


def test_an_oracle_with_a_lambda_says_why_a_dearer_tier_is_idle(tmp_path, capsys):
    """The ``oracle`` with a ``lambda`` weighs each tier's cost per request as ``lagrangian``
    does, but its idle-tier note gave the generic fix, "route to it (router.policy: floor with
    an accuracy_floor, say)" (price52). w4a16 at 4 USD an hour costs more per request than
    bf16 at 3.5 on tiny's requests, so the oracle sends it nothing, and the note says so.
    Round 53 (priced at the decode batch the load gives a replica): 0.000234 against 0.000165
    USD (9.72e-05 against 8.76e-05 at a 32-sequence batch); round 54 (the batch counted on
    the trace's arrivals as the 2 replicas share them): 0.00023."""
    tiers = tiny_doc()["tiers"]
    tiers[0]["cost_per_gpu_hour"] = 4.0
    for router, said in (({"policy": "oracle", "lambda": 0.1},
                          "(router oracle, which weighs each tier's cost per request, priced "),
                         ({"policy": "oracle"}, None)):
        path = write_yaml(tmp_path / "s.yaml", tiny_doc(tiers=tiers, router=router))
        capsys.readouterr()
        code = main(["run", str(path), "--out", str(tmp_path / "r"), "--no-baselines",
                     "--no-report"])
        assert code == 0
        err = " ".join(capsys.readouterr().err.split())
        idle = [n for n in err.split("note: ") if "ran no request" in n]
        assert len(idle) == 1
        if said is None:  # without a lambda: the cheapest tier as good as the top, no price
            assert "weighs each tier's cost" not in idle[0]
            continue
        assert said in idle[0]
        assert idle[0].strip().endswith(
            "w4a16's 0.00023 USD is no less than bf16's 0.000165, so it gains nothing by "
            "sending it requests), yet its 1 GPU is provisioned: 0.118 of the run's 0.221 USD; "
            "remove the tier, or make it cheaper per request than bf16 (its gpus_per_replica "
            "or cost_per_gpu_hour)")
