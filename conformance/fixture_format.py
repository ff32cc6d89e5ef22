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
``tick`` whose later ISR checks would have found more to change in the same tick (now
blocked by the proposal still in flight, ISR-ALTER-1) cannot be migrated step for step: the
loader says so. A fixture without ``format:`` is read as format 2; but if it runs under
``diverging-epoch``, never delivers a proposal and the leader makes one, it may have been
written for format 1, and the loader asks which (``ambiguous_under_current``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from reference_impl import Generation, State, StepRejected, apply
from reference_impl.steps import DeliverAlterPartition, Tick

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


def _expiry_runs(state: State, leader: str, before_ms: int, after_ms: int) -> int:
    """How many of ``leader``'s periodic ISR checks fall in ``(before_ms, after_ms]``
    (every ``replica.lag.time.max.ms / 2`` from its broker's start, ISR-SHRINK-2)."""
    period = max(1, state.config.replica_lag_time_max_ms // 2)
    started = state.replica(leader).started_ms
    first = started + period * max(1, -(-(before_ms + 1 - started) // period))
    return 0 if first > after_ms else 1 + (after_ms - first) // period


def migrate_from_1(fixture_steps: Sequence[FixtureStep], start: State) -> list[FixtureStep]:
    """Format 1 to 2 for one ``diverging-epoch`` case: a ``deliver_alter_partition`` after
    every step that makes a proposal, carrying that step's expectations.

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
        if isinstance(fs.step, Tick) and _expiry_runs(before, leader, before.clock_ms, state.clock_ms) > 1:
            raise MigrationError(
                len(out),
                f"format 1: this tick of {fs.step.ms} ms runs {leader}'s ISR check more than once; under format 1 "
                "each run committed its change at once, now the first proposal blocks the later runs until it is "
                "delivered (ISR-ALTER-1). Split the tick at the ISR checks, add deliver_alter_partition steps and "
                "set format: 2",
            )
        out.append(replace(fs, index=len(out), expect=None, logs_match=()))
        deliver = DeliverAlterPartition(replica=leader)
        state = apply(state, deliver)
        out.append(
            replace(
                fs,
                index=len(out),
                step=deliver,
                do={"kind": "deliver_alter_partition", "replica": leader},
                expect_rejected=None,
                why=(
                    "Inserted by the format 1 to 2 migration: the ISR change proposed by the step before "
                    "was committed at once when this fixture was written."
                ),
            )
        )
    return out


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
