"""Restart and HW-checkpoint members (historical-bugs.md entries 26-30)."""

from __future__ import annotations

from collections.abc import Iterable

from reference_impl import broker, clock
from reference_impl.draft import Draft
from reference_impl.values import evolve

from .base import ALL, Mutant, Patch, member


@member(
    "restart-hw-from-leo",
    26,
    "plausible: no replication-offset-checkpoint, the log trusted on restart",
    ALL,
    ("RESTART-1",),
)
class RestartHwFromLeo(Mutant):
    """On restart the HW is the LEO: the whole local log is taken as committed (and under
    hw-truncation nothing is truncated)."""

    def patches(self) -> Iterable[Patch]:
        original = broker.restart

        def restart(d: Draft, replica_id: str) -> None:
            replica = d.replica(replica_id)
            if replica.online:  # the reference rejects it
                original(d, replica_id)
                return
            # RESTART-1 reads the checkpoint: let it read the LEO, then put the file back.
            d.put(evolve(replica, checkpoint_hw=replica.leo))
            original(d, replica_id)
            d.put(evolve(d.replica(replica_id), checkpoint_hw=replica.checkpoint_hw))

        return [(broker, "restart", restart)]


@member(
    "restart-hw-unclamped",
    27,
    "plausible: the checkpoint restored without min(checkpoint, LEO) (Log.updateHighWatermark)",
    ALL,
    ("RESTART-1",),
)
class RestartHwUnclamped(Mutant):
    """On restart the HW is the checkpoint even when a power failure left the log
    shorter: the HW is above the LEO."""

    def patches(self) -> Iterable[Patch]:
        original = broker.restart

        def restart(d: Draft, replica_id: str) -> None:
            original(d, replica_id)
            replica = d.replica(replica_id)
            if replica.online and replica.checkpoint_hw > replica.hw:
                d.put(evolve(replica, hw=replica.checkpoint_hw))

        return [(broker, "restart", restart)]


@member(
    "hw-checkpoint-on-every-change",
    28,
    "the stale-checkpoint class: ReplicaManager's highwatermark-checkpoint task ignored",
    ALL,
    ("CKPT-2",),
    config={"replica_high_watermark_checkpoint_interval_ms": 0},
)
class HwCheckpointOnEveryChange(Mutant):
    """The HW checkpoint is written on every HW change whatever
    replica.high.watermark.checkpoint.interval.ms says: it is never stale."""


@member("hw-checkpoint-never-written", 29, "plausible: no periodic highwatermark-checkpoint task", ALL, ("CKPT-2",))
class HwCheckpointNeverWritten(Mutant):
    """With a non-zero interval the HW checkpoint is never written: every restart starts
    from HW 0."""

    def patches(self) -> Iterable[Patch]:
        return [(clock, "_checkpoint_runs", lambda d, after, before, inclusive: None)]


@member(
    "hw-checkpoint-on-crash",
    30,
    "plausible: a crash treated as a controlled shutdown (ReplicaManager.shutdown)",
    ALL,
    ("CRASH-1", "CKPT-2"),
)
class HwCheckpointOnCrash(Mutant):
    """A crash first writes the in-memory HW to the checkpoint, as a clean shutdown does."""

    def patches(self) -> Iterable[Patch]:
        original = broker.crash

        def crash(d: Draft, replica_id: str, unflushed_from: int | None = None) -> None:
            replica = d.replica(replica_id)
            if replica.online:
                d.put(evolve(replica, checkpoint_hw=replica.hw))
            original(d, replica_id, unflushed_from)

        return [(broker, "crash", crash)]
