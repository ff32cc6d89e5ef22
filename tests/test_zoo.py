"""The zoo (conformance/zoo): every member is documented, and the bundled suite kills
every one of them (``kconform sensitivity`` at 100%)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import bundled_fixtures

from conformance.sensitivity import Sensitivity, sensitivity
from conformance.zoo import ALIASES, MEMBERS, ZOO, get
from reference_impl import Generation

SPEC = (Path(__file__).resolve().parent.parent / "spec" / "replication.md").read_text(encoding="utf-8")
SPEC_RULES = set(re.findall(r"\b([A-Z]+(?:-[A-Z]+)*-\d+)\b", SPEC))


@pytest.fixture(scope="module")
def verdicts() -> Sensitivity:
    return sensitivity(MEMBERS, bundled_fixtures())


def test_the_zoo_has_at_least_thirty_members_with_unique_names() -> None:
    assert len(MEMBERS) >= 30
    assert len(ZOO) == len(MEMBERS)


@pytest.mark.parametrize("member", MEMBERS, ids=lambda m: m.name)
def test_each_member_says_what_it_breaks_and_where_it_comes_from(member: object) -> None:
    from conformance.zoo import Member

    assert isinstance(member, Member)
    assert member.summary and member.source
    assert member.generations and set(member.generations) <= {g.value for g in Generation}
    assert member.rules and set(member.rules) <= SPEC_RULES, set(member.rules) - SPEC_RULES


def test_old_names_still_resolve() -> None:
    for old, new in ALIASES.items():
        assert get(old).name == new


@pytest.mark.parametrize("name", sorted(ZOO))
def test_the_bundled_suite_kills_each_member(name: str, verdicts: Sensitivity) -> None:
    [verdict] = [v for v in verdicts.verdicts if v.member.name == name]
    assert not verdict.errors, verdict.errors[:3]
    assert verdict.killed, f"no bundled fixture fails {name}: {verdict.member.summary}"
    shortest = verdict.shortest
    assert shortest is not None and 1 <= shortest.step <= shortest.length


def test_kill_rate_is_complete(verdicts: Sensitivity) -> None:
    assert verdicts.kill_rate == 1.0, [v.member.name for v in verdicts.survivors]
