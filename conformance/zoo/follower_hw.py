"""Follower high-watermark members (historical-bugs.md entries 7-9)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from reference_impl import follower, hw
from reference_impl.draft import Draft
from reference_impl.messages import FetchResponse
from reference_impl.network import reachable
from reference_impl.replica_ops import set_hw

from .base import ALL, DE, EPOCHS, Mutant, Patch, member


def _hw_first(applies: Callable[[FetchResponse], bool]) -> Callable[[Draft, str], None]:
    """``deliver_fetch`` that first takes ``min(response HW, LEO)`` from the responses
    ``applies`` selects, then does what the reference does."""
    original = follower.deliver_fetch

    def deliver_fetch(d: Draft, replica_id: str) -> None:
        response = next((r for r in d.fetch_responses if r.dst == replica_id), None)
        if (
            response is not None
            and applies(response)
            and reachable(d, replica_id, response.incarnation, response.src, response.request_epoch)
        ):
            set_hw(d, replica_id, hw.follower_hw(response.hw, d.replica(replica_id).leo))
        original(d, replica_id)

    return deliver_fetch


@member("follower-hw-without-min", 7, "seed 001 §2.3 / 002 §3 misreading (erratum E2)", ALL, ("HW-FOLLOWER-1",))
class FollowerHwWithoutMin(Mutant):
    """The follower takes the HW its fetch response carries as is, without the min with
    its own LEO: after a partial fetch its HW is above its LEO."""

    def patches(self) -> Iterable[Patch]:
        return [(hw, "follower_hw", lambda leader_hw, leo: leader_hw)]


@member("follower-hw-from-diverging-response", 8, "KAFKA-14704", DE, ("FOLLOWER-DIVERGE-1", "HW-FOLLOWER-1"))
class FollowerHwFromDivergingResponse(Mutant):
    """A diverging-epoch answer's HW is applied before the truncation: the former leader
    reports offsets committed that it has not re-fetched."""

    def patches(self) -> Iterable[Patch]:
        return [(follower, "deliver_fetch", _hw_first(lambda r: r.diverging_epoch is not None))]


@member(
    "follower-hw-from-error-answer",
    9,
    "plausible: AbstractFetcherThread error partitions",
    EPOCHS,
    ("FOLLOWER-FETCH-3", "HW-FOLLOWER-1"),
)
class FollowerHwFromErrorAnswer(Mutant):
    """A fenced / unknown-epoch / not-leader answer is treated as an empty one: the
    follower still takes min(its HW field, LEO)."""

    def patches(self) -> Iterable[Patch]:
        def is_error(r: FetchResponse) -> bool:
            return r.error is not None and r.error != "OFFSET_OUT_OF_RANGE"

        return [(follower, "deliver_fetch", _hw_first(is_error))]
