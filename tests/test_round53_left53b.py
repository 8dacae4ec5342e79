"""Round 53, helper left53b: items a code review left.

1. :func:`tiersim.cli.plan_seeds._robust_row` took the plan's own row as its saving's baseline
   where ``baseline_per_seed`` lacked the seed (a 0 % saving from no baseline figure): it now
   refuses.
"""

from __future__ import annotations

import pytest

from tiersim.cli.plan_seeds import _robust_row


def _row(seed: int, cost: float, missed: list[str]) -> dict:
    """One ``robust.per_seed`` row."""
    return {"seed": seed, "ttft_p99_s": 1.0, "tpot_p99_s": 0.05, "accuracy": 0.9, "dropped": 0,
            "cost_usd": cost, "cost_per_hour_usd": cost * 10, "missed": missed,
            "shares": {"fp8": 1.0}}


def test_robust_row_reads_the_baselines_own_row():
    """The saving at the plan's seed is against the baseline's row there (8 against 10: 20 %)."""
    robust = {"per_seed": [_row(3, 8.0, []), _row(4, 9.0, [])],
              "baseline_per_seed": [_row(3, 10.0, ["accuracy"]), _row(4, 10.0, [])]}
    row = _robust_row(3, robust, True, None)
    assert row["baseline_missed"] == ["accuracy"]
    assert row["vs_uniform_frac"] == pytest.approx(0.2)


@pytest.mark.parametrize("baseline", [None, [], [{**_row(4, 10.0, [])}]])
def test_robust_row_refuses_a_saving_with_no_baseline_row(baseline):
    """No baseline row at the plan's seed (none at all, or only another seed's): refused, not
    the plan against itself (it read a 0 % saving)."""
    robust = {"per_seed": [_row(3, 8.0, []), _row(4, 9.0, [])]}
    if baseline is not None:
        robust["baseline_per_seed"] = baseline
    with pytest.raises(RuntimeError, match="no baseline_per_seed row for seed 3"):
        _robust_row(3, robust, True, None)


def test_robust_row_without_a_saving_needs_no_baseline():
    """No saving quoted: no baseline row read, none asked for."""
    row = _robust_row(3, {"per_seed": [_row(3, 8.0, ["accuracy"])]}, False, None)
    assert row["missed"] == ["accuracy"] and "vs_uniform_frac" not in row


# ---- 2. a robust cascade plan's fleet is read from the search's cache, not simulated again ----


def cascade_priced_doc() -> dict:
    """round 53's small cascade scenario (tests/test_round53_check53.py ``cascade_doc``: NVFP4
    escalating to BF16 on 0-180 s of the conv trace stretched 5x, floor 0.74) priced per
    request, NVFP4 0.001 USD and BF16 0.01 USD, so that planned with ``--cost-model
    fixed_per_request --slo-ttft-p99 3 --gpus-per-replica 1 --choose router.policy=cascade``
    the cascade (1 NVFP4 + 1 BF16, p99 TTFT 2.43 s) is the plan: at the scenario's 2 s limit
    the cascade missed TTFT at any size and uniform BF16 was planned, whose design has no
    router setting to lose (modelled, 2026-12-07)."""
    from test_round53_check53 import cascade_doc

    doc = cascade_doc()
    doc["tiers"][0]["cost_per_request_usd"] = 0.001
    doc["tiers"][1]["cost_per_request_usd"] = 0.01
    return doc


def test_robust_cascade_plan_runs_the_engine_only_as_simulations_counts(tmp_path, monkeypatch):
    """``--robust --check-seeds 1 --choose router.policy=cascade``: the cascade design is
    sized at the floor router's floors too (the floor in its setting, which the cascade does
    not read and plan.json leaves out). ``robust_record`` rebuilt the design from plan.json's
    router, missed each seed's cache and ran the engine twice more (once a seed), uncounted:
    8 engine runs by then against ``simulations`` 6. Runs shared between seeds are turned off
    (``run_key`` None), as they hid the repeat (served from the store when still in it)."""
    import json

    from conftest import write_yaml
    from test_round51_seeds import plan

    import tiersim.plan.evaluate as evaluate
    import tiersim.plan.robust as robust

    runs = {"engine": 0, "at_record": None}
    real_simulate, real_record = evaluate.simulate, robust.robust_record

    def counted(*args, **kwargs):
        runs["engine"] += 1
        return real_simulate(*args, **kwargs)

    def record(*args, **kwargs):
        out = real_record(*args, **kwargs)
        runs["at_record"] = runs["engine"]  # the seed check and the planned run come after
        return out

    monkeypatch.setattr(evaluate, "simulate", counted)
    monkeypatch.setattr(evaluate, "run_key", lambda *args: None)
    monkeypatch.setattr(robust, "robust_record", record)
    path = write_yaml(tmp_path / "s.yaml", cascade_priced_doc())
    code = plan(str(path), "--out", str(tmp_path / "p"), "--no-report", "--robust",
                "--check-seeds", "1", "--choose", "router.policy=cascade", "--gpus-per-replica",
                "1", "--cost-model", "fixed_per_request", "--slo-ttft-p99", "3")[0]
    assert code == 0
    doc = json.loads((tmp_path / "p" / "plan.json").read_text())
    assert (doc["plan"]["design"], doc["plan"]["router"]) == ("nvfp4+bf16", {"policy": "cascade"})
    assert [r["seed"] for r in doc["robust"]["per_seed"]] == [0, 1]
    assert runs["at_record"] == doc["simulations"] == 6


# ---- 4. a run whose page meets a full disk says that nothing was written ------------------------


def _disk_full_at_the_page(monkeypatch) -> None:
    """The report page's write refused with ENOSPC (the data files before it are written)."""
    import errno

    from tiersim.report import page

    real = page._write_atomic

    def disk_full(path, text, *named):
        def refuse(*args, **kwargs):
            raise OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as inner:
            inner.setattr(page.os, "fdopen", refuse)
            real(path, text, *named)

    monkeypatch.setattr(page, "_write_atomic", disk_full)


def test_a_run_whose_page_meets_a_full_disk_says_nothing_was_written(tmp_path, monkeypatch,
                                                                      capsys):
    """``tiersim run`` writes its files and page together or not at all: a page refused on a
    full disk leaves no folder, and the line said only that the page could not be written."""
    from conftest import TINY

    from tiersim.cli import main

    _disk_full_at_the_page(monkeypatch)
    out = tmp_path / "o"
    assert main(["run", str(TINY), "--out", str(out)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"Error: {out / 'report.html'}: cannot write the report (No space left on device), so "
        "nothing was written (a run's files and its page are written together, or none of "
        "them); free some space or choose another folder")
    assert not out.exists()


def test_a_report_of_a_written_run_does_not_say_nothing_was_written(tmp_path, monkeypatch,
                                                                      capsys):
    """``tiersim report`` on a run already written: its files stay, so the line does not say
    nothing was written (the run's data files are there)."""
    from conftest import TINY

    from tiersim.cli import main

    out = tmp_path / "o"
    assert main(["run", str(TINY), "--out", str(out), "--no-report"]) == 0
    capsys.readouterr()
    _disk_full_at_the_page(monkeypatch)
    assert main(["report", str(out)]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"Error: {out / 'report.html'}: cannot write the report (No space left on device); "
        "free some space or choose another folder")
    assert (out / "summary.json").exists()


# ---- 3. --robust reads the trace once, shared by every seed's evaluator ------------------------


def test_seeds_evaluator_reads_the_trace_once_and_shares_its_columns(monkeypatch):
    """One read of the trace for four seeds (each evaluator had read its own copy, held for
    the plan's life: 1,001 of them at ``--check-seeds 1000``), and the seeds' tables share the
    trace's columns (the seed draws only the added ones)."""
    import numpy as np
    from conftest import TINY

    from tiersim import inputs
    from tiersim.plan.robust import seeds_evaluator
    from tiersim.scenario import load_scenario

    reads = []
    real = inputs.load_scenario_trace
    monkeypatch.setattr(inputs, "load_scenario_trace",
                        lambda *args: reads.append(args) or real(*args))
    scenario = load_scenario(TINY)
    frames = [e.df for e in seeds_evaluator(scenario, str(TINY), [0, 1, 2, 3]).evaluators]
    assert len(reads) == 1
    for column in ("arrival_s", "input_tokens", "output_tokens"):
        assert all(np.shares_memory(frames[0][column].to_numpy(), f[column].to_numpy())
                   for f in frames[1:]), column


def test_a_robust_plan_with_the_trace_shared_is_the_same(tmp_path, monkeypatch):
    """``--robust --check-seeds 3`` on tiny with the trace and the built tiers shared and with
    each seed's evaluator reading and building its own (as before): plan.json the same but for
    its wall times, and the planned run's files the same to the byte."""
    import json

    from conftest import TINY
    from test_round51_seeds import plan

    import tiersim.plan.evaluate as evaluate

    def without_wall(path):
        def strip(value):
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k not in ("wall_s",
                                                                           "sim_wall_s")}
            return [strip(v) for v in value] if isinstance(value, list) else value
        return strip(json.loads((path / "plan.json").read_text()))

    args = ("--no-report", "--robust", "--check-seeds", "3")
    assert plan(str(TINY), "--out", str(tmp_path / "shared"), *args)[0] == 0
    real_init = evaluate.SimEvaluator.__init__

    def own_read(self, *args, trace=None, **kwargs):
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(evaluate.SimEvaluator, "__init__", own_read)
    monkeypatch.setattr(evaluate.SimEvaluator, "_peer_built", lambda self, key: None)
    assert plan(str(TINY), "--out", str(tmp_path / "own"), *args)[0] == 0
    assert without_wall(tmp_path / "shared") == without_wall(tmp_path / "own")
    for name in ("scenario.yaml", "summary.json", "requests.parquet"):
        assert (tmp_path / "shared" / name).read_bytes() == (tmp_path / "own" / name
                                                             ).read_bytes(), name


def test_the_seeds_evaluators_share_their_built_tiers():
    """After a robust search each (tier, GPUs per replica) is built once: every seed's
    evaluator holds the first's step model (whose operator tables grow as it is asked: 51
    copies held 30 MB more at ``--check-seeds 50`` on tiny, 2026-12-07)."""
    import warnings

    from conftest import TINY

    from tiersim.plan.constraints import Constraints
    from tiersim.plan.planner import Planner
    from tiersim.plan.robust import seeds_evaluator
    from tiersim.scenario import load_scenario

    scenario = load_scenario(TINY)
    evaluator = seeds_evaluator(scenario, str(TINY), [0, 1, 2])
    c = Constraints.of(scenario, None, None, None)
    evaluator.slo = (c.ttft_p99_s, c.tpot_p99_s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Planner(scenario, c, evaluator).plan()
    models: dict = {}  # per (tier, GPUs per replica), the step models the seeds hold
    for e in evaluator.evaluators:
        for key, built in e._built.items():
            if built is not None:
                models.setdefault(key, set()).add(id(built.step_model))
    assert len(models) > 1 and all(len(ids) == 1 for ids in models.values()), models
