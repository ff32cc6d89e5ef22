"""Non-default resolutions of the spec's choice points (spec/replication.md, "Choice points").

``apply`` always takes Kafka's own resolution (the documented default of each CHOICE rule).
What Kafka leaves open (which eligible replica is elected, how many records an answer or a
consumer read carries, when a checkpoint was last written) another correct implementation
may resolve differently; these pure functions give the state such a resolution reaches,
through the same actions as ``apply``, so the harness can accept it (``conformance/judging/settle.py``)
and the bundled variants can take it (``conformance/implementations/variants.py``). None changes a default.
"""

from __future__ import annotations

from dataclasses import replace

from . import consumer, controller
from .draft import open_draft
from .errors import StepRejected
from .state import State
from .steps import Consume, Elect
from .values import evolve


def elect_preferring(state: State, step: Elect, candidate: str) -> State:
    """CHOICE-3: ``step`` (an ``elect`` without ``leader``) electing ``candidate`` if it is
    eligible (a live ISR member; under unclean election, any live replica) instead of the
    first eligible replica in assignment order. Same refusals as ``apply``."""
    if step.leader is not None:
        raise ValueError("elect_preferring: a controlled election (leader=...) names its leader already")
    draft = open_draft(state)
    controller.elect(draft, step, prefer=candidate)
    return draft.freeze()


def consume_at_most(state: State, step: Consume, limit: int) -> State:
    """CHOICE-5: ``step`` returning at most ``limit`` (≥ 1) of the records below the HW."""
    if limit < 1:
        raise ValueError(f"consume_at_most: limit must be at least 1, not {limit}")
    draft = open_draft(state)
    consumer.consume(draft, step, limit)
    return draft.freeze()


def cut_fetch_answer(state: State, index: int, keep: int) -> State:
    """CHOICE-4: the fetch answer ``state.fetch_responses[index]`` carrying only its first
    ``keep`` (≥ 1) records, as if the leader had read at most that many (FETCH-LEADER-3's
    ``max_records``: the leader's side, the follower's progress and the HW sampled, does not
    depend on how many records it sends)."""
    answer = state.fetch_responses[index]
    if not 1 <= keep <= len(answer.records):
        raise ValueError(f"cut_fetch_answer: keep must be in [1, {len(answer.records)}], not {keep}")
    cut = replace(answer, records=answer.records[:keep])
    answers = (*state.fetch_responses[:index], cut, *state.fetch_responses[index + 1 :])
    return replace(state, fetch_responses=answers, fired=("CHOICE-4",))


def with_checkpoint(state: State, replica_id: str, hw: int) -> State:
    """CHOICE-7: ``replica_id``'s checkpoint file holding ``hw``, an HW it reached after the
    last scheduled write (``hw`` between its checkpoint and its HW). Used on an offline
    broker before its restart: the checkpoint was written later than the task's schedule."""
    replica = state.replica(replica_id)
    if not replica.checkpoint_hw <= hw <= replica.hw:
        raise StepRejected(
            "CHOICE-7",
            f"with_checkpoint: {hw} is not between {replica_id}'s checkpoint {replica.checkpoint_hw} "
            f"and HW {replica.hw}",
        )
    position = state.config.position[replica_id]
    replicas = (*state.replicas[:position], evolve(replica, checkpoint_hw=hw), *state.replicas[position + 1 :])
    return replace(state, replicas=replicas)


def with_log_start_checkpoint(state: State, replica_id: str) -> State:
    """CHOICE-8: ``replica_id``'s raised log start (LOG-START-4) written to its checkpoint
    before the crash, earlier than the task's schedule (CKPT-3): the restart keeps it.
    Used on an offline broker before its restart."""
    replica = state.replica(replica_id)
    if not replica.unchecked_below:
        raise StepRejected("CHOICE-8", f"with_log_start_checkpoint: {replica_id}'s log start is already checkpointed")
    position = state.config.position[replica_id]
    replicas = (*state.replicas[:position], evolve(replica, unchecked_below=()), *state.replicas[position + 1 :])
    return replace(state, replicas=replicas)
