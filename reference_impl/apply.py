"""``apply(state, step) -> state``: the one entry point, dispatching on the step table.

Every step goes through the same route: check the replica it names (STEP-PRE-1), open a
``Draft`` of the state (with no fired rules yet), run the step's action on it, and
freeze the draft into the new state. A step whose precondition fails raises
``StepRejected`` naming the rule; the input state is untouched (it is immutable).

The action of each kind, and the function stating its precondition, are the ones its
row of ``steps.STEP_KINDS`` names: a new kind is dispatched here without a line of this
module. ``ACTIONS`` and ``REFUSALS`` map step classes to those functions (the knockouts
of conformance/search/knockout.py replace entries of these dicts).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import fields
from operator import attrgetter
from typing import Any

from .draft import Draft, Readable, open_draft
from .errors import StepRejected
from .state import State
from .steps import STEP_KINDS, Step


def _function(path: str) -> Callable[..., Any]:
    """``module.function`` under ``reference_impl``."""
    module, _, name = path.partition(".")
    function: Callable[..., Any] = getattr(importlib.import_module(f"{__package__}.{module}"), name)
    return function


def _arguments(cls: type, function: Callable[..., Any]) -> Callable[[Any], tuple[Any, ...]]:
    """How a step is passed to ``function`` after the draft: the step itself when the
    parameter is named ``step``, otherwise its fields in order."""
    if function.__code__.co_varnames[1] == "step":
        return lambda step: (step,)
    names = [f.name for f in fields(cls)]
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda step: (get(step),)
    many: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
    return many


ACTIONS: dict[type, Callable[..., None]] = {row.cls: _function(row.action) for row in STEP_KINDS}
"""Step class -> the function performing it (its row's ``action``)."""

REFUSALS: dict[type, Callable[..., StepRejected | None]] = {
    row.cls: _function(row.refused) for row in STEP_KINDS if row.refused is not None
}
"""Step class -> the function stating its precondition (its row's ``refused``)."""

_ARGUMENTS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    row.cls: _arguments(row.cls, ACTIONS[row.cls]) for row in STEP_KINDS
}
REFUSAL_ARGUMENTS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    cls: _arguments(cls, function) for cls, function in REFUSALS.items()
}
"""Step class -> how its step is passed to its refusal (the fields in order, or the step)."""

_NAMES_A_REPLICA = frozenset(cls for cls in ACTIONS if "replica" in getattr(cls, "__dataclass_fields__", ()))
"""The step kinds with a ``replica`` field (STEP-PRE-1 checks it)."""


def _unknown_replica(state: Readable, step: Step) -> StepRejected | None:
    """STEP-PRE-1: a step names a replica of the partition."""
    if type(step) in _NAMES_A_REPLICA:
        replica = step.replica  # type: ignore[union-attr]
        if replica is not None and replica not in state.config.position:
            return StepRejected(
                "STEP-PRE-1", f"{step.kind}: unknown replica {replica!r} (replicas: {list(state.config.replicas)})"
            )
    return None


def refused(state: State, step: Step) -> StepRejected | None:
    """Why ``step`` is refused in ``state`` (the rejection ``apply`` would raise), or None:
    its precondition, as its own rule module states it, read without applying anything."""
    cls = type(step)
    if (unknown := _unknown_replica(state, step)) is not None:
        return unknown
    refusal = REFUSALS.get(cls)
    return None if refusal is None else refusal(state, *REFUSAL_ARGUMENTS[cls](step))


def apply(state: State, step: Step) -> State:
    """Apply one step; the new state's ``fired`` lists the rules it fired."""
    cls = type(step)
    action = ACTIONS.get(cls)
    if action is None:
        raise TypeError(f"not a step: {step!r}")
    if cls in _NAMES_A_REPLICA and (unknown := _unknown_replica(state, step)) is not None:
        raise unknown
    draft = open_draft(state)
    action(draft, *_ARGUMENTS[cls](step))
    return draft.freeze()


def run(state: State, steps: Iterable[Step]) -> State:
    for step in steps:
        state = apply(state, step)
    return state


__all__ = ["ACTIONS", "REFUSALS", "REFUSAL_ARGUMENTS", "Draft", "apply", "refused", "run"]
