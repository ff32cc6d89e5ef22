"""Bundled variants: correct implementations that resolve a choice point otherwise than Kafka,
each with a defective twin of the same shape.

Each variant takes one non-default resolution of a CHOICE rule (spec/replication.md, "Choice
points") and must meet ``settled`` (it fails ``exact`` where a fixture shows the difference);
its twin has the same shape and one real bug, and must fail ``settled`` with the defect
named (tests/test_choices.py). Like ``shapes.py``, they are small wrappers over the
reference's public API (``reference_impl.choices`` gives the non-default resolutions).
"""

from __future__ import annotations

import contextlib
import copy
from dataclasses import replace
from typing import Any

import reference_impl
from reference_impl import State, StepRejected, epoch_cache, step_from_dict
from reference_impl.choices import consume_at_most, elect_preferring
from reference_impl.given import log_starting_at
from reference_impl.steps import Consume, Elect, IsrExpiration
from reference_impl.values import evolve

from .shapes import _Wrapper

_DEFAULT_LAG_MS: int = reference_impl.Config.__dataclass_fields__["replica_lag_time_max_ms"].default  # type: ignore[assignment]


def _eligible(state: State, everyone: bool = False) -> list[str]:
    """Who an offline-partition election may pick, in assignment order: the live ISR members,
    or (unclean, or ``everyone``: the twin's bug) the live replicas."""
    online = [r.id for r in state.replicas if r.online]
    live_isr = [r for r in state.config.replicas if r in state.controller.isr and r in online]
    if live_isr and not everyone:
        return live_isr
    return online if (everyone or state.config.unclean_leader_election) else []


class ElectLastEligible(_Wrapper):
    """CHOICE-3: the controller elects the *last* eligible replica in assignment order
    (Kafka: the first). Correct: every live ISR member holds the committed records."""

    name = "choice-elect-last-eligible"
    everyone = False

    def _apply(self, step: dict[str, Any]) -> None:
        assert self._state is not None
        parsed = step_from_dict(step)
        if not isinstance(parsed, Elect) or parsed.leader is not None:
            super()._apply(step)
            return
        state = self._state
        if self.everyone:  # the twin's controller counts every assigned replica as in sync
            state = replace(state, controller=evolve(state.controller, isr=tuple(state.config.replicas)))
        eligible = _eligible(state, self.everyone)
        if not eligible:
            self._state = reference_impl.apply(state, parsed)
            return
        self._state = elect_preferring(state, parsed, eligible[-1])


class ElectOutsideIsr(ElectLastEligible):
    """Twin of ``choice-elect-last-eligible``: treats every live replica as eligible, so it
    elects one outside the ISR that may lack committed records. Defective."""

    name = "choice-elect-last-eligible-broken"
    everyone = True


class FetchOneRecord(_Wrapper):
    """CHOICE-4: a fetch answer carries one record, however many there are (KIP-74 only
    promises the first batch). Correct: the follower comes back for the rest."""

    name = "choice-fetch-one-record"

    def _apply(self, step: dict[str, Any]) -> None:
        if step.get("kind") in ("fetch", "fetch_round") and step.get("max_records") is None:
            step = {**step, "max_records": 1}
        super()._apply(step)


class FetchOneRecordHwAsIfAll(FetchOneRecord):
    """Twin of ``choice-fetch-one-record``: sends one record but advances the leader's HW as
    if the follower had received everything there was to read (its HW is that of a shadow
    run with whole answers). Defective: the HW passes records an ISR member lacks."""

    name = "choice-fetch-one-record-broken"

    def __init__(self) -> None:
        super().__init__()
        self._whole: State | None = None

    def reset(self, config: dict[str, Any], initial: dict[str, Any] | None = None) -> None:
        super().reset(config, initial)
        self._whole = self._state

    def _apply(self, step: dict[str, Any]) -> None:
        super()._apply(step)
        assert self._whole is not None
        with contextlib.suppress(StepRejected):  # the shadow refuses what the variant refuses, or more
            self._whole = reference_impl.apply(self._whole, step_from_dict(step))

    def render(self, obs: dict[str, Any]) -> dict[str, Any]:
        assert self._whole is not None and self._state is not None
        leader = self._state.controller.leader
        if leader is None or self._whole.controller.leader != leader:
            return obs
        whole = self._whole.replica(leader)
        mine = obs["replicas"][leader]
        if mine["role"] == "leader" and whole.hw > mine["hw"]:
            obs = copy.deepcopy(obs)
            obs["replicas"][leader]["hw"] = min(whole.hw, mine["leo"])
        return obs


class ConsumeOneRecord(_Wrapper):
    """CHOICE-5: a consumer read returns one record at most (``max.poll.records=1``).
    Correct: the consumer reads the rest from the next offset."""

    name = "choice-consume-one-record"

    def _apply(self, step: dict[str, Any]) -> None:
        assert self._state is not None
        parsed = step_from_dict(step)
        if isinstance(parsed, Consume):
            self._state = consume_at_most(self._state, parsed, 1)
        else:
            super()._apply(step)


class ConsumeOneRecordPastHw(ConsumeOneRecord):
    """Twin of ``choice-consume-one-record``: returns the record at the offset read even when
    it is not below the HW yet. Defective: a consumer sees an uncommitted record."""

    name = "choice-consume-one-record-broken"

    def render(self, obs: dict[str, Any]) -> dict[str, Any]:
        consumer = obs.get("consumer")
        leader = obs.get("leader")
        if not consumer or consumer.get("error") or leader is None:
            return obs
        rep = obs["replicas"][leader]
        index = consumer["offset"] - rep.get("log_start", 0)
        if 0 <= index < len(rep["log"]):
            obs = copy.deepcopy(obs)
            obs["consumer"]["records"] = [rep["log"][index]]
        return obs


class IsrCheckEveryStep(_Wrapper):
    """CHOICE-6: the leader runs its ISR expiry check after every step, not only every
    ``replica.lag.time.max.ms / 2``: a lagging follower leaves as soon as its lag passes the
    bound. Correct: Kafka only promises it leaves within 1.5 × the bound."""

    name = "choice-isr-check-every-step"

    def after(self) -> None:
        assert self._state is not None
        leader = self._state.controller.leader
        if leader is None or not self._state.replica(leader).online:
            return
        try:
            checked = reference_impl.apply(self._state, IsrExpiration(leader))
        except StepRejected:
            return
        if any(rule in checked.fired for rule in ("ISR-SHRINK-1", "ISR-SHRINK-2")):
            self._state = checked  # else nothing changed: keep the step's own answers observable


class IsrCheckHalfLag(IsrCheckEveryStep):
    """Twin of ``choice-isr-check-every-step``: compares a follower's lag with half of
    ``replica.lag.time.max.ms`` (a unit slip), so a follower leaves the ISR before the bound.
    Defective."""

    name = "choice-isr-check-every-step-broken"

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        lag = config.get("replica_lag_time_max_ms") or _DEFAULT_LAG_MS
        return {**config, "replica_lag_time_max_ms": max(1, lag // 2)}


class CheckpointEveryChange(_Wrapper):
    """CHOICE-7: the HW checkpoint is written on every change of the HW, not by a task every
    ``replica.high.watermark.checkpoint.interval.ms``. Correct: a restart starts from a
    fresher HW, never one above what the broker had."""

    name = "choice-checkpoint-every-change"

    def config(self, config: dict[str, Any]) -> dict[str, Any]:
        return {**config, "replica_high_watermark_checkpoint_interval_ms": 0}


class CheckpointLeo(CheckpointEveryChange):
    """Twin of ``choice-checkpoint-every-change``: writes the LEO to the checkpoint file
    instead of the HW, so a restarted broker counts uncommitted records as committed.
    Defective."""

    name = "choice-checkpoint-every-change-broken"

    def after(self) -> None:
        assert self._state is not None
        replicas = tuple(evolve(r, checkpoint_hw=r.leo) if r.online else r for r in self._state.replicas)
        self._state = replace(self._state, replicas=replicas)


class LogStartDurableAtOnce(_Wrapper):
    """CHOICE-8: a follower's raised log start (LOG-START-4) is checkpointed at once, and the
    records below it deleted, not left on disk until the ``kafka-log-start-offset-checkpoint``
    task runs. Correct: a restart keeps a log start the leader had, nothing committed above it
    is lost."""

    name = "choice-log-start-durable-at-once"
    off_by_one = False

    def after(self) -> None:
        assert self._state is not None
        if not any(r.unchecked_below for r in self._state.replicas):
            return
        replicas = []
        for r in self._state.replicas:
            if r.unchecked_below:
                r = evolve(r, unchecked_below=())
                if self.off_by_one and r.log_start < r.hw:  # the twin deletes the first record it keeps too
                    start = r.log_start + 1
                    r = evolve(
                        r,
                        log=log_starting_at(start, r.log.read(start)),
                        log_start=start,
                        epoch_cache=epoch_cache.truncate_from_start(r.epoch_cache, start),
                    )
            replicas.append(r)
        self._state = replace(self._state, replicas=tuple(replicas))


class LogStartDurableOffByOne(LogStartDurableAtOnce):
    """Twin of ``choice-log-start-durable-at-once``: deletes the records below the new log start
    and the first one at it (an off-by-one), so a committed record leaves the follower's log.
    Defective."""

    name = "choice-log-start-durable-at-once-broken"
    off_by_one = True


VARIANTS: dict[str, type[_Wrapper]] = {
    cls.name: cls
    for cls in (
        ElectLastEligible,
        ElectOutsideIsr,
        FetchOneRecord,
        FetchOneRecordHwAsIfAll,
        ConsumeOneRecord,
        ConsumeOneRecordPastHw,
        IsrCheckEveryStep,
        IsrCheckHalfLag,
        CheckpointEveryChange,
        CheckpointLeo,
        LogStartDurableAtOnce,
        LogStartDurableOffByOne,
    )
}
"""Name -> class: the correct variants and their ``-broken`` twins."""


def elect_last_eligible() -> ElectLastEligible:
    """CHOICE-3 variant: elects the last eligible replica (correct)."""
    return ElectLastEligible()


def elect_outside_isr() -> ElectOutsideIsr:
    """CHOICE-3 twin: elects a replica outside the ISR (defective)."""
    return ElectOutsideIsr()


def fetch_one_record() -> FetchOneRecord:
    """CHOICE-4 variant: one record per fetch answer (correct)."""
    return FetchOneRecord()


def fetch_one_record_hw_as_if_all() -> FetchOneRecordHwAsIfAll:
    """CHOICE-4 twin: one record sent, HW advanced as if all were (defective)."""
    return FetchOneRecordHwAsIfAll()


def consume_one_record() -> ConsumeOneRecord:
    """CHOICE-5 variant: one record per consumer read (correct)."""
    return ConsumeOneRecord()


def consume_one_record_past_hw() -> ConsumeOneRecordPastHw:
    """CHOICE-5 twin: reads one record even at or above the HW (defective)."""
    return ConsumeOneRecordPastHw()


def isr_check_every_step() -> IsrCheckEveryStep:
    """CHOICE-6 variant: the ISR expiry check after every step (correct)."""
    return IsrCheckEveryStep()


def isr_check_half_lag() -> IsrCheckHalfLag:
    """CHOICE-6 twin: drops followers after half the lag bound (defective)."""
    return IsrCheckHalfLag()


def checkpoint_every_change() -> CheckpointEveryChange:
    """CHOICE-7 variant: HW checkpointed on every change (correct)."""
    return CheckpointEveryChange()


def checkpoint_leo() -> CheckpointLeo:
    """CHOICE-7 twin: checkpoints the LEO instead of the HW (defective)."""
    return CheckpointLeo()


def log_start_durable_at_once() -> LogStartDurableAtOnce:
    """CHOICE-8 variant: a raised log start checkpointed at once (correct)."""
    return LogStartDurableAtOnce()


def log_start_durable_off_by_one() -> LogStartDurableOffByOne:
    """CHOICE-8 twin: deletes one record too many at the raise (defective)."""
    return LogStartDurableOffByOne()
