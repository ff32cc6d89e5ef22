"""Fixture format versions: what a fixture's steps meant when it was written.

A fixture records steps and what Kafka does after them. When the spec changes what a
*step* does (not merely a value the reference got wrong), a fixture written before the
change would silently tell another story. The top-level ``format:`` says which meaning a
file was written for; the loader migrates an older format or says what changed
(docs/fixtures.md, "Format versions"):

- **1**: until commit a28b374 (2026-11-23). Under ``diverging-epoch`` the leader's ISR
  changes were committed at once, as under ZooKeeper (ISR-WRITE-1).
- **2** (current): under ``diverging-epoch`` a leader's ISR change is an AlterPartition
  proposal that waits for a ``deliver_alter_partition`` step (ISR-ALTER-1/2); a fixture may
  vary its steps by generation (``only``, ``expect_under``).

Migrating 1 to 2 runs the reference along the ``diverging-epoch`` case and, after each step
that leaves a new proposal in flight, inserts the ``deliver_alter_partition`` that commits
it, moving the step's expectations after the delivery: the story is the old one again. A
``tick`` that proposes is cut at the leader's ISR checks, with a delivery after each check
that proposes (each committed its change at once). Where a delivered change moves the HW in
the very millisecond of a scheduled HW checkpoint, the order of the two differs from
format 1 and the loader says so instead of migrating. A fixture without ``format:`` is read
as format 2; but if it runs under ``diverging-epoch``, never delivers a proposal and the
leader makes one, it may have been written for format 1, and the loader asks which
(``ambiguous_under_current``); unless it starts from a given state (``initial:``), which
reached the main line in the same merge as ``deliver_alter_partition`` (31be373): such a
fixture was written for format 2 at least.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from reference_impl import Generation, State, Step, StepRejected, apply
from reference_impl.steps import DeliverAlterPartition, Tick, step_to_dict

if TYPE_CHECKING:
    from .fixtures import FixtureStep

CURRENT_FORMAT = 2
"""The format this loader writes and reads without migration."""

OLDEST_FORMAT = 1

HISTORY: dict[int, str] = {
    1: "ISR changes under diverging-epoch committed at once (before deliver_alter_partition, commit a28b374)",
    2: "ISR changes under diverging-epoch are AlterPartition proposals delivered by deliver_alter_partition; "
    "steps may vary by generation (only, expect_under)",
}


class MigrationError(Exception):
    """A fixture of an older format that cannot be migrated exactly; ``index`` is the step
    (in the generation's case) where it stops, ``message`` what to do."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message


def _new_proposal(before: State, after: State) -> str | None:
    """The leader whose AlterPartition proposal ``after`` has in flight and ``before`` did not."""
    old = set(before.alter_partitions)
    for proposal in after.alter_partitions:
        if proposal not in old:
            return proposal.leader
    return None


def _expiry_runs(state: State, leader: str, before_ms: int, after_ms: int) -> list[int]:
    """The times of ``leader``'s periodic ISR checks in ``(before_ms, after_ms]`` (every
    ``replica.lag.time.max.ms / 2`` from its broker's start, ISR-SHRINK-2)."""
    period = max(1, state.config.replica_lag_time_max_ms // 2)
    started = state.replica(leader).started_ms
    k = max(1, -(-(before_ms + 1 - started) // period))
    return list(range(started + k * period, after_ms + 1, period))


def _deliver(state: State, leader: str, at: int) -> tuple[State, Step]:
    """Commit ``leader``'s proposal now, as format 1 did within the step that made it."""
    deliver = DeliverAlterPartition(replica=leader)
    after = apply(state, deliver)
    interval = state.config.replica_high_watermark_checkpoint_interval_ms
    started = state.replica(leader).started_ms
    moved = after.replica(leader).hw != state.replica(leader).hw
    if interval > 0 and moved and state.clock_ms > started and (state.clock_ms - started) % interval == 0:
        raise MigrationError(
            at,
            f"format 1: at {state.clock_ms} ms {leader}'s ISR check and its HW checkpoint ran in the same "
            "millisecond; under format 1 the checkpoint wrote the HW the committed ISR change moved, now it "
            "runs before the change is delivered. Rewrite the steps with deliver_alter_partition and set format: 2",
        )
    return after, deliver


def _replay(before: State, step: Step, after: State, leader: str, at: int) -> tuple[list[Step], State]:
    """The steps that give ``step`` its format 1 meaning: a tick is cut at each of the
    leader's ISR checks, and every proposal is delivered at once."""
    if not isinstance(step, Tick):
        after, deliver = _deliver(after, leader, at)
        return [step, deliver], after
    out: list[Step] = []
    state = before
    end = before.clock_ms + step.ms
    for t in _expiry_runs(before, leader, before.clock_ms, end):
        part = Tick(ms=t - state.clock_ms)
        moved = apply(state, part)
        out.append(part)
        proposer = _new_proposal(state, moved)
        state = moved
        if proposer is not None:
            state, deliver = _deliver(state, proposer, at)
            out.append(deliver)
    if state.clock_ms < end:
        out.append(Tick(ms=end - state.clock_ms))
        state = apply(state, out[-1])
    merged: list[Step] = []  # ticks with no delivery between them are one tick
    for piece in out:
        if isinstance(piece, Tick) and merged and isinstance(merged[-1], Tick):
            merged[-1] = Tick(ms=merged[-1].ms + piece.ms)
        else:
            merged.append(piece)
    return merged, state


def migrate_from_1(fixture_steps: Sequence[FixtureStep], start: State) -> list[FixtureStep]:
    """Format 1 to 2 for one ``diverging-epoch`` case: every ISR change the leader proposes
    is delivered at once, as format 1 committed it, and the step's expectations move after
    the delivery. A ``tick`` that makes a proposal is cut at the leader's ISR checks, a
    delivery after each one that proposes (each check committed its change at once).

    Returns the new list, renumbered. Raises ``MigrationError`` where the old meaning
    cannot be reproduced step for step.
    """
    out: list[FixtureStep] = []
    state = start
    for fs in fixture_steps:
        before = state
        try:
            state = apply(state, fs.step)
        except StepRejected:
            out.append(replace(fs, index=len(out)))
            continue
        leader = _new_proposal(before, state)
        if leader is None:
            out.append(replace(fs, index=len(out)))
            continue
        steps, state = _replay(before, fs.step, state, leader, len(out))
        for n, step in enumerate(steps):
            last = n == len(steps) - 1
            inserted = step.kind == "deliver_alter_partition" or (n > 0 and isinstance(fs.step, Tick))
            out.append(
                replace(
                    fs,
                    index=len(out),
                    step=step,
                    do=step_to_dict(step),
                    expect=fs.expect if last else None,
                    logs_match=fs.logs_match if last else (),
                    why=_MIGRATED if inserted else fs.why,
                    source=None if inserted else fs.source,
                )
            )
    return out


_MIGRATED = (
    "Inserted by the format 1 to 2 migration: when this fixture was written, an ISR change under "
    "diverging-epoch was committed in the step that made it."
)


def ambiguous_under_current(fixture_steps: Sequence[FixtureStep], start: State) -> int | None:
    """For a ``diverging-epoch`` case of a fixture without ``format:`` and without any
    ``deliver_alter_partition`` step: the index of the first step after which the leader
    has a proposal in flight (the fixture may have been written for format 1), else None."""
    state = start
    for fs in fixture_steps:
        try:
            after = apply(state, fs.step)
        except StepRejected:
            continue
        if _new_proposal(state, after) is not None:
            return fs.index
        state = after
    return None


def needs_proposal_check(generation: Generation) -> bool:
    """Only ``diverging-epoch`` changed meaning between formats 1 and 2."""
    return generation is Generation.DIVERGING_EPOCH
