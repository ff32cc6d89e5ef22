"""The generation profiles are the rows of the spec's Generations table.

Each row of the table in ``spec/replication.md`` names a ``Profile`` flag; each
generation's cell starts with ``yes`` or ``no``. The table and ``PROFILES`` must list
the same flags with the same values, and every generation has exactly one profile.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reference_impl.generation import FLAGS, PROFILES, Generation

HOME = Path(__file__).resolve().parents[1]

SPEC = (HOME / "spec" / "replication.md").read_text(encoding="utf-8")
SECTION = SPEC[SPEC.index("## Generations") : SPEC.index("## Invariants")]


def table() -> tuple[list[str], dict[str, list[str]]]:
    lines = [line for line in SECTION.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    generations = [re.search(r"`([a-z-]+)`", cell).group(1) for cell in header[2:]]  # type: ignore[union-attr]
    rows = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[2:]
    return generations, rows


def test_the_table_has_one_column_per_generation() -> None:
    generations, _ = table()
    assert generations == [g.value for g in Generation]
    assert set(PROFILES) == set(Generation)
    assert all(profile.generation is generation for generation, profile in PROFILES.items())


def test_the_table_rows_are_the_profile_flags() -> None:
    _, rows = table()
    assert list(rows) == list(FLAGS)


def test_every_cell_gives_the_flag_value() -> None:
    generations, rows = table()
    for flag, cells in rows.items():
        for name, cell in zip(generations, cells, strict=True):
            word = re.match(r"(yes|no)\b", cell)
            assert word, f"{flag} / {name}: the cell must start with yes or no, got {cell!r}"
            assert (word.group(1) == "yes") is getattr(PROFILES[Generation(name)], flag), (flag, name)


def test_actions_read_flags_not_generation_names() -> None:
    """No module of the reference but the generation table itself names a generation."""
    for path in sorted((HOME / "reference_impl").glob("*.py")):
        if path.name in ("generation.py", "config.py"):
            continue
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
        names = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Generation"
        }
        assert not names, f"{path.name} branches on generation names {sorted(names)}: use a Profile flag"
        assert "uses_epochs" not in path.read_text(encoding="utf-8"), path.name
