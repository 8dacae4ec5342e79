"""Round 51, a new user's journey: an SRE serving Llama-3.1-70B on H200 at BF16, logging
traffic in BurstGPT's format, asking whether FP8 + BF16 tiers behind a difficulty router
would pay at a p99 TTFT of 2 s and TPOT of 80 ms. Each test is a place the user was misled."""

from __future__ import annotations

import textwrap

import pandas as pd
import pytest

from tiersim.cli import main
from tiersim.paths import bundled


def burstgpt_csv(path, seconds: float = 60.0) -> None:
    """The first ``seconds`` of the bundled Azure conversation trace written in BurstGPT's
    columns (``Timestamp`` seconds to the millisecond), as the user's own log would be."""
    table = pd.read_parquet(bundled("traces", "azure2023_conv.parquet"))
    table = table[table.arrival_s < seconds]
    pd.DataFrame({
        "Timestamp": table.arrival_s.round(3),
        "Model": "Llama-3.1-70B",
        "Request tokens": table.input_tokens,
        "Response tokens": table.output_tokens,
        "Total tokens": table.input_tokens + table.output_tokens,
        "Log Type": "Conversation log",
    }).to_csv(path, index=False)


FP8_BF16_TP2 = textwrap.dedent("""\
    name: llama70b-fp8-bf16
    seed: 0
    model: Llama-3.1-70B
    gpu: H200
    trace: {path: ours.csv, format: burstgpt}
    tiers:
      - {name: fp8, precision: fp8, replicas: 1, gpus_per_replica: 2, cost_per_gpu_hour: 3.80}
      - {name: bf16, precision: bf16, replicas: 1, gpus_per_replica: 2, cost_per_gpu_hour: 3.80}
    router: {policy: floor}
    slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.08}
    accuracy_floor: 0.949
    """)


def _fp8_bf16_run_notes(tmp_path, capsys, monkeypatch, text: str = FP8_BF16_TP2) -> str:
    """stderr of ``tiersim run`` (no baselines, no report) of ``text`` (default
    :data:`FP8_BF16_TP2`) on a BurstGPT copy of the bundled conversation trace, in
    ``tmp_path``; the run must succeed."""
    monkeypatch.chdir(tmp_path)
    burstgpt_csv(tmp_path / "ours.csv")
    (tmp_path / "s.yaml").write_text(text)
    capsys.readouterr()
    assert main(["run", "s.yaml", "--no-baselines", "--no-report", "--out", "out"]) == 0
    return capsys.readouterr().err


def test_the_idle_tier_note_says_why_a_floor_router_sent_it_nothing(tmp_path, capsys,
                                                                    monkeypatch):
    """FP8 and BF16 tiers of Llama-3.1-70B behind the ``floor`` router with an accuracy floor,
    FP8 dearer per request than BF16: the floor router sent FP8 nothing, and the note told
    the user to "route to it (router.policy: floor with an accuracy_floor, say)", the
    setting the scenario had. It now says why the router left the tier out, and what would
    change that. Round 52: FP8 was dearer at TP2 beside BF16 at the routers' old reference
    step (0.000173 against 0.00017 USD: a 512-token prefill beside 32 decodes, 544 tokens on
    the slow side of NVIDIA's FP8 GEMM tables' 512/513 jump); priced over the served
    requests, FP8 at TP2 is the cheaper (0.000443 against 0.000581), so the scenario now
    gives FP8 four GPUs a replica (TP4: twice the replica price, not twice as fast), which is
    dearer per request (0.000621). Round 53: priced at the decode batch the run's load
    gives a replica of its 2, FP8 at TP4 reads 0.00255 against BF16's 0.00131 (the load per
    replica is the same, the replica price twice). Round 54 (the batch counted on the
    trace's arrivals as the 2 replicas share them): 0.00259 against 0.00131. Round 55 (the
    rate as the trace minute's 190 gaps over its span, not its 191 rows: 0.5 % less load):
    0.0026 against 0.00131 (FP8 0.5 % dearer, printed to 3 digits, 0.00260). The prices are
    the shipped H200 profile's (they move with it)."""
    text = FP8_BF16_TP2.replace("{name: fp8, precision: fp8, replicas: 1, gpus_per_replica: 2",
                                "{name: fp8, precision: fp8, replicas: 1, gpus_per_replica: 4")
    err = _fp8_bf16_run_notes(tmp_path, capsys, monkeypatch, text)
    idle = [line for line in err.splitlines() if "ran no request" in line]
    assert idle == [
        "note: s.yaml: tier fp8 ran no request (router floor, which weighs each tier's cost "
        "per request, priced over up to 256 of the served requests, each by the "
        "replica-seconds it takes on the tier's step model, its prompt in the engine's chunks "
        "and its output at the decode batch the run's load gives a replica of its fleet "
        "(Little's law): fp8's 0.0026 USD is no less than bf16's 0.00131, so it gains "
        "nothing by sending it requests), yet its 1 x 4 GPUs are "
        "provisioned: 0.301 of the run's 0.452 USD; remove the tier, or make it cheaper per "
        "request than bf16 (its gpus_per_replica or cost_per_gpu_hour)"]


CONFUSED = textwrap.dedent("""\
    name: llama70b-confused
    seed: 0
    model: Llama-3.1-70B
    gpu: H200
    trace: {path: ours.csv, format: burstgpt}
    tiers:
      - {name: fp8, precision: fp8, replicas: 1, gpus_per_replica: 1, cost_per_gpu_hour: 3.80,
         accuracy: 0.80}
      - {name: bf16, precision: bf16, replicas: 1, gpus_per_replica: 2, cost_per_gpu_hour: 3.80,
         accuracy: 0.95}
    router: {policy: uniform, tier: TIER, confusion: {RATE: 0.2}}
    slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.08}
    """)


@pytest.mark.parametrize(("tier", "rate", "said"), [
    ("fp8", "fpr", "router.confusion.fpr 0.2 changes nothing here: the uniform router already "
     "sent each of the 29 requests that needed a tier above the cheapest (realised "
     "correctness) below the tier it needed (its own FPR is 100 %), and confusion.fpr moves "
     "only those it did not (router fpr in docs/metrics.md, in tiersim's source repository)"),
    ("bf16", "fnr", "router.confusion.fnr 0.2 changes nothing here: the uniform router already "
     "sent each of the 162 requests that needed only a tier below the top (realised "
     "correctness) above the tier it needed (its own FNR is 100 %), and confusion.fnr moves "
     "only those it did not (router fnr in docs/metrics.md, in tiersim's source repository)"),
])
def test_an_injected_confusion_rate_with_nothing_to_move_is_told(tmp_path, capsys, monkeypatch,
                                                                tier, rate, said):
    """A sweep over ``router.confusion.fpr`` (0, 0.1, 0.2) on FP8 + BF16 behind the floor
    router gave nine identical points in threes: the router already sent every request that
    needed BF16 to FP8 (its own FPR 100 %), and an injected FPR moves only the requests it
    routed at or above the tier they needed. Nothing said so. A run (and so each sweep point)
    now notes it; here a uniform router on the cheap tier (FPR) or on the top one (FNR)."""
    monkeypatch.chdir(tmp_path)
    burstgpt_csv(tmp_path / "ours.csv")
    (tmp_path / "s.yaml").write_text(CONFUSED.replace("TIER", tier).replace("RATE", rate))
    capsys.readouterr()
    assert main(["run", "s.yaml", "--no-baselines", "--no-report", "--out", "out"]) == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if "changes nothing here" in line] == [
        f"note: {said}"]


def test_a_floor_judged_on_priors_alone_is_told(tmp_path, capsys, monkeypatch):
    """FP8 and BF16 tiers with no ``accuracy`` and a trace without labels: the accuracy floor
    (0.949) was judged on qllm-eval's per-precision priors, alike for every model, and the
    run (and plan) said only "prior" beside each accuracy; the plan chose uniform FP8 at a
    realised 94.99 % against that floor. A note now says the floor rests on placeholders."""
    err = _fp8_bf16_run_notes(tmp_path, capsys, monkeypatch)
    assert [line for line in err.splitlines() if "per-precision priors" in line] == [
        "note: s.yaml: no tier states its accuracy and the trace has no correct_<tier> labels, "
        "so accuracy_floor 0.949 is judged on qllm-eval's per-precision priors, alike for "
        "every model (README.md, \"Accuracy\"): placeholders, not the model's measured "
        "accuracy; state each tier's accuracy, or give the trace correct_<tier> labels"]
    stated = FP8_BF16_TP2.replace("cost_per_gpu_hour: 3.80}", "cost_per_gpu_hour: 3.80, "
                                  "accuracy: 0.95}")
    (tmp_path / "s.yaml").write_text(stated)
    assert main(["run", "s.yaml", "--no-baselines", "--no-report", "--out", "out"]) == 0
    assert "per-precision priors" not in capsys.readouterr().err
    own = FP8_BF16_TP2.replace("router: {policy: floor}", "router: {policy: floor, floor: 0.948}")
    (tmp_path / "s.yaml").write_text(own.replace("accuracy_floor: 0.949\n", ""))
    assert main(["run", "s.yaml", "--no-baselines", "--no-report", "--out", "out"]) == 0
    assert [line for line in capsys.readouterr().err.splitlines()
            if "per-precision priors" in line] == [
        "note: s.yaml: no tier states its accuracy and the trace has no correct_<tier> labels, "
        "so router.floor 0.948 is judged on qllm-eval's per-precision priors, alike for "
        "every model (README.md, \"Accuracy\"): placeholders, not the model's measured "
        "accuracy; state each tier's accuracy, or give the trace correct_<tier> labels"]


@pytest.mark.parametrize(("policy", "weights", "said"), [
    ("floor", (1.0, 2.0), "tier bf16 ran no request (router floor: the routing it fitted for "
     "the floor sends it nothing), yet its 1 GPU is provisioned: 0.500 of the run's 1.00 USD; "
     "remove the tier, or route to it (another accuracy_floor or router.floor)"),
    ("budget", (1.0, 2.0), "tier bf16 ran no request (router budget), yet its 1 GPU is "
     "provisioned: 0.500 of the run's 1.00 USD; remove the tier, or route to it "
     "(router.policy: floor with an accuracy_floor, say)"),
])
def test_an_idle_top_tier_is_not_blamed_on_its_price(policy, weights, said):
    """The cost reason (a later, more accurate tier serves a request for no more) is given for
    a tier listed before a tier that costs no more per request, never for the top tier, which
    no later tier undercuts: a floor router whose fitted routing leaves BF16 out (FP8 alone
    meets the floor, or none meets it) says so, without the advice to set the floor router it
    has."""
    import warnings
    from types import SimpleNamespace

    from tiersim.errors import Note
    from tiersim.runner import _note_idle_tiers

    busy = SimpleNamespace(name="fp8", passes=3, requests=3, cost_usd=0.5, replicas=1,
                           gpus_per_replica=1)
    idle = SimpleNamespace(name="bf16", passes=0, requests=0, cost_usd=0.5, replicas=1,
                           gpus_per_replica=1)
    infos = [SimpleNamespace(name="fp8", cost_weight=weights[0]),
             SimpleNamespace(name="bf16", cost_weight=weights[1])]
    run = SimpleNamespace(cost_model="provisioned", tiers=[busy, idle], cost_usd=1.0)
    scenario = SimpleNamespace(router=SimpleNamespace(policy=policy))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_idle_tiers(run, scenario, "s.yaml", infos)
    assert [str(w.message) for w in caught if issubclass(w.category, Note)] == [
        f"s.yaml: {said}"]


def test_a_sweep_report_lists_its_points_notes(tmp_path, capsys, monkeypatch):
    """A sweep over ``router.confusion.fpr`` whose every point noted that the rate changed
    nothing printed the note on the console, but its report showed the points alone: a table
    of identical rows with nothing to say why. The report now lists the sweep's notes, each
    kind once, as the console prints them."""
    import html
    import re

    monkeypatch.chdir(tmp_path)
    burstgpt_csv(tmp_path / "ours.csv")
    text = CONFUSED.replace("TIER", "fp8").replace("RATE", "fpr")
    (tmp_path / "s.yaml").write_text(text + "sweep:\n  router.confusion.fpr: [0.1, 0.2]\n")
    capsys.readouterr()
    assert main(["sweep", "s.yaml", "--no-baselines", "--out", "out", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    first = pd.read_parquet(tmp_path / "out" / "sweep.parquet")["point_id"].iloc[0]
    said = ("router.confusion.fpr 0.1 changes nothing here: the uniform router already sent "
            "each of the 29 requests that needed a tier above the cheapest (realised "
            "correctness) below the tier it needed (its own FPR is 100 %), and confusion.fpr "
            "moves only those it did not (router fpr in docs/metrics.md, in tiersim's source "
            f"repository) (point {first}; 1 more "
            "point has this note with other numbers")
    assert f"note: {said}, each in its " in err
    page = (tmp_path / "out" / "report.html").read_text()
    notes = page[page.index("<h3>Notes</h3>"):]
    items = [html.unescape(item) for item in re.findall(r"<li>(.*?)</li>",
                                                         notes[:notes.index("</ul>")])]
    assert items == [f"{said})",
                     "s.yaml: tier bf16 ran no request (the router is uniform: every request to "
                     "one tier), yet its 1 x 2 GPUs are provisioned: 0.158 of the run's 0.236 "
                     "USD; remove the tier, or route to it (router.policy: floor with an "
                     "accuracy_floor, say)"]


def test_a_plan_does_not_note_the_confusion_of_a_design_it_tried(tmp_path, capsys,
                                                                 monkeypatch):
    """The planner routes every design it tries; one whose floor router sent every request
    to BF16 printed "router.confusion.fnr 0.05 changes nothing here: the floor router already
    sent each of the 453 requests ...", naming no design, above a plan of uniform FP8. That
    note is a run's (the planned fleet's run still gives it where it holds), not a design's."""
    monkeypatch.chdir(tmp_path)
    burstgpt_csv(tmp_path / "ours.csv")
    text = FP8_BF16_TP2.replace("router: {policy: floor}",
                                "router: {policy: floor, confusion: {fpr: 0.05, fnr: 0.05}}")
    (tmp_path / "s.yaml").write_text(text.replace("accuracy_floor: 0.949",
                                                  "accuracy_floor: 0.945"))
    capsys.readouterr()
    assert main(["plan", "s.yaml", "--no-report", "--out", "plan", "--max-replicas", "2"]) == 0
    captured = capsys.readouterr()
    assert "plan (" in captured.out and "changes nothing here" not in captured.err
