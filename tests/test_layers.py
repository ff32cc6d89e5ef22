"""The reference's modules form layers: values below actions, no cycles, no harness.

Value modules hold immutable values and pure functions of them (what a state is, what a
rule computes); action modules change a step's ``Draft``. A value module never imports
an action module (so ``invariants`` or ``clock`` cannot reach into the leader's code
to ask who leads), no two modules import each other even indirectly, and nothing in
``reference_impl`` imports the harness (``conformance``).
"""

from __future__ import annotations

import ast
from pathlib import Path

HOME = Path(__file__).resolve().parents[1]


PACKAGE = HOME / "reference_impl"

VALUE_MODULES = {
    "__init__",
    "config",
    "describe",
    "epoch_cache",
    "errors",
    "generation",
    "given",
    "history",
    "hw",
    "initial",
    "invariants",
    "log",
    "messages",
    "observe",
    "state",
    "steps",
    "truncation",
    "values",
}
ACTION_MODULES = {
    "choices",
    "alter_partition",
    "apply",
    "broker",
    "clock",
    "consumer",
    "controller",
    "draft",
    "enabled",
    "epoch_leader",
    "fetch_purgatory",
    "follower",
    "hw_advance",
    "isr",
    "leader_fetch",
    "network",
    "producer",
    "purgatory",
    "replica_ops",
    "roles",
    "rounds",
}


def imports(module: str) -> tuple[set[str], set[str]]:
    """(modules of the package it imports, top-level packages it imports)."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    local: set[str] = set()
    outside: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                local.add(node.module.split(".")[0])
            elif node.level == 1:
                local.update(alias.name for alias in node.names)
            elif node.module:
                outside.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            outside.update(alias.name.split(".")[0] for alias in node.names)
    return local, outside


def modules() -> set[str]:
    return {path.stem for path in PACKAGE.glob("*.py")}


def test_every_module_has_a_layer() -> None:
    assert modules() == VALUE_MODULES | ACTION_MODULES
    assert not VALUE_MODULES & ACTION_MODULES


def test_value_modules_never_import_action_modules() -> None:
    for module in VALUE_MODULES - {"__init__"}:
        local, _ = imports(module)
        assert not local & ACTION_MODULES, f"{module} imports action modules {sorted(local & ACTION_MODULES)}"


def test_the_reference_never_imports_the_harness() -> None:
    for module in modules():
        _, outside = imports(module)
        assert "conformance" not in outside, module
        assert not outside - {
            "__future__",
            "collections",
            "dataclasses",
            "enum",
            "functools",
            "itertools",
            "bisect",
            "importlib",  # apply resolves the step table's ``module.function`` names in this package
            "operator",
            "typing",
        }, f"{module} imports {sorted(outside)}: the model needs no I/O"


def test_no_import_cycles() -> None:
    graph = {module: imports(module)[0] - {"__init__"} for module in modules() - {"__init__"}}
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        if state.get(module) == "done":
            return
        assert state.get(module) != "open", "import cycle: " + " -> ".join([*path, module])
        state[module] = "open"
        for other in sorted(graph[module]):
            visit(other, [*path, module])
        state[module] = "done"

    for module in sorted(graph):
        visit(module, [])
