"""The steps enabled in a state: the choices a generator (or a model checker) has.

Derived by trying each candidate step on the reference and keeping those that are not
rejected, so the preconditions live in one place (the actions) and are never re-coded
here. Candidates use a few representative parameters (tick lengths, acks levels).
"""

from __future__ import annotations

from .apply import apply
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
    Fetch,
    Produce,
    Restart,
    Step,
    Tick,
)


def candidate_steps(state: State) -> list[Step]:
    cfg = state.config
    seq = len(state.produces) + 1
    steps: list[Step] = [
        Produce(values=(f"v{seq}",), acks="all"),
        Produce(values=(f"v{seq}",), acks="1"),
        Tick(ms=cfg.replica_fetch_wait_max_ms),
        Tick(ms=cfg.replica_lag_time_max_ms // 2),
        Consume(offset=0),
        Elect(),
    ]
    for name in cfg.replicas:
        steps += [
            Fetch(replica=name),
            DeliverFetch(replica=name),
            EpochRequest(replica=name),
            DeliverEpoch(replica=name),
            Crash(replica=name),
            Restart(replica=name),
            DeliverLeaderAndIsr(replica=name),
            Elect(leader=name),
        ]
    return steps


def enabled_steps(state: State) -> list[Step]:
    """Every candidate step whose precondition holds in ``state``."""
    out = []
    for step in candidate_steps(state):
        try:
            apply(state, step)
        except StepRejected:
            continue
        out.append(step)
    return out
