"""docs/levels.md's table of example implementations states the tool's own counts."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations.registry import resolve
from conformance.judging.runner import run_fixtures

DOCS = Path(__file__).resolve().parent.parent / "docs"

ROW = re.compile(r"^\| `((?:shape|choice)-[a-z0-9-]+)` \|[^|]*\| (.*) \|$", re.M)


@pytest.fixture(scope="module")
def table() -> dict[str, str]:
    text = (DOCS / "levels.md").read_text(encoding="utf-8")
    return dict(ROW.findall(text.split("## The example shapes", 1)[1]))


def test_every_row_states_the_tools_counts(table: dict[str, str]) -> None:
    assert len(table) == 16, sorted(table)  # four shapes, six variants, six twins
    fixtures, _ = load_fixtures([FIXTURES_DIR])
    assert f"gets on the {len(fixtures)} bundled fixture cases" in (DOCS / "levels.md").read_text(encoding="utf-8")
    for impl, verdict in table.items():
        _, results = run_fixtures(resolve(impl), impl, fixtures, level="settled")
        failed = {
            level: Counter((r.levels or {}).get(level) for r in results)["failed"] for level in ("exact", "settled")
        }
        if (m := re.match(r"`settled`: (\d+)/(\d+); fails `exact` on (\d+)", verdict)) is not None:
            passed, total, exact = map(int, m.groups())
            assert (total, passed, failed["settled"], failed["exact"]) == (len(results), total, 0, exact), impl
        elif (m := re.match(r"fails `settled` on (\d+)", verdict)) is not None:
            assert failed["settled"] == int(m.group(1)), impl
