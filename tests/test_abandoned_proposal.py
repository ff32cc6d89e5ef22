"""ISR-ALTER-6: a KRaft leader that applies an ISR record at its own leader epoch resets its
pending AlterPartition; the request stays in flight, blocks the next one, and its answer is
ignored. The dead-follower path (CTRL-FAIL-3) is pinned by the bundled fixture
``kraft-same-epoch-record-resets-pending-expansion``; these tests pin the fenced-follower
path (CTRL-FENCE-1), a fenced answer, and the stale leader that has not applied the record."""

from __future__ import annotations

from typing import Any

from helpers import run_steps

from reference_impl import Config, Generation, State, apply, observe, step_from_dict

CONFIG = Config(replicas=("A", "B", "C"), generation=Generation.DIVERGING_EPOCH)


def _step(state: State, **do: Any) -> State:
    return apply(state, step_from_dict(do))


def _expansion_pending() -> State:
    """ISR [A, C] with C's log end unknown to A; B catches up on m0, m1 and A proposes [A, B, C]:
    the maximal ISR holds A's HW at 0."""
    state = run_steps(
        CONFIG,
        {"kind": "heartbeat_lapse", "replica": "B"},
        {"kind": "produce", "values": ["m0", "m1"], "acks": "1", "id": "p1"},
        {"kind": "fetch_round", "replica": "B"},
        {"kind": "fetch_round", "replica": "B", "max_wait_ms": 0},
    )
    assert [p.isr for p in state.alter_partitions] == [("A", "B", "C")]
    assert observe(state)["replicas"]["A"]["hw"] == 0
    return state


def test_a_fenced_follower_record_resets_the_pending_expansion_and_its_answer_is_ignored() -> None:
    state = _step(_expansion_pending(), kind="heartbeat_lapse", replica="C")
    assert {"CTRL-FENCE-1", "CTRL-FAIL-3", "ISR-ALTER-6"} <= set(state.fired)
    assert state.controller.isr == ("A",) and state.controller.partition_epoch == 2
    assert observe(state)["replicas"]["A"]["hw"] == 2  # B counts as caught up; C no longer
    assert [p.abandoned for p in state.alter_partitions] == [True]
    blocked = _step(state, kind="fetch_round", replica="B", max_wait_ms=0)
    assert blocked.alter_partitions == state.alter_partitions  # one request per partition (ISR-ALTER-1)
    answered = _step(blocked, kind="deliver_alter_partition", replica="A")
    assert {"ISR-ALTER-4", "ISR-ALTER-6"} <= set(answered.fired) and "ISR-ALTER-2" not in answered.fired
    assert answered.controller.isr == ("A",) and answered.alter_partitions == () and answered.fenced_proposals == ()
    again = _step(answered, kind="fetch_round", replica="B", max_wait_ms=0)
    assert [(p.isr, p.partition_epoch, p.abandoned) for p in again.alter_partitions] == [(("A", "B"), 2, False)]


def test_an_abandoned_proposal_fenced_by_a_later_election_is_not_waited_on() -> None:
    """FENCED_LEADER_EPOCH keeps a proposal pending (ISR-ALTER-5) only if the leader still waits on it."""
    state = _step(_expansion_pending(), kind="heartbeat_lapse", replica="C")
    state = _step(state, kind="elect", leader="A", notify=["B"])  # A's own LeaderAndIsr stays in flight
    answered = _step(state, kind="deliver_alter_partition", replica="A")
    assert "ISR-ALTER-6" in answered.fired and "ISR-ALTER-5" not in answered.fired
    assert answered.fenced_proposals == () and answered.alter_partitions == ()


def test_a_leader_that_has_not_applied_its_new_epoch_keeps_its_proposal() -> None:
    """Metadata in log order (CTRL-FAIL-3): a record at a leader epoch A has not applied yet
    does not reach A, so its expansion stays pending and still holds its HW."""
    state = _step(_expansion_pending(), kind="elect", leader="A", notify=["B", "C"])
    state = _step(state, kind="crash", replica="C")
    state = _step(state, kind="elect")
    assert state.controller.epoch == 1 and state.controller.isr == ("A",)
    assert "ISR-ALTER-6" not in state.fired
    assert [p.abandoned for p in state.alter_partitions] == [False]
    assert observe(state)["replicas"]["A"]["hw"] == 0
