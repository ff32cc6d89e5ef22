"""docs/architecture.md is checked against the code: each module it names exists where it
says, each package and module of the harness and the reference is described, and the
harness's layering diagram holds for every import (module level and inside functions)."""

from __future__ import annotations

import re
from pathlib import Path

from test_harness_shape import import_graph

HOME = Path(__file__).resolve().parents[1]
DOC = (HOME / "docs" / "architecture.md").read_text(encoding="utf-8")
HARNESS = DOC[DOC.index("## The harness") :]
SECTION = re.compile(r"^### `conformance/([a-z_/]+)/`", re.M)


def sections() -> dict[str, str]:
    """Package path under conformance/ -> the text of its section."""
    heads = list(SECTION.finditer(HARNESS))
    return {
        m.group(1): HARNESS[m.end() : heads[i + 1].start() if i + 1 < len(heads) else len(HARNESS)]
        for i, m in enumerate(heads)
    }


def packages() -> set[str]:
    root = HOME / "conformance"
    return {
        p.parent.relative_to(root).as_posix()
        for p in root.rglob("__init__.py")
        if p.parent != root and "__pycache__" not in p.parts
    }


def named_modules(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_]+\.py)`", text))


def test_every_package_is_described() -> None:
    assert set(sections()) == packages()


def test_each_section_names_exactly_its_packages_modules() -> None:
    for package, text in sections().items():
        folder = HOME / "conformance" / package
        present = {p.name for p in folder.glob("*.py")} - {"__init__.py"}
        named = named_modules(text) - {"__init__.py"}
        assert named <= present, f"conformance/{package}/: named but missing {sorted(named - present)}"
        assert present <= named, f"conformance/{package}/: not described {sorted(present - named)}"


def test_the_top_level_modules_are_described() -> None:
    top = {p.name for p in (HOME / "conformance").glob("*.py")} - {"__init__.py"}
    intro = HARNESS[: SECTION.search(HARNESS).start()]  # type: ignore[union-attr]
    assert top <= named_modules(intro), sorted(top - named_modules(intro))


def test_every_reference_module_is_described() -> None:
    reference = DOC[: DOC.index("## The harness")]
    present = {p.name for p in (HOME / "reference_impl").glob("*.py")} - {"__init__.py"}
    named = named_modules(reference)
    assert named <= present, sorted(named - present)
    assert present <= named, sorted(present - named)


def layers() -> list[set[str]]:
    block = HARNESS[HARNESS.index("```text") + len("```text") : HARNESS.index("```", HARNESS.index("```text") + 7)]
    rows = [line.split()[1:] for line in block.strip().splitlines() if not line.startswith("-")]
    return [set(row) for row in rows]


def test_packages_import_only_lower_layers() -> None:
    level = {package: n for n, row in enumerate(reversed(layers())) for package in row}
    assert set(level) == {p for p in packages() if "/" not in p}
    for module, imported in import_graph().items():
        parts = module.split(".")
        if parts[0] != "conformance" or len(parts) < 3:
            continue
        for other in imported:
            theirs = other.split(".")
            if len(theirs) < 3 or theirs[1] == parts[1]:
                continue
            assert level[theirs[1]] < level[parts[1]], f"{module} imports {other}: {parts[1]} is not above {theirs[1]}"
