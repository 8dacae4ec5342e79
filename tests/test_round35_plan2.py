"""Round 35 (plan2): the routing modules import one way; the analytic static split names its
tiers; a request longer than any model's context is told so."""

from __future__ import annotations

import ast
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
