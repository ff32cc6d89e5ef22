"""``apply(state, step) -> state``: the one entry point, dispatching on the step type.

Every step goes through the same route: check the replica it names (STEP-PRE-1), open a
``Draft`` of the state (with no fired rules yet), run the step's action on it, and
freeze the draft into the new state. A step whose precondition fails raises
``StepRejected`` naming the rule; the input state is untouched (it is immutable).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import broker, clock, consumer, controller, epoch_leader, follower, isr, producer
from .draft import Draft, open_draft
from .errors import StepRejected
from .state import State
from .steps import (
    Consume,
    Crash,
    DeliverAlterPartition,
    DeliverEpoch,
    DeliverFetch,
    DeliverLeaderAndIsr,
    Elect,
    EpochQuery,
    EpochRequest,
    EpochRound,
    Fetch,
    FetchRound,
    HeartbeatLapse,
    IsrExpiration,
    Produce,
    Restart,
    Step,
    Tick,
)


def _fetch_round(d: Draft, step: FetchRound) -> None:
    """FETCH-ROUND-1: send a fetch; deliver its response if the leader answered at once."""
    d.fired.append("FETCH-ROUND-1")
    follower.send_fetch(d, step.replica, step.max_records, step.max_wait_ms)
    if any(r.dst == step.replica for r in d.fetch_responses):
        follower.deliver_fetch(d, step.replica)


def _epoch_round(d: Draft, step: EpochRound) -> None:
    """EPOCH-ROUND-1: send OffsetsForLeaderEpoch and deliver the answer."""
    d.fired.append("EPOCH-ROUND-1")
    follower.send_epoch_request(d, step.replica)
    if any(r.dst == step.replica for r in d.epoch_responses):
        follower.deliver_epoch(d, step.replica)


ACTIONS: dict[type, Callable[[Draft, Any], None]] = {
    Produce: producer.produce,
    Fetch: lambda d, step: follower.send_fetch(d, step.replica, step.max_records, step.max_wait_ms),
    DeliverFetch: lambda d, step: follower.deliver_fetch(d, step.replica),
    FetchRound: _fetch_round,
    EpochRequest: lambda d, step: follower.send_epoch_request(d, step.replica),
    DeliverEpoch: lambda d, step: follower.deliver_epoch(d, step.replica),
    EpochRound: _epoch_round,
    EpochQuery: lambda d, step: epoch_leader.answer_epoch_query(d, step.replica, step.epoch, step.current_leader_epoch),
    Tick: lambda d, step: clock.tick(d, step.ms),
    IsrExpiration: lambda d, step: isr.run_isr_expiration(d, step.replica),
    DeliverAlterPartition: lambda d, step: controller.deliver_alter_partition(d, step.replica),
    HeartbeatLapse: lambda d, step: controller.heartbeat_lapse(d, step.replica),
    Crash: lambda d, step: broker.crash(d, step.replica, step.unflushed_from),
    Restart: lambda d, step: broker.restart(d, step.replica),
    Elect: controller.elect,
    DeliverLeaderAndIsr: lambda d, step: controller.deliver_leader_and_isr(d, step.replica),
    Consume: consumer.consume,
}


_NAMES_A_REPLICA = frozenset(cls for cls in ACTIONS if "replica" in getattr(cls, "__dataclass_fields__", ()))
"""The step kinds with a ``replica`` field (STEP-PRE-1 checks it)."""


def apply(state: State, step: Step) -> State:
    """Apply one step; the new state's ``fired`` lists the rules it fired."""
    cls = type(step)
    action = ACTIONS.get(cls)
    if action is None:
        raise TypeError(f"not a step: {step!r}")
    if cls in _NAMES_A_REPLICA:
        replica = step.replica  # type: ignore[union-attr]
        if replica is not None and replica not in state.config.position:
            raise StepRejected(
                "STEP-PRE-1", f"{step.kind}: unknown replica {replica!r} (replicas: {list(state.config.replicas)})"
            )
    draft = open_draft(state)
    action(draft, step)
    return draft.freeze()


def run(state: State, steps: Iterable[Step]) -> State:
    for step in steps:
        state = apply(state, step)
    return state
