"""The layering DESIGN.md section 2 and docs/CONTRACTS.md state, checked on the import graph.

DESIGN.md: "arrows point down (engine never imports report; trace never imports engine ...).
The engine knows nothing about YAML." docs/CONTRACTS.md: "engine never imports
routing/report/scenario; trace never imports engine." test_import_graph.py checked only that
there is no cycle and that nothing imports the command line, so an edge down-to-up that closed
no cycle passed: round 36 made ``tiersim.trace.stats`` import ``tiersim.engine.prefix_cache``
for one line of arithmetic (design55, round 55).
"""

from __future__ import annotations

import ast

import pytest
from test_import_graph import PACKAGE, import_graph

#: node -> the nodes it must never import (DESIGN.md section 2, docs/CONTRACTS.md).
FORBIDDEN = {
    "tiersim.engine": {"tiersim.routing", "tiersim.report", "tiersim.scenario",
                       "tiersim.trace", "tiersim.runner", "tiersim.fleet", "tiersim.sweep",
                       "tiersim.plan", "tiersim.results"},
    "tiersim.trace": {"tiersim.engine", "tiersim.routing", "tiersim.report", "tiersim.fleet",
                      "tiersim.runner", "tiersim.sweep", "tiersim.plan"},
    "tiersim.perf": {"tiersim.engine", "tiersim.routing", "tiersim.report", "tiersim.trace"},
    "tiersim.hardware": {"tiersim.engine", "tiersim.perf", "tiersim.routing", "tiersim.report"},
}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The import graph, read once (every source file's AST)."""
    return import_graph()


@pytest.mark.parametrize("node", sorted(FORBIDDEN))
def test_a_lower_layer_never_imports_an_upper_one(graph, node):
    assert node in graph, f"{node} is no longer a node of the graph: update FORBIDDEN"
    assert sorted(graph[node] & FORBIDDEN[node]) == []


def test_the_engine_knows_nothing_about_yaml():
    """No module under tiersim/engine imports yaml (or the scenario layer, checked above)."""
    found = []
    for path in sorted((PACKAGE / "engine").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "yaml"]
    assert found == []
