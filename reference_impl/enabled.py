"""The steps enabled in a state: the choices a generator (or a model checker) has.

``candidate_steps`` lists a few representative steps of every kind but the rounds, from
the step table: each field takes its ``samples`` (``steps.FIELDS``: the replicas, both
acks levels, two tick lengths, the current epoch) or its default. ``enabled_steps``
keeps those whose precondition holds, asked of the function each kind's rule module
states it in (``apply.REFUSALS``: the kinds' PRE rules), without applying
anything. ``tests/test_enabled.py`` checks it against trying each candidate on the
reference, on random states.

The order is the table's: first the steps that name no replica (a produce, a tick, a
consume, an election of the controller's choice), then each replica's steps in turn.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from functools import lru_cache
from itertools import product
from typing import cast

from .apply import REFUSAL_ARGUMENTS, REFUSALS
from .state import State
from .steps import FIELDS, STEP_KINDS, Step

_SAMPLED = tuple(
    (row.cls, tuple((f.name, FIELDS[f.name]) for f in fields(row.cls) if FIELDS[f.name].samples is not None))
    for row in STEP_KINDS
    if row.round_of is None
)
"""Each candidate kind's class and its sampled fields (the rest keep their defaults)."""

_UNSAMPLED_REQUIRED = [
    (row.kind, f.name)
    for row in STEP_KINDS
    for f in fields(row.cls)
    if row.round_of is None and f.default is MISSING and FIELDS[f.name].samples is None
]
if _UNSAMPLED_REQUIRED:
    raise TypeError(f"required step fields without samples (steps.FIELDS): {_UNSAMPLED_REQUIRED}")


_SAMPLERS = {name: spec for _, sampled in _SAMPLED for name, spec in sampled}
"""The sampled fields by name: what the candidates of a state depend on."""


def candidate_steps(state: State) -> list[Step]:
    """Representative steps of every kind but the rounds, enabled or not, in table order
    (the steps naming no replica first, then each replica's)."""
    return [step for step, _, _ in _candidates_of(state)]


def _candidates_of(
    state: State, leave_out: frozenset[type] = frozenset()
) -> tuple[tuple[Step, type, tuple[object, ...]], ...]:
    samples = tuple((name, tuple(spec.samples(state))) for name, spec in _SAMPLERS.items())  # type: ignore[misc]
    return _candidates(samples, state.config.replicas, leave_out)


@lru_cache(maxsize=256)
def _candidates(
    samples: tuple[tuple[str, tuple[object, ...]], ...],
    replicas: tuple[str, ...],
    leave_out: frozenset[type] = frozenset(),
) -> tuple[tuple[Step, type, tuple[object, ...]], ...]:
    """The candidates for these field samples, each with its class and the arguments its
    precondition takes (a state's candidates depend on nothing else, so states that agree
    on them share one tuple, and ``enabled_steps`` unpacks no step on its hot path), less
    those of the classes in ``leave_out``."""
    if leave_out:
        return tuple(c for c in _candidates(samples, replicas) if c[1] not in leave_out)
    values = dict(samples)
    general: list[Step] = []
    by_replica: dict[str, list[Step]] = {name: [] for name in replicas}
    for cls, sampled in _SAMPLED:
        choices = [[(name, value) for value in values[name]] for name, _ in sampled]
        for combination in product(*choices):
            step: Step = cls(**dict(combination))
            owner = next((value for (name, value) in combination if FIELDS[name].replicas and value is not None), None)
            (general if owner is None else by_replica[cast(str, owner)]).append(step)
    ordered = (*general, *(step for steps in by_replica.values() for step in steps))
    return tuple(
        (step, type(step), REFUSAL_ARGUMENTS[type(step)](step) if type(step) in REFUSAL_ARGUMENTS else ())
        for step in ordered
    )


def enabled_steps(state: State, leave_out: frozenset[type] = frozenset()) -> list[Step]:
    """Every candidate step whose precondition holds in ``state``, in candidate order.
    (Candidates name only the partition's replicas, so STEP-PRE-1 holds for each: the
    kind's own precondition is asked directly, through ``apply.REFUSALS``, which the
    knockouts patch: it is looked up on every call, never cached.)

    ``leave_out``: step classes not wanted at all (``kconform explore`` drops a client's
    ``epoch_query``, and produces past its record budget): left out before their
    precondition is asked, which is all they would cost; the rest is the same list."""
    refusals = REFUSALS
    return [
        step
        for step, cls, arguments in _candidates_of(state, leave_out)
        if (refusal := refusals.get(cls)) is None or refusal(state, *arguments) is None
    ]
