"""Round 48, a fresh capacity planner's walk through README and `tiersim --help` with their own
traffic: each test holds a message that was wrong or confusing to them."""

from __future__ import annotations

import json
from pathlib import Path

from tiersim.cli import main

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "tiersim" / "traces" / "azure2023_code.parquet"


def test_an_unreachable_router_floor_note_does_not_say_the_run_misses_it(tmp_path, capsys):
    """The floor router fits its cuts on a calibration split of realised correctness; at
    seed 4 no routing reaches 0.95 there (0.945), while the run judges the floor on the
    expected accuracy of all its requests, every one routed to BF16 at its 0.95 prior, and
    meets it. The note said 'and the floor is reported missed' beside a run (console, summary
    and report) reporting it met; it now says where the verdict comes from."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nseed: 4\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
                    f"trace: {{path: {TRACE}, window: [240, 360]}}\n"
                    "workload: {difficulty: {hint_auroc: 0.72}}\ntiers:\n"
                    "  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5}\n"
                    "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n"
                    "router: {policy: floor, floor: 0.95}\n")
    out = tmp_path / "o"
    capsys.readouterr()
    code = main(["run", str(path), "--no-baselines", "--no-report", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("note: router.floor 0.95 is above the most accurate routing the router finds "
            "(0.945 on its calibration split); every request is routed the most accurate way "
            "it found there (fp8 0.0%, bf16 100.0% of its 158 requests), "  # which way: round 53
            "and whether the floor is met is judged on the run's accuracy over all its "
            "requests (it can differ from the split's)\n") in err
    assert "reported missed" not in err
    router = json.loads((out / "summary.json").read_text())["router"]
    assert router["accuracy"] == 0.95 and router["floor_met"] is True


def test_disagg_does_not_note_a_lone_prefill_replica_of_a_split_it_tried(tmp_path, capsys):
    """`tiersim disagg` tries every split, 1P 2D among them, of a tier that names a balancer.
    The run of that split noted 'balancer least_tokens picks one of the tier's prefill replicas
    ..., and it has one (disaggregation.prefill_replicas 1), so the key changes nothing; give
    the tier more prefill replicas, or remove the key', of a setting the scenario never wrote
    (it has no disaggregation block) and of a key the 2P 1D split reads. `tiersim run` of that
    split, written in the scenario, still notes it."""
    path = tmp_path / "s.yaml"
    body = (f"name: t\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
            f"trace: {{path: {TRACE}, window: [240, 300]}}\ntiers:\n"
            "  - {name: bf16, precision: bf16, replicas: 3, cost_per_gpu_hour: 3.5, "
            "balancer: least_tokens%s}\n")
    path.write_text(body % "")
    capsys.readouterr()
    assert main(["disagg", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "       1P 2D " in out and "       2P 1D " in out
    assert "picks one of the tier's prefill replicas" not in err
    path.write_text(body % ", disaggregation: {prefill_replicas: 1, decode_replicas: 2}")
    assert main(["run", str(path), "--no-baselines", "--no-report",
                 "--out", str(tmp_path / "o")]) == 0
    assert ("note: tier bf16: balancer least_tokens picks one of the tier's prefill replicas "
            "for each request (its decode replicas by least outstanding tokens), and it has one "
            "(disaggregation.prefill_replicas 1), so the key changes nothing; give the tier more "
            "prefill replicas, or remove the key\n") in capsys.readouterr().err


def test_a_length_only_trace_error_gives_a_recipe_a_scenario_can_run(tmp_path, capsys):
    """A planner who names ShareGPT's token lengths as a trace was told to 'use it with synthetic
    arrivals: tiersim.workload.synthetic.poisson_arrivals(tiersim.trace.load_lengths(path),
    rate_rps, rng)', a table in memory a scenario cannot name, with an `rng` of no stated kind.
    The line now says to write it to a file and name the file as trace.path; done as written,
    the scenario runs."""
    import numpy
    import pandas as pd

    import tiersim.trace
    import tiersim.workload.synthetic

    lengths = tmp_path / "lengths.csv"
    pd.DataFrame({"num_prefill_tokens": [300, 900, 40] * 20,
                  "num_decode_tokens": [50, 20, 90] * 20}).to_csv(lengths, index=False)
    path = tmp_path / "s.yaml"
    body = ("name: t\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\ntrace: {path: %s}\n"
            "tiers:\n  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n")
    path.write_text(body % lengths.name)
    capsys.readouterr()
    assert main(["run", str(path), "--no-baselines", "--no-report"]) == 1
    assert capsys.readouterr().err == (
        f"Error: {lengths}: has token lengths but no arrival times; use it with synthetic "
        "arrivals: write tiersim.workload.synthetic.poisson_arrivals(tiersim.trace.load_lengths"
        "(path), rate_rps, numpy.random.default_rng(seed)).to_parquet(FILE) and name FILE as "
        "the scenario's trace.path, or give its lengths a logged trace's arrival times "
        "(tiersim/traces/README.md, \"Token lengths at a logged trace's arrival times\")\n")
    file = tmp_path / "arrivals.parquet"
    tiersim.workload.synthetic.poisson_arrivals(
        tiersim.trace.load_lengths(lengths), 2.0, numpy.random.default_rng(0)).to_parquet(file)
    path.write_text(body % file.name)
    assert main(["run", str(path), "--no-baselines", "--no-report",
                 "--out", str(tmp_path / "o")]) == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert (summary["requests"], summary["completed"]) == (60, 60)


def test_a_tier_of_its_own_config_path_is_named_by_its_folder_in_the_tier_tables(tmp_path,
                                                                                capsys):
    """A tier with its own model as a Hugging Face config path printed the whole path in the
    console's tier cell (folded over nine lines for a path under a virtualenv's
    site-packages) and in the report's per-tier table; they now name the folder (a
    ``config.json``) or the file's stem, and the ``model of <tier>:`` line and summary.json
    keep the path."""
    from test_round38_new_models import LLAMA31_8B

    from tiersim.results_parts import model_label

    folder = tmp_path / "deep" / "site-packages" / "my-llama-8b"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(LLAMA31_8B))
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nseed: 0\nmodel: Llama-3.1-70B\nprofile: null\n"
                    f"trace: {{path: {TRACE}, window: [240, 300]}}\ntiers:\n"
                    f"  - {{name: small, model: {folder / 'config.json'}, precision: bf16, "
                    "replicas: 1, cost_per_gpu_hour: 3.5, accuracy: 0.8}\n"
                    "  - {name: big, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5, "
                    "accuracy: 0.9}\nrouter: {policy: static_split, fractions: [0.5, 0.5]}\n")
    out = tmp_path / "o"
    capsys.readouterr()
    assert main(["run", str(path), "--no-baselines", "--out", str(out)]) == 0
    console = capsys.readouterr().out
    cells = [line.split("│")[1].strip() for line in console.splitlines()
             if line.startswith("│ small") or line.startswith("│ (my-llama")]
    assert cells == ["small", "(my-llama-8b)"]  # the cell, folded at the column's width
    assert "site-packages" in console.split("model of small:")[1]  # the path, on its own line
    page = (out / "report.html").read_text()
    assert ">small (my-llama-8b)<" in page and f">small ({folder}" not in page
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tiers"]["small"]["model"] == str(folder / "config.json")
    assert [model_label(m) for m in ("Llama-3.1-8B", "/a/b/nvidia--Llama-3.1-70B_config.json",
                                     "/a/b/Qwen3-8B", "/a/b/Qwen3-8B/config.json")] == \
        ["Llama-3.1-8B", "nvidia--Llama-3.1-70B_config", "Qwen3-8B", "Qwen3-8B"]


def test_a_missed_slo_is_printed_at_the_digits_that_show_the_miss(tmp_path, capsys,
                                                                  monkeypatch):
    """A planner's fleet that missed its SLOs read "not comparable: this fleet misses its SLOs
    (TTFT p99 2.151577072 s over its 2 s; TPOT p99 0.2050218332 s over its 0.1 s)", ten digits
    where `tiersim plan` prints the same miss as "ttft_p99_s 2.15 vs limit 2". The p99 is now
    printed at 3 digits, more only where 3 would print it as the SLO (tests/
    test_slo_miss_named.py). Figures of the calibrated roofline on two minutes of the code
    trace (one BF16 replica of Qwen3-Coder-30B-A3B)."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\nseed: 0\nmodel: Qwen3-Coder-30B-A3B\nprofile: null\n"
                    f"trace: {{path: {TRACE}, window: [240, 360]}}\ntiers:\n"
                    "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n"
                    "slo: {ttft_p99_s: 0.2, tpot_p99_s: 0.01}\n")
    out = tmp_path / "o"
    capsys.readouterr()
    # wide enough that no cell wraps: a wrapped row's cells interleave on the joined lines (the
    # accuracy-by-class row of round 57 widened the first column, so "bf16" of its label fell
    # inside these words)
    monkeypatch.setenv("COLUMNS", "300")
    assert main(["run", str(path), "--no-baselines", "--out", str(out)]) == 0
    console = " ".join(capsys.readouterr().out.replace("│", " ").split())
    summary = json.loads((out / "summary.json").read_text())
    ttft, tpot = summary["ttft_p99_s"], summary["tpot_p99_s"]
    assert (f"{ttft:.10g}", f"{tpot:.10g}") == ("0.3340730605", "0.07823767421")
    words = "this fleet misses its SLOs (TTFT p99 0.334 s over its 0.2 s; TPOT p99 0.0782 s " \
            "over its 0.01 s)"
    assert words in console
    assert f"not comparable: {words}" in (out / "report.html").read_text()
