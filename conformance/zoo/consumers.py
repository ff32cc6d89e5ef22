"""Consumer members (historical-bugs.md entries 24-25)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from reference_impl import consumer
from reference_impl.draft import Draft
from reference_impl.state import Replica
from reference_impl.steps import Consume
from reference_impl.values import evolve

from .base import ALL, APPLY, Mutant, Patch, member


def _reading_to(end: Callable[[Replica], int]) -> Callable[[Draft, Consume], None]:
    """``consume`` with the leader's visible end at ``end(leader)`` instead of its HW."""

    def consume(d: Draft, step: Consume) -> None:
        leader_id = d.controller.leader
        leader = d.replica(leader_id) if leader_id is not None else None
        if leader is None or not leader.online:
            consumer.consume(d, step)
            return
        d.put(evolve(leader, hw=min(end(leader), leader.leo)))
        try:
            consumer.consume(d, step)
        finally:
            d.put(evolve(d.replica(leader.id), hw=leader.hw))

    return consume


@member("consumer-reads-at-hw", 24, "seed 000 §1.2 / 004 misreading (erratum E1)", ALL, ("CONSUME-1",))
class ConsumerReadsAtHw(Mutant):
    """A consumer reads [offset, HW]: the record at the HW, not yet committed, included."""

    def patches(self) -> Iterable[Patch]:
        return [(APPLY.ACTIONS, Consume, _reading_to(lambda leader: leader.hw + 1))]


@member(
    "consumer-reads-to-leo",
    25,
    "plausible: consumers served like followers (FetchLogEnd isolation)",
    ALL,
    ("CONSUME-1",),
)
class ConsumerReadsToLeo(Mutant):
    """A consumer reads up to the leader's LEO: records never committed are visible."""

    def patches(self) -> Iterable[Patch]:
        return [(APPLY.ACTIONS, Consume, _reading_to(lambda leader: leader.leo))]
