"""The CLI's shape (issue 23): a module per command, each owning its ``cmd_*`` functions and
its parser (``register``), the shared helpers public in ``common.py``, and only ``main``
assembling the command modules (so no command depends on another's private helpers)."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

from conformance.cli.main import build_parser

CLI = Path(__file__).resolve().parents[1] / "conformance" / "cli"
NOT_COMMANDS = {"__init__", "__main__", "main", "common"}


def command_modules() -> list[str]:
    return sorted(p.stem for p in CLI.glob("*.py") if p.stem not in NOT_COMMANDS)


def test_each_command_module_registers_its_own_parser() -> None:
    for name in command_modules():
        tree = ast.parse((CLI / f"{name}.py").read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "register" in functions, f"conformance/cli/{name}.py: no register(subparsers)"
        assert any(f.startswith("cmd_") for f in functions), f"conformance/cli/{name}.py: no cmd_* function"


def test_only_main_imports_a_command_module_and_nothing_private_crosses() -> None:
    commands = set(command_modules())
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level != 1:
                continue
            names = {a.name for a in node.names}
            imported = {node.module} if node.module else names
            if path.stem not in ("main", "__main__"):
                assert not imported & commands, f"{path.name} imports the command module(s) {imported & commands}"
            assert not {n for n in names if n.startswith("_")}, f"{path.name} imports private names: {names}"


def commands(parser: argparse.ArgumentParser) -> list[str]:
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


def test_the_commands_in_their_order_and_the_corpus_ones_only_when_asked() -> None:
    """``kconform --help`` lists the commands as before the split; a command registered at
    once leaves the corpus and ITF commands (and their imports) out."""
    at_once = ["run", "list", "validate", "explain", "impls", "report", "fuzz", "explore", "sensitivity", "diff"]
    assert commands(build_parser()) == [*at_once, "generate", "replay", "itf"]
    assert commands(build_parser("run")) == at_once
    assert commands(build_parser("replay")) == commands(build_parser("bogus")) == commands(build_parser())
