"""Round 53, fresh53b: a capacity planner's first session (Llama-3.1-70B chat traffic, a routed
FP8/W4A16 + BF16 fleet against uniform BF16). Each test is one thing that misled that reader.
"""

from __future__ import annotations

from pathlib import Path

from tiersim.cli import main

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def _scenario(tmp_path: Path, seed: int, router: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nseed: {seed}\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
                    f"trace: {{path: {TRACE}, window: [240, 360]}}\n"
                    "workload: {difficulty: {hint_auroc: 0.72}}\ntiers:\n"
                    "  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 2.5,\n"
                    "     accuracy: {easy: 0.97, hard: 0.78}}\n"
                    "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5,\n"
                    "     accuracy: {easy: 0.97, hard: 0.80}}\n"
                    f"router: {router}\n")
    return path


def test_an_unreachable_floor_says_which_way_it_routes(tmp_path, capsys):
    """BF16 is stated at least as accurate as FP8 on every class, and the floor (0.95) is above
    both. The note said 'every request is routed the most accurate way', which a planner read
    as 'all to BF16'; with `router.confusion` set the floor router fits on the calibration
    split's realised 0/1 draws, on which FP8 came out ahead here, and the run sent every request
    to FP8. The note now names the shares it routes the split to, and why a tier more accurate
    in expectation can lose there (modelled, profile: null, seed 4). FP8 is priced 2.50 USD a
    GPU-hour: at BF16's price round 53's price at the load's decode batch makes it the dearer
    per request on this model, and the router would leave it idle (another note)."""
    path = _scenario(tmp_path, 4, "{policy: floor, floor: 0.95, confusion: {fpr: 0.0, fnr: 0.0}}")
    capsys.readouterr()
    code = main(["run", str(path), "--no-baselines", "--no-report"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("note: router.floor 0.95 is above the most accurate routing the router finds "
            "(0.943 on its calibration split); every request is routed the most accurate way "
            "it found there (fp8 100.0%, bf16 0.0% of its 158 requests, on their realised 0/1 "
            "draws, where a tier more accurate in expectation can lose), and whether the floor "
            "is met is judged on the run's accuracy over all its requests (it can differ from "
            "the split's)\n") in err


def test_a_plan_checked_at_no_other_seed_says_so(tmp_path, capsys):
    """`tiersim plan --check-seeds 0` printed no seed-check block and no line in its place, so
    its plan read like one that held at every seed (on the default job the planned fleet holds
    at 1 of 4). It now says where the block would be that nothing was checked, and how to check
    it; a plan with the default check prints its block and not this line."""
    capsys.readouterr()
    code = main(["plan", "tiny", "--check-seeds", "0", "--no-report", "--out",
                 str(tmp_path / "p")])
    out = capsys.readouterr().out
    assert code == 0, out
    line = ("  seed check: none (--check-seeds 0): every figure above is at the scenario's seed "
            "alone, whose draws (the router's fit, each request's correctness) can decide the "
            "plan; leave --check-seeds out to check the fleet at 3 more seeds\n")
    assert line in out
    assert out.index(line) > out.index("  uniform bf16 (1 x 1 GPU)")
    assert out.index(line) < out.index("latencies simulated")
    code = main(["plan", "tiny", "--check-seeds", "1", "--no-report", "--out",
                 str(tmp_path / "q")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "seed check: none" not in out and "  seed check (modelled" in out


def test_a_sweeps_sources_that_vary_read_one_by_one():
    """A sweep's report joined its points' latency sources by "; ", and a source's own words
    hold "; " ("fitted on measured serving rows; public measured (...)"): two sources read as
    three items, one of them twice. Each is now quoted, with how many points read it; a
    profile's names stay joined by ", " (tests/test_round23_report.py)."""
    import pandas as pd

    from tiersim.report.page import _points_value

    a = "fitted on measured serving rows; public measured"
    sweep = pd.DataFrame({"sources.latency": [a, a, f"{a}; roofline"],
                          "profile.name": ["h200_x", "b200_x", "h200_x"]})
    assert _points_value(sweep, "sources.latency", counted=True) == (
        'varied across the points: "fitted on measured serving rows; public measured" '
        '(2 points); "fitted on measured serving rows; public measured; roofline" (1 point)')
    assert _points_value(sweep, "profile.name") == "varied across the points: h200_x, b200_x"
    assert _points_value(sweep.iloc[:2], "sources.latency", counted=True) == a


def test_a_percent_or_a_dollar_sign_is_told_the_number_to_write(tmp_path, capsys):
    """A planner wrote `accuracy_floor: 93%` and `cost_per_gpu_hour: $3.50`; each was refused
    as "input should be a valid number, unable to parse string as a number (got '93%')", with
    no fix. Each now gets the number to write, in the scenario and on a flag."""
    from tiersim.numbers import misspelt

    assert misspelt("93%", "accuracy_floor") == ("93% is a percent; write the share 0.93 (a "
                                                 "share from 0 to 1)")
    assert misspelt("12.5 %", "fpr") == ("12.5 % is a percent; write the share 0.125 (a share "
                                         "from 0 to 1)")
    assert misspelt("40%", "replicas") == ("40%: replicas is no share, and tiersim reads no % "
                                           "sign; write the number alone")
    assert misspelt("$3.50", "cost_per_gpu_hour") == ("$3.50 has a currency sign, which "
                                                      "tiersim does not read; write 3.50 (USD)")
    assert misspelt("$0.1", "tpot_p99_s") == ("$0.1 has a currency sign, which tiersim does "
                                              "not read; write the number alone")
    assert misspelt("0.93", "accuracy_floor") is None
    path = tmp_path / "s.yaml"
    path.write_text("name: t\nmodel: Llama-3.1-8B\nprofile: null\n"
                    f"trace: {{path: {TRACE}, window: [240, 250]}}\ntiers:\n"
                    "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: $3.50}\n")
    capsys.readouterr()
    assert main(["run", str(path), "--no-baselines", "--no-report"]) == 1
    err = capsys.readouterr().err
    assert err == (f"Error: {path}: line 6: tiers[0].cost_per_gpu_hour: $3.50 has a currency "
                   "sign, which tiersim does not read; write 3.50 (USD)\n")
    assert main(["plan", "tiny", "--accuracy-floor", "93%", "--out", str(tmp_path / "p")]) == 1
    out = capsys.readouterr()
    # round 54 (fuzz21): a flag names itself, what its number is and what to type
    assert (out.out + out.err) == ("Error: --accuracy-floor: 93% has a % sign, which tiersim "
                                   "does not read; --accuracy-floor is a share from 0 to 1: "
                                   "type --accuracy-floor 0.93; see tiersim plan --help\n")
    # an SLO flag is no share: none is claimed for it
    assert main(["plan", "tiny", "--slo-ttft-p99", "5%", "--out", str(tmp_path / "p")]) == 1
    out = capsys.readouterr()
    assert "--slo-ttft-p99: 5% has a % sign" in out.out + out.err
    assert "share" not in out.out + out.err
    assert main(["plan", "tiny", "--slo-ttft-p99", "$1", "--out", str(tmp_path / "p")]) == 1
    out = capsys.readouterr()
    assert (out.out + out.err) == ("Error: --slo-ttft-p99: $1 has a currency sign, which "
                                   "tiersim does not read; --slo-ttft-p99 is in seconds: type "
                                   "the number of seconds alone, such as --slo-ttft-p99 1; see "
                                   "tiersim plan --help\n")
