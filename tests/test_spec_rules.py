"""Spec and code name the same rules; every rule is exercised by a fixture or a test.

Rule ids join spec/replication.md and reference_impl/: a rule defined in the spec
(``- **ID** —``) must appear in the reference where it is implemented, and an id used in
the reference must be defined in the spec.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import bundled_fixtures

from conformance.judging.runner import reference_rules

HOME = Path(__file__).resolve().parents[1]

RULE = re.compile(
    r"\b(?:HW|PRODUCE|FETCH|FOLLOWER|EPOCH|TRUNC|ISR|CTRL|LAI|CRASH|RESTART|CKPT|TICK|STEP|CONSUME|MSG|INIT|LOG|OBS)(?:-[A-Z]+)*-\d+\b"
)
SPEC = (HOME / "spec" / "replication.md").read_text(encoding="utf-8")
DEFINED = set(re.findall(r"^- \*\*([A-Z][A-Z-]*-\d+)\*\*", SPEC, flags=re.M))
# Choice points (CHOICE-n) are where another implementation may resolve Kafka's behaviour
# otherwise; the reference takes the default and fires no rule for them: tests/test_choices.py
# pins each (its settle.py resolution, its variant and twin).
CHOICE_POINTS = {rule for rule in DEFINED if rule.startswith("CHOICE-")}
DEFINED -= CHOICE_POINTS
CODE = {
    m.group(0)
    for path in sorted((HOME / "reference_impl").glob("*.py"))
    for m in RULE.finditer(Path(path).read_text(encoding="utf-8"))
}

# Rules exercised only by rejection tests or unit tests in test_rules.py, not by a fixture.
EXERCISED_BY_UNIT_TESTS = {
    "PRODUCE-PRE-1",
    "FETCH-DELIVER-PRE-1",
    "EPOCH-DELIVER-PRE-1",
    "CTRL-ELECT-PRE-1",
    "LAI-PRE-1",
    "CRASH-PRE-1",
    "RESTART-PRE-1",
    "STEP-PRE-1",
    "TRUNC-EPOCH-1",
    "TRUNC-EPOCH-4",
    "LAI-1",
    # A given initial state is checked when a fixture is loaded (tests/test_initial.py); the
    # answers' form is the observation's (tests/test_initial.py).
    "INIT-1",
    "INIT-2",
    "INIT-3",
    "INIT-4",
    "INIT-5",
    "INIT-6",
    "LOG-START-1",
    "OBS-ANSWER-1",
}


def test_spec_defines_rules() -> None:
    assert len(DEFINED) > 50


def test_every_code_rule_is_defined_in_the_spec() -> None:
    assert sorted(CODE - DEFINED) == []


def test_every_spec_rule_is_implemented() -> None:
    assert sorted(DEFINED - CODE) == []


def test_fixture_rules_are_spec_rules() -> None:
    for fixture in bundled_fixtures():
        unknown = set(fixture.rules) - DEFINED
        assert not unknown, f"{fixture.path}: rules not in the spec: {sorted(unknown)}"


@pytest.fixture(scope="module")
def fired_by_fixtures() -> set[str]:
    fired: set[str] = set()
    for fixture in bundled_fixtures():
        fired.update(reference_rules(fixture))
    return fired


def test_fixture_rules_fire_in_their_fixture() -> None:
    """A fixture file that says it pins a rule really makes the reference fire it (under
    at least one of its generations)."""
    fired: dict[str, set[str]] = {}
    listed: dict[str, set[str]] = {}
    for fixture in bundled_fixtures():
        fired.setdefault(fixture.base_id, set()).update(reference_rules(fixture))
        listed[fixture.base_id] = set(fixture.rules)
    for base_id, rules in listed.items():
        missing = rules - fired[base_id]
        assert not missing, f"{base_id} lists rules it never fires: {sorted(missing)}"


def test_every_rule_is_exercised(fired_by_fixtures: set[str]) -> None:
    not_fired = DEFINED - fired_by_fixtures - EXERCISED_BY_UNIT_TESTS
    assert sorted(not_fired) == []
