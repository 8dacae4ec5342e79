"""Round 56, fresh56: a run of one tier routes nothing, so its row in the uniform-fleets
table, the p99 line under it and the report's savings table name it "this run (one tier)",
not "routed (this run)"; a run of several tiers keeps "routed (this run)"."""

from __future__ import annotations

import pytest
from conftest import run_cli, tiny_doc, write_yaml

ONE_TIER = {"tiers": [tiny_doc()["tiers"][1]], "router": {"policy": "uniform"}}


@pytest.fixture(scope="module")
def one_tier_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one")
    scenario = write_yaml(folder / "one.yaml", tiny_doc(**ONE_TIER))
    out = run_cli("run", str(scenario), "--out", str(folder / "out"))
    assert out.returncode == 0, out.stderr
    return out.stdout, (folder / "out" / "report.html").read_text()


def test_the_console_names_a_one_tier_fleet_as_not_routed(one_tier_run):
    console, _ = one_tier_run
    assert "routed (this run)" not in console
    assert "│ this run (one tier) │ 1 x 1 " in console
    p99 = " ".join(console[console.index("p99 TTFT / TPOT (SLOs") :].split())
    assert p99.startswith("p99 TTFT / TPOT (SLOs 2.00 s / 100 ms): all bf16 ")
    assert "; this run (one tier) " in p99


def test_the_report_names_it_alike(one_tier_run):
    _, page = one_tier_run
    assert "routed (this run)" not in page
    assert "<td>this run (one tier)</td><td>1</td><td>1</td>" in page


def test_a_fleet_of_two_tiers_is_still_routed():
    from tiersim.results import RunResult

    two = type("R", (), {"tiers": (object(), object())})()
    one = type("R", (), {"tiers": (object(),)})()
    assert RunResult.fleet_label(two) == "routed (this run)"
    assert RunResult.fleet_label(one) == "this run (one tier)"
