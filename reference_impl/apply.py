"""``apply(state, step) -> state``: the one entry point, dispatching on the step type.

Every step goes through the same route: reset the list of fired rules, look up the
action for the step's type, run it. A step whose precondition fails raises
``StepRejected`` naming the rule; the input state is untouched (it is immutable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import broker, clock, consumer, controller, follower, producer
from .errors import StepRejected
from .state import State
from .steps import (
    Consume,
    Crash,
    DeliverEpoch,
    DeliverFetch,
    DeliverLeaderAndIsr,
    Elect,
    EpochRequest,
    EpochRound,
    Fetch,
    FetchRound,
    Produce,
    Restart,
    Step,
    Tick,
)
from .values import evolve


def _fetch_round(state: State, step: FetchRound) -> State:
    """FETCH-ROUND-1: send a fetch; deliver its response if the leader answered at once."""
    state = follower.send_fetch(state.fire("FETCH-ROUND-1"), step.replica, step.max_records)
    if any(r.dst == step.replica for r in state.fetch_responses):
        state = follower.deliver_fetch(state, step.replica)
    return state


def _epoch_round(state: State, step: EpochRound) -> State:
    """EPOCH-ROUND-1: send OffsetsForLeaderEpoch and deliver the answer."""
    state = follower.send_epoch_request(state.fire("EPOCH-ROUND-1"), step.replica)
    if any(r.dst == step.replica for r in state.epoch_responses):
        state = follower.deliver_epoch(state, step.replica)
    return state


def _check_replica(state: State, name: str, kind: str) -> None:
    if name not in state.config.replicas:
        raise StepRejected("STEP-PRE-1", f"{kind}: unknown replica {name!r} (replicas: {list(state.config.replicas)})")


ACTIONS: dict[type, Callable[[State, Any], State]] = {
    Produce: producer.produce,
    Fetch: lambda s, step: follower.send_fetch(s, step.replica, step.max_records),
    DeliverFetch: lambda s, step: follower.deliver_fetch(s, step.replica),
    FetchRound: _fetch_round,
    EpochRequest: lambda s, step: follower.send_epoch_request(s, step.replica),
    DeliverEpoch: lambda s, step: follower.deliver_epoch(s, step.replica),
    EpochRound: _epoch_round,
    Tick: lambda s, step: clock.tick(s, step.ms),
    Crash: lambda s, step: broker.crash(s, step.replica, step.unflushed_from),
    Restart: lambda s, step: broker.restart(s, step.replica),
    Elect: controller.elect,
    DeliverLeaderAndIsr: lambda s, step: controller.deliver_leader_and_isr(s, step.replica),
    Consume: consumer.consume,
}


def apply(state: State, step: Step) -> State:
    """Apply one step; the new state's ``fired`` lists the rules it fired."""
    action = ACTIONS.get(type(step))
    if action is None:
        raise TypeError(f"not a step: {step!r}")
    replica = getattr(step, "replica", None)
    if replica is not None:
        _check_replica(state, replica, step.kind)
    return action(evolve(state, fired=()), step)


def run(state: State, steps: Iterable[Step]) -> State:
    for step in steps:
        state = apply(state, step)
    return state
