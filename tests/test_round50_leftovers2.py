"""Round 50 leftovers (fresh50's trial): whole-number flags quoted as typed, trace inspect's
``--skip-longer-than``, the tiers table's util footnote, and uniform fleets labelled with
the serving techniques they keep."""

from __future__ import annotations

import pickle

from tiersim.cli import main


def _error_line(capsys, argv: list[str]) -> str:
    """The one stderr line of a refused command (status 1, nothing on stdout)."""
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    return captured.err.strip()


def test_a_whole_flag_keeps_its_text_until_checked_then_is_a_plain_int():
    """``--max-replicas 1e30`` quoted 10**30's 31 digits: a whole-number flag keeps its text
    as a float flag does (numbers.WrittenWhole), and is a plain int once checked."""
    from tiersim.cli.usage import read_flag_number
    from tiersim.numbers import WrittenWhole, plain_int

    number = read_flag_number(int, 1, None, "1e30")
    assert isinstance(number, WrittenWhole) and number == 10**30
    assert repr(number) == str(number) == f"{number}" == "1e30"
    assert pickle.loads(pickle.dumps(number)).text == "1e30"
    plain = plain_int(number)
    assert type(plain) is int and repr(plain) == str(10**30)
    assert plain_int(None) is None
    assert read_flag_number(int, 1, None, 5) == 5  # a default: no text to keep


def test_sweep_workers_is_quoted_as_typed(capsys, tmp_path):
    line = _error_line(capsys, ["sweep", "scenarios/tiny.yaml", "--out", str(tmp_path / "s"),
                                "--workers", "1e30"])
    assert line == "Error: --workers: must be from 1 to 1024 (got 1e30)"


def test_plan_writes_max_replicas_as_a_plain_int(tmp_path):
    """What ``--max-replicas 1e1`` writes into the planned scenario is the number 10, not
    the text (YAML could not write an int subclass)."""
    out = tmp_path / "p"
    assert main(["plan", "scenarios/tiny.yaml", "--max-replicas", "1e1", "--out",
                 str(out)]) == 0
    assert "  max_replicas: 10\n" in (out / "scenario.yaml").read_text()


def _inspect(capsys, argv: list[str]) -> dict:
    """``tiersim trace inspect ARGV --json``'s statistics."""
    import json

    assert main(["trace", "inspect", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


MOONCAKE_NOTE = (
    "--skip-longer-than 40,960 left out 307 of the 3,993 requests read (7.7%): those longer "
    "(prompt + output) than 40,960 tokens, up to 191,386, as vLLM refuses such a request at "
    "its API (HTTP 400) whatever the fleet; every figure is over the 3,686 left, and those "
    "left out count nowhere, not as dropped")


def test_inspect_skip_longer_than_leaves_out_what_a_run_does(capsys):
    """trace inspect read every request, so its unbounded-cache share (65.1% on Mooncake's
    synthetic trace) could not match a run's that set ``trace.skip_longer_than`` (60.9% on
    Qwen3-30B-A3B, README): ``--skip-longer-than 40960`` leaves out the 307 requests such a
    run does, with the run's note (the flag named where the run names the key)."""
    whole = _inspect(capsys, ["mooncake_synthetic"])
    assert whole["rows"] == 3993 and f"{whole['prefix_reuse']:.1%}" == "65.1%"
    assert "skip_longer_than" not in whole
    kept = _inspect(capsys, ["mooncake_synthetic", "--skip-longer-than", "4.096e4"])
    assert kept["rows"] == 3686 and f"{kept['prefix_reuse']:.1%}" == "60.9%"
    assert (kept["skip_longer_than"], kept["skipped_requests"], kept["requests_read"]) == (
        40960, 307, 3993)
    assert kept["notes"] == [MOONCAKE_NOTE]
    assert f"{kept['rate_rps']:.3g}" == "3.61"  # the 3,686 kept over their span


def test_inspect_skip_longer_than_matches_a_runs_prefix_bound(tmp_path, capsys):
    """The prefix row under --skip-longer-than is the run's ``prefix_hit_bound`` with the key
    at the same tokens (prefix_cache.yaml over Mooncake's first 100 s, skipping above
    20,000)."""
    import json
    from pathlib import Path

    import tiersim

    text = (Path(tiersim.__file__).parent / "scenarios" / "prefix_cache.yaml").read_text()
    text = text.replace("  path: mooncake_synthetic.parquet",
                        "  window: [0, 100]\n  skip_longer_than: 20000\n"
                        "  path: mooncake_synthetic.parquet")
    (tmp_path / "s.yaml").write_text(text)
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "r"),
                 "--no-report", "--no-baselines"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    capsys.readouterr()
    stats = _inspect(capsys, ["mooncake_synthetic", "--window", "0", "100",
                              "--skip-longer-than", "20000"])
    trace = summary["trace"]
    assert stats["rows"] == trace["requests_read"] - trace["skipped_requests"]
    assert stats["skipped_requests"] == trace["skipped_requests"] > 0
    bound = summary["tiers"]["bf16"]["prefix_hit_bound"]  # summary.json keeps 11 digits
    assert round(stats["prefix_reuse"], 11) == bound > 0


def test_inspect_skip_longer_than_refusals(capsys):
    line = _error_line(capsys, ["trace", "inspect", "mooncake_synthetic",
                                "--skip-longer-than", "1e1"])
    assert line == ("Error: --skip-longer-than 1e1: leaves out every one of the 3,993 requests "
                    "read (the shortest is 20 tokens, prompt + output); raise it, or drop it")
    line = _error_line(capsys, ["trace", "inspect", "traces/sharegpt_lengths.parquet",
                                "--skip-longer-than", "10"])
    assert line == ("Error: traces/sharegpt_lengths.parquet: holds token lengths but no arrival "
                    "times, so --skip-longer-than has nothing to act on (no run replays it, so "
                    "no trace.skip_longer_than leaves rows out); drop it")
    line = _error_line(capsys, ["trace", "inspect", "mooncake_synthetic",
                                "--skip-longer-than", "0"])
    assert line == ("Error: --skip-longer-than: input should be greater than or equal to 1; "
                    "see tiersim trace inspect --help")


def test_inspect_skip_longer_than_leaves_out_a_session_whole(tmp_path, capsys):
    """A session trace loses each session holding an over-long step, as a run replaying it
    as sessions does (its later steps follow the refused one)."""
    path = tmp_path / "s.csv"
    path.write_text("arrival_s,input_tokens,output_tokens,session_id,step,tool_s\n"
                    "0,100,10,1,0,0\n1,100,10,2,0,0\n2,900,10,1,1,0\n3,100,10,3,0,0\n")
    stats = _inspect(capsys, [str(path), "--skip-longer-than", "500"])
    assert (stats["rows"], stats["sessions"], stats["skipped_requests"]) == (2, 2, 2)
    assert stats["notes"][0].startswith(
        "--skip-longer-than 500 left out 2 of the 4 requests read (50.0%): the 1 session "
        "holding a step longer (prompt + output) than 500 tokens, up to 910, whole, ")


def test_the_tier_tables_say_what_util_is(tmp_path):
    """The console's tiers table had a util column defined nowhere on screen (docs/metrics.md
    defines it: the share of time a replica runs steps, not headroom): a footnote under the
    table says it, after the step-time sources and before any dropped-requests line, within
    the table's width; the report's per-tier caption says it too."""
    from rich.console import Console

    from tiersim.cli.run_summary import UTIL_FOOTNOTE, tier_table
    from tiersim.results import RunResult
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    run_scenario(load_scenario("scenarios/tiny.yaml"), tmp_path / "r", report=True)
    run = RunResult.read(tmp_path / "r" / "summary.json")
    assert UTIL_FOOTNOTE == "util = share of time a replica runs steps, however full: not headroom"
    table = tier_table(run)
    lines = table.caption.splitlines()
    assert lines[0].startswith("step times from ") and lines[1] == UTIL_FOOTNOTE
    console = Console(width=100, record=True)
    console.print(table)
    text = console.export_text().splitlines()
    width = max(len(line.rstrip()) for line in text if line.startswith(("┃", "│")))
    assert f"{UTIL_FOOTNOTE:<{width}}" in text  # one line, no wider than the table
    page = (tmp_path / "r" / "report.html").read_text()
    assert ("Utilization is the share of time a replica runs steps, however full: not headroom "
            "(a step counts whole whatever its batch).") in page


def test_techniques_words_and_the_size_they_ride_with():
    """A uniform fleet keeps its tier's serving techniques; its size says which, in the
    brackets a disaggregated fleet's split sits in."""
    from types import SimpleNamespace as NS

    from tiersim.results import fleet_size, split_words, techniques_words

    plain = NS(speculative=None, scheduler=NS(kv_offload=[]))
    spec = NS(speculative=NS(k=3), scheduler=NS(kv_offload=[]))
    both = NS(speculative=NS(k=2), scheduler=NS(kv_offload=[NS(name="host"), NS(name="ssd")]))
    assert techniques_words(plain) is None and techniques_words(None) is None
    assert techniques_words(spec) == "spec decode k=3"
    assert techniques_words(both) == "spec decode k=2, KV offload host+ssd"
    assert fleet_size(1, 2, None, "spec decode k=3") == "1 x 2 (spec decode k=3)"
    assert fleet_size(4, 1, 2, "KV offload host") == "4 x 1 (2P 2D, KV offload host)"
    assert fleet_size(4, 1, 2) == "4 x 1 (2P 2D)" and fleet_size(4, 1) == "4 x 1"
    assert split_words(4, None) == ""


def _spec_decode(tmp_path):
    """spec_decode.yaml (one BF16 tier of Llama-3.1-70B, 1 x 2 H200, speculative k=3) over
    its first 30 s."""
    from pathlib import Path

    import yaml

    doc = yaml.safe_load(Path("scenarios/spec_decode.yaml").read_text())
    doc["trace"]["window"] = [0, 30]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_runs_uniform_fleets_say_they_decode_speculatively(tmp_path, capsys):
    """``all bf16 1 x 2`` read as a plain fleet where it ran speculative decoding k=3:
    the console's uniform fleets table, summary.json and the report say it beside its size,
    as they say a disaggregated fleet's split; the routed row too."""
    import html
    import json
    import re

    out = tmp_path / "r"
    assert main(["run", str(_spec_decode(tmp_path)), "--out", str(out)]) == 0
    console = capsys.readouterr().out
    # one tier routes nothing: "this run (one tier)" since round 56
    assert "│ all bf16            │ 1 x 2 (spec decode k=3) │ yes " in console
    assert "│ this run (one tier) │ 1 x 2 (spec decode k=3) │ yes " in console
    summary = json.loads((out / "summary.json").read_text())
    assert summary["savings"]["uniform"]["bf16"]["techniques"] == "spec decode k=3"
    assert summary["tiers"]["bf16"]["techniques"] == "spec decode k=3"
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert "|bf16||1 (spec decode k=3)||2||yes|" in page
    assert "|this run (one tier)||1 (spec decode k=3)||2||yes|" in page


def test_a_plain_runs_summary_has_no_techniques_key(tmp_path):
    """A tier served plainly writes no ``techniques``: summary.json is as it was (the golden
    summaries are of plain fleets)."""
    import json

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    run_scenario(load_scenario("scenarios/tiny.yaml"), tmp_path / "r", report=False)
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert all("techniques" not in t for t in summary["tiers"].values())
    assert all("techniques" not in u for u in summary["savings"]["uniform"].values())


def test_the_plan_says_its_fleets_decode_speculatively(tmp_path, capsys):
    """The plan's line, its uniform fleet's line, plan.json's ``per_tier`` and the report's
    plan table say k=3 beside the size, where the split would sit."""
    import html
    import json
    import re

    out = tmp_path / "p"
    assert main(["plan", str(_spec_decode(tmp_path)), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert ": bf16@2: bf16=1x2 GPU (spec decode k=3); cost " in text.splitlines()[0]
    assert "  uniform bf16@2 (1 x 2 GPU, spec decode k=3): meets every constraint" in text
    plan = json.loads((out / "plan.json").read_text())
    assert plan["plan"]["per_tier"]["bf16"]["techniques"] == "spec decode k=3"
    assert plan["uniform"][0]["per_tier"]["bf16"]["techniques"] == "spec decode k=3"
    page = html.unescape(re.sub(r"<[^>]+>", "|", (out / "report.html").read_text()))
    assert "|tier bf16||1 (spec decode k=3) x 2 GPU|" in page


def test_calibrates_whole_flags_are_quoted_as_typed(tmp_path, capsys, monkeypatch):
    """``tiersim calibrate --seed 1e30`` read "(got 1000000000000000000000000000000)" and
    ``--tp 1e30`` "--tp 1000000000000000000000000000000: ... not divisible" (``--quick`` shapes
    a tiny model): as typed now."""
    from tiersim.calibrate.cli import main as harness_main
    from tiersim.calibrate.cli import whole_number

    monkeypatch.chdir(tmp_path)
    for argv, said in ((["--seed", "1e30"], "Error: --seed: must be from 0 to 2**63 - 1 "
                        "(got 1e30)"),
                       (["--tp", "1e30"], "Error: --tp 1e30: tiny heads=4 is "
                        "not divisible; use a tp that divides it")):
        capsys.readouterr()
        assert harness_main(["--device", "cpu", "--quick", *argv, "--out", "p.json"]) == 1
        assert capsys.readouterr().err.strip() == said
    assert list(tmp_path.iterdir()) == []
    assert repr(whole_number("2e3")) == "2e3" and whole_number("2e3") == 2000
