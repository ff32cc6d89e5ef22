"""The zoo (conformance/zoo): every member is documented, and the bundled suite kills
every one of them (``kconform sensitivity`` at 100%)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import bundled_fixtures

from conformance.search.sensitivity import Sensitivity, sensitivity
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


def test_suite_strength_doc_states_the_tools_counts(verdicts: Sensitivity) -> None:
    """docs/suite-strength.md's measured line is what ``kconform sensitivity`` prints."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "suite-strength.md").read_text(encoding="utf-8")
    found = re.search(
        r"\((\d+) fixture cases;[^)]*\):\s+(\d+)/(\d+) members killed \((\d+)%\), median shortest witness "
        r"(\d+(?:\.\d+)?) steps",
        doc,
    )
    assert found, "the measured line of docs/suite-strength.md"
    cases, killed, members, percent = map(int, found.groups()[:4])
    median = float(found.group(5))
    assert cases == verdicts.fixtures and (killed, members) == (len(verdicts.killed), len(verdicts.verdicts))
    assert percent == round(100 * verdicts.kill_rate) and median == verdicts.median_witness


def test_a_member_is_an_implementation_by_name() -> None:
    from conformance.implementations.registry import UnknownImplementation, resolve
    from conformance.zoo import Mutant

    adapter = resolve("zoo:hw-without-max")
    assert isinstance(adapter, Mutant) and adapter.describe().name == "hw-without-max"
    with pytest.raises(UnknownImplementation, match="no zoo member 'nonsense'"):
        resolve("zoo:nonsense")


SEEDS = Path(__file__).resolve().parent.parent / "fixtures" / "seeds"


def test_sensitivity_command_kills_survives_and_lists(capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli.main import main

    purgatory = str(SEEDS / "02-purgatory.yaml")
    assert main(["sensitivity", "--fixtures", purgatory, "--zoo", "no-purgatory", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "no-fetch-purgatory" in out and "kill rate: 1/1 members (100%)" in out and "step 1 of" in out

    # the purgatory seed says nothing about checkpoints: that member survives, exit 1
    assert main(["sensitivity", "--fixtures", purgatory, "--zoo", "hw-checkpoint-never-written"]) == 1
    out = capsys.readouterr().out
    assert "SURVIVED" in out and "survivors (no fixture fails them):" in out and "CKPT-2" in out

    assert main(["sensitivity", "--zoo", "nonsense", "--fixtures", purgatory]) == 2
    assert "no zoo member 'nonsense'" in capsys.readouterr().err

    assert main(["sensitivity", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(m.name in listed for m in MEMBERS) and f"{len(MEMBERS)} members" in listed


def test_sensitivity_json_names_the_killing_fixture_and_rules(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from conformance.cli.main import main

    fixture = str(SEEDS / "02-purgatory.yaml")
    assert main(["sensitivity", "--fixtures", fixture, "--zoo", "no-purgatory", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [verdict] = data["verdicts"]
    assert data["kill_rate"] == 1.0 and verdict["killed"]
    assert verdict["shortest"]["step"] == 1 and verdict["shortest"]["fixture"].startswith("seed-02-purgatory/")
    assert "FETCH-PARK-1" in verdict["shortest"]["rules"]


FUZZ_BUDGET = 100
"""Runs per generation when no fixture case of a claimed generation kills a member."""


@pytest.mark.parametrize("name", sorted(ZOO))
def test_no_member_is_equivalent_in_a_generation_it_claims(name: str, verdicts: Sensitivity) -> None:
    """A member says where it differs from the reference (``generations``): each claim
    holds, by a fixture case of that generation that fails it or, failing one, by fuzz
    in that generation (seeded, so the verdict is reproducible)."""
    from conformance.search.sensitivity import fuzz_kills

    [verdict] = [v for v in verdicts.verdicts if v.member.name == name]
    generation_of = {f.id: f.generation.value for f in bundled_fixtures()}
    killed_in = {generation_of[k.fixture] for k in verdict.kills}
    for claimed in verdict.member.generations:
        if claimed in killed_in:
            continue
        found = fuzz_kills(verdict.member, FUZZ_BUDGET, [Generation(claimed)])
        assert found, f"{name} claims {claimed}, but no fixture case nor {FUZZ_BUDGET} fuzz runs there tell it apart"
