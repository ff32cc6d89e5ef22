"""A step kind is defined once: the step table (``reference_impl/steps.py: STEP_KINDS``).

From it come the wire names (``STEP_TYPES``), the kinds a round or an implicit delivery
stands for (``SPLIT_KINDS``, used by the judge and fuzz), the in-flight field of each
delivery (coarsening), the deliveries that change logs (the settled frontier) and the
steps of the round-only shape. The schema's and the spec's Steps table are checked
against it by tests/test_definitions.py; here the table is checked against the reference
(the action that performs each kind, the rules each kind fires) and the harness is
checked for kinds spelled outside it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import reference_impl
from conformance.fixtures.loading import load_fixtures
from conformance.fixtures.paths import FIXTURES_DIR
from conformance.implementations.shapes import RoundOnly
from conformance.judging import coarsen, judge, settle
from conformance.judging.runner import reference_trace
from conformance.search import distribution
from reference_impl.apply import ACTIONS, REFUSALS
from reference_impl.steps import (
    DELIVERIES,
    KIND,
    LOG_CHANGING_DELIVERIES,
    ROUNDS,
    SPLIT_KINDS,
    STEP_KINDS,
    STEP_TYPES,
    Consume,
    Tick,
)

HOME = Path(__file__).resolve().parents[1]

SPELLED: dict[str, set[str]] = {
    # where a kind's own behaviour is handled by name (a harness rule about that one kind)
    "conformance/adapters/limits.py": {"deliver_alter_partition", "deliver_leader_and_isr", "elect"},  # "without"
    "conformance/implementations/shapes.py": {"consume", "deliver_fetch", "fetch", "fetch_round"},  # early answers
    "conformance/implementations/variants.py": {"fetch", "fetch_round"},  # CHOICE-4: the fetch answer cut
    "conformance/adapters/wire.py": {"produce"},  # the automatic produce id
    "conformance/corpus/generate.py": {  # proposers by category (its weights, drawn by name)
        "consume",
        "crash",
        "deliver_leader_and_isr",
        "elect",
        "epoch_query",
        "fetch",
        "fetch_round",
        "heartbeat_lapse",
        "isr_expiration",
        "produce",
        "restart",
        "tick",
    },
    "conformance/judging/coarsen.py": {  # rounds split and joined (their parts, by name)
        "consume",
        "deliver_epoch",
        "deliver_fetch",
        "epoch_request",
        "epoch_round",
        "fetch",
        "fetch_round",
    },
    "conformance/judging/judge.py": {"produce"},  # a produce's id
    "conformance/judging/progress.py": {  # the fair suffix's round, step by step
        "deliver_alter_partition",
        "deliver_epoch",
        "deliver_fetch",
        "deliver_leader_and_isr",
        "elect",
        "epoch_request",
        "epoch_round",
        "fetch",
        "fetch_round",
        "tick",
    },
    "conformance/judging/runner.py": {"produce"},  # a produce's id
    "conformance/judging/safety.py": {"consume", "crash", "elect", "produce", "restart"},  # faults, outcomes
    "conformance/judging/settle.py": {  # the internal steps of the settled frontier
        "deliver_alter_partition",
        "deliver_epoch",
        "deliver_fetch",
        "deliver_leader_and_isr",
    },
    # the fuzz weights (every kind but the rounds, checked below) and its combined steps
    "conformance/search/distribution.py": set(STEP_TYPES),
    # the narrow deep explore search (``2r-deep``): the kinds its alphabet keeps, a choice of kinds
    "conformance/search/sensitivity.py": {
        "crash",
        "deliver_epoch",
        "deliver_fetch",
        "elect",
        "epoch_request",
        "fetch",
        "produce",
        "restart",
    },
    "conformance/search/explore.py": {"epoch_query", "produce"},  # the alphabet's two bounds
    "conformance/search/own_path.py": set(STEP_TYPES),  # one proposer per kind, from its own observation
    "conformance/search/stateful.py": {"epoch_round", "fetch_round"},  # rounds for implementations without parts
    "conformance/zoo/checkpoint.py": {"crash", "restart"},  # members broken around a restart
    "conformance/zoo/epochs.py": {"deliver_fetch"},
    "conformance/zoo/follower_hw.py": {"deliver_fetch"},
    "conformance/zoo/truncation.py": {"restart"},
    "reference_impl/follower.py": {"epoch_request", "fetch"},  # which request is in flight
    "reference_impl/observe.py": {"epoch_query", "fetch"},  # observation fields of the same name
    "reference_impl/state.py": {"epoch_query"},  # the state field of the same name, an output (OUTPUTS)
}
"""Every file that spells a step kind outside the table, and the kinds it spells. A new
kind belongs in the table, its rule modules, a fixture and the docs; spelled anywhere
else (or an old kind spelled in a new place), ``test_kinds_are_spelled_only_where_listed``
fails."""


def spelled_kinds() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for root in ("conformance", "reference_impl"):
        for path in sorted((HOME / root).rglob("*.py")):
            rel = path.relative_to(HOME).as_posix()
            if rel == "reference_impl/steps.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in STEP_TYPES:
                    out.setdefault(rel, set()).add(node.value)
    return out


def test_kinds_are_spelled_only_where_listed() -> None:
    for rel, kinds in spelled_kinds().items():
        extra = kinds - SPELLED.get(rel, set())
        assert not extra, (
            f"{rel} spells step kinds {sorted(extra)}: derive them from reference_impl/steps.py STEP_KINDS"
        )


def test_the_wire_names_come_from_the_table() -> None:
    assert list(STEP_TYPES) == [row.kind for row in STEP_KINDS]
    assert len(set(STEP_TYPES)) == len(STEP_KINDS)
    assert set(ACTIONS) == set(STEP_TYPES.values())


def test_each_row_names_the_action_that_performs_it() -> None:
    """``apply`` dispatches on the row: its action and its precondition, each taking the
    step's fields in order (or the step itself, a parameter named ``step``)."""
    for row in STEP_KINDS:
        for path, table in ((row.action, ACTIONS), (row.refused, REFUSALS)):
            if path is None:
                assert row.cls not in REFUSALS, row.kind
                continue
            module, _, name = path.partition(".")
            function = getattr(importlib.import_module(f"reference_impl.{module}"), name)
            assert table[row.cls] is function, (row.kind, path)
            code = function.__code__
            given = code.co_argcount - 1
            required = given - len(function.__defaults__ or ())
            count = 1 if code.co_varnames[1] == "step" else len(dataclasses.fields(row.cls))
            assert required <= count <= given, (row.kind, path, "takes the step's fields in order")
    assert all(row.refused is not None for row in STEP_KINDS if row.cls not in (Tick, Consume) and not row.round_of), (
        "every kind with a PRE rule states it in a *_refused function"
    )


def fires(kind: str) -> set[str]:
    """The rule families a kind may fire: its row's, and a round's parts' too."""
    return set(KIND[kind].rules).union(*(KIND[part].rules for part in ROUNDS.get(kind, ())))


def test_each_row_lists_the_rules_its_kind_fires() -> None:
    spec = (HOME / "spec" / "replication.md").read_text(encoding="utf-8")
    families = {re.sub(r"-\d+$", "", rule) for rule in re.findall(r"\b([A-Z]+(?:-[A-Z]+)*-\d+)\b", spec)}
    for row in STEP_KINDS:
        assert set(row.rules) <= families, (row.kind, sorted(set(row.rules) - families))
    fixtures, _ = load_fixtures([FIXTURES_DIR])
    for fixture in fixtures:
        for fs, rules in zip(fixture.steps, reference_trace(fixture), strict=True):
            fired = {re.sub(r"-\d+$", "", rule) for rule in rules}
            assert fired <= fires(fs.step.kind), (fixture.id, fs.number, sorted(fired))


def test_the_harness_kind_sets_are_the_tables() -> None:
    assert judge.SPLIT_KINDS is SPLIT_KINDS
    assert set(SPLIT_KINDS) == set(DELIVERIES) | {part for parts in ROUNDS.values() for part in parts}
    assert settle.LOG_KINDS == LOG_CHANGING_DELIVERIES
    assert {delivery: DELIVERIES[delivery] for _, delivery in ROUNDS.values()} == coarsen._FLIGHT
    assert set(RoundOnly.steps) == set(STEP_TYPES) - {"consume"} - {p for parts in ROUNDS.values() for p in parts}
    for flight in DELIVERIES.values():
        assert (
            hasattr(reference_impl.State, "__dataclass_fields__")
            and flight in reference_impl.State.__dataclass_fields__
        )


def test_the_fuzz_distribution_weighs_every_kind() -> None:
    """Rounds too: fuzz draws a whole round as well as its two halves (issue 24). A kind
    without its own weight is drawn at ``OTHER_WEIGHT``; the kinds listed are the table's."""
    assert set(distribution.WEIGHTS) - set(STEP_TYPES) <= {*distribution.COMBINED, distribution.REFUSED}
    assert distribution.OTHER_WEIGHT > 0


def test_a_kind_without_a_proposer_is_drawn_by_the_corpus_generator() -> None:
    """A kind the generator's proposers do not know (a new row of the table) is drawn from
    the reference's enabled steps, under the ``other`` category."""
    from conformance.corpus import generate

    assert set(STEP_TYPES) == generate.PROPOSED_KINDS | generate.UNPROPOSED_KINDS
    assert (generate.SHAPES["mixed"].weights["other"] > 0) == bool(generate.UNPROPOSED_KINDS)
    state = reference_impl.initial_state(reference_impl.Config(replicas=("A", "B")))
    enabled = {step.kind for step in reference_impl.enabled_steps(state)}
    original = generate.UNPROPOSED_KINDS
    try:
        generate.UNPROPOSED_KINDS = frozenset(enabled)
        drawn = {step.kind for step in generate._other(state, __import__("random").Random(0))}
    finally:
        generate.UNPROPOSED_KINDS = original
    assert drawn == enabled


def test_the_corpus_generator_draws_every_kind_the_reference_enables() -> None:
    from conformance.corpus.generate import generate_trace

    drawn = {entry["do"]["kind"] for index in range(300) for entry in generate_trace(7, index)["steps"]}
    assert set(STEP_TYPES) - set(ROUNDS) <= drawn, sorted(set(STEP_TYPES) - set(ROUNDS) - drawn)
