"""The fixtures catch every wrong implementation in the zoo (tests/zoo.py)."""

from __future__ import annotations

import pytest
from helpers import bundled_fixtures
from zoo import ZOO

from conformance.runner import run_fixtures


@pytest.mark.parametrize("name", sorted(ZOO))
def test_the_suite_fails_each_mutant(name: str) -> None:
    adapter = ZOO[name]()
    _, results = run_fixtures(adapter, name, bundled_fixtures())
    failed = [r for r in results if r.outcome == "failed"]
    assert failed, f"no fixture catches {name}"
    assert not [r for r in results if r.outcome == "errored"]
    print(f"{name}: caught by {len(failed)} fixtures, e.g. {failed[0].fixture}: {failed[0].reason}")
