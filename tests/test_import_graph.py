"""No import cycle between tiersim's subpackages and top-level modules, nor between any two
modules; no domain code imports the command line.

Every ``import`` and ``from ... import`` under ``tiersim/`` is read from the source (the AST),
at module level and inside functions alike; imports under ``if TYPE_CHECKING:`` are left out
(they never run). Each module is reduced to its node: the subpackage it belongs to
(``tiersim.routing.policies`` -> ``tiersim.routing``) or the top-level module itself
(``tiersim.runner``). Edges inside one node are ignored; the graph of the rest must be acyclic.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tiersim"


def node_of(module: str) -> str:
    """The graph node of a dotted module name: ``tiersim.<first part>`` (or ``tiersim``)."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    """Dotted name of a source file under the package."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking(test: ast.expr) -> bool:
    """True for ``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_statements(tree: ast.AST, module: str,
                      is_package: bool) -> list[tuple[str, tuple[str, ...]]]:
    """Every import of ``module`` anywhere (TYPE_CHECKING blocks left out), as (the module it
    names, the names ``from ... import`` takes from it; none for a plain ``import``)."""
    found: list[tuple[str, tuple[str, ...]]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((a.name, ()) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join([*here, base] if base else here)
            found.append((base, tuple(a.name for a in node.names)))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def imported(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every tiersim module ``module`` imports anywhere (TYPE_CHECKING blocks left out)."""
    found: set[str] = set()
    for base, names in import_statements(tree, module, is_package):
        found.add(base)
        found.update(f"{base}.{name}" for name in names)
    return {name for name in found if name == "tiersim" or name.startswith("tiersim.")}


def existing(name: str, modules: set[str]) -> str | None:
    """``name`` if it is a tiersim module, else its longest existing parent (``from a import
    b`` names an attribute ``b`` of module ``a`` as often as a submodule)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Node -> nodes it imports (edges within a node left out)."""
    sources = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        tree = ast.parse(path.read_text(), str(path))
        src = node_of(module)
        graph.setdefault(src, set())
        for name in imported(tree, module, path.name == "__init__.py"):
            target = existing(name, set(sources))
            if target is None:
                continue
            dst = node_of(target)
            if dst != src and dst != "tiersim":  # the root package only names the version
                graph[src].add(dst)
    return graph


def named_modules(tree: ast.AST, module: str, is_package: bool,
                  modules: set[str]) -> set[str]:
    """The tiersim modules ``module`` imports anywhere (TYPE_CHECKING blocks left out), each
    ``from a import b`` counted as module ``a.b`` where that is one, else as ``a``."""
    found: set[str] = set()
    for base, names in import_statements(tree, module, is_package):
        found.update(f"{base}.{n}" if f"{base}.{n}" in modules else base for n in names)
        if not names:
            found.add(base)
    return {t for name in found if (t := existing(name, modules)) and t != module}


def module_graph() -> dict[str, set[str]]:
    """Module -> the tiersim modules it imports (:func:`named_modules`), every module its own
    node (the root package, which only names the version, left out)."""
    sources = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {module: named_modules(ast.parse(path.read_text(), str(path)), module,
                                  path.name == "__init__.py", set(sources)) - {"tiersim"}
            for module, path in sources.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of nodes (first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)):
            return cycle
    return None


def test_no_import_cycle_between_subpackages():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_import_cycle_between_modules():
    """Inside a subpackage too: modules split from one another (perf.profile_*, sweep.*,
    results_*, trace.*) import one way, at module level and inside functions alike."""
    cycle = find_cycle(module_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_from_import_names_the_submodule_it_takes():
    modules = {"tiersim.trace", "tiersim.trace.filecheck", "tiersim.trace.formats"}
    tree = ast.parse("from tiersim.trace import filecheck\nfrom .formats import KNOWN\n"
                     "from tiersim.trace import open_trace\n")
    assert named_modules(tree, "tiersim.trace.read_csv", False, modules) == {
        "tiersim.trace.filecheck", "tiersim.trace.formats", "tiersim.trace"}


def test_no_domain_package_imports_the_command_line():
    graph = import_graph()
    users = sorted(n for n, targets in graph.items() if "tiersim.cli" in targets
                   and n not in ("tiersim.cli", "tiersim.__main__"))
    assert users == []


def test_the_cycle_finder_sees_cycles_and_type_checking_imports_are_skipped():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    from tiersim.scenario import Scenario\n"
                     "def f():\n    from tiersim.perf import x\n")
    assert imported(tree, "tiersim.fleet", False) == {"tiersim.perf", "tiersim.perf.x"}
    relative = ast.parse("from .accuracy import expected_matrix\n")
    assert "tiersim.routing.accuracy" in imported(relative, "tiersim.routing.metrics", False)


@pytest.mark.parametrize("module", ["tiersim.calibrate.__main__"])
def test_the_harness_entry_needs_no_cli_libraries(module):
    """``python -m tiersim.calibrate`` must run with torch and numpy alone."""
    path = PACKAGE / Path(*module.split(".")[1:]).with_suffix(".py")
    graph_nodes = {node_of(n) for n in imported(ast.parse(path.read_text()), module, False)}
    assert "tiersim.cli" not in graph_nodes
