"""Round 54 (spec54): the plan console says, in one line, when the planned fleet's router has a
realised AUROC whose 95% interval (DeLong's) takes in 0.5: its choices are then no better than
chance on the trace, while the plan may quote a large saving (fresh54: 0.514, 0.478 - 0.549,
beside 41.7 % saved against uniform bf16). With the plan's figure against a static split of
equal accuracy. All figures modelled."""

from __future__ import annotations

import pytest
import yaml
from conftest import tiny_doc


def _floor_plan(tmp_path, hint_auroc: float | None = None):
    """tiny as a two-type job under the floor router at floor 0.9 (w4a16 alone reaches 88.95 %,
    bf16 at twice its price), the Azure code trace's 120-360 s at 8x its rate: the plan is
    w4a16 6 x 1 + bf16 4 x 1. Without ``hint_auroc`` the router's classifier has no signal.
    Round 55 (review55): the window was 240-360 s, whose 317 requests held 69 hard ones, under
    the 100 of each class a verdict on chance now needs (test_round55_review55_chance); 120-360
    s gives 848 requests, 167 of them hard (modelled)."""
    doc = tiny_doc()
    doc["trace"].update(window=[120, 360], time_scale=8)
    doc["workload"] = {"difficulty": {"kind": "two_type", "p_easy": 0.8}}
    if hint_auroc is not None:
        doc["workload"]["difficulty"]["hint_auroc"] = hint_auroc
    doc["tiers"][0]["accuracy"] = {"easy": 0.97, "hard": 0.6}
    doc["tiers"][1].update(accuracy={"easy": 0.98, "hard": 0.8}, cost_per_gpu_hour=7.0)
    doc.update(router={"policy": "floor"}, accuracy_floor=0.9, accuracy_values="illustrative")
    path = tmp_path / "floor.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _plan_lines(capsys, tmp_path, path) -> list[str]:
    """The plan console's lines (stdout) of ``tiersim plan`` on ``path``."""
    from tiersim.cli import main

    capsys.readouterr()
    assert main(["plan", str(path), "--out", str(tmp_path / "plan"), "--no-report",
                 "--check-seeds", "0"]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_router_no_better_than_chance_is_said_in_one_line(tmp_path, capsys):
    """The line follows the saving line; it gives the AUROC with its interval and the plan
    against a static split of equal accuracy (here the dearer). tiny's workload is two-type:
    "for hard" since round 55 (misc55; "for hard or hopeless" before)."""
    lines = _plan_lines(capsys, tmp_path, _floor_plan(tmp_path))
    assert lines[0].startswith("plan (")
    assert "w4a16=6x1 GPU, bf16=4x1 GPU" in lines[0]
    at = lines.index("  saves 12.5 % per hour against the cheapest sized uniform fleet (bf16), "
                     "simulated")
    assert lines[at + 1] == (
        "  router: its realised AUROC, 0.461 (95% CI 0.412 - 0.511) for hard, has "
        "0.5 inside its 95% CI: its choices are no better than chance on this trace (modelled); "
        "the plan costs 23.6 % more per hour than a static split of equal accuracy (77.9% "
        "w4a16 + 22.1% bf16)")
    assert sum("no better than chance" in line for line in lines) == 1


def test_a_router_that_tells_the_classes_apart_gets_no_such_line(tmp_path, capsys):
    """With a classifier of AUROC 0.95 asked, the interval leaves 0.5 out: no line."""
    lines = _plan_lines(capsys, tmp_path, _floor_plan(tmp_path, hint_auroc=0.95))
    assert lines[0].startswith("plan (")
    assert "w4a16+bf16" in lines[0]  # routed (its realised AUROC: 0.942, 0.910 - 0.974)
    assert not [line for line in lines if "no better than chance" in line]


@pytest.mark.parametrize(("ci", "shown"), [
    ((0.49, 0.53), "0.510 (95% CI 0.490 - 0.530) for hard or hopeless"),
    ((0.5, 0.53), "0.510 (95% CI 0.500 - 0.530) for hard or hopeless"),  # an end at 0.5
    ((0.501, 0.53), None),
    (None, None),  # no interval (too few of a class): nothing said
])
def test_the_interval_decides(ci, shown):
    """0.5 inside the interval, ends included; no interval, no line."""
    from tiersim.results import RouterQuality

    q = RouterQuality(truth="drawn difficulty", requests=1000, target="hard or hopeless",
                      positives=200, auroc=0.51, auroc_ci95=ci)
    assert q.chance_text() == shown


def test_without_a_static_split_figure_the_line_stops_at_the_verdict():
    """A plan whose savings have no static split gives the AUROC sentence alone."""
    from tiersim.cli.plan_text import _chance_line
    from tiersim.results import RouterQuality

    q = RouterQuality(truth="trace labels", requests=500, target="the cheapest tier answering "
                      "wrong", positives=100, auroc=0.52, auroc_ci95=(0.46, 0.58))
    assert _chance_line(q, {}) == [
        "  router: its realised AUROC, 0.520 (95% CI 0.460 - 0.580) for the cheapest tier "
        "answering wrong, has 0.5 inside its 95% CI: its choices are no better than chance on "
        "this trace (modelled)"]
    assert _chance_line(None, {}) == []
