"""The implementation this example project tests: "my-broker".

A real project would have its own broker here. To keep the example self-contained,
my-broker is kconform's reference model with two defects a young implementation might
have, so the example shows every kind of result:

- it ignores ``unclean_leader_election`` (always off): an unknown bug, so the fixture
  that enables it FAILS;
- it acknowledges an ``acks=all`` produce as soon as the leader has written it, without
  waiting for the ISR (``acks=all`` behaves as ``acks=1``): a known gap, listed in
  ``kconform-expectations.yaml``, so the fixtures that notice it XFAIL.

It only implements the ``leader-epoch`` generation and has no consumer (no ``consume``
step): fixtures needing either are SKIPPED.
"""

from __future__ import annotations

from typing import Any

import reference_impl

GENERATIONS = ("leader-epoch",)
STEPS = tuple(kind for kind in reference_impl.STEP_TYPES if kind != "consume")


class Refused(Exception):
    """my-broker refuses a step (its precondition does not hold)."""

    def __init__(self, reason: str, rule: str | None) -> None:
        super().__init__(reason)
        self.rule = rule


def start(config: dict[str, Any]) -> reference_impl.State:
    config = {**config, "unclean_leader_election": False}  # defect 1: the setting is ignored
    return reference_impl.initial_state(reference_impl.config_from_dict(config))


def handle(state: reference_impl.State, step: dict[str, Any]) -> reference_impl.State:
    if step.get("kind") == "produce" and step.get("acks", "all") == "all":
        step = {**step, "acks": 1}  # defect 2: acks=all acknowledged without waiting for the ISR
    try:
        return reference_impl.apply(state, reference_impl.step_from_dict(step))
    except reference_impl.StepRejected as exc:
        raise Refused(exc.reason, exc.rule) from None


def snapshot(state: reference_impl.State) -> dict[str, Any]:
    return reference_impl.observe(state)
