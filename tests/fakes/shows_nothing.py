"""Three implementations that must never be certified safe (tests/test_certificate.py).

- ``refuser``: refuses every step;
- ``empty``: performs every step as the reference does and reports ``{}``;
- ``minimal``: reports only the leader, the ISR, the producer outcomes and per replica its
  LEO, HW and log, and moves the leader's HW to its LEO on every append (a real defect
  that SAFE-STRONG-ISR would catch if ``online``, ``role`` and ``leader_epoch`` were shown).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import reference_impl
from conformance.adapters.base import Description
from conformance.adapters.in_process import FunctionAdapter, ReferenceAdapter, StepRefused


def _base(name: str, **changes: Any) -> Description:
    return dataclasses.replace(ReferenceAdapter().describe(), name=name, initial_state=False, **changes)


def _init(config: dict[str, Any]) -> Any:
    return reference_impl.initial_state(reference_impl.config_from_dict(config))


def _apply(state: Any, step: dict[str, Any]) -> Any:
    try:
        return reference_impl.apply(state, reference_impl.step_from_dict(step))
    except reference_impl.StepRejected as exc:
        raise StepRefused(exc.reason, exc.rule) from None


def refuser() -> FunctionAdapter:
    def refuse(state: Any, step: dict[str, Any]) -> Any:
        raise StepRefused("this implementation refuses every step")

    return FunctionAdapter(_base("refuser"), init=_init, apply=refuse, observe=reference_impl.observe)


def empty() -> FunctionAdapter:
    return FunctionAdapter(_base("empty"), init=_init, apply=_apply, observe=lambda state: {})


def hw_to_leo_on_append(state: Any, step: dict[str, Any]) -> Any:
    """The reference, except that a produce moves the leader's HW to its LEO at once."""
    after = _apply(state, step)
    if step["kind"] != "produce" or after.controller.leader is None:
        return after
    i = after.config.position[after.controller.leader]
    leader = after.replicas[i]
    moved = dataclasses.replace(leader, hw=leader.leo)
    return dataclasses.replace(after, replicas=(*after.replicas[:i], moved, *after.replicas[i + 1 :]))


def _minimal_observe(state: Any) -> dict[str, Any]:
    obs = reference_impl.observe(state)
    return {
        "leader": obs["leader"],
        "isr": obs["isr"],
        "producer": obs["producer"],
        "replicas": {n: {k: r[k] for k in ("leo", "hw", "log")} for n, r in obs["replicas"].items()},
    }


def minimal() -> FunctionAdapter:
    description = _base(
        "minimal", fields=("leader", "isr", "replicas", "producer"), replica_fields=("leo", "hw", "log")
    )
    return FunctionAdapter(description, init=_init, apply=hw_to_leo_on_append, observe=_minimal_observe)
