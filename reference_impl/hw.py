"""The two high-watermark rules. Nothing else in the model computes an HW.

``leader_hw`` is HW-LEADER-1, ``follower_hw`` is HW-FOLLOWER-1 (spec/replication.md).
Which replicas' LEOs count toward the leader's HW is HW-LEADER-2 (and whether the HW may
move at all, HW-LEADER-3), decided by the caller, ``hw_advance.py``, because it depends on
the ISR, the clock and the generation's profile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast


def leader_hw(current_hw: int, counted_leos: Iterable[int | None]) -> int:
    """HW-LEADER-1: ``max(current HW, min(LEO of every replica that counts))``.

    ``counted_leos`` includes the leader's own LEO. An unknown remote LEO (``None``,
    Kafka's -1 right after a leader change) holds the HW where it is.
    """
    leos = list(counted_leos)
    if None in leos:
        return current_hw
    return max(current_hw, min(cast(list[int], leos)))


def follower_hw(leader_hw_in_response: int, follower_leo: int) -> int:
    """HW-FOLLOWER-1: ``min(HW carried by the fetch response, own LEO)``."""
    return min(leader_hw_in_response, follower_leo)
