"""Round 50, a new user's pass: an inference engineer serving Qwen3-30B-A3B on H200 asks
whether KV offload, disaggregation, speculative decoding or prefix caching pays for their
traffic (Azure conv at 10x, Mooncake's synthetic trace), working from README.md and docs/ only.
Each test pins one finding that was fixed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tiersim.results import PlanResult, dumps

ROOT = Path(__file__).resolve().parents[1]


def _split_plan() -> PlanResult:
    """A plan of one disaggregated tier, shaped as ``tiersim plan`` writes plan.json for a
    Qwen3-30B-A3B FP8 tier with a ``disaggregation`` block (4 x 1 GPU at 2P 2D); its uniform
    fleet is the same tier, split too."""
    margins = {"ttft_p99_s": {"limit": 2.0, "value": 0.326, "margin": 1.674},
               "tpot_p99_s": {"limit": 0.05, "value": 0.016, "margin": 0.034},
               "dropped": {"limit": 0, "value": 0}}
    per_tier = {"fp8": {"requests": 5985, "ttft_p99_s": 0.326, "tpot_p99_s": 0.016,
                        "dropped": 0, "replicas": 4, "prefill": 2}}
    fleet = {"design": "fp8", "tiers": ["fp8"], "replicas": {"fp8": 4},
             "gpus_per_replica": {"fp8": 1}, "cost_usd": 0.485, "cost_model": "provisioned",
             "cost_per_hour_usd": 14.0, "feasible": True, "missed": None, "dropped": 0,
             "per_tier": per_tier, "margins": margins}
    chosen = {**fleet, "one_fewer": {"fp8": {"replicas": 3, "misses": True,
                                             "verdict": "misses: ttft_p99_s 10.7 vs limit 2"}}}
    plan = PlanResult(scenario="s", constraints={"ttft_p99_s": 2.0, "tpot_p99_s": 0.05},
                      plan=chosen, uniform=(fleet,))
    return PlanResult.from_json(json.loads(dumps(plan.to_json())))


def test_plan_names_the_split_of_a_disaggregated_plan_and_uniform_fleet():
    """`tiersim plan` of a disaggregated tier printed "fp8=4x1 GPU" and "uniform fp8 (4 x 1
    GPU): meets every constraint", as if aggregated, where `tiersim run` of the planned fleet
    and the report show "4 x 1 (2P 2D)": a user asking whether disaggregation pays read the
    uniform baseline as the aggregated fleet (it is the same split tier; aggregated, the same
    traffic needed 5 x 1 GPU)."""
    from tiersim.cli.plan import format_plan

    lines = format_plan(_split_plan()).splitlines()
    assert lines[0].split(": ", 1)[1].startswith("fp8: fp8=4x1 GPU (2P 2D); cost 0.485 USD")
    assert "  uniform fp8 (4 x 1 GPU, 2P 2D): meets every constraint, cost 0.485 USD" in lines


def test_aggregated_plan_lines_are_unchanged():
    """An aggregated tier (no ``prefill`` in plan.json) keeps its plain size."""
    from tiersim.cli.plan import format_plan

    plan = _split_plan()
    data = plan.to_json()
    for design in (data["plan"], *data["uniform"]):
        design["per_tier"]["fp8"].pop("prefill")
    lines = format_plan(PlanResult.from_json(data)).splitlines()
    assert "fp8: fp8=4x1 GPU; cost" in lines[0]
    assert "  uniform fp8 (4 x 1 GPU): meets every constraint, cost 0.485 USD" in lines


def _flat(text: str) -> str:
    """Markdown as one line of words (line breaks and runs of spaces read as one space)."""
    return re.sub(r"\s+", " ", text)


def test_docs_say_the_uniform_baseline_keeps_the_tiers_serving_techniques():
    """Nothing said that a run's and a plan's uniform fleets keep the tier's speculative,
    disaggregation and KV offload settings, so "saved vs uniform fp8: 0 % per hour" read as
    "the technique buys nothing"; nor that an offload level is priced at nothing."""
    readme = _flat((ROOT / "README.md").read_text())
    planning = _flat((ROOT / "docs" / "planning.md").read_text())
    serving = _flat((ROOT / "docs" / "serving.md").read_text())
    assert ("its scheduler, prefix caching, KV offload, speculative decoding and "
            "disaggregation stay on") in readme
    assert "to price one of those techniques, plan or sweep the scenario with and without it" \
        in readme
    assert ("So the saving against the uniform fleets is a saving of routing and precision, "
            "never of a serving technique") in planning
    assert "KV offload levels add no price of their own" in planning
    assert "Price: a level adds nothing to a run's or a plan's cost" in serving


def test_readme_says_which_way_time_scale_goes():
    """The README's scenario example set `time_scale: 2.0` without saying whether 2 replays
    faster or slower (only docs/CONTRACTS.md said: arrival_s / 2)."""
    readme = _flat((ROOT / "README.md").read_text()).replace(" # ", " ")  # YAML comments
    assert ("time_scale: 2.0 replays the arrivals twice as fast (arrival_s / 2: twice the "
            "logged rate); 0.5 at half the rate") in readme


def test_an_unknown_model_whose_config_aiconfigurator_ships_gets_its_path(tmp_path):
    """`model: Qwen3-235B-A22B` (profiled in the shipped H200 tables, not in tiersim's
    catalogue) was refused with "give the path of a Hugging Face config.json" alone, though
    the installed aiconfigurator-core ships that config; the line now names the file."""
    import pytest

    from tiersim.errors import TiersimError
    from tiersim.hardware.models import get_model, shipped_config

    pytest.importorskip("aiconfigurator_core", reason="needs the aic extra")
    shipped = shipped_config("Qwen3-235B-A22B")
    assert shipped is not None and shipped.name == "Qwen--Qwen3-235B-A22B_config.json"
    assert shipped_config("meta-llama/Llama-3.1-405B-Instruct").name == \
        "meta-llama--Meta-Llama-3.1-405B_config.json"
    assert shipped_config("nvidia/Qwen3-235B-A22B-NVFP4").name == \
        "nvidia--Qwen3-235B-A22B-NVFP4_config.json"
    with pytest.raises(TiersimError) as err:
        get_model("Qwen3-235B-A22B")
    assert str(err.value) == (
        "unknown model 'Qwen3-235B-A22B'; known models: Qwen3-Coder-30B-A3B, Qwen3-30B-A3B, "
        "Llama-3.1-8B, Llama-3.1-70B, or give the path of a Hugging Face config.json "
        f"(aiconfigurator-core, installed here, ships its config: {shipped})")
    assert get_model(str(shipped)).total_params > 2.3e11  # the path it names reads


def test_an_unknown_model_nobody_ships_keeps_its_line():
    """A name no config matches reads as before (no path, whether or not the extra is in)."""
    import pytest

    from tiersim.errors import TiersimError
    from tiersim.hardware.models import get_model, shipped_config

    assert shipped_config("Nope-1B") is None
    with pytest.raises(TiersimError) as err:
        get_model("Nope-1B")
    assert str(err.value) == (
        "unknown model 'Nope-1B'; known models: Qwen3-Coder-30B-A3B, Qwen3-30B-A3B, "
        "Llama-3.1-8B, Llama-3.1-70B, or give the path of a Hugging Face config.json")


def test_docs_list_the_catalogue_and_where_the_shipped_configs_are():
    """README said "a catalogue name" without naming one; docs/models.md counted the 89
    configs aiconfigurator-core ships without saying where they are or how to name one."""
    readme = _flat((ROOT / "README.md").read_text())
    models = _flat((ROOT / "docs" / "models.md").read_text())
    assert ("a catalogue name (`Qwen3-Coder-30B-A3B`, `Qwen3-30B-A3B`, `Llama-3.1-8B`, "
            "`Llama-3.1-70B`, or their Hugging Face ids, `Qwen/Qwen3-30B-A3B`)") in readme
    assert "`aiconfigurator_core/model_configs/<org>--<name>_config.json`" in models
    from tiersim.hardware.models import MODELS

    assert [m.name for m in MODELS.values()] == [
        "Qwen3-Coder-30B-A3B", "Qwen3-30B-A3B", "Llama-3.1-8B", "Llama-3.1-70B"]


def test_metrics_doc_says_utilisation_is_not_headroom():
    """Every Azure-conv fleet read 97-99% "util" in the tiers table, 2 replicas where 1 met the
    SLOs among them: docs/metrics.md defined it as time running iterations, but not that an
    iteration of one request counts as much as one of 256."""
    metrics = _flat((ROOT / "docs" / "metrics.md").read_text())
    assert ("An iteration counts whole whatever its batch, so this is not headroom: a replica "
            "that always has a request to decode reads near 100% with room for many more") \
        in metrics


SPLIT_SCENARIO = """\
name: split-plan
seed: 0
model: Qwen3-30B-A3B
gpu: H200
profile: null                 # the calibrated roofline: independent of the shipped profile
trace: {path: azure2023_conv.parquet, window: [WINDOW], time_scale: 10}
tiers:
  - name: fp8
    precision: fp8
    replicas: 4
    cost_per_gpu_hour: 3.50
    disaggregation: {prefill_replicas: 2, decode_replicas: 2}
slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.05}
"""


def _plan_lines(tmp_path, capsys, window: str) -> list[str]:
    """``tiersim plan`` of :data:`SPLIT_SCENARIO` over ``window`` of the bundled Azure conv
    trace at 10x: its printed lines."""
    from tiersim.cli import main

    path = tmp_path / "split.yaml"
    path.write_text(SPLIT_SCENARIO.replace("WINDOW", window))
    capsys.readouterr()
    code = main(["plan", str(path), "--out", str(tmp_path / "plan"), "--no-report"])
    out, err = capsys.readouterr()
    assert code == 0, err[-800:]
    return out.splitlines()


def test_plan_one_fewer_names_the_split_it_ran(tmp_path, capsys):
    """A disaggregated plan's "one fewer" line named no split: fp8 3 x 1 GPU at 1P 2D read
    "one fewer fp8: misses: tpot_p99_s 0.222 vs limit 0.05", without the 1P 1D that 2 replicas
    were best at (roofline, 2026-12-07: 60 s of Azure conv at 10x)."""
    lines = _plan_lines(tmp_path, capsys, "0, 600")
    assert lines[0].split(": ", 1)[1].startswith("fp8: fp8=3x1 GPU (1P 2D); cost ")
    assert ("  one fewer fp8: misses: tpot_p99_s 0.222 vs limit 0.05 (at 1P 1D, its best "
            "split)") in lines
    assert [x for x in lines if x.startswith("  uniform fp8 (")][0].startswith(
        "  uniform fp8 (3 x 1 GPU, 1P 2D): meets every constraint, cost ")


def test_plan_one_fewer_at_one_replica_says_it_ran_aggregated(tmp_path, capsys):
    """At one replica fewer than a 1P 1D plan, one replica can only serve aggregated; the line
    says so rather than calling it a best split (30 s of Azure conv at 10x)."""
    lines = _plan_lines(tmp_path, capsys, "0, 300")
    assert lines[0].split(": ", 1)[1].startswith("fp8: fp8=2x1 GPU (1P 1D); cost ")
    fewer = [x for x in lines if x.startswith("  one fewer fp8: ")]
    assert len(fewer) == 1 and fewer[0].startswith("  one fewer fp8: misses: ttft_p99_s 45.3 ")
    assert fewer[0].endswith(" (one replica: served aggregated)")


def test_serving_doc_says_the_draft_head_cost_is_assumed():
    """A speculative tier's latency source read "draft head cost 0.05 (tiersim's default)" and
    docs/serving.md gave the 0.05 no source: it is an assumption, which the doc now says."""
    serving = _flat((ROOT / "docs" / "serving.md").read_text())
    assert "(`head_cost` defaults to 0.05, an assumed figure, not a measured one" in serving
    from tiersim.scenario_models import SpeculativeConfig

    assert SpeculativeConfig.model_fields["head_cost"].default == 0.05


def two_tier_scenario(tmp_path: Path) -> Path:
    """FP8 and BF16 tiers of Qwen3-30B-A3B, one replica each, no accuracy floor and the default
    uniform router, on two minutes of the Azure conversation trace at ten times its rate."""
    path = tmp_path / "two.yaml"
    path.write_text(
        "name: two\nseed: 0\nmodel: Qwen3-30B-A3B\ngpu: H200\nprofile: null\n"
        "trace: {path: azure2023_conv.parquet, window: [0, 120], time_scale: 10}\n"
        "tiers:\n"
        "  - {name: fp8, precision: fp8, replicas: 1, cost_per_gpu_hour: 3.5}\n"
        "  - {name: bf16, precision: bf16, replicas: 1, cost_per_gpu_hour: 3.5}\n"
        "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.05}\n")
    return path


def test_a_two_tier_plan_without_a_floor_says_how_to_route(tmp_path, capsys):
    """FP8 and BF16 tiers with no accuracy_floor: the planner keeps the scenario's router
    (uniform: every request to the top tier) and printed "runner-up fp8+bf16: fp8 gets no
    traffic from the router: the design without it is cheaper", without saying that the
    router, not the tier, decided it, nor how to route such a design."""
    from tiersim.cli import main

    path = two_tier_scenario(tmp_path)
    capsys.readouterr()
    code = main(["plan", str(path), "--out", str(tmp_path / "plan"), "--no-report"])
    out, err = capsys.readouterr()
    assert code == 0, err[-800:]
    assert ("  runner-up fp8+bf16: fp8 gets no traffic from the router: the design without it "
            "is cheaper; the scenario's router is uniform (every request to one tier) and "
            "there is no accuracy floor to route by: set accuracy_floor (or --accuracy-floor) "
            "to route a multi-tier design with the floor router") in out.splitlines()


def test_a_run_notes_a_paid_tier_that_ran_no_request(tmp_path):
    """The same two tiers run with `tiersim run`: fp8 served nothing (uniform router), yet its
    replica was half the provisioned bill, and the run said nothing about it."""
    import warnings

    from tiersim.errors import Note
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    path = two_tier_scenario(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = run_scenario(load_scenario(path), baselines=False)
    notes = [str(w.message) for w in caught if issubclass(w.category, Note)]
    fp8 = next(t for t in run.tiers if t.name == "fp8")
    assert fp8.passes == 0 and fp8.cost_usd > 0
    idle = [n for n in notes if "ran no request" in n]
    assert idle == [
        f"{path}: tier fp8 ran no request (the router is uniform: every request to one tier), "
        f"yet its 1 GPU is provisioned: 0.0282 of the run's 0.0563 USD; remove the tier, "
        "or route to it (router.policy: floor with an accuracy_floor, say)"]


def test_a_sweep_axis_of_whole_maps_notes_the_base_keys_it_drops(tmp_path, capsys):
    """`tiers.fp8.scheduler: [{enable_prefix_caching: false}, ...]` over a base scheduler with
    `max_num_seqs: 64` ran its first point at vLLM's default 256 sequences: an axis value
    replaces the map its path names, and nothing said so (docs/report.md did not either)."""
    from tiersim.cli import main

    path = tmp_path / "wm.yaml"
    path.write_text(
        "name: wm\nseed: 0\nmodel: Qwen3-30B-A3B\ngpu: H200\nprofile: null\n"
        "trace: {path: azure2023_conv.parquet, window: [0, 60]}\n"
        "tiers:\n"
        "  - name: fp8\n    precision: fp8\n    replicas: 1\n    cost_per_gpu_hour: 3.5\n"
        "    scheduler: {max_num_seqs: 64, enable_prefix_caching: true}\n"
        "slo: {ttft_p99_s: 2.0, tpot_p99_s: 0.05}\n"
        "sweep:\n  tiers.fp8.scheduler: [{enable_prefix_caching: false}, "
        "{enable_prefix_caching: true, max_num_seqs: 64}]\n")
    capsys.readouterr()
    code = main(["sweep", str(path), "--out", str(tmp_path / "sw"), "--no-baselines",
                 "--no-report"])
    err = capsys.readouterr().err
    assert code == 0, err[-800:]
    assert (f"note: {path}: sweep axis 'tiers.fp8.scheduler' sets a whole map, which replaces "
            "the base scenario's (values are not merged into it), so points whose value leaves "
            "them out run without the base's max_num_seqs: 64; to change one key and keep the "
            "rest, name it in the axis (tiers.fp8.scheduler.enable_prefix_caching: [...])") \
        in " ".join(err.split())
    report = _flat((ROOT / "docs" / "report.md").read_text())
    assert "A value replaces what its path names whole: a map is not merged" in report


def test_readme_says_why_inspects_prefix_bound_differs_from_a_runs():
    """`tiersim trace inspect` of Mooncake's trace read "prefix hits, unbounded cache 65.1%"
    and a run of it on Qwen3-30B-A3B "unbounded cache 60.9 %": the run counts only the
    requests its tiers admit (307 are longer than the model's context); the README said both
    were counted alike."""
    readme = _flat((ROOT / "README.md").read_text())
    assert ("over every request of the file: a run's bound counts only the requests its tiers "
            "admit (Mooncake's synthetic trace: 65.1% here, 60.9% in a run on Qwen3-30B-A3B")\
        in readme
