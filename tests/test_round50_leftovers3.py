"""Round 50, leftovers of the reviewers (helper left50c). Each test names what a user saw
before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_inputs import one_error_line, run_cli

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tiersim" / "scenarios"
FIX = "give host:port of a running Ray cluster, or leave it out"


@pytest.mark.parametrize(("address", "said"), [
    (":", "Error: --address ':': names no host before the port; " + FIX),
    ("[]:", "Error: --address '[]:': names no host before the port; " + FIX),
    ("ray://:", "Error: --address 'ray://:': names no host before the port; " + FIX),
    ("ray://:x", "Error: --address 'ray://:x': names no host before the port; " + FIX),
    ("localhost:", "Error: --address 'localhost:': names no port after the colon; " + FIX),
    ("localhost:0", "Error: --address 'localhost:0': port 0 is no TCP port (1 to 65535); "
     + FIX),
])
def test_a_ray_address_is_quoted_in_its_error(tmp_path, capsys, monkeypatch, address, said):
    """``--address :`` read "Error: --address :: names no host" (the value and the colon after
    it read as one ``::``); the value is quoted as other flags' text values are (``--gpu
    'h999'``). ``ray://:`` was probed as host ``:`` and read "nothing answers there"; it names
    no host, as ``:`` does."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor",
                                   "ray", "--address", address))
    assert line == said
    assert not (tmp_path / "o").exists()


def test_a_ray_address_in_the_environment_is_quoted_too(tmp_path, capsys, monkeypatch):
    """``RAY_ADDRESS=:`` is named as ``--address`` is, its value quoted."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RAY_ADDRESS", ":")
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--executor",
                                   "ray"))
    assert line == ("Error: RAY_ADDRESS=':' (in the environment): names no host before the "
                    "port; set it to host:port of a running Ray cluster, or unset it to start "
                    "a local Ray")


def test_an_address_without_the_ray_executor_is_quoted(tmp_path, capsys, monkeypatch):
    """``--address`` beside local processes is quoted the same way."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text((SCENARIOS / "tiny.yaml").read_text())
    line = one_error_line(*run_cli(capsys, "sweep", "s.yaml", "--out", "o", "--address", ":"))
    assert line == ("Error: --address ':': a Ray cluster's address; give --executor ray with "
                    "it, or drop it to run on local processes")


def test_the_analytic_cost_bound_is_quoted_as_a_user_writes_it(capsys):
    """``tiersim analytic --dc 1e13`` read "must be from 0 to 1e+12": Python's spelling of the
    bound, which no one writes; it reads 1e12."""
    line = one_error_line(*run_cli(capsys, "analytic", "--p", "0.5", "--eps", "0.01",
                                   "--delta", "0.2", "--dc", "1e13", "--c0", "1"))
    assert line == "Error: tiersim analytic: --dc: must be from 0 to 1e12 (got 1e13)"


@pytest.mark.parametrize(("replicas", "gpus", "said"), [
    (1, 1, "its 1 GPU is provisioned"),
    (2, 1, "its 2 x 1 GPUs are provisioned"),
    (1, 2, "its 1 x 2 GPUs are provisioned"),
])
def test_the_idle_tier_note_counts_its_gpus_grammatically(replicas, gpus, said):
    """The note for a paid tier that ran no request read "its 2 x 1 GPU are provisioned" (and
    "its 1 x 1 GPU are"); the fleet is written as the run's tables write it (2 x 1)."""
    import warnings
    from types import SimpleNamespace

    from tiersim.errors import Note
    from tiersim.runner import _note_idle_tiers

    idle = SimpleNamespace(name="fp8", passes=0, requests=0, cost_usd=0.5, replicas=replicas,
                           gpus_per_replica=gpus)
    busy = SimpleNamespace(name="bf16", passes=3, requests=3, cost_usd=0.5, replicas=1,
                           gpus_per_replica=1)
    run = SimpleNamespace(cost_model="provisioned", tiers=[idle, busy], cost_usd=1.0)
    scenario = SimpleNamespace(router=SimpleNamespace(policy="uniform"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _note_idle_tiers(run, scenario, "s.yaml")
    assert [str(w.message) for w in caught if issubclass(w.category, Note)] == [
        "s.yaml: tier fp8 ran no request (the router is uniform: every request to one tier), "
        f"yet {said}: 0.500 of the run's 1.00 USD; remove the tier, or route to it (router.policy: "
        "floor with an accuracy_floor, say)"]


def test_trace_inspect_names_the_file_as_typed(tmp_path, capsys, monkeypatch):
    """``tiersim trace inspect ./b.csv`` named the file ``b.csv`` (a ``Path`` drops the
    ``./``); it is named as typed, in an error and in the table's heading."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.csv").write_text("a,b\n1,2\n")
    (tmp_path / "c.csv").write_text("arrival_s,input_tokens,output_tokens\n0,10,5\n1,10,5\n")
    line = one_error_line(*run_cli(capsys, "trace", "inspect", "./b.csv"))
    assert line == ("Error: ./b.csv: not a trace: none of its 2 column name(s) is a trace "
                    "column; expected azure (TIMESTAMP, ContextTokens, GeneratedTokens); "
                    "burstgpt (Timestamp, Request tokens, Response tokens); mooncake "
                    "(timestamp, input_length, output_length); canonical (arrival_s, "
                    "input_tokens, output_tokens)")
    from tiersim.cli import main

    capsys.readouterr()
    assert main(["trace", "inspect", "./c.csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "./c.csv (canonical)"
