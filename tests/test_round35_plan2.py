"""Round 35 (plan2): the routing modules import one way; the analytic static split names its
tiers; a request longer than any model's context is told so."""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROUTING = Path(__file__).resolve().parent.parent / "tiersim" / "routing"


def routing_imports(path: Path) -> set[str]:
    """The ``tiersim.routing`` modules ``path`` imports anywhere (TYPE_CHECKING left out)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            return
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tiersim.routing."):
            found.add(node.module.removeprefix("tiersim.routing."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


def test_routing_modules_import_one_way():
    """No cycle among the routing modules: constrained and step_type import the base, which
    imports neither them nor policies (policies.py imported Budget, Floor and StepType below
    its registry, and they imported Router from it)."""
    graph = {p.stem: routing_imports(p) for p in ROUTING.glob("*.py") if p.stem != "__init__"}
    seen: dict[str, int] = {}

    def walk(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, " -> ".join((*path, module))
        if seen.get(module):
            return
        for target in graph.get(module, ()):
            walk(target, (*path, module))
        seen[module] = 1

    for module in graph:
        walk(module, ())
    assert "policies" not in graph["constrained"] | graph["step_type"] | graph["base"]


def test_old_homes_still_export_the_base():
    """Router, _single, cost_scale and ROUTERS are the same objects from policies and base."""
    from tiersim.routing import ROUTERS as package_routers
    from tiersim.routing import base, policies

    assert policies.Router is base.Router and policies._single is base._single
    assert policies.cost_scale is base.cost_scale
    assert policies.ROUTERS is base.ROUTERS is package_routers
    assert set(base.ROUTERS) == {"uniform", "static_split", "threshold", "lagrangian", "oracle",
                                 "cascade", "floor", "budget", "step_type"}


def _analytic_last_line(tmp_path, *flags: str) -> str:
    """The at-floor line of ``tiersim analytic --scenario`` on round 35's three-tier B200
    scenario (nvfp4 / fp8 / bf16, floor 0.84)."""
    from test_round35_planfix import _three_tiers
    from typer.testing import CliRunner

    from tiersim.cli.analytic import analytic_app

    res = CliRunner().invoke(analytic_app, ["--scenario", str(_three_tiers(tmp_path)), *flags])
    assert res.exit_code == 0, res.output
    return res.output.splitlines()[-1]


def test_analytic_static_split_names_the_two_compared_tiers(tmp_path):
    """The uniform fleet is chosen among every tier; the closed form's static split is the
    compared pair's only, and the line says which pair (it read a bare "static split")."""
    assert _analytic_last_line(tmp_path) == (
        "at floor 0.8400: oracle 0.103877, cheapest uniform of the scenario's 3 tiers (fp8) "
        "0.178966, static split of the two compared tiers (nvfp4, bf16) 0.12679; saving vs "
        "uniform 0.0750889, vs static 0.0229125; source: two-type closed form of p / eps / "
        "delta, c0 / dc and the top tier's accuracy; the uniform fleet's cost: the scenario's "
        "fleet sized by simulation, as run prices it")


def test_analytic_static_split_names_the_pair_out_of_reach_and_in_json(tmp_path):
    line = _analytic_last_line(tmp_path, "--floor", "0.95")
    assert ", static split of the two compared tiers (nvfp4, bf16) out of reach;" in line
    at = json.loads(_analytic_json(tmp_path, "--cheap", "fp8"))["at_floor"]
    assert at["static_split_tiers"] == ["fp8", "bf16"]


def _analytic_json(tmp_path, *flags: str) -> str:
    """``tiersim analytic --scenario ... --json`` output."""
    from test_round35_planfix import _three_tiers
    from typer.testing import CliRunner

    from tiersim.cli.analytic import analytic_app

    res = CliRunner().invoke(analytic_app, ["--scenario", str(_three_tiers(tmp_path)), "--json",
                                            *flags])
    assert res.exit_code == 0, res.output
    return res.output


def test_analytic_flags_alone_keep_the_bare_static_split():
    """--p/--eps/--delta: a model of two unnamed tiers; nothing to name."""
    from typer.testing import CliRunner

    from tiersim.cli.analytic import analytic_app

    res = CliRunner().invoke(analytic_app, ["--p", "0.5", "--eps", "0", "--delta", "0.5",
                                            "--floor", "0.9"])
    assert res.exit_code == 0, res.output
    assert ", cheapest uniform 1, static split 0.6; saving" in res.output.splitlines()[-1]


def test_run_note_on_a_request_beyond_the_models_context_does_not_say_raise(tmp_path, capsys):
    """One bf16 tier capped at max_model_len 1,000 (its model takes 262,144) and a request of
    10,000,010 tokens: the note said "raise that (up to its model's context)", which no
    max_model_len can; it says the request exceeds the model's maximum context."""
    from test_round23_extremes import _run

    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 10**7, 10)],
                     {"scheduler": {"max_model_len": 1000}})
    assert code == 0, err
    assert ("the first is request_id 1 (10,000,010 tokens on tier bf16, which serves at most "
            "1,000, its scheduler.max_model_len): it exceeds its model's maximum context "
            "(262,144 tokens), which no max_model_len serves: shorten or remove such rows, or "
            "serve them on a model with a longer context") in err


def test_run_note_on_a_request_within_the_models_context_still_says_raise(tmp_path, capsys):
    from test_round23_extremes import _run

    code, err = _run(tmp_path, capsys, [(0, 0.0, 100, 10), (1, 1.0, 2000, 10)],
                     {"scheduler": {"max_model_len": 1000}})
    assert code == 0, err
    assert ("the first is request_id 1 (2,010 tokens on tier bf16, which serves at most 1,000, "
            "its scheduler.max_model_len): raise that (up to its model's context), or shorten "
            "or remove such rows") in err


def test_plan_advice_on_requests_beyond_the_models_context():
    """A one-tier design whose max_model_len (1,000) is below its model's 262,144: requests of
    10,000,010 tokens were told to "raise tiers[].scheduler.max_model_len"; those within the
    model's context still are."""
    from tiersim.plan.planner import _too_long

    assert _too_long([("w4a16", 2, 1000)], {"w4a16"}, {"w4a16": (2, 262_144)}) == (
        "2 requests are longer (prompt + output) than their tier's context (w4a16's "
        "max_model_len 1,000) and are dropped at any size; 2 on w4a16 exceed its model's "
        "maximum context (262,144 tokens), which no max_model_len serves: serve them on a "
        "model with a longer context or leave them out of the trace: "  # round 49: the key
        "trace.skip_longer_than: 262144 leaves them out at load, as vLLM refuses them at its "
        "API whatever the fleet")
    assert _too_long([("w4a16", 3, 1000)], {"w4a16"}, {"w4a16": (1, 262_144)}) == (
        "3 requests are longer (prompt + output) than their tier's context (w4a16's "
        "max_model_len 1,000) and are dropped at any size; raise w4a16's "
        "scheduler.max_model_len (up to its model's context); 1 on w4a16 exceeds its model's "
        "maximum context (262,144 tokens), which no max_model_len serves: serve it on a model "
        "with a longer context or leave them out of the trace")
