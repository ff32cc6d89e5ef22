"""A rule that held a value is named at a divergent step (conformance/judging/deciding.py)."""

from __future__ import annotations

import dataclasses
import re

from fakes.shows_nothing import hw_to_leo_on_append

import reference_impl
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR, SCHEMA_DIR
from conformance.judging.deciding import DECIDING, PROPERTY_DECIDING, deciding
from conformance.judging.runner import run_fixture


def test_every_deciding_rule_is_a_spec_rule() -> None:
    spec = (SCHEMA_DIR / "replication.md").read_text(encoding="utf-8")
    rules = set(re.findall(r"^- \*\*([A-Z0-9-]+)\*\*", spec, re.M))
    for key, named in [*DECIDING.items(), *PROPERTY_DECIDING.items()]:
        assert set(named) <= rules, (key, set(named) - rules)


def test_the_leader_hw_is_decided_by_the_hw_rules() -> None:
    obs = {"replicas": {"A": {"role": "leader"}, "B": {"role": "follower"}}}
    assert deciding("replicas.A.hw", obs)[:2] == ("HW-LEADER-1", "HW-LEADER-2")
    assert deciding("replicas.B.hw", obs)[0] == "HW-FOLLOWER-1"
    assert deciding("isr", obs)


def test_an_hw_defect_on_append_names_the_hw_rules_that_held() -> None:
    base = ReferenceAdapter().describe()
    adapter = FunctionAdapter(
        dataclasses.replace(base, name="hw-on-append"),
        init=lambda config: reference_impl.initial_state(reference_impl.config_from_dict(config)),
        apply=hw_to_leo_on_append,
        observe=reference_impl.observe,
    )
    fixtures, _ = load_fixtures([FIXTURES_DIR / "seeds"])
    named = 0
    for fixture in fixtures:
        result = run_fixture(adapter, adapter.describe(), fixture, "hw-on-append")
        d = result.divergence or {}
        if result.outcome == "failed" and d.get("kind") == "produce":
            assert "HW-LEADER-1" in d["held"], d
            assert all(row["levels"] for row in d["differences"])
            assert len({row["field"] for row in d["differences"]}) == len(d["differences"]), "one row per field"
            named += 1
    assert named > 0
