"""Contracts of DESIGN.md (../shared) and docs/CONTRACTS.md that no test could fail on before
round 55's audit (design55): each test names the contract it holds.

- the router interface, for every registered policy (docs/CONTRACTS.md, Routing);
- "same scenario and seed, same results, bit for bit" for every file of a run folder and of a
  plan, not summary.json alone (DESIGN.md section 4);
- every file the package tracks under tiersim/ ships in the wheel, not a sample of them
  (DESIGN.md section 2: "shipped data, packaged so a wheel install finds them");
- every figure of the console's headline table says where it comes from, on each golden run;
- the README's two setup commands name what pyproject.toml and .ci/run provide.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import TINY, tiny_doc, write_yaml
from test_interrupted_writes import _without_wall_time  # plan.json less its wall_s

from tiersim.routing import ROUTERS, Assignment, TierInfo, build_router, prepare_workload
from tiersim.routing.policies import config_reads_realised

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden"

# ------------------------------------------------------------------ the router interface

TIERS = [TierInfo("w4", accuracy={"easy": 0.97, "hard": 0.4}, cost_weight=1.0),
         TierInfo("fp8", accuracy={"easy": 0.99, "hard": 0.7}, cost_weight=1.6),
         TierInfo("bf16", accuracy={"easy": 1.0, "hard": 0.9}, cost_weight=2.5)]

#: one valid configuration of every policy in ROUTERS, and whether it scores with a classifier
POLICIES = {
    "uniform": ({"policy": "uniform"}, False),
    "static_split": ({"policy": "static_split", "fractions": [0.3, 0.3, 0.4]}, False),
    "threshold": ({"policy": "threshold", "thresholds": [0.6, 0.8]}, True),
    "lagrangian": ({"policy": "lagrangian", "lambda": 0.1}, True),
    "oracle": ({"policy": "oracle"}, False),
    "cascade": ({"policy": "cascade", "cascade": {"from_tier": "w4", "to_tier": "bf16"}},
                False),
    "floor": ({"policy": "floor", "floor": 0.8}, True),
    "budget": ({"policy": "budget", "budget_relative": 0.5}, True),
    "step_type": ({"policy": "step_type", "step_tiers": {"planning": "bf16"},
                   "step_fallback": "threshold", "thresholds": [0.6, 0.8]}, True),
}


def _workload(n: int = 3_000) -> pd.DataFrame:
    """Three-type requests with drawn correctness and a step type for the step_type router."""
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"input_tokens": rng.integers(50, 4000, n).astype(np.int32),
                       "output_tokens": rng.integers(10, 500, n).astype(np.int32),
                       "step_type": rng.choice(["planning", "tool_call"], n)})
    cfg = {"difficulty": {"kind": "three_type", "p_easy": 0.6, "p_hopeless": 0.1,
                          "hint_auroc": 0.8}}
    return prepare_workload(df, TIERS, cfg, np.random.default_rng(3)).df


def test_every_registered_policy_has_a_case_here():
    assert set(POLICIES) == set(ROUTERS)


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("confused", [False, True])
# a uniform router's FNR is already 100 %: the injected FNR is idle there, and says so
@pytest.mark.filterwarnings("ignore::tiersim.errors.IdleConfusion")
def test_every_router_gives_the_assignment_contract(policy, confused):
    """``Router.assign(df, rng) -> Assignment``: int64 tier and escalation arrays, one entry
    per request in table order, tiers indexed cheapest first, an escalation to a dearer tier
    or -1; ``basis`` "realised" exactly when the router reads realised correctness (a cascade,
    or ``confusion`` set: ``config_reads_realised`` from the config alone agrees); a
    classifier, and so a score per request, exactly for the policies docs/CONTRACTS.md names
    (threshold, lagrangian, floor, budget, a step_type falling back to one); the same rng, the
    same assignment."""
    cfg, scored = POLICIES[policy]
    if confused:
        cfg = {**cfg, "confusion": {"fpr": 0.1, "fnr": 0.05}}
    df = _workload()
    router = build_router(cfg, TIERS, train_df=df, rng=np.random.default_rng(1))
    a = router.assign(df, np.random.default_rng(2))
    n, k = len(df), len(TIERS)
    assert isinstance(a, Assignment)
    for name in ("tier", "escalate_to"):
        values = getattr(a, name)
        assert values.dtype == np.int64 and values.shape == (n,), name
    assert ((a.tier >= 0) & (a.tier < k)).all()
    escalated = a.escalate_to >= 0
    assert (a.escalate_to[~escalated] == -1).all()
    assert (a.tier[escalated] < a.escalate_to[escalated]).all()
    assert (a.escalate_to < k).all()
    assert a.basis == ("realised" if router.scores_realised() else "expected")
    assert config_reads_realised(router.cfg) == router.scores_realised()
    assert (a.basis == "realised") == (confused or policy == "cascade")
    if a.refused_to is not None:
        assert a.refused_to.shape == (n,) and (a.refused_to >= -1).all()
    # the score is left for ``inputs.route`` to attach (docs/CONTRACTS.md), from the
    # classifier a router with one holds
    assert (router.classifier is not None) == scored
    if scored:
        score = router.classifier.score(df)
        assert score.shape == (n,) and np.isfinite(score).all()
    again = router.assign(df, np.random.default_rng(2))
    np.testing.assert_array_equal(again.tier, a.tier)
    np.testing.assert_array_equal(again.escalate_to, a.escalate_to)


# ------------------------------------------------------------------ same seed, same bytes

def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tiersim", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def _files(folder: Path) -> dict[str, bytes]:
    """The folder's result files (not ``.lock``, which holds the writer's process id)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".")}


def test_a_run_folder_is_the_same_bytes_at_the_same_seed(tmp_path):
    """DESIGN.md section 4: "same scenario and seed, same results, bit for bit". The tests
    held summary.json to it (test_runner::test_same_seed_same_summary_bytes); the per-request
    table, the load series, the scenario as run and the manifest (its run id is a digest of
    the files) are results too, and a planner diffs run folders."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={**tiny_doc()["trace"], "path": str(
        TINY.parent.parent / "traces" / "azure2023_code.parquet")}))
    for name in ("a", "b"):
        ran = _cli("run", str(path), "--out", name, "--no-baselines", cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr[-2000:]
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert {"requests.parquet", "timeseries.parquet", "summary.json", "scenario.yaml",
            "manifest.json", "report.html"} <= set(first)
    assert set(first) == set(second)
    for name in first:
        if name != "report.html":  # the page names its folder (a, b)
            assert first[name] == second[name], f"{name} differs between two runs"


def test_a_plan_is_the_same_at_the_same_seed(tmp_path):
    """The same for ``tiersim plan``: plan.json the same less its wall times (the only field
    two plans of the same inputs write differently), the planned run's files the same bytes."""
    path = write_yaml(tmp_path / "s.yaml", tiny_doc(trace={**tiny_doc()["trace"], "path": str(
        TINY.parent.parent / "traces" / "azure2023_code.parquet")}))
    for name in ("a", "b"):
        planned = _cli("plan", str(path), "--out", name, "--no-report", "--check-seeds", "1",
                       cwd=tmp_path)
        assert planned.returncode == 0, planned.stderr[-2000:]
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert set(first) == set(second) and "plan.json" in first
    assert _without_wall_time(json.loads(first.pop("plan.json"))) == _without_wall_time(
        json.loads(second.pop("plan.json")))
    assert first == second


# ------------------------------------------------------------------ a source on every figure

@pytest.mark.parametrize("golden", sorted(p.name for p in GOLDEN.glob("*_summary.json")))
def test_every_console_headline_figure_names_its_source(golden):
    """The console's headline table has a source cell on every row, not only the rows the
    report's test pairs with its own (test_report_sources), on each golden run."""
    from tiersim.cli.run import headline_table
    from tiersim.results import RunResult

    table = headline_table(RunResult.read(GOLDEN / golden))
    metrics, values, sources = (list(table.columns[i].cells) for i in (0, 1, 2))
    assert len(metrics) >= 10
    empty = [m for m, v, s in zip(metrics, values, sources, strict=True)
             if str(v).strip() and not str(s).strip()]
    assert empty == []


# ------------------------------------------------------------------ the README's two commands

def _two_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, re.S)


def test_the_readmes_setup_commands_name_what_the_project_provides():
    """README's install command names an extra pyproject.toml declares, its console script
    and the Python it requires; its test command is the one .ci/run runs, whose install takes
    the same extra and more."""
    install, test = _two_commands()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert install == ("python3 -m venv .venv && . .venv/bin/activate && "
                       "pip install -e '.[test]' && tiersim run --out out/default")
    (extras,) = re.findall(r"pip install -e '\.\[([a-z,]+)\]'", install)
    assert set(extras.split(",")) <= set(project["optional-dependencies"])
    assert {"pytest", "hypothesis"} <= {re.split(r"[<>=!~ \[]", d)[0]
                                        for d in project["optional-dependencies"]["test"]}
    assert project["scripts"]["tiersim"] == "tiersim.cli:app"
    assert project["requires-python"] == ">=3.11"
    assert "Python >= 3.11" in (ROOT / "README.md").read_text().split("```bash", 1)[0]
    assert (ROOT / "tiersim" / "scenarios" / "default.yaml").is_file()  # run's default
    assert test == "python -m pytest"
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python -m pytest "$@"' in ci
    (ci_extras,) = re.findall(r"pip install --quiet -e '\.\[([a-z,]+)\]'", ci)
    assert set(extras.split(",")) <= set(ci_extras.split(","))
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["testpaths"] == ["tests"]


# ------------------------------------------------------------------ docs/CONTRACTS.md's lists

def _contracts() -> str:
    return (ROOT / "docs" / "CONTRACTS.md").read_text()


def test_contracts_names_every_command_line_module():
    """The Command line section lists the cli modules; round 54 added three it did not name."""
    section = _contracts().split("### Command line", 1)[1].split("\n### ", 1)[0]
    modules = {p.stem for p in (ROOT / "tiersim" / "cli").glob("*.py")} - {"__init__"}
    assert sorted(m for m in modules if f"`{m}`" not in section) == []


def test_contracts_names_every_results_module_and_what_tiersim_results_exports():
    import tiersim.results as results

    text = _contracts()
    modules = {p.stem for p in (ROOT / "tiersim").glob("results_*.py")}
    assert sorted(m for m in modules if f"`tiersim.{m}`" not in text) == []
    for name in ("RunResult", "TierResult", "RouterResult", "RouterQuality", "SavingsResult",
                 "UniformBaseline", "Sources", "ProfileUsed", "PlanResult", "within_limit"):
        assert hasattr(results, name), name


# ------------------------------------------------------------------ DESIGN.md section 6

#: requests.parquet's columns as DESIGN.md section 6 lists them ("prefix tokens hit" is
#: ``prefix_hit_tokens``); test_runner compared the file with the code's own list alone, so a
#: column dropped from both passed.
DESIGN_REQUEST_COLUMNS = ("tier", "replica", "arrival_s", "first_token_s", "finish_s", "ttft_s",
                          "tpot_s", "e2e_s", "queue_s", "preemptions", "escalated",
                          "prefix_hit_tokens", "expected_accuracy", "cost_usd")


def test_the_request_table_holds_designs_columns():
    from tiersim.summary import REQUEST_COLUMNS, SESSION_COLUMNS

    assert [c for c in DESIGN_REQUEST_COLUMNS if c not in REQUEST_COLUMNS] == []
    assert {"session_id", "step"} <= set(SESSION_COLUMNS)  # "session/step for agentic traffic"


# ------------------------------------------------------------------ bundled scenarios

@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "tiersim" / "scenarios")
                                        .glob("*.yaml")))
def test_every_bundled_scenario_loads_and_reads_its_trace_from_the_package(name):
    """DESIGN.md section 2: "profiles/ traces/ scenarios/ shipped data, packaged so a wheel
    install finds them". Every scenario the package ships is valid, names a trace the package
    ships (or one it generates) and a profile it ships, so `tiersim run NAME` works from a
    wheel (the wheel test runs tiny and default only)."""
    from tiersim.inputs import load_scenario_trace
    from tiersim.paths import bundled
    from tiersim.scenario import load_scenario

    path = bundled("scenarios", name)
    scenario = load_scenario(path)
    profile = scenario.profile
    if profile is not None:
        assert Path(bundled("profiles", Path(profile).name)).is_file()
    loaded = load_scenario_trace(scenario, str(path))
    assert len(loaded.table) > 0
    assert Path(loaded.origin.path).resolve().parent == (ROOT / "tiersim" / "traces").resolve()
