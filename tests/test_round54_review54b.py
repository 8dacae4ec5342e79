"""Round 54, review54b: bugs found reviewing the round's changes, each with the exact text or
figure the user sees."""

from __future__ import annotations

import pytest
from test_hostile_inputs import run_cli


def _flag_line(capsys, *args) -> str:
    code, err = run_cli(capsys, *args)
    assert code == 1, err
    return err.splitlines()[-1]


def test_hours_per_month_with_a_unit_is_told_the_flag_and_what_to_type(tmp_path, capsys):
    """`tiersim plan --hours-per-month 730h` was told the scenario's words, "write the number
    alone (a scenario key's unit is in its name: GB for _gb, seconds for _s and for
    trace.window)": no flag has a key's name, and the flag, new this round, was the one number
    flag left out of tiersim.numbers.FLAG_KINDS (it was given no ``flag=``, so the check that
    every number flag is listed there did not see it). Worse, ``number_flag``'s ``flag`` had
    become a required keyword, so the option's ``number_flag(float)`` raised a TypeError as
    typer read ``tiersim plan``'s signature: every ``tiersim plan`` (``--help`` too) ended in a
    traceback."""
    code, _ = run_cli(capsys, "plan", "--help")
    assert code == 0
    out = str(tmp_path / "p")
    assert _flag_line(capsys, "plan", "tiny", "--hours-per-month", "730h", "--out", out) == (
        "Error: --hours-per-month: 730h has a unit, which tiersim does not read; "
        "--hours-per-month is in hours (730 for 24/7): type --hours-per-month 730; "
        "see tiersim plan --help")
    assert _flag_line(capsys, "plan", "tiny", "--hours-per-month", "30d", "--out", out) == (
        "Error: --hours-per-month: 30d has a unit, which tiersim does not read; "
        "--hours-per-month is in hours (730 for 24/7): type the number of hours alone, such "
        "as --hours-per-month 30; see tiersim plan --help")


def test_a_router_ordering_every_pair_rightly_is_not_called_no_better_than_chance():
    """An AUROC of 1 (every hard request scored above every easy one) over 2 hard requests
    among 1,000 got the interval for a perfect order, 0.158 - 1 (the least AUROC at which 2
    disjoint pairs all come out right 2.5 % of the time), which takes in 0.5, and the plan
    console said "its choices are no better than chance on this trace". At random the 2 hard
    requests top the 1,000 once in C(1000, 2) = 499,500 orders: no chance router does that.
    Where a perfect order is as likely as 2.5 % at random (2 of 4 requests: once in 6), 0.5
    stays inside and the line is said, as before."""
    import numpy as np

    from tiersim.results import RouterQuality
    from tiersim.routing.quality import auroc_interval

    def quality(requests: int, positives: int) -> RouterQuality:
        positive = np.arange(requests) < positives
        score = np.where(positive, 1.0, 0.0) + np.linspace(0, 0.5, requests)
        ci = auroc_interval(score, positive, 1.0)
        return RouterQuality(truth="drawn difficulty", requests=requests,
                             target="hard or hopeless", positives=positives, auroc=1.0,
                             auroc_ci95=ci)

    assert quality(1000, 2).auroc_ci95 == pytest.approx((0.158114, 1.0), abs=1e-6)
    assert quality(1000, 2).chance_text() is None
    assert quality(1000, 998).chance_text() is None  # 2 easy ones below 998 hard: the same
    assert quality(4, 2).chance_text() == "1.000 (95% CI 0.158 - 1.000) for hard or hopeless"


def _written_current(rate: float, plan_rate: float, uniform_rate: float) -> tuple[dict, dict,
                                                                                    tuple]:
    """plan.json's ``current``, ``plan`` and ``uniform`` as a plan writes them for today's
    fleet at ``rate`` USD/hour, a plan at ``plan_rate`` and a sized uniform fleet of today's
    tier at ``uniform_rate``: computed on the unrounded figures (current_record,
    split_record), then every float to the 10 significant digits plan.json keeps."""
    from tiersim.results_current import split_record
    from tiersim.results_figures import plain

    per_hour = rate - plan_rate
    uniform = ({"design": "bf16", "tiers": ["bf16"], "feasible": True,
                "cost_per_hour_usd": uniform_rate},)
    current = {"given": "plan.current", "seeds": [0], "design": "bf16", "tiers": ["bf16"],
               "replicas": {"bf16": 13}, "gpus_per_replica": {"bf16": 1}, "cost_usd": 1.0,
               "cost_per_hour_usd": rate, "duration_s": 100.0, "ttft_p99_s": 0.5,
               "tpot_p99_s": 0.05, "accuracy": 0.9, "accuracy_basis": "expected",
               "dropped": 0, "meets_slos": True, "meets_floor": None, "missed": None,
               "hours_per_month": 730.0, "vs_current_frac": per_hour / rate,
               "vs_current_per_hour_usd": per_hour,
               "vs_current_per_month_usd": per_hour * 730.0,
               **split_record(["bf16"], rate, per_hour, uniform)}
    return plain(current), plain({"cost_per_hour_usd": plan_rate}), plain(list(uniform))


def test_plan_current_figures_are_held_to_the_digits_plan_json_keeps():
    """plan.json keeps 10 significant digits of every float, and the reader held the saving
    per hour to today's USD/hour less the plan's within 1e-8 of the saving (or 1e-9 USD): a
    saving small beside the two rates carries their rounding (up to 5e-10 of each), so a plan
    of 29.5 USD/hour against today's 13 GPUs at 2.2831050228 USD/GPU-hour (20,000 USD a year
    over 8,760 hours) was refused as malformed by ``tiersim report``: "'plan.current.
    vs_current_per_hour_usd' must be today's cost_per_hour_usd less the plan's". Likewise the
    split's right-sizing (today's less the uniform fleet's) and its two parts' sum."""
    from tiersim.results_plan import _check_current, _check_split

    price = 20_000 / 8_760
    current, plan, uniform = _written_current(13 * price, 29.5, 10 * 2.95 - 1.5 * price)
    _check_current(current, plan)
    _check_split(current, plan, uniform)
    # an edited saving is still refused: off by a cent
    edited = {**current, "vs_current_per_hour_usd": current["vs_current_per_hour_usd"] + 0.01}
    with pytest.raises(ValueError, match="vs_current_per_hour_usd' must be today's"):
        _check_current(edited, plan)


def test_an_auroc_interval_that_leaves_its_auroc_out_is_malformed(hand_edited_run, tmp_path,
                                                                   capsys):
    """A run's AUROC interval always holds its AUROC (DeLong's on the logit scale about it, or
    the interval of a perfect order up to it: tiersim.routing.quality.auroc_interval), and an
    interval without its AUROC is none a run writes. ``auroc 0.7`` beside ``auroc_ci95 [0.8,
    0.9]`` was read, and the report showed "0.700 (95% CI 0.800 - 0.900)" with a verdict of the
    AUROC asked against that interval; it is now the summary's one "malformed" line, as an
    interval with its ends swapped is."""
    import json

    from test_round54_review54 import report_of_edited_quality

    for k, (key, value, auroc) in enumerate([("auroc_ci95", [0.8, 0.9], "auroc"),
                                             ("auroc_wrong_ci95", [0.1, 0.6], "auroc_wrong")]):
        code, err, doc = report_of_edited_quality(capsys, hand_edited_run, tmp_path / f"r{k}",
                                                  {key: value})
        said = doc["router"]["quality"][auroc]
        assert code == 1 and "Traceback" not in err, err
        assert (f"malformed summary ('router.quality.{key}' must hold the AUROC it is the "
                f"interval of ('router.quality.{auroc}' {said}), got "
                f"{json.dumps(value).replace(', ', ', ')})") in err, err
