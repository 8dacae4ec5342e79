"""Round 17: findings from outside on results (static split, response-cache hits in flight,
cascade planning, plan savings under a restricted GPU set) and their fixes."""

from __future__ import annotations

import numpy as np
import pytest

from tiersim.routing.metrics import static_split_cost


def test_a_static_split_may_be_one_tier_that_alone_reaches_the_accuracy():
    # uniform bf16 at $3.50 reaches 80.86% > the routed 78.85%: the split is that tier alone,
    # never a dearer mix with a $5.25 tier (which printed a saving of -9% against it)
    cost, acc = np.array([5.25, 3.50]), np.array([0.7697, 0.8086])
    assert static_split_cost(0.7885, cost, acc) == pytest.approx(3.50)
    # a cheap tier below and a dear one above: the mix that lands on the accuracy exactly
    assert static_split_cost(0.80, np.array([1.0, 3.0]), np.array([0.70, 0.90])) == \
        pytest.approx(2.0)
    assert static_split_cost(0.95, np.array([1.0, 3.0]), np.array([0.70, 0.90])) is None


def test_a_repeat_arriving_while_its_answer_is_generated_waits_for_it(tmp_path):
    # an LRU hit whose shared answer was still being generated was scored lookup_s (5 ms)
    # while the coalesced request waited up to 3.3 s for the first answer
    import warnings

    import yaml

    from tiersim import runner
    from tiersim.paths import bundled
    from tiersim.response_cache import hit_latency, sources
    from tiersim.scenario import load_scenario

    doc = yaml.safe_load(bundled("scenarios", "response_cache.yaml").read_text())
    doc["trace"]["path"] = str(bundled("traces", "azure2023_conv.parquet"))
    doc["router"]["response_cache"].update(mode="lru", size=50,
                                           popularity={"distinct": 2000, "exponent": 1.0})
    path = tmp_path / "lru.yaml"
    path.write_text(yaml.safe_dump(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run, req, _, _ = runner._simulated(load_scenario(str(path)), str(path), False)
    cache = run.response_cache
    assert cache.hits > 0 and cache.e2e_p99_s > 10 * cache.lookup_s
    # the served table is in the order of the misses, which hit_latency relies on
    assert np.all(np.diff(req["arrival_s"].to_numpy()) >= 0)
    # a worked case: row 1 repeats row 0, arrives 1 s after it; row 0 answers at 3 s
    arrival = np.array([0.0, 1.0, 5.0])
    hit = np.array([False, True, True])
    source = sources(np.array([7, 7, 7]), type("C", (), {"mode": "lru", "size": 4})())
    assert source.tolist() == [-1, 0, 0]
    ttft, e2e = hit_latency(arrival, hit, source, np.array([0.5]), np.array([3.0]), 0.005)
    assert ttft.tolist() == [0.005, 0.005] and e2e.tolist() == [2.0, 0.005]


def test_when_growing_the_missing_tier_stops_helping_every_tier_is_grown():
    # a cascade's escalated requests miss on the tier they end on (bf16) but wait on the first
    # pass's queue: only more nvfp4 replicas help; the search called the design hopeless
    from tiersim.plan.search import Verdict, _double

    def look(replicas):
        overshoot = max(0.0, 8 - replicas["nvfp4"]) / 8
        return Verdict(ok=overshoot == 0, violators=("bf16",), overshoot=overshoot)

    replicas, why = _double(["nvfp4", "bf16"], {"nvfp4": 1, "bf16": 4}, look, 1024)
    assert why == "" and replicas["nvfp4"] >= 8
    never = _double(["nvfp4", "bf16"], {"nvfp4": 1, "bf16": 1},
                    lambda r: Verdict(ok=False, violators=("bf16",), overshoot=1.0), 1024)
    assert never[0] is None and never[1].startswith("more replicas do not help")


def test_the_report_shows_the_prefix_cache_figures_the_console_prints():
    import warnings

    from tiersim import runner
    from tiersim.paths import bundled
    from tiersim.report.page import prefix_cache_section
    from tiersim.scenario import load_scenario

    path = str(bundled("scenarios", "kv_offload.yaml"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = runner._simulated(load_scenario(path), path, False)[0]
    section = prefix_cache_section(run)
    tier = next(t for t in run.tiers if t.prefix_hit_rate is not None)
    assert section.startswith("<h3>Prefix cache</h3>") and tier.name in section
    from tiersim.cli.run import fmt

    # as the console prints it, "gpu 23.2 %" ("23.2%", one decimal place, before)
    assert f"gpu {fmt(tier.prefix_hit_by_level['gpu'], ' %', 100)}" in section
    assert f"{tier.offload_loads:,}" in section


def test_a_repeat_of_a_dropped_answer_gets_none():
    # 531 hits of a dropped miss were scored as answered in lookup_s (e2e mean 27% low)
    from tiersim.response_cache import hit_latency

    arrival, hit, source = np.array([0.0, 1.0]), np.array([False, True]), np.array([-1, 0])
    ttft, e2e = hit_latency(arrival, hit, source, np.array([np.nan]), np.array([np.nan]), 0.005)
    assert np.isnan(ttft).all() and np.isnan(e2e).all()


def test_the_run_sizes_its_uniform_baselines_within_the_scenarios_replica_limit(tmp_path):
    import yaml

    from tiersim.paths import bundled
    from tiersim.runner import run_scenario
    from tiersim.scenario import load_scenario

    doc = yaml.safe_load(bundled("scenarios", "routing.yaml").read_text())
    doc["trace"]["path"] = str(bundled("traces", doc["trace"]["path"]))
    doc["trace"]["window"] = [0, 300]
    doc["limits"] = {"max_replicas": 2}
    path = tmp_path / "lim.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = run_scenario(load_scenario(str(path)))
    assert all((u.replicas or 0) <= 2 for u in run.savings.uniform)


def test_a_quantised_checkpoint_takes_the_prior_of_the_format_holding_most_weights(tmp_path):
    # precision: checkpoint on an FP8 checkpoint refused to run without an accuracy
    import json

    from tiersim.inputs import _prior_precision

    config = {"model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 4,
              "max_position_embeddings": 32768,
              "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128,
              "vocab_size": 1000, "num_experts": 8, "num_experts_per_tok": 2,
              "moe_intermediate_size": 512, "intermediate_size": 1024}
    folder = tmp_path / "m"
    folder.mkdir()
    tier = type("T", (), {"precision": "checkpoint"})()
    for quant, prior in ((None, "bf16"),
                         ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
                         ({"quant_method": "mxfp4"}, "w4a16")):
        (folder / "config.json").write_text(json.dumps(
            {**config, **({"quantization_config": quant} if quant else {})}))
        scenario = type("S", (), {"tier_model_ref": lambda self, t: str(folder)})()
        assert _prior_precision(scenario, tier) == prior


def test_a_nested_router_setting_chosen_by_the_plan_is_written_nested():
    # --choose router.confusion.fpr=0.0,0.1 wrote the key "confusion.fpr" into the scenario,
    # which the plan then refused to read back
    from tiersim.cli.plan import planned_scenario
    from tiersim.paths import bundled
    from tiersim.scenario import load_scenario, scenario_from_dict

    scenario = load_scenario(str(bundled("scenarios", "routing_example.yaml")))
    plan = {"replicas": {"nvfp4": 1, "bf16": 1}, "gpus_per_replica": {"nvfp4": 1, "bf16": 1},
            "router": {"confusion.fpr": 0.1, "policy": "floor", "floor": 0.94}}
    doc = planned_scenario(scenario, plan, None)
    assert doc["router"]["confusion"] == {"fpr": 0.1}
    scenario_from_dict(doc, "planned.yaml")  # reads back


def test_a_named_block_fp8_or_mxfp4_tier_borrows_a_prior_and_says_so(tmp_path, capsys):
    # precision: fp8_block / mxfp4 failed with "no accuracy prior for precision 'fp8_block'"
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc()
    doc["tiers"] = [{**doc["tiers"][0], "name": "fb", "precision": "fp8_block"},
                    {**doc["tiers"][1], "name": "mx", "precision": "mxfp4"}]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    assert ("note: tier fb: no accuracy prior was measured for fp8_block; it borrows fp8's "
            "(block FP8 is FP8 at a finer scale); set the tier's accuracy to give its own") in err
    assert ("note: tier mx: no accuracy prior was measured for mxfp4; it borrows w4a16's (MXFP4 "
            "is 4-bit weights, served weight-only on H200 as W4A16 is); set the tier's accuracy "
            "to give its own") in err


def test_the_mxfp4_borrowed_prior_note_on_blackwell_makes_no_hopper_claim(tmp_path, capsys):
    # on a B200 the note said MXFP4 was "served weight-only on Hopper", where it runs natively
    from conftest import tiny_doc, write_yaml
    from test_hostile_inputs import run_cli

    doc = tiny_doc(gpu="B200")
    doc["tiers"] = [{**doc["tiers"][0], "name": "mx", "precision": "mxfp4"}, doc["tiers"][1]]
    code, err = run_cli(capsys, "run", write_yaml(tmp_path / "s.yaml", doc), "--out",
                        tmp_path / "o", "--no-baselines", "--no-report")
    assert code == 0, err
    assert ("note: tier mx: no accuracy prior was measured for mxfp4; it borrows w4a16's (MXFP4 "
            "is 4-bit weights as W4A16 is, the nearest format with a measured prior; B200 runs "
            "MXFP4 natively, which that prior does not measure); set the tier's accuracy to give "
            "its own") in err
    assert "Hopper" not in err


def test_the_mxfp4_borrowed_prior_reason_names_each_gpu():
    from tiersim.inputs import borrowed_because

    assert borrowed_because("mxfp4", "h100") == ("MXFP4 is 4-bit weights, served weight-only "
                                                 "on H100 as W4A16 is")
    assert "B200 runs MXFP4 natively" in borrowed_because("mxfp4", "B200")
    assert borrowed_because("fp8_block", "B200") == "block FP8 is FP8 at a finer scale"


def test_a_tier_with_its_own_accuracy_borrows_no_prior_silently():
    import warnings

    from tiersim.inputs import _prior_precision

    tier = type("T", (), {"name": "fb", "precision": "FP8_BLOCK", "accuracy": 0.8})()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _prior_precision(None, tier) == "fp8"


def test_a_tier_whose_accuracy_comes_from_labels_borrows_no_prior_and_says_nothing():
    """The borrowed-prior note named tiers whose accuracy the trace's labels gave."""
    import warnings
    from types import SimpleNamespace

    from tiersim.errors import Note
    from tiersim.inputs import _note_borrowed_priors

    scenario = SimpleNamespace(tiers=[SimpleNamespace(name="fb", precision="fp8_block")],
                               gpu="H200")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _note_borrowed_priors(scenario, {"fb": "labels"})
        _note_borrowed_priors(scenario, {"fb": "scenario"})
    with pytest.warns(Note, match="tier fb: no accuracy prior was measured for fp8_block"):
        _note_borrowed_priors(scenario, {"fb": "prior"})


def test_provisioned_closed_form_trades_on_price_per_hour_not_the_drain_tail():
    """Two uniform fleets of the same GPUs and price differ in provisioned cost only by when
    their last request finished: the closed form's dc is zero then (it was that noise), and
    otherwise the price per hour's difference on the cheap fleet's duration."""
    from types import SimpleNamespace as NS

    from tiersim.summary import _provisioned_dc

    pair = [NS(name="cheap"), NS(name="top")]
    same = {"cheap": NS(replicas=1, gpus_per_replica=1, cost_usd=0.5855),
            "top": NS(replicas=1, gpus_per_replica=1, cost_usd=0.5879)}
    prices = {"cheap": 3.5, "top": 3.5}
    assert _provisioned_dc("provisioned", same, pair, prices) == 0.0
    bigger = {**same, "top": NS(replicas=3, gpus_per_replica=2, cost_usd=3.6)}
    assert _provisioned_dc("provisioned", bigger, pair, prices) == pytest.approx(0.5855 * 5)
    assert _provisioned_dc("attributed", bigger, pair, prices) is None
