"""The harness's shape (issue 23): ``conformance/`` is a few packages, one concern each,
with no import cycles, counting imports inside functions too.

A function-level import hides a cycle from Python (the module is half-built only when the
function runs) but not from a reader: two modules that import each other are one module
in two files. So the graph here has an edge for every ``import`` anywhere in a module.
Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first; those implicit edges
are left out (a package's ``__init__`` importing its own modules is not a cycle), the
explicit ones (``from . import x`` naming the package) are kept.
"""

from __future__ import annotations

import ast
from pathlib import Path

HOME = Path(__file__).resolve().parents[1]
PACKAGES = ("conformance", "kconform")
PACKAGE_LIMIT = 10
"""Packages at ``conformance/``'s top level; beside them only the user-facing ``sdk.py``
(and ``__init__.py``, ``py.typed``)."""


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the harness."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((HOME / package).rglob("*.py")):
            parts = list(path.relative_to(HOME).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the harness modules it imports anywhere (module level, functions,
    ``TYPE_CHECKING`` blocks)."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in files)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    if f"{source}.{alias.name}" in files:
                        edges.add(f"{source}.{alias.name}")
                    elif source in files:
                        edges.add(source)
        edges.discard(module)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that ends where it starts, or None."""
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> list[str] | None:
        if state.get(module) == "done":
            return None
        if state.get(module) == "open":
            return [*path[path.index(module) :], module]
        state[module] = "open"
        for other in sorted(graph.get(module, ())):
            found = visit(other, [*path, module])
            if found:
                return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        found = visit(module, [])
        if found:
            return found
    return None


def test_the_harness_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_function_level_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_function_level_imports_are_edges() -> None:
    graph = import_graph()
    # pytest_plugin imports its items only inside pytest_configure (so an unused plugin is free)
    assert "conformance.pytest_plugin.items" in graph["conformance.pytest_plugin"]


def test_the_top_level_is_a_few_packages() -> None:
    entries = sorted(
        p.name for p in (HOME / "conformance").iterdir() if p.name not in ("__init__.py", "py.typed", "__pycache__")
    )
    modules = [name for name in entries if name.endswith(".py")]
    assert len(entries) - len(modules) <= PACKAGE_LIMIT, entries
    assert modules == ["sdk.py"], f"only user-facing modules stay at the top (docs/api.md): {modules}"
