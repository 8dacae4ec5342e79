"""The run's headline counts the trace's requests, with those a response cache answered."""

from __future__ import annotations

from types import SimpleNamespace

from conftest import REPO

from tiersim.cli.run import _request_counts


def test_the_requests_row_counts_what_the_cache_answered():
    run = SimpleNamespace(requests=1995, completed=1990, dropped=5, response_cache=None)
    assert _request_counts(run) == "1,995 (1,990 / 5)"
    run.response_cache = SimpleNamespace(requests=2867, hits=872, unanswered=0)
    assert _request_counts(run) == (
        "2,867 (1,990 / 5; 872 answered by the response cache)")
    run.response_cache = SimpleNamespace(requests=30, hits=30, unanswered=0)  # answered all
    run.requests = run.completed = run.dropped = 0
    assert _request_counts(run) == "30 (0 / 0; 30 answered by the response cache)"
    run.response_cache = SimpleNamespace(requests=10, hits=0, unanswered=4)  # repeats of a drop
    run.requests, run.completed, run.dropped = 6, 5, 1
    assert _request_counts(run) == "10 (5 / 5; 0 answered by the response cache)"


def test_a_run_the_cache_answered_entirely_says_why_there_is_no_saving(tmp_path, capsys,
                                                                     monkeypatch):
    from conftest import tiny_doc, write_yaml

    from tiersim.cli import main

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens,prompt_hash\n"
                     + "".join(f"{i * 0.5},100,10,{i % 2}\n" for i in range(30)))
    doc = tiny_doc(router={"policy": "uniform",
                           "response_cache": {"mode": "top_n", "size": 5}})
    doc["trace"] = {"path": str(trace)}
    doc["tiers"] = doc["tiers"][1:]
    doc["cost_model"] = "provisioned"
    monkeypatch.setenv("COLUMNS", "400")  # one line a table row, as the text is checked whole
    capsys.readouterr()
    code = main(["run", str(write_yaml(tmp_path / "s.yaml", doc)), "--out", str(tmp_path / "o"),
                 "--no-report"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    out = " ".join(captured.out.replace("│", " ").split())
    assert "30 (0 / 0; 30 answered by the response cache)" in out
    assert ("saved vs uniform - the response cache answered every request: no fleet served "
            "one, so there is no saving to compare") in out


def test_repeats_of_a_dropped_request_are_dropped_not_hits(tmp_path):
    """Five requests of one 300,000-token prompt (longer than the model's context) and five
    distinct short ones: the first long one is dropped, so the cache holds no answer for the
    other four; they were counted as hits and their failure shown nowhere."""
    import json
    import warnings

    from conftest import tiny_doc, write_yaml

    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens,prompt_hash\n"
                     + "".join(f"{i * 0.01},300000,10,7\n" for i in range(5))
                     + "".join(f"{i * 0.01},100,10,{100 + i}\n" for i in range(5, 10)))
    doc = tiny_doc(router={"policy": "uniform", "response_cache": {"mode": "lru", "size": 5}})
    doc["trace"] = {"path": str(trace)}
    doc["tiers"] = doc["tiers"][1:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = write_yaml(tmp_path / "s.yaml", doc)
        run_scenario(load_scenario(path), tmp_path / "o", path)
    cache = json.loads((tmp_path / "o" / "summary.json").read_text())["response_cache"]
    assert (cache["hits"], cache["unanswered"], cache["hit_rate"]) == (0, 4, 0.0)
    assert any("4 request(s) repeat the prompt of a request the fleet dropped" in str(w.message)
               for w in caught)


def test_the_report_counts_requests_as_the_console_does(tmp_path):
    """The report's headline said 716 requests where the console said 1,445 with 729 answered
    by the response cache."""
    import dataclasses

    from tiersim.report.page import run_headline
    from tiersim.results import ResponseCacheResult, RunResult

    summary = (REPO / "tests" / "golden" / "response_cache_summary.json").read_text()
    run = RunResult.from_json(summary)
    html = run_headline(run)
    cache = run.response_cache
    assert isinstance(cache, ResponseCacheResult) and cache.hits > 0
    for label, value in [("requests", cache.requests), ("dropped", run.dropped),
                         ("answered by the response cache", cache.hits)]:
        assert f'<td>{label}</td><td class="num">{value:,}</td>' in html, label
    lost = dataclasses.replace(run, response_cache=dataclasses.replace(cache, unanswered=3))
    assert f'<td>dropped</td><td class="num">{run.dropped + 3:,}</td>' in run_headline(lost)
