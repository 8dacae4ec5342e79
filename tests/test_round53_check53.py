"""Round 53 (check53): an independent check, by other paths, of what landed in ``tiersim plan``
this round: the seed check's re-check of fleets turned away at the plan's seed
(``seed_check.rejected``), ``--robust``'s shared engine runs and idle tiers, and the router's
realised AUROC (``router.quality``).

Every figure is modelled (the roofline's and the floor router's on three minutes of the Azure
code trace at 5x, 2026-12-07): a recalibration moves them, and the scenarios below then need
their floors or windows moved to show their case again.
"""

from __future__ import annotations

import pytest


def _baseline_record(vs: list[float]) -> dict:
    """A seed check with one baseline-only fleet turned away at seed 1 that meets every
    constraint at the seeds checked, the plan's saving against it ``vs`` there."""
    return {"planned_seed": 1, "seeds": [1, 2, 3, 4][:len(vs) + 1], "saving_basis": "per_hour",
            "baseline_uniform_tier": "bf16", "accuracy_floor": 0.791,
            "rejected": [{"design": "fp8x", "tiers": ["fp8x"], "replicas": {"fp8x": 2},
                          "gpus_per_replica": {"fp8x": 4}, "ranks_before": "baseline",
                          "missed_at_planned_seed": ["accuracy"],
                          "dearer_than_plan_frac": -0.4285714286,
                          "dearer_than_baseline_frac": -0.4285714286,
                          "met_seeds": list(range(2, 2 + len(vs))),
                          "per_seed": [{"seed": 2 + k, "vs_fleet_frac": v}
                                       for k, v in enumerate(vs)]}]}


HEAD = ("    uniform fp8x (2 x 4 GPU, 42.9 % cheaper per hour than uniform bf16) was turned away "
        "at seed 1 (accuracy floor missed) but meets the SLOs and the accuracy floor at ")
TAIL = " (`tiersim plan --robust` sizes every fleet for every seed checked)"


@pytest.mark.parametrize(("vs", "said"), [
    ([-0.75, -0.75, -0.75], "every seed checked (2, 3, 4): the saving's baseline hinges on seed "
                            "1's draws; against it the plan costs 75.0 % more per hour there"),
    ([0.05, 0.05], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                   "against it the plan saves 5.00 % per hour there"),
    ([-0.1, -0.2], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                   "against it the plan costs 10.0 % to 20.0 % more per hour there"),
    ([-0.1, 0.2], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                  "against it the plan's saving per hour is -10.0 % to 20.0 % there"),
    ([0.0, 0.0], "every seed checked (2, 3): the saving's baseline hinges on seed 1's draws; "
                 "against it the plan costs the same per hour there"),
])
def test_a_baseline_cheaper_than_the_plan_reads_costs_more(vs, said):
    """A baseline-only tier's fleet cheaper than the plan (uniform fp8x 2 x 4 GPU at 2.00
    USD/GPU-hour, 16 USD/hour, beside the plan, uniform bf16@4 2 x 4 GPU at 28 USD/hour: the
    scenario of :func:`b_doc`) ranks before the saving's baseline and, meeting every
    constraint at seeds 2-4, is where the baseline hinges. The line read "against it the plan
    saves -75.0 % per hour there": a saving's word beside a loss. It now reads as the plan's
    own saving line words one (``saving_verdict``: "costs ... more")."""
    from tiersim.results_seeds import rejected_lines

    assert rejected_lines(_baseline_record(vs)) == [HEAD + said + TAIL]


# ---- 1. seed_check.rejected against each fleet run on its own ---------------------------------


def a_doc() -> dict:
    """tests/test_round51_seeds.py's FP8 + BF16 pair on another window of the code trace
    (600-780 s at 5x, 484 requests), planned at seed 0, floor 0.79: uniform FP8 (4 x 1 GPU, 12.0
    USD/hour) reads 78.43 % at seed 0 and 79.49 %, 80.06 %, 82.02 % at seeds 1-3, so the plan
    is uniform BF16 4 x 1 GPU (14.0 USD/hour) and its choice hinges on seed 0."""
    from test_round51_seeds import routed_doc

    doc = routed_doc()
    doc.update(seed=0, accuracy_floor=0.79)
    doc["trace"]["window"] = [600, 780]
    return doc


def b_doc() -> dict:
    """The pair on 420-600 s (556 requests) at seed 1, floor 0.791, beside a baseline-only
    ``fp8x`` (FP8's accuracy at 2.00 USD/GPU-hour): FP8 reads 79.09 % at seed 1 and 79.27 %,
    81.16 %, 79.71 % at seeds 2-4. The plan is uniform bf16@4 (2 x 4 GPU, 28.0 USD/hour);
    fp8@4 and fp8x@4 (2 x 4 GPU, 24.0 and 16.0 USD/hour) are turned away at seed 1 only."""
    from test_round51_seeds import routed_doc

    doc = routed_doc()
    doc["accuracy_floor"] = 0.791
    doc["trace"]["window"] = [420, 600]
    doc["baselines"] = [{"name": "fp8x", "precision": "fp8", "cost_per_gpu_hour": 2.0,
                         "accuracy": {"easy": 1.0, "hard": 0.76, "hopeless": 0.0}}]
    return doc


def _planned(tmp_path_factory, name: str, doc: dict):
    """``doc`` planned with the default seed check: (stdout, plan.json, the scenario)."""
    import json

    from conftest import write_yaml
    from test_round51_seeds import plan

    tmp = tmp_path_factory.mktemp(name)
    path = write_yaml(tmp / "s.yaml", doc)
    code, out, err = plan(str(path), "--out", str(tmp / "p"), "--no-report")
    assert code == 0, err
    return out, json.loads((tmp / "p" / "plan.json").read_text()), doc


@pytest.fixture(scope="module")
def planned_a(tmp_path_factory):
    """:func:`a_doc` planned."""
    return _planned(tmp_path_factory, "a", a_doc())


@pytest.fixture(scope="module")
def planned_b(tmp_path_factory):
    """:func:`b_doc` planned."""
    return _planned(tmp_path_factory, "b", b_doc())


def _run_alone(tmp_path, doc: dict, record: dict, seed: int) -> dict:
    """The rejected fleet ``record`` written as its own scenario (that tier alone, at its size,
    every request to it) at ``seed``, ``tiersim run`` of it: its summary.json."""
    import contextlib
    import io
    import json

    from conftest import write_yaml

    from tiersim.cli import main

    (tier,) = record["tiers"]
    every = {t["name"]: t for t in [*doc["tiers"], *doc.get("baselines", [])]}
    own = {**doc, "seed": seed, "router": {"policy": "static_split", "fractions": [1.0]},
           "tiers": [{**every[tier], "replicas": record["replicas"][tier],
                      "gpus_per_replica": record["gpus_per_replica"][tier]}]}
    own.pop("baselines", None)
    path = write_yaml(tmp_path / f"{tier}_{seed}.yaml", own)
    out = tmp_path / f"{tier}_{seed}"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", str(path), "--out", str(out), "--no-report", "--no-baselines"]) == 0
    return json.loads((out / "summary.json").read_text())


def _same_as_alone(tmp_path, plan_json: dict, doc: dict) -> int:
    """Every rejected fleet's figures at every checked seed against its own run, to the digits
    both files write (10 significant); the plan's saving against it from the two USD/hour.
    The runs compared."""
    from tiersim.results_figures import plain

    check = plan_json["seed_check"]
    key = "cost_per_hour_usd" if check["saving_basis"] == "per_hour" else "cost_usd"
    rate = plan_json["plan"][key]  # the plan's (uniform: the same at every seed here)
    runs = 0
    for record in check["rejected"]:
        for row in record["per_seed"]:
            s = _run_alone(tmp_path, doc, record, row["seed"])
            assert [s[k] for k in ("ttft_p99_s", "tpot_p99_s", "accuracy", "dropped")] == [
                row[k] for k in ("ttft_p99_s", "tpot_p99_s", "accuracy", "dropped")]
            assert row["missed"] == ([] if s["accuracy"] >= check["accuracy_floor"]
                                     else ["accuracy"])
            # from the two files' 10-digit costs: the last digit may differ over the trace
            assert row["vs_fleet_frac"] == pytest.approx(plain(1 - rate / s[key]), abs=2e-10)
            assert record["dearer_than_plan_frac"] == pytest.approx(plain(s[key] / rate - 1),
                                                                    abs=2e-10)
            runs += 1
    return runs


def test_a_rejected_uniform_fleet_is_its_own_run_at_each_seed(planned_a, tmp_path):
    """Uniform FP8 4 x 1 GPU, turned away at seed 0 (78.43 % < 79 %), run on its own at seeds
    1-3: the same p99s, accuracy and drops as plan.json records, and 12.0 against 14.0
    USD/hour: 14.3 % cheaper than the plan, which costs 16.7 % more than it."""
    out, data, doc = planned_a
    assert data["plan"]["design"] == "bf16" and data["plan"]["cost_per_hour_usd"] == 14.0
    assert [(r["design"], r["ranks_before"], r["met_seeds"])
            for r in data["seed_check"]["rejected"]] == [("fp8", "plan", [1, 2, 3])]
    assert _same_as_alone(tmp_path, data, doc) == 3
    assert ("    uniform fp8 (4 x 1 GPU, 14.3 % cheaper per hour than the plan) was turned away "
            "at seed 0 (accuracy floor missed) but meets the SLOs and the accuracy floor at "
            "every seed checked (1, 2, 3): the choice of plan hinges on seed 0's draws "
            "(`tiersim plan --robust` sizes every fleet for every seed checked)"
            ) in out.splitlines()


def test_a_baseline_only_fleet_cheaper_than_the_plan(planned_b, tmp_path):
    """fp8x@4 (a baseline-only tier, 16.0 USD/hour) and fp8@4 (24.0), turned away at seed 1,
    each run on its own at seeds 2-4: plan.json's figures; fp8x is 42.9 % cheaper than uniform
    bf16 (16 / 28 - 1) and the plan costs 75.0 % more than it (28 / 16 - 1), as the line says."""
    out, data, doc = planned_b
    check = data["seed_check"]
    assert [(r["design"], r["ranks_before"], r["met_seeds"]) for r in check["rejected"]] == [
        ("fp8x@4", "baseline", [2, 3, 4]), ("fp8@4", "plan", [2, 3, 4])]
    assert check["rejected"][0]["dearer_than_baseline_frac"] == pytest.approx(16 / 28 - 1)
    assert _same_as_alone(tmp_path, data, doc) == 6
    assert ("    uniform fp8x@4 (2 x 4 GPU, 42.9 % cheaper per hour than uniform bf16) was turned "
            "away at seed 1 (accuracy floor missed) but meets the SLOs and the accuracy floor at "
            "every seed checked (2, 3, 4): the saving's baseline hinges on seed 1's draws; "
            "against it the plan costs 75.0 % more per hour there (`tiersim plan --robust` "
            "sizes every fleet for every seed checked)") in out.splitlines()


def test_over_the_trace_the_gaps_are_the_runs_costs(tmp_path_factory, tmp_path):
    """:func:`b_doc` under attributed cost (the saving over the trace): the plan is uniform
    bf16 9 x 1 GPU (0.0572 USD), fp8x 9 x 1 GPU (0.0343 USD) is 40.1 % cheaper than it and
    the plan costs 66.8 % more than it at seeds 2-4, fp8 9 x 1 GPU (0.0514 USD) 10.1 %
    cheaper: each fleet's own run's cost over the trace (modelled)."""
    out, data, doc = _planned(tmp_path_factory, "h", {**b_doc(), "cost_model": "attributed"})
    assert data["plan"]["design"] == "bf16" and data["plan"]["replicas"] == {"bf16": 9}
    assert _same_as_alone(tmp_path, data, doc) == 6
    assert ("    uniform fp8x (9 x 1 GPU, 40.1 % cheaper than uniform bf16) was turned away at "
            "seed 1 (accuracy floor missed) but meets the SLOs and the accuracy floor at every "
            "seed checked (2, 3, 4): the saving's baseline hinges on seed 1's draws; against it "
            "the plan costs 66.8 % more there (`tiersim plan --robust` sizes every fleet for "
            "every seed checked)") in out.splitlines()
    assert ("    uniform fp8 (9 x 1 GPU, 10.1 % cheaper than the plan) was turned away at seed 1 "
            "(accuracy floor missed) but meets the SLOs and the accuracy floor at every seed "
            "checked (2, 3, 4): the choice of plan hinges on seed 1's draws (`tiersim plan "
            "--robust` sizes every fleet for every seed checked)") in out.splitlines()


# ---- 2. --robust: shared engine runs change nothing but the count -----------------------------


def spec_doc() -> dict:
    """:func:`a_doc` with BF16 decoding speculatively (k 3, acceptance 0.7): its runs share
    nothing (their draws are seeded by the scenario's seed), FP8's runs are shared."""
    doc = a_doc()
    doc["tiers"][1]["speculative"] = {"k": 3, "acceptance": 0.7, "head_cost": 0.05}
    return doc


def cascade_doc() -> dict:
    """The bundled cascade.yaml (NVFP4 escalating to BF16) on 0-180 s of the conv trace
    stretched 5x (``time_scale: 0.2``), floor 0.74, planned with ``--choose
    router.policy=cascade`` so that the cascade design is sized (to 8 NVFP4 + 64 BF16@8)."""
    import yaml
    from conftest import REPO

    doc = yaml.safe_load((REPO / "tiersim" / "scenarios" / "cascade.yaml").read_text())
    doc.pop("sweep")
    doc["trace"].update(path=str(REPO / "tiersim" / "traces" / "azure2023_conv.parquet"),
                        window=[0, 180], time_scale=0.2)
    doc["accuracy_floor"] = 0.74
    return doc


@pytest.mark.parametrize(("make", "extra", "counts"), [
    (spec_doc, (), (25, 34)),
    (cascade_doc, ("--choose", "router.policy=cascade"), (58, 60)),
])
def test_shared_runs_leave_robust_plans_bit_identical(tmp_path, monkeypatch, make, extra,
                                                      counts):
    """``--robust --check-seeds 1`` with runs shared between seeds and with none shared
    (``run_key`` None, as before 74cc0092): plan.json the same but for ``simulations`` and the
    wall times, and the planned run's scenario.yaml, summary.json, requests.parquet and
    timeseries.parquet the same to the byte (25 against 34 simulations with a speculative
    tier, 58 against 60 with a cascade, whose routing moves with the seed; modelled,
    2026-12-07)."""
    from conftest import write_yaml
    from test_round51_seeds import plan
    from test_round53_robust53 import _plan_json

    import tiersim.plan.evaluate as evaluate

    path = write_yaml(tmp_path / "s.yaml", make())
    args = ("--no-report", "--robust", "--check-seeds", "1", *extra)
    assert plan(str(path), "--out", str(tmp_path / "shared"), *args)[0] == 0
    monkeypatch.setattr(evaluate, "run_key", lambda *args: None)
    assert plan(str(path), "--out", str(tmp_path / "alone"), *args)[0] == 0
    shared, alone = _plan_json(tmp_path / "shared"), _plan_json(tmp_path / "alone")
    assert (shared[0], alone[0]) == counts
    assert shared[1] == alone[1]
    for name in ("scenario.yaml", "summary.json", "requests.parquet", "timeseries.parquet"):
        assert (tmp_path / "shared" / name).read_bytes() == (tmp_path / "alone" / name
                                                             ).read_bytes(), name


# ---- 3. --robust: a tier is idle only where no seed sends it anything -------------------------


def _floor_run(tmp_path, doc: dict, seed: int, floor: float, replicas: dict) -> dict:
    """``tiersim run`` of ``doc``'s tiers at ``replicas`` behind the floor router fitted to
    ``floor``, at ``seed``: the seed's routing by hand. Its summary.json."""
    import contextlib
    import io
    import json

    from conftest import write_yaml

    from tiersim.cli import main

    own = {**doc, "seed": seed, "router": {"policy": "floor", "floor": floor},
           "tiers": [{**t, "replicas": replicas[t["name"]]} for t in doc["tiers"]]}
    path = write_yaml(tmp_path / f"r{seed}.yaml", own)
    out = tmp_path / f"r{seed}"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", str(path), "--out", str(out), "--no-report", "--no-baselines"]) == 0
    return json.loads((out / "summary.json").read_text())


def test_a_tier_one_seed_sends_traffic_is_sized_and_its_figures_are_the_seeds_worst(tmp_path):
    """:func:`a_doc` at seed 4 (``--robust --check-seeds 1``: seeds 4 and 5). The floor
    router fitted to 0.79 sends BF16 nothing at seed 4 (FP8 79.60 % alone) and 34 of 484
    requests at seed 5, each seed's run by hand: FP8 + BF16 is sized (fp8 4 + bf16 1), not
    turned away as idle, and its plan.json figures are the two runs' worst: p99s the higher,
    accuracy the lower (seed 5's 79.26 %), each tier's requests the most a seed sent it."""
    import json

    from conftest import write_yaml
    from test_round51_seeds import plan

    doc = {**a_doc(), "seed": 4}
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, out, _ = plan(str(path), "--out", str(tmp_path / "p"), "--no-report", "--robust",
                        "--check-seeds", "1")
    assert code == 0
    (routed,) = json.loads((tmp_path / "p" / "plan.json").read_text())["runners_up"]
    assert routed["router"] == {"floor": 0.79, "policy": "floor"} and routed["feasible"]
    runs = [_floor_run(tmp_path, doc, seed, 0.79, routed["replicas"]) for seed in (4, 5)]
    assert [{t: s["tiers"][t]["requests"] for t in ("fp8", "bf16")} for s in runs] == [
        {"fp8": 484, "bf16": 0}, {"fp8": 450, "bf16": 34}]
    assert {t: v["requests"] for t, v in routed["per_tier"].items()} == {"fp8": 484, "bf16": 34}
    for key in ("ttft_p99_s", "tpot_p99_s"):
        assert routed[key] == max(s[key] for s in runs)
        for tier in ("fp8", "bf16"):
            assert routed["per_tier"][tier][key] == max(
                s["tiers"][tier][key] for s in runs if s["tiers"][tier][key] is not None)
    assert routed["accuracy"] == min(s["accuracy"] for s in runs) == runs[1]["accuracy"]
    assert ("runner-up fp8+bf16 (fp8 4 x 1 GPU + bf16 1 x 1 GPU; router.policy floor, "
            "router.floor 0.79): meets every constraint") in out


def test_a_tier_no_seed_sends_traffic_is_turned_away(tmp_path):
    """At seed 3 (seeds 3 and 4) the floor router fitted to 0.79 sends BF16 nothing at either
    seed (FP8 alone: 82.02 % and 79.60 %), each seed's run by hand: the design is turned away
    as idle, as before."""
    from conftest import write_yaml
    from test_round51_seeds import plan

    doc = {**a_doc(), "seed": 3}
    for seed in (3, 4):
        s = _floor_run(tmp_path, doc, seed, 0.79, {"fp8": 4, "bf16": 1})
        assert s["tiers"]["bf16"]["requests"] == 0
    path = write_yaml(tmp_path / "s.yaml", doc)
    code, out, _ = plan(str(path), "--out", str(tmp_path / "p"), "--no-report", "--robust",
                        "--check-seeds", "1")  # not ./plan: the checkout's root (review54)
    assert code == 0
    assert ("  runner-up fp8+bf16: bf16 gets no traffic from the router: the design without it "
            "is cheaper") in out.splitlines()


# ---- 4. router.quality's AUROC, recomputed ----------------------------------------------------


def _mann_whitney_auroc(score, positive) -> float:
    """The AUROC as the Mann-Whitney U over n1 n0 (ties counted half, by average ranks): not
    scikit-learn's trapezoids."""
    import numpy as np
    from scipy.stats import rankdata

    score, positive = np.asarray(score, float), np.asarray(positive, bool)
    ranks = rankdata(score)
    n1, n0 = int(positive.sum()), int((~positive).sum())
    return float((ranks[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _delong(score, positive) -> tuple[float, float]:
    """DeLong, DeLong and Clarke-Pearson's (1988) 95% interval written out again over every
    positive-negative pair (a tie counts half), not by ranks as the code does; on the logit
    scale since auroc54 (the standard error divided by A (1 - A), +- q of it about logit(A),
    and back, q Student's t 97.5 % quantile on the Welch-Satterthwaite degrees of freedom of
    the variance's two terms), A +- 1.96 SE before."""
    import math

    import numpy as np
    from scipy.special import expit, logit
    from scipy.stats import t

    pos, neg = score[positive], score[~positive]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    a = float(psi.mean())
    s10, s01 = np.var(v10, ddof=1) / len(pos), np.var(v01, ddof=1) / len(neg)
    df = (s10 + s01) ** 2 / (s10 ** 2 / (len(pos) - 1) + s01 ** 2 / (len(neg) - 1))
    half = t.ppf(0.975, df) * math.sqrt(s10 + s01) / (a * (1.0 - a))
    return float(expit(logit(a) - half)), float(expit(logit(a) + half))


def _scored_run(tmp_path, monkeypatch, doc: dict):
    """``tiersim run`` of ``doc``, the classifier's scores and the routed table caught where
    the run hands them to ``realised_quality``: (summary.json, requests.parquet, table,
    scores, console)."""
    import contextlib
    import io
    import json

    import pandas as pd
    from conftest import write_yaml

    import tiersim.routing.quality as quality
    from tiersim.cli import main

    seen = {}
    real = quality.realised_quality

    def catch(df, score, *rest):
        seen.update(df=df.copy(), score=None if score is None else score.copy())
        return real(df, score, *rest)

    monkeypatch.setattr(quality, "realised_quality", catch)
    path = write_yaml(tmp_path / "s.yaml", doc)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", str(path), "--out", str(tmp_path / "r"), "--no-report",
                     "--no-baselines"]) == 0
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    requests = pd.read_parquet(tmp_path / "r" / "requests.parquet")
    return summary, requests, seen["df"], seen["score"], " ".join(out.getvalue().split())


def _check_quality(q: dict, score, positive) -> None:
    """summary.json's ``router.quality`` against scikit-learn's AUROC, the Mann-Whitney U and
    the interval written out again (DeLong's, as the code gives it since review53b, on the
    logit scale since auroc54), to the 10
    significant digits summary.json keeps."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from tiersim.results_figures import plain

    value = roc_auc_score(positive, score)
    assert value == pytest.approx(_mann_whitney_auroc(score, positive), abs=1e-12)
    assert q["auroc"] == plain(float(value))
    assert q["positives"] == int(positive.sum()) and q["requests"] == len(positive)
    assert q["auroc_ci95"] == pytest.approx(
        list(_delong(np.asarray(score, dtype=float), np.asarray(positive, dtype=bool))), abs=1e-9)


def test_the_auroc_against_the_drawn_difficulty(tmp_path, monkeypatch):
    """:func:`a_doc` at seed 5 behind the floor router fitted to 0.79 (hint_auroc 0.72): the
    AUROC of the scores the run caught, for "not easy" on the drawn classes, recomputed: 0.712
    (95% CI 0.664 - 0.756 by DeLong on the logit scale since auroc54; 0.666 - 0.759 by plain
    DeLong, before; 0.665 - 0.760 by Hanley-McNeil, before review53b) over 484 requests, 203
    of them hard or hopeless (modelled): 100 or more of each class, so a verdict is given. The
    table scored is the replayed trace in requests.parquet's order, one score a request."""
    import numpy as np

    doc = {**a_doc(), "seed": 5, "router": {"policy": "floor", "floor": 0.79}}
    doc["tiers"] = [{**t, "replicas": {"fp8": 4, "bf16": 1}[t["name"]]} for t in doc["tiers"]]
    summary, requests, df, score, out = _scored_run(tmp_path, monkeypatch, doc)
    assert len(score) == len(df) == len(requests) == 484
    assert np.array_equal(df["request_id"].to_numpy(), requests["request_id"].to_numpy())
    positive = (df["difficulty_class"] != "easy").to_numpy()
    _check_quality(summary["router"]["quality"], score, positive)
    assert ("router quality on the replayed trace: AUROC 0.712 (95% CI 0.664 - 0.756) for hard "
            "or hopeless, against the drawn difficulty of 484 requests (203 of them), asked "
            "0.72 (workload.difficulty.hint_auroc; within the 95% CI)") in out


def test_the_auroc_against_the_traces_own_labels(tmp_path, monkeypatch):
    """A labelled trace of 400 requests whose one feature is the cheap tier's label plus
    Gaussian noise (sd 1.5), behind the threshold router: the AUROC of the scores the run
    caught against the labels read back from the trace file by request_id (not the run's
    table), recomputed: 0.720 (its 95% CI DeLong's since review53b), 114 of 400 wrong (modelled)."""
    import numpy as np
    import pandas as pd
    from conftest import tiny_doc, write_frame

    rng = np.random.default_rng(53)
    n = 400
    right = rng.random(n) < 0.7
    trace = pd.DataFrame({"request_id": np.arange(n) * 7 + 3,
                          "arrival_s": np.arange(n, dtype=float) * 0.5,
                          "input_tokens": 200, "output_tokens": 20,
                          "correct_w4a16": right.astype(float), "correct_bf16": 1.0,
                          "feat_wrong": (~right) + rng.normal(0, 1.5, n)})
    write_frame(trace, tmp_path / "t.parquet")
    doc = tiny_doc(trace={"path": str(tmp_path / "t.parquet")},
                   router={"policy": "threshold", "thresholds": 0.5})
    summary, requests, df, score, _ = _scored_run(tmp_path, monkeypatch, doc)
    q = summary["router"]["quality"]
    assert q["truth"] == "trace labels" and len(requests) == n
    wrong = trace.set_index("request_id")["correct_w4a16"] < 0.5
    positive = wrong.loc[df["request_id"].to_numpy()].to_numpy()
    assert int(positive.sum()) == int((~right).sum()) == 114
    _check_quality(q, score, positive)
    assert 0.6 < q["auroc"] < 0.8  # the feature alone: 0.68 (d' = 1 / 1.5); out-of-fold
