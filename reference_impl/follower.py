"""What a follower does: send fetches and epoch queries, apply their answers, truncate.

The follower-HW rule (HW-FOLLOWER-1) is applied in ``deliver_fetch`` through
``hw.follower_hw``; truncation by HW (TRUNC-HW-1) in ``become_follower``; truncation by
epoch (TRUNC-EPOCH-*) in ``deliver_epoch`` and on a diverging-epoch fetch response.
"""

from __future__ import annotations

from . import epoch_cache, hw
from .config import Generation
from .errors import StepRejected
from .leader import handle_epoch_request, handle_fetch, reachable
from .messages import EpochResponse, FetchResponse
from .replica_ops import set_hw, truncate
from .state import FetchState, Replica, Role, State
from .truncation import offset_truncation
from .values import evolve


def has_outstanding_fetch(state: State, replica_id: str) -> bool:
    """A follower has at most one fetch outstanding (parked or answered, not delivered)."""
    incarnation = state.replica(replica_id).incarnation
    return any(p.follower == replica_id and p.incarnation == incarnation for p in state.parked_fetches) or any(
        r.dst == replica_id for r in state.fetch_responses
    )


def _require_follower(state: State, replica_id: str, action: str, rule: str) -> Replica:
    if replica_id not in state.config.replicas:
        raise StepRejected(rule, f"{action}: unknown replica {replica_id!r}")
    replica = state.replica(replica_id)
    if not replica.online:
        raise StepRejected(rule, f"{action}: replica {replica_id} is offline")
    if replica.role is not Role.FOLLOWER or replica.leader is None:
        raise StepRejected(rule, f"{action}: replica {replica_id} is not a follower (role {replica.role.value})")
    if not state.replica(replica.leader).online:
        raise StepRejected(rule, f"{action}: {replica_id}'s leader {replica.leader} is offline")
    return replica


# --- fetch ---------------------------------------------------------------------------


def send_fetch(state: State, replica_id: str, max_records: int | None = None) -> State:
    """FETCH-PRE-1: a live follower with no fetch outstanding (and, under leader-epoch,
    done truncating) sends ``fetch(offset = LEO)`` to the leader it knows, carrying its
    current leader epoch and, under diverging-epoch, the epoch of its last record."""
    follower = _require_follower(state, replica_id, "fetch", "FETCH-PRE-1")
    if follower.fetch_state is FetchState.TRUNCATING:
        raise StepRejected(
            "FETCH-PRE-1",
            f"fetch: replica {replica_id} must truncate first: send OffsetsForLeaderEpoch (epoch_request)",
        )
    if has_outstanding_fetch(state, replica_id):
        raise StepRejected(
            "FETCH-PRE-1",
            f"fetch: replica {replica_id} already has a fetch outstanding (parked or with a response in flight)",
        )
    last_fetched = (
        epoch_cache.latest_epoch(follower.epoch_cache)
        if state.config.generation is Generation.DIVERGING_EPOCH
        else None
    )
    state = state.fire("FETCH-PRE-1")
    assert follower.leader is not None
    return handle_fetch(
        state,
        follower.leader,
        replica_id,
        follower.leo,
        follower.leader_epoch,
        last_fetched,
        follower.incarnation,
        max_records,
    )


def _take_fetch_response(state: State, replica_id: str) -> tuple[State, FetchResponse]:
    for response in state.fetch_responses:
        if response.dst == replica_id:
            rest = tuple(r for r in state.fetch_responses if r is not response)
            return evolve(state, fetch_responses=rest), response
    raise StepRejected("FETCH-DELIVER-PRE-1", f"deliver_fetch: no fetch response is in flight to {replica_id}")


def deliver_fetch(state: State, replica_id: str) -> State:
    """The follower processes the fetch response in flight to it."""
    state, response = _take_fetch_response(state, replica_id)
    follower = state.replica(replica_id)
    if not reachable(state, replica_id, response.incarnation, response.src, response.request_epoch):
        return state.fire("MSG-DROP-1")

    if response.diverging_epoch is not None:
        # FOLLOWER-DIVERGE-1: truncate from the diverging epoch, as from an epoch answer.
        epoch, end = response.diverging_epoch
        plan = offset_truncation(epoch, end, follower.epoch_cache, follower.leo, follower.hw)
        state = state.fire("FOLLOWER-DIVERGE-1")
        return truncate(state, replica_id, plan.offset, rule=plan.rule)

    if response.error == "OFFSET_OUT_OF_RANGE":
        return _handle_out_of_range(state, follower, response)
    if response.error is not None:
        # FOLLOWER-FETCH-3: fenced, unknown epoch, not leader: back off and retry.
        return state.fire("FOLLOWER-FETCH-3")

    # FOLLOWER-FETCH-2: append what came, then HW-FOLLOWER-1.
    cache = follower.epoch_cache
    if state.config.generation.uses_epochs:
        for offset, record in enumerate(response.records, start=follower.leo):
            cache = epoch_cache.assign(cache, record.epoch, offset)
    follower = evolve(follower, log=follower.log + response.records, epoch_cache=cache)
    state = state.with_replica(follower).fire("FOLLOWER-FETCH-2")
    new_hw = hw.follower_hw(response.hw, follower.leo)
    return set_hw(state, replica_id, new_hw).fire("HW-FOLLOWER-1")


def _handle_out_of_range(state: State, follower: Replica, response: FetchResponse) -> State:
    """FOLLOWER-OOR-1: the leader's log ends below the fetch offset: truncate to the
    leader's LEO. FOLLOWER-OOR-2: under hw-truncation with unclean election disabled,
    Kafka 0.10 halts the broker instead (``ReplicaFetcherThread.handleOffsetOutOfRange``)."""
    assert response.leader_leo is not None
    if (
        state.config.generation is Generation.HW_TRUNCATION
        and not state.config.unclean_leader_election
        and response.leader_leo < follower.leo
    ):
        from .broker import crash

        return crash(state.fire("FOLLOWER-OOR-2"), follower.id)
    return truncate(state, follower.id, response.leader_leo, rule="FOLLOWER-OOR-1")


# --- OffsetsForLeaderEpoch -----------------------------------------------------------


def send_epoch_request(state: State, replica_id: str) -> State:
    """EPOCH-PRE-1: under leader-epoch, a truncating follower asks its leader for the end
    offset of its own latest epoch (its current leader epoch rides along, KIP-320)."""
    if state.config.generation is not Generation.LEADER_EPOCH:
        raise StepRejected(
            "EPOCH-PRE-1",
            f"epoch_request: OffsetsForLeaderEpoch is sent only under leader-epoch "
            f"(this partition runs {state.config.generation.value})",
        )
    follower = _require_follower(state, replica_id, "epoch_request", "EPOCH-PRE-1")
    if follower.fetch_state is not FetchState.TRUNCATING:
        raise StepRejected("EPOCH-PRE-1", f"epoch_request: replica {replica_id} is not truncating")
    if any(r.dst == replica_id for r in state.epoch_responses):
        raise StepRejected("EPOCH-PRE-1", f"epoch_request: replica {replica_id} already has one in flight")
    state = state.fire("EPOCH-PRE-1")
    assert follower.leader is not None
    return handle_epoch_request(
        state,
        follower.leader,
        replica_id,
        epoch_cache.latest_epoch(follower.epoch_cache),
        follower.leader_epoch,
        follower.incarnation,
    )


def deliver_epoch(state: State, replica_id: str) -> State:
    """EPOCH-FOLLOWER-1/2: the follower truncates by the answer; done when complete."""
    response: EpochResponse | None = next((r for r in state.epoch_responses if r.dst == replica_id), None)
    if response is None:
        raise StepRejected("EPOCH-DELIVER-PRE-1", f"deliver_epoch: no epoch response is in flight to {replica_id}")
    state = evolve(state, epoch_responses=tuple(r for r in state.epoch_responses if r is not response))
    follower = state.replica(replica_id)
    if not reachable(state, replica_id, response.incarnation, response.src, response.request_epoch):
        return state.fire("MSG-DROP-1")
    if response.error is not None:
        # EPOCH-FOLLOWER-1: fenced or unknown epoch, not leader: stay truncating, retry.
        return state.fire("EPOCH-FOLLOWER-1")
    plan = offset_truncation(response.epoch, response.end_offset, follower.epoch_cache, follower.leo, follower.hw)
    state = truncate(state.fire("EPOCH-FOLLOWER-2"), replica_id, plan.offset, rule=plan.rule)
    if plan.completed:
        state = state.with_replica(evolve(state.replica(replica_id), fetch_state=FetchState.FETCHING))
    return state


# --- becoming follower ---------------------------------------------------------------


def become_follower(state: State, replica_id: str, leader_id: str, epoch: int) -> State:
    """LAI-3: the replica follows ``leader_id`` at ``epoch``.

    hw-truncation: if the leader changed, it truncates to its own HW (TRUNC-HW-1).
    leader-epoch: it must ask OffsetsForLeaderEpoch first (fetch state ``truncating``).
    diverging-epoch: it fetches at once; the leader reports any divergence.
    """
    replica = state.replica(replica_id)
    leader_changed = replica.leader != leader_id or replica.role is not Role.FOLLOWER
    gen = state.config.generation
    fetch_state = FetchState.TRUNCATING if gen is Generation.LEADER_EPOCH else FetchState.FETCHING
    state = state.with_replica(
        evolve(
            replica,
            role=Role.FOLLOWER,
            leader=leader_id,
            leader_epoch=epoch,
            fetch_state=fetch_state,
            progress=(),
        )
    ).fire("LAI-3")
    if gen is Generation.HW_TRUNCATION and leader_changed:
        state = truncate(state, replica_id, replica.hw, rule="TRUNC-HW-1")
    return state
