"""Round 51, a new user's journey (an inference engineer choosing between KV offload,
disaggregation and speculative decoding on Mooncake traffic): each place the user was misled,
with the exact text they see."""

from __future__ import annotations

from test_hostile_inputs import ROOT, run_cli, tiny_with

import tiersim.sweep.run as sweep_run


def test_a_resumed_sweep_stopped_again_says_its_earlier_points_are_kept(tmp_path, capsys,
                                                                      monkeypatch):
    # A Ray sweep killed with kill -9 kept 8 points; its resume, stopped with Ctrl-C after 4
    # more, said "interrupted: 4 finished points stored in .../points", which reads as if the
    # folder held 4: it holds 12 of 20. The line now names the points an earlier sweep stored.
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(extra="sweep:\n  seed: [1, 2, 3]\n"))
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", path, "--out", out, "--no-baselines", "--no-report")
    assert code == 0, err
    stored = sorted((out / "points").glob("*.json"))
    for point in stored[1:]:
        point.unlink()  # as if the first sweep had been killed after one point

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep_run, "_execute", stopped)
    code, err = run_cli(capsys, "sweep", path, "--out", out, "--no-baselines", "--no-report")
    assert code != 0
    assert err.splitlines()[-1] == (
        f"interrupted: no point finished, so this sweep stored nothing in {out / 'points'} "
        "(kept with the 1 an earlier sweep stored: 1 of 3 points done); run the same command "
        "again to resume")


def test_the_interrupted_line_counts_both_runs_points(tmp_path):
    from tiersim.cli.sweep import interrupted_line

    assert interrupted_line(tmp_path, 4, 8, 20) == (
        f"interrupted: 4 finished points stored in {tmp_path / 'points'} (kept with the 8 an "
        "earlier sweep stored: 12 of 20 points done); run the same command again to resume "
        "(they are kept, not rerun)")
    assert interrupted_line(tmp_path, 2) == (
        f"interrupted: 2 finished points stored in {tmp_path / 'points'}; run the same command "
        "again to resume (they are kept, not rerun)")


def test_a_speculative_acceptance_written_as_a_percent_is_told_so(tmp_path, capsys):
    # `acceptance: 70` (meaning 70%) read only "must be one rate or k=3 rates, each in [0, 1]
    # (got 70)"; every other share (an accuracy floor, an FPR) says it is one, not a percent.
    spec = "    speculative: {k: 3, acceptance: %s}\n"
    for written, hint in (("70", "(got 70); a share, not a percent: 0.7 for 70%"),
                          ("[90, 60, 30]", "(got [90, 60, 30]); a share, not a percent: 0.9 "
                                           "for 90%")):
        path = tmp_path / "s.yaml"
        path.write_text(tiny_with(("    replicas: 1\n", "    replicas: 1\n" + spec % written)))
        code, err = run_cli(capsys, "run", path, "--no-baselines")
        assert code == 1
        assert err.splitlines()[-1].endswith(
            "speculative.acceptance: must be one rate or k=3 rates, each in [0, 1] " + hint), err
    # the count is the fault; 2.5 may be the tokens per step (at most k + 1), not a percent
    for written in ("[0.9, 0.6]", "2.5"):
        path.write_text(tiny_with(("    replicas: 1\n", "    replicas: 1\n" + spec % written)))
        code, err = run_cli(capsys, "run", path, "--no-baselines")
        assert err.splitlines()[-1].endswith(f"(got {written})"), err


def test_a_window_far_past_the_traces_end_says_what_the_run_replays(tmp_path, capsys):
    # Mooncake's synthetic trace spans 1,022 s; a sweep at `window: [0, 3600]` ran silently
    # and its report's provenance read "trace window (s) 0, 3600", as if it were an hour of
    # traffic. The run now says what it replays (the summary's duration said 1,022 s).
    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(("path: azure2023_code.parquet", "path: mooncake_synthetic.parquet"),
                              ("window: [240, 360]", "window: [0, 3600]")))
    code, err = run_cli(capsys, "run", path, "--no-baselines")
    assert code == 0, err
    trace = ROOT / "tiersim" / "traces" / "mooncake_synthetic.parquet"
    assert (f"note: {trace}: trace.window [0, 3600] reaches past the trace's last request, "
            "which arrives 1,022 s into it: the run replays those 1,022 s of traffic (and their "
            "drain), not 3,600 s") in err.replace("\n", " "), err
    path.write_text(tiny_with(("path: azure2023_code.parquet", "path: mooncake_synthetic.parquet"),
                              ("window: [240, 360]", "window: [0, 1200]")))
    code, err = run_cli(capsys, "run", path, "--no-baselines")
    assert "reaches past" not in err  # 178 s past its end: a round number, not a misread span


def test_a_sweep_reports_points_table_shows_each_caching_tiers_hit_rate(tmp_path, capsys):
    # A sweep of KV offload capacities: the report's Points table showed cost and p99s per
    # point but not the prefix-cache hit rate the capacity buys (sweep.parquet only). It now
    # has each caching tier's hit rate and its unbounded-cache bound, as the parquet holds them.
    import pandas as pd

    path = tmp_path / "s.yaml"
    path.write_text(tiny_with(
        ("path: azure2023_code.parquet", "path: mooncake_synthetic.parquet"),
        ("window: [240, 360]", "window: [0, 60]"),
        ("    replicas: 1\n    cost_per_gpu_hour: 3.50\n  - name: bf16",
         "    replicas: 1\n    cost_per_gpu_hour: 3.50\n    scheduler:\n"
         "      enable_prefix_caching: true\n      kv_offload:\n"
         "        - {name: host, capacity_gb: 10, read_gb_s: 50, write_gb_s: 50}\n"
         "  - name: bf16"),
        extra="sweep:\n  tiers.w4a16.scheduler.kv_offload.host.capacity_gb: [1, 100]\n"))
    out = tmp_path / "o"
    code, err = run_cli(capsys, "sweep", path, "--out", out, "--no-baselines")
    assert code == 0, err
    page = (out / "report.html").read_text()
    assert ("<th>prefix cache hit rate, w4a16 (fraction of prompt tokens)</th>"
            "<th>unbounded-cache bound, w4a16 (fraction)</th>") in page
    assert "hit rate, bf16" not in page  # the bf16 tier caches nothing
    table = pd.read_parquet(out / "sweep.parquet")
    for rate in table["tiers.w4a16.prefix_hit_rate"]:
        assert f"<td class=\"num\">{rate:.3g}</td>" in page, rate


def test_a_seed_check_whose_seeds_change_nothing_says_so(tmp_path, capsys):
    # A KV offload plan (one tier, uniform router, no speculative decoding) printed "meets the
    # SLOs at 4 of 4 seeds (0, 1, 2, 3)" and one p99 per figure: the seed draws nothing its
    # latencies depend on, so the four seeds were one run's verdict four times, read as
    # robustness. The figures line now says so (console and report share the lines).
    from tiersim.cli.plan_seeds import seed_check_lines

    rows = [{"seed": s, "ttft_p99_s": 2.6, "tpot_p99_s": 0.0462, "accuracy": 0.95}
            for s in (0, 1)]
    check = {"source": "modelled", "seeds": [0, 1], "planned_seed": 0, "met_seeds": [0, 1],
             "ranges": {"ttft_p99_s": [2.6, 2.6], "tpot_p99_s": [0.0462, 0.0462],
                        "accuracy": [0.95, 0.95]}, "per_seed": rows}
    assert seed_check_lines(check)[2] == (
        "    p99 TTFT 2.60 s, p99 TPOT 0.0462 s, expected accuracy 95.00% (the same p99s at "
        "every seed: no draw the seed makes moves this fleet's latency, so the other seeds "
        "check nothing about it)")
    rows[1]["tpot_p99_s"] = 0.0463  # a speculative tier's draws move it: no such words
    check["ranges"]["tpot_p99_s"] = [0.0462, 0.0463]
    assert seed_check_lines(check)[2] == ("    p99 TTFT 2.60 s, p99 TPOT 0.0462 s to 0.0463 s, "
                                          "expected accuracy 95.00%")


def test_a_number_written_with_its_unit_is_told_to_drop_it(tmp_path, capsys):
    # `capacity_gb: 50GB` and `window: [0, 10min]` read "input should be a valid number,
    # unable to parse string as a number (got '50GB')": true, but not the fix.
    fix = ("has a unit, which tiersim does not read; write the number alone (a scenario key's "
           "unit is in its name: GB for _gb, seconds for _s and for trace.window)")
    for old, new, said in (("window: [240, 360]", "window: [240, 6min]",
                            "line 11: trace.window[1]: 6min "),
                           ("tpot_p99_s: 0.1", "tpot_p99_s: 100 ms",
                            "line 29: slo.tpot_p99_s: 100 ms ")):
        path = tmp_path / "s.yaml"
        path.write_text(tiny_with((old, new)))
        code, err = run_cli(capsys, "run", path, "--no-baselines")
        assert (code, err.splitlines()[-1]) == (1, f"Error: {path}: {said}{fix}"), err



def test_a_flag_written_with_a_unit_is_told_to_drop_it(tmp_path, capsys):
    code, err = run_cli(capsys, "sweep", tmp_path / "s.yaml", "--out", tmp_path / "o",
                        "--workers", "4cpu")
    # round 54 (fuzz21): a flag names itself and what to type, not a scenario key's unit
    assert (code, err.splitlines()[-1]) == (1, (
        "Error: --workers: 4cpu has a unit, which tiersim does not read; --workers is a count: "
        "type --workers 4; see tiersim sweep --help"))
