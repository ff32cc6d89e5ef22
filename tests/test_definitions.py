"""One definition per step kind and per observation field, and everyone agrees on it.

The code defines the steps (``reference_impl/steps.py``) and the observation
(``reference_impl/observe.py``); ``spec/definitions.schema.json`` is the one schema
definition of both (the fixture and adapter-message schemas ``$ref`` it); the spec's
Steps table and the adapter protocol's Observation tables document them. These tests
check that all of them list the same kinds and fields, and that the enabled-step
candidates cover every step kind but the two composite rounds.
"""

from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from conformance.fixtures.schemas import schema
from reference_impl import OBSERVATION_FIELDS, REPLICA_FIELDS, STEP_TYPES, Config, initial_state, observe
from reference_impl.enabled import candidate_steps

HOME = Path(__file__).resolve().parents[1]

DEFINITIONS = schema("definitions")["$defs"]
REPLICATION = (HOME / "spec" / "replication.md").read_text(encoding="utf-8")
PROTOCOL = (HOME / "spec" / "adapter-protocol.md").read_text(encoding="utf-8")
COMPOSITE = {"fetch_round", "epoch_round"}
"""Steps made of two others (send and deliver): never a candidate of their own."""


def schema_branches() -> dict[str, dict[str, Any]]:
    action = DEFINITIONS["action"]
    return {branch["if"]["properties"]["kind"]["const"]: branch["then"] for branch in action["allOf"]}


def doc_table(text: str, heading: str) -> list[list[str]]:
    """The rows (cells without backticks) of the first table after ``heading``."""
    section = text[text.index(heading) :]
    rows = []
    started = False
    for line in section.splitlines()[1:]:
        if line.startswith("|"):
            started = True
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif started:
            break
    return rows[2:]


def names_in(cell: str) -> list[str]:
    return re.findall(r"`([a-z_]+)`", cell)


def test_both_schemas_take_steps_and_observations_from_the_definitions() -> None:
    for name in ("fixture", "adapter-messages"):
        text = json.dumps(schema(name))
        assert "definitions-v1.json#/$defs/action" in text, name
        assert "definitions-v1.json#/$defs/observation" in text, name
        assert "action" not in schema(name)["$defs"] and "observation" not in schema(name)["$defs"]


def test_the_step_schema_is_derived_from_the_step_table() -> None:
    """A new kind or field changes the table; ``python -m conformance.fixtures.schemas
    --write`` re-derives the schema, and this fails until it has."""
    from conformance.fixtures.schemas import derived_definitions

    assert (HOME / "spec" / "definitions.schema.json").read_text(encoding="utf-8") == derived_definitions(), (
        "spec/definitions.schema.json is not derived from reference_impl/steps.py: "
        "run python -m conformance.fixtures.schemas --write"
    )


def test_step_kinds_agree() -> None:
    kinds = list(STEP_TYPES)
    assert DEFINITIONS["action"]["properties"]["kind"]["enum"] == kinds
    assert list(schema_branches()) == kinds
    assert [names_in(row[0])[0] for row in doc_table(REPLICATION, "## Steps")] == kinds


def test_step_fields_agree() -> None:
    branches = schema_branches()
    documented = {names_in(row[0])[0]: row[1] for row in doc_table(REPLICATION, "## Steps")}
    for kind, cls in STEP_TYPES.items():
        code = {f.name for f in fields(cls)}
        required = {f.name for f in fields(cls) if f.default is MISSING}
        branch = branches[kind]
        assert set(branch["properties"]) - {"kind"} == code, kind
        assert set(branch.get("required", ())) == required, kind
        assert set(names_in(documented[kind])) == code, kind
        optional = set(re.findall(r"`([a-z_]+)`\?", documented[kind]))
        assert optional <= code - required, kind


def test_enabled_candidates_cover_every_step_kind_but_the_rounds() -> None:
    state = initial_state(Config(replicas=("A", "B", "C")))
    assert {step.kind for step in candidate_steps(state)} == set(STEP_TYPES) - COMPOSITE


def test_observation_fields_agree() -> None:
    observation = DEFINITIONS["observation"]
    replica = observation["properties"]["replicas"]["additionalProperties"]
    assert list(observation["properties"]) == list(OBSERVATION_FIELDS)
    assert list(replica["properties"]) == list(REPLICA_FIELDS)
    assert [names_in(row[0])[0] for row in doc_table(PROTOCOL, "## Observation")] == list(OBSERVATION_FIELDS)
    documented = [name for row in doc_table(PROTOCOL, "Per replica:") for name in names_in(row[0])]
    assert documented == list(REPLICA_FIELDS)


def test_the_reference_observes_exactly_the_defined_fields() -> None:
    state = initial_state(Config(replicas=("A", "B")))
    seen = observe(state)
    assert list(seen) == list(OBSERVATION_FIELDS)
    assert set(seen["replicas"]["A"]) == set(REPLICA_FIELDS)  # A leads: it has remote_leo
    assert set(seen["replicas"]["B"]) == set(REPLICA_FIELDS) - {"remote_leo"}
