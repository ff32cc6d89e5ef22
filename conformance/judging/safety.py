"""Safety: the spec's invariants, checked on an implementation's OWN observations.

This module is the one definition of each safety property (spec/replication.md, "Safety
properties over observations"). The reference is checked by it too, on
``reference_impl.observe(state)`` (tests/test_safety.py); the reference's fast internal
form (``reference_impl/invariants.py``) is proved to give the same verdicts on random runs
(tests/test_invariants.py).

No reference is involved: after every step, the (normalised) observation is checked alone
(state properties) and against the previous one (transition properties), with a small
history carried along (acknowledged and consumed records, produces waiting for their
acknowledgement, the offsets a power failure, an allowed unclean election or a KIP-101
truncation gave up).

Each property declares the observation fields it needs, the step kinds that make it
applicable and the generations it holds in (``Property``). A monitor is told what the
implementation reports and performs, counts how often each property was actually
evaluated on data (``coverage``), and ``certificate`` says whether safety is *established*
over a set of runs: every required, applicable property evaluable and evaluated at least
once. An implementation that shows nothing proves nothing.

Waivers are narrow, each with its Kafka source: an unclean election the config allows
(``unclean.leader.election.enable``) gives up the acknowledged records that leader lacks; a
power failure (``crash`` with ``unflushed_from`` below the LEO) gives up the offsets from the
lowest one lost (Kafka does not fsync per write; KIP-966 for the unclean shutdown); under
``hw-truncation`` a truncation to the HW on restart or on becoming follower gives up the
offsets it cut (KIP-101), and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from reference_impl import Config, Generation
from reference_impl.observe import agreed_prefix


@dataclass(frozen=True)
class Property:
    """A safety property: its id, its text, what it needs to be evaluated."""

    id: str
    text: str
    fields: frozenset[str] = frozenset()
    """Top-level observation fields it reads."""
    replica_fields: frozenset[str] = frozenset()
    """Per-replica fields it reads."""
    steps: frozenset[str] = frozenset()
    """Applicable only to an implementation performing one of these step kinds (empty: any)."""
    generations: frozenset[str] = frozenset()
    """Applicable only under these generations (empty: every one)."""
    required: bool = True
    """Whether ``certificate`` needs it evaluated (where applicable)."""
    unchecked: str = ""
    """Why a run may never evaluate it although every field is reported."""

    def __str__(self) -> str:
        return self.text


def _p(
    id: str,
    text: str,
    fields: str = "",
    replica_fields: str = "",
    steps: str = "",
    generations: str = "",
    required: bool = True,
    unchecked: str = "",
) -> Property:
    return Property(
        id,
        text,
        frozenset(fields.split()),
        frozenset(replica_fields.split()),
        frozenset(steps.split()),
        frozenset(generations.split()),
        required,
        unchecked,
    )


PROPERTIES: dict[str, Property] = {
    p.id: p
    for p in (
        _p(
            "SAFE-HW-LE-LEO",
            "on every replica hw <= leo (HwLeLeo)",
            replica_fields="hw leo",
            unchecked="no replica reported hw and leo",
        ),
        _p(
            "SAFE-LOG-LEO",
            "on every replica the log holds leo - log_start records",
            replica_fields="leo log",
            unchecked="no replica reported leo and log",
        ),
        _p(
            "SAFE-LEADER-HW-MONOTONIC",
            "a leader's hw never decreases while it stays leader, online, in one epoch (LeaderHwMonotonic)",
            replica_fields="online role leader_epoch hw",
            unchecked="no replica stayed an online leader in one epoch over a step",
        ),
        _p(
            "SAFE-EPOCHS-INCREASE",
            "the controller's epoch never decreases; no replica's known epoch goes below one it knew (EpochsIncrease)",
            fields="leader_epoch",
            unchecked="no two consecutive observations reported leader_epoch",
        ),
        _p(
            "SAFE-ONE-LEADER",
            "no two online replicas lead the same epoch (OneLeaderPerEpoch)",
            replica_fields="online role leader_epoch",
            unchecked="no observation reported every replica's online, role and leader_epoch",
        ),
        _p(
            "SAFE-STRONG-ISR",
            "every online ISR member holds the current leader's records below the leader's hw (StrongIsr); "
            "waived: records a power failure lost, offsets a KIP-101 truncation cut (hw-truncation)",
            fields="leader isr",
            replica_fields="online role hw log",
            unchecked="no observation had a current leader",
        ),
        _p(
            "SAFE-ACKED",
            "records acknowledged to an acks=all producer or returned to a consumer stay in the current "
            "leader's log at their offsets (AckedNotLost); waived: what an allowed unclean election's leader "
            "lacks, offsets from the lowest a power failure lost, offsets a KIP-101 truncation cut",
            fields="leader producer",
            replica_fields="online role log",
            steps="produce",
            unchecked="no acks=all produce was acknowledged",
        ),
        _p(
            "SAFE-ACK-COMMITTED",
            "an acks=all produce is acknowledged only once the leader's hw covers its records (PRODUCE-5)",
            fields="producer",
            replica_fields="leo hw",
            steps="produce",
            unchecked="no acks=all produce was acknowledged",
        ),
        _p(
            "SAFE-ACK-MIN-ISR",
            "an acks=all produce is acknowledged only while the ISR has at least min.insync.replicas "
            "members (PRODUCE-2, PRODUCE-5)",
            fields="producer isr",
            replica_fields="leo",
            steps="produce",
            unchecked="no acks=all produce was acknowledged",
        ),
        _p(
            "SAFE-LEADER-IN-ISR",
            "a newly elected leader was in the ISR before the election; outside it only when unclean "
            "election is enabled and no ISR member was live; a named (controlled) election never "
            "(CTRL-ELECT-1/2/4)",
            fields="leader isr",
            steps="elect restart",
            unchecked="no leader was elected",
        ),
        _p(
            "SAFE-CONSUMER-BELOW-HW",
            "a consumer gets only records below the leader's hw (ConsumerBelowHw)",
            fields="leader consumer",
            replica_fields="online role hw",
            steps="consume",
            unchecked="no consume returned records",
        ),
        _p(
            "SAFE-EPOCH-CACHE",
            "epoch cache epochs and start offsets strictly increase, none starts past leo (EpochCacheMonotonic)",
            replica_fields="epoch_cache leo",
            generations=" ".join(g.value for g in Generation if g.profile.keeps_epoch_cache),
            required=False,
            unchecked="no replica reported a non-empty epoch_cache",
        ),
    )
}
"""Every property by id (``str(PROPERTIES[id])`` and ``.text`` give its text)."""


_NULL_IS_A_VALUE = frozenset({"consumer", "leader"})
"""Top-level observation fields whose null is a state of the protocol, not an absent field."""


@dataclass(frozen=True)
class Finding:
    property: str
    detail: str

    def __str__(self) -> str:
        return f"{self.property}: {self.detail}"


@dataclass(frozen=True)
class Coverage:
    """How one property fared over a run."""

    checked: int
    """How many times it was evaluated on data (not merely "no finding")."""
    missing: tuple[str, ...]
    """The fields it needs that the implementation does not report (``replicas.x`` for a
    replica field), sorted."""
    applicable: bool
    """False when the implementation performs none of its step kinds or its generation is
    not the run's."""


POWER_FAILURE = "power failure"
"""Waiver: records a power failure lost (CRASH-2; Kafka does not fsync per write, KIP-966)."""
KIP_101 = "KIP-101"
"""Waiver: hw-truncation, offsets a truncation to the HW cut (TRUNC-HW-1, KIP-101)."""

KAFKA_7128 = "KAFKA-7128"
"""Waiver: hw-truncation, offsets an ISR member lacked when it joined the ISR at a leader's
HW below one a leader had reported before (ISR-EXPAND-1 without -2: KAFKA-7128)."""

UNCLEAN = "unclean election"
"""Waiver: hw-truncation, offsets where replicas held other records than an allowed unclean
election's leader (``unclean.leader.election.enable``)."""

_MAPPING = (dict, Mapping)

NO_EPOCH = -1
"""A replica's ``leader_epoch`` when it knows none: Kafka's ``LeaderAndIsr.initialLeaderEpoch - 1``,
the epoch of a ``Partition`` no LeaderAndIsr has named a leader to yet (LAI-4, RESTART-1)."""
"""``isinstance`` against this settles a plain dict (every decoded observation) without the
slower abstract-class check."""


def _int(value: Any) -> TypeGuard[int]:
    return value.__class__ is int or (isinstance(value, int) and not isinstance(value, bool))


class SafetyMonitor:
    """Checks one run, step by step: feed it every accepted step and its observation
    (``observe``) and every refused step (``refused``).

    ``fields``, ``replica_fields``, ``steps``: what the implementation declares it reports
    and performs (None: everything, as the reference)."""

    def __init__(
        self,
        config: Config,
        fields: frozenset[str] | None = None,
        replica_fields: frozenset[str] | None = None,
        steps: frozenset[str] | None = None,
        shared: bool = False,
        counting: bool = False,
    ) -> None:
        self.config = config
        self.counting = counting
        """Only ``coverage`` is wanted (``runner.reference_coverage``: what the reference's
        own run exercises): SAFE-ACKED, whose evaluation reads every committed record at
        each step the leader's log changed, is counted and not evaluated. Its findings
        feed nothing the other properties count, so the coverage is the same."""
        self.shared = shared
        """The observations share unchanged parts and are never changed afterwards
        (``Adapter.shares_observations``): a replica that is the same dict as at the
        previous step is not read again, and logs that say where they were read from
        (``reference_impl.observe.LogRecords``) are compared only where they may differ."""
        self._replica_memo: dict[str, tuple[Any, list[Finding], tuple[bool, bool, bool]]] = {}
        """Per replica: the dict last checked by ``_per_replica``, its findings and flags."""
        self._last_replicas: tuple[Any, tuple[Finding, ...], tuple[str, ...]] | None = None
        """The replicas mapping ``_state`` last checked per replica (shared observations),
        its per-replica findings and the properties that counted."""
        self._unchanged: tuple[Any, bool, bool] | None = None
        """The replicas mapping of a step that changed no replica, with the per-replica
        transition properties' evaluation flags (``_transition``)."""
        self._caches: dict[str, tuple[Any, bool]] = {}
        """Per replica: the epoch cache list last checked and whether it strictly increases."""
        self._noted: dict[str, Any] = {}
        """Per replica: the dict whose fields ``_note_fields`` last noted."""
        self._added: list[int] = []
        """The offsets ``committed`` took a record at, in order (``_acked`` checks only
        these when the leader's log is known to be unchanged below the others)."""
        self._highest = -1
        """The highest offset ``committed`` ever took a record at."""
        self._acked_clean: tuple[str, Any, int, int] | None = None
        """After a SAFE-ACKED check with nothing lost or waived: (the leader, its log, its
        log start, how many of ``_added`` were checked)."""
        self.generation = config.generation.value
        self.truncates_to_hw = config.profile.truncates_to_hw_on_follow
        """TRUNC-HW-1 (KIP-101): cuts to the HW are waived, not failed (``_kip101_cuts``)."""
        self.fields = fields
        self.replica_fields = replica_fields
        self.steps = steps
        self.previous: dict[str, Any] | None = None
        self.committed: dict[int, str] = {}
        """offset -> ``value@epoch`` of every record acknowledged (acks=all) or consumed and
        still protected."""
        self.lost_from: int | None = None
        """The lowest offset a power failure lost records from (None before any)."""
        self.cuts: list[tuple[int, int]] = []
        """hw-truncation: the offset ranges a truncation to the HW cut (KIP-101)."""
        self.stale_joins: list[tuple[int, int]] = []
        """hw-truncation: the offset ranges ISR members lacked when they joined the ISR at a
        stale leader HW (KAFKA-7128: ``_stale_joins``)."""
        self._top_hw = -1
        """The highest HW a current leader reported so far (in a given start: the highest
        HW any replica holds there, ``given``)."""
        self.unclean: list[tuple[int, int]] = []
        """hw-truncation: the offset ranges where replicas held other records than an
        allowed unclean election's leader (nothing but epochs would remove them)."""
        self._known_epochs: dict[str, int] = {}
        """Per replica: the highest known epoch it reported (SAFE-EPOCHS-INCREASE compares a
        newly reported one with it; ``NO_EPOCH`` is not an epoch)."""
        self.waived: list[tuple[Finding, str]] = []
        """Findings a waiver excused, with the waiver (``POWER_FAILURE``, ``KIP_101``,
        ``UNCLEAN``): kept so tests and reports can see what was excused, and why."""
        self._pending: dict[str, tuple[str, list[tuple[int, str]] | None, int | None]] = {}
        """acks=all produce id -> (the replica it appended to, its records at their offsets
        if the log is reported, the end offset if the LEO is)."""
        self._checked: dict[str, int] = dict.fromkeys(PROPERTIES, 0)
        self._seen: set[str] = set()
        self._seen_replica: set[str] = set()
        self._observations = 0
        self.refusals = 0
        """How many steps the implementation refused (``refused``): a run made only of
        refusals evaluates nothing, which ``coverage`` shows."""

    # --- the public surface -----------------------------------------------------------

    def observe(self, step: Mapping[str, Any], obs: Mapping[str, Any]) -> list[Finding]:
        """The findings of this step (empty when every property holds or is waived)."""
        before = self.previous
        self._note_fields(obs)
        out: list[Finding] = []
        out += self._elections(step, before, obs)
        self._power_failure(step, before)
        self._kip101_cuts(step, before, obs)
        self._stale_joins(before, obs)
        out += self._produces(step, before, obs)
        out += self._consumed(step, obs)
        out += self._state(obs)
        if before is not None:
            out += self._transition(before, obs)
        out += self._acked(obs)
        self.previous = dict(obs)
        return out

    def given(self, obs: Mapping[str, Any]) -> None:
        """Start from a given state (a fixture's ``initial:``, a drawn start) instead of the
        empty partition: its observation is the history's first. Under hw-truncation the
        records a replica holds past the leader's log end there are an unclean history's
        leftovers (only an unclean election or a lost tail puts them there), which nothing
        but epochs would remove: those offsets are waived as ``UNCLEAN``. Every replica's
        HW there came from a leader that reported it (a follower takes its leader's, a
        restart its checkpoint's), so the highest of them is a HW a leader reported before,
        with a leader in the start or without (``_stale_joins``)."""
        self.previous = dict(obs)
        reps = obs.get("replicas")
        leader = _current_leader(obs)
        if self.truncates_to_hw and isinstance(reps, _MAPPING):
            hws = [rep.get("hw") for rep in reps.values() if isinstance(rep, _MAPPING)]
            self._top_hw = max((hw for hw in hws if _int(hw)), default=-1)
        if self.config.profile.keeps_epoch_cache or leader is None or not isinstance(reps, _MAPPING):
            return
        end = leader[1].get("leo")
        for rep in reps.values():
            leo = rep.get("leo") if isinstance(rep, _MAPPING) else None
            if _int(end) and _int(leo) and leo > end:
                self.unclean.append((end, leo))

    def refused(self, step: Mapping[str, Any]) -> None:
        """A step the implementation refused: it changed nothing, so nothing is checked and
        the history (the previous observation, what waits for an acknowledgement) stays."""
        self.refusals += 1

    def coverage(self) -> dict[str, Coverage]:
        """Per property: how often it was evaluated, what it lacks, whether it applies."""
        out = {}
        for pid, prop in PROPERTIES.items():
            applicable = (not prop.generations or self.generation in prop.generations) and (
                not prop.steps or self.steps is None or bool(prop.steps & self.steps)
            )
            out[pid] = Coverage(self._checked[pid], self._missing(prop), applicable)
        return out

    # --- fields -----------------------------------------------------------------------

    def _note_fields(self, obs: Mapping[str, Any]) -> None:
        self._observations += 1
        # null is a value for these (no consume yet, no leader): reported, not missing. A run
        # whose leader is gone from its start still reports the field (seed 125 of
        # `kconform fuzz --examples 5 --steps 10` once read it as missing and withheld the
        # certificate from the reference itself)
        seen = self._seen
        for k in obs.keys() - seen:  # only fields not reported yet (usually none)
            if obs[k] is not None or k in _NULL_IS_A_VALUE:
                seen.add(k)
        reps = obs.get("replicas")
        if self.shared and reps is self._noted.get(""):
            return  # the same mapping of replicas: every field noted already
        if isinstance(reps, _MAPPING):
            noted = self._noted
            noted[""] = reps
            for name, rep in reps.items():
                if self.shared:
                    if noted.get(name) is rep:
                        continue  # the same dict: its fields are noted already
                    noted[name] = rep
                if isinstance(rep, _MAPPING) and not rep.keys() <= self._seen_replica:
                    self._seen_replica.update(rep)

    def _missing(self, prop: Property) -> tuple[str, ...]:
        """Needed fields not declared, or (once something was observed) never reported."""

        def lacks(name: str, declared: frozenset[str] | None, seen: set[str]) -> bool:
            return (declared is not None and name not in declared) or (self._observations > 0 and name not in seen)

        top = {f for f in prop.fields if lacks(f, self.fields, self._seen)}
        reps = {f for f in prop.replica_fields if lacks(f, self.replica_fields, self._seen_replica)}
        if prop.replica_fields and lacks("replicas", self.fields, self._seen):
            top.add("replicas")
        return tuple(sorted(top)) + tuple(sorted(f"replicas.{f}" for f in reps))

    def _count(self, pid: str) -> None:
        self._checked[pid] += 1

    # --- history: elections, power failures, KIP-101 truncations ------------------------

    def _elections(
        self, step: Mapping[str, Any], before: Mapping[str, Any] | None, obs: Mapping[str, Any]
    ) -> list[Finding]:
        """SAFE-LEADER-IN-ISR, and the SAFE-ACKED waiver of an allowed unclean election."""
        if before is None:
            return []
        leader, old_leader, isr = obs.get("leader"), before.get("leader"), before.get("isr")
        if leader is None or not isinstance(isr, list) or "leader" not in before:
            return []
        e0, e1 = before.get("leader_epoch"), obs.get("leader_epoch")
        if leader == old_leader and not (_int(e0) and _int(e1) and e1 > e0):
            return []
        self._count("SAFE-LEADER-IN-ISR")
        if leader in isr:
            return []
        named = step.get("kind") == "elect" and step.get("leader") is not None
        if named:
            why = f"the controlled election of {leader} picked a replica outside the ISR {isr}"
        elif not self.config.unclean_leader_election:
            why = f"{leader} was elected from outside the ISR {isr} with unclean.leader.election.enable off"
        else:
            live = [m for m in isr if (_replica(before, m) or {}).get("online") is True]
            if not live:
                self._unclean(str(leader), before, obs)
                return []
            why = f"unclean election of {leader} while ISR member(s) {', '.join(map(str, live))} were live"
        return [Finding("SAFE-LEADER-IN-ISR", why)]

    def _unclean(self, leader: str, before: Mapping[str, Any], obs: Mapping[str, Any]) -> None:
        """An unclean election the config allows gives up what its leader lacks
        (``unclean.leader.election.enable``): those records are no longer protected. Under
        hw-truncation the other replicas keep the records they hold where the new leader's
        log differs (a follower truncates to its HW, or to the leader's LEO when out of
        range, FOLLOWER-OOR-1, never by epoch): those offsets are waived too."""
        rep = _replica(obs, leader)
        log = rep.get("log") if rep is not None else None
        if not isinstance(log, list):
            self.committed.clear()
            return
        start = _start(rep or {})
        for offset, record in list(self.committed.items()):
            if not (start <= offset < start + len(log) and log[offset - start] == record):
                del self.committed[offset]
        if not self.truncates_to_hw:
            return
        reps = before.get("replicas")
        for name, other in reps.items() if isinstance(reps, _MAPPING) else ():
            theirs = other.get("log") if isinstance(other, _MAPPING) and name != leader else None
            if not isinstance(theirs, list):
                continue
            ostart = _start(other)
            first = max(start, ostart)
            end = ostart + len(theirs)
            differ = [o for o in range(first, end) if o >= start + len(log) or log[o - start] != theirs[o - ostart]]
            if differ:
                self.unclean.append((differ[0], end))

    def _power_failure(self, step: Mapping[str, Any], before: Mapping[str, Any] | None) -> None:
        """A ``crash`` with ``unflushed_from`` below the LEO the broker last reported lost
        records (CRASH-2): from there on SAFE-ACKED and SAFE-STRONG-ISR are waived. One at
        the LEO lost nothing and waives nothing."""
        unflushed_from = step.get("unflushed_from") if step.get("kind") == "crash" else None
        if not _int(unflushed_from):
            return
        rep = _replica(before, step.get("replica")) if before is not None else None
        leo = rep.get("leo") if rep is not None else None
        if _int(leo) and unflushed_from >= leo:
            return
        if not _int(leo):
            log = rep.get("log") if rep is not None else None
            if isinstance(log, list) and unflushed_from >= _start(rep or {}) + len(log):
                return
        if self.lost_from is None or unflushed_from < self.lost_from:
            self.lost_from = unflushed_from

    def _kip101_cuts(self, step: Mapping[str, Any], before: Mapping[str, Any] | None, obs: Mapping[str, Any]) -> None:
        """hw-truncation: a replica that truncates to its HW on restart or on becoming
        follower (TRUNC-HW-1, KIP-101) cuts records another ISR member may still hold; the
        offsets cut are waived for SAFE-ACKED and SAFE-STRONG-ISR. A follower that does not
        report its HW is taken at its word: in those steps hw-truncation has no other
        truncation."""
        if not self.truncates_to_hw or before is None:
            return
        old_reps, new_reps = before.get("replicas"), obs.get("replicas")
        if not isinstance(old_reps, _MAPPING) or not isinstance(new_reps, _MAPPING):
            return
        for name, new in new_reps.items():
            old = old_reps.get(name)
            if not isinstance(old, _MAPPING) or not isinstance(new, _MAPPING):
                continue
            l0, l1, hw = old.get("leo"), new.get("leo"), new.get("hw")
            if not (_int(l0) and _int(l1) and l1 < l0) or (_int(hw) and l1 != hw):
                continue  # no truncation, or (where the HW is reported) not to the HW
            restarted = step.get("kind") == "restart" and step.get("replica") == name
            follows = any(old.get(f) != new.get(f) for f in ("role", "leader", "leader_epoch") if f in new)
            if restarted or follows:
                self.cuts.append((l1, l0))

    def _stale_joins(self, before: Mapping[str, Any] | None, obs: Mapping[str, Any]) -> None:
        """hw-truncation: a follower joins the ISR once its LEO reaches the leader's HW
        (ISR-EXPAND-1; Kafka 0.10's ``Partition.maybeExpandIsr``), and a newly elected
        leader's HW can be below what an earlier leader had committed (a follower's HW
        lags its leader's). A member that joins at such a stale HW lacks the offsets from
        its log end to the highest HW a leader reported before: its lacking them is waived
        for SAFE-STRONG-ISR (holding other records there is not), and their loss for
        SAFE-ACKED (a later election of it loses them: the data loss of KAFKA-7128, fixed in
        2.1 by ISR-EXPAND-2). A join below the HW its leader reported before the step is not
        waived: that breaks ISR-EXPAND-1 in every generation."""
        if not self.truncates_to_hw:
            return
        isr, old_isr = obs.get("isr"), before.get("isr") if before is not None else None
        if isr is not old_isr and isinstance(isr, list) and isinstance(old_isr, list) and isr != old_isr:
            leader = _current_leader(obs)
            was = _replica(before, leader[0]) if leader is not None else None
            same = leader is not None and before is not None and before.get("leader") == leader[0]
            old_hw = was.get("hw") if was is not None and same else None
            if _int(old_hw) and old_hw < self._top_hw:
                for member in isr:
                    rep = _replica(obs, member) if member not in old_isr else None
                    end = _end(rep) if rep is not None else None
                    if end is not None and old_hw <= end < self._top_hw:
                        self.stale_joins.append((end, self._top_hw))
        reps, name = obs.get("replicas"), obs.get("leader")
        rep = reps.get(name) if isinstance(reps, _MAPPING) and name is not None else None
        hw = rep.get("hw") if isinstance(rep, _MAPPING) else None
        if _int(hw) and hw > self._top_hw:  # (rarely: then whether it is the current leader's)
            current = _current_leader(obs)
            if current is not None and current[1] is rep:
                self._top_hw = hw

    def _waived(self, offset: int, divergence: bool = False) -> str:
        """Why a difference at ``offset`` is excused ("" if it is not). ``divergence``: an
        ISR member holding *other* records than the leader (SAFE-STRONG-ISR). After a power
        failure, from the lowest offset lost on: under the epoch generations the epoch-based
        truncation (TRUNC-EPOCH-*) removes them later; under hw-truncation nothing does, and
        that is KIP-101's scenario 2."""
        if self.lost_from is not None and offset >= self.lost_from:
            # under hw-truncation a divergence after a power failure is KIP-101's scenario 2:
            # the member that kept its records truncates to its HW, which leaves them
            return KIP_101 if divergence and self.truncates_to_hw else POWER_FAILURE
        for lo, hi in self.cuts:
            if lo <= offset < hi:
                return KIP_101
        for lo, hi in self.unclean:
            if lo <= offset < hi:
                return UNCLEAN
        for lo, hi in self.stale_joins if not divergence else ():  # lacking them, not holding others
            if lo <= offset < hi:
                return KAFKA_7128
        return ""

    # --- produces and consumes: what is acknowledged, and when ---------------------------

    def _produces(
        self, step: Mapping[str, Any], before: Mapping[str, Any] | None, obs: Mapping[str, Any]
    ) -> list[Finding]:
        acks_all = str(step.get("acks", "all")) == "all"
        if step.get("kind") == "produce" and before is not None and step.get("id") is not None and acks_all:
            appended = _appended(before, obs, step)
            if appended is not None:
                self._pending[str(step["id"])] = appended
        producer = obs.get("producer")
        if not isinstance(producer, _MAPPING) or not self._pending:
            return []
        out: list[Finding] = []
        for pid, (target, records, end) in list(self._pending.items()):
            status = producer.get(pid)
            if status is None or status == "pending":
                continue
            del self._pending[pid]
            if status != "acked":
                continue
            for offset, record in records or ():
                self.committed[offset] = record
                self._added.append(offset)
                self._highest = max(self._highest, offset)
            out += self._ack_checks(pid, target, end, before, obs)
        return out

    def _ack_checks(
        self, pid: str, target: str, end: int | None, before: Mapping[str, Any] | None, obs: Mapping[str, Any]
    ) -> list[Finding]:
        out = []
        rep = _replica(obs, target)
        hw = rep.get("hw") if rep is not None else None
        if end is not None and _int(hw):
            self._count("SAFE-ACK-COMMITTED")
            if hw < end:
                out.append(
                    Finding("SAFE-ACK-COMMITTED", f"{pid} acknowledged with {target}'s hw={hw} below its end {end}")
                )
        isr, old = obs.get("isr"), before.get("isr") if before is not None else None
        if isinstance(isr, list) and not _behind(rep, obs):
            # The ack happened inside the step: with the ISR before it, after it, or one in
            # between (a tick may shrink it twice); only both below the minimum is certain.
            self._count("SAFE-ACK-MIN-ISR")
            need = self.config.min_insync_replicas
            if _maximal(obs, isr) < need and (not isinstance(old, list) or _maximal(before or {}, old) < need):
                out.append(
                    Finding("SAFE-ACK-MIN-ISR", f"{pid} acknowledged with ISR {isr} below min.insync.replicas={need}")
                )
        return out

    def _consumed(self, step: Mapping[str, Any], obs: Mapping[str, Any]) -> list[Finding]:
        """SAFE-CONSUMER-BELOW-HW; and the records a consumer got become protected."""
        consumer = obs.get("consumer")
        if step.get("kind") != "consume" or not isinstance(consumer, _MAPPING):
            return []
        records = consumer.get("records")
        if not isinstance(records, list) or not records:
            return []
        offset = consumer.get("offset") or 0
        for i, record in enumerate(records):
            if offset + i not in self.committed:
                self.committed[offset + i] = record
                self._added.append(offset + i)
                self._highest = max(self._highest, offset + i)
        leader = _current_leader(obs)
        hw = leader[1].get("hw") if leader is not None else None
        if not _int(hw):
            return []
        self._count("SAFE-CONSUMER-BELOW-HW")
        end = offset + len(records)
        if end > hw:
            return [Finding("SAFE-CONSUMER-BELOW-HW", f"consumer got offsets {offset}..{end - 1} with leader hw={hw}")]
        return []

    # --- state properties ----------------------------------------------------------------

    def _state(self, obs: Mapping[str, Any]) -> list[Finding]:
        reps = obs.get("replicas")
        reps = reps if isinstance(reps, _MAPPING) else {}
        last = self._last_replicas
        out: list[Finding]
        if self.shared and last is not None and last[0] is reps:  # no replica changed
            out = list(last[1])
            for pid in last[2]:
                self._count(pid)
        else:
            checked = dict(self._checked)
            out = list(self._per_replica(reps))
            out += _one_leader(reps, self._count)
            if self.shared:
                counted = tuple(pid for pid, n in self._checked.items() if n != checked[pid])
                self._last_replicas = (reps, tuple(out), counted)
        out += self._strong_isr(obs, reps)
        return out

    def _per_replica(self, reps: Mapping[str, Any]) -> Iterator[Finding]:
        hw_leo = log_leo = cache_seen = False
        memo = self._replica_memo if self.shared else None
        for name, rep in reps.items():
            if not isinstance(rep, _MAPPING):
                continue
            seen = memo.get(name) if memo is not None else None
            if seen is not None and seen[0] is rep:  # the same dict as checked before
                findings, flags = seen[1], seen[2]
            else:
                findings, flags = _replica_findings(name, rep, self._caches if memo is not None else None)
                if memo is not None:
                    memo[name] = (rep, findings, flags)
            yield from findings
            hw_leo, log_leo, cache_seen = hw_leo or flags[0], log_leo or flags[1], cache_seen or flags[2]
        for pid, seen_ in (("SAFE-HW-LE-LEO", hw_leo), ("SAFE-LOG-LEO", log_leo), ("SAFE-EPOCH-CACHE", cache_seen)):
            if seen_:
                self._count(pid)

    def _strong_isr(self, obs: Mapping[str, Any], reps: Mapping[str, Any]) -> list[Finding]:
        leader = _current_leader(obs)
        isr = obs.get("isr")
        if leader is None or not isinstance(isr, list):
            return []
        lname, lrep = leader
        hw, log = lrep.get("hw"), lrep.get("log")
        if not (_int(hw) and isinstance(log, list) and "online" in lrep and "role" in lrep):
            return []
        self._count("SAFE-STRONG-ISR")
        out = []
        for member in isr:
            mrep = reps.get(member) if member != lname else None
            if not isinstance(mrep, _MAPPING) or mrep.get("online") is not True:
                continue
            mlog = mrep.get("log")
            if not isinstance(mlog, list):
                continue
            lstart, mstart = _start(lrep), _start(mrep)
            first = max(lstart, mstart)  # nothing is compared below a log start
            if first >= hw or _same_between(mlog, mstart, log, lstart, first, hw):
                continue
            theirs, ours = mlog[first - mstart : hw - mstart], log[first - lstart : hw - lstart]
            finding = Finding(
                "SAFE-STRONG-ISR", f"ISR member {member} has {theirs} below leader {lname}'s hw={hw}, the leader {ours}"
            )
            why = self._isr_difference_waived(first, theirs, ours)
            if why:
                self.waived.append((finding, why))
            else:
                out.append(finding)
        return out

    def _isr_difference_waived(self, first: int, theirs: list[Any], ours: list[Any]) -> str:
        """Why an ISR member's difference from the leader is excused ("" if it is not).
        After a power failure a member may lack the leader's records (a prefix of them: it
        lost its unflushed tail and is still in the ISR, Kafka's unclean shutdown, KIP-966);
        other differences only at waived offsets (``_waived``)."""
        if self.lost_from is not None and len(theirs) < len(ours) and ours[: len(theirs)] == theirs:
            return POWER_FAILURE
        reasons = {
            self._waived(first + i, divergence=i < len(theirs))
            for i in range(max(len(ours), len(theirs)))
            if i >= len(theirs) or i >= len(ours) or theirs[i] != ours[i]
        }
        return "" if not reasons or "" in reasons else min(reasons)

    def _acked(self, obs: Mapping[str, Any]) -> list[Finding]:
        if not self.committed:
            return []
        leader = _current_leader(obs)
        if leader is None:
            return []
        name, rep = leader
        log = rep.get("log")
        if not isinstance(log, list) or "online" not in rep or "role" not in rep:
            return []
        self._count("SAFE-ACKED")
        if self.counting:
            return []
        start = _start(rep)
        if self._acked_unchanged(name, log, start):
            return []
        out = []
        waived = len(self.waived)
        for offset, record in sorted(self.committed.items()):
            if offset < start:  # below the leader's log start: deleted by retention (LOG-START-*), not lost
                continue
            have = log[offset - start] if offset < start + len(log) else None
            if have == record:
                continue
            finding = Finding(
                "SAFE-ACKED",
                f"{record} at offset {offset} was acknowledged or consumed; leader {name} has {have or 'nothing'}",
            )
            why = self._waived(offset)
            if why:
                self.waived.append((finding, why))
            else:
                out.append(finding)
        clean = not out and len(self.waived) == waived
        self._acked_clean = (name, log, start, len(self._added)) if clean and self.shared else None
        return out

    def _acked_unchanged(self, name: str, log: list[Any], start: int) -> bool:
        """Whether SAFE-ACKED holds with nothing lost or waived, known from the check
        before without reading the log: the same leader, whose log still holds every
        record checked then (``agreed_prefix``: the same lines of one original buffer up
        to past the highest offset committed before), and every record committed since is
        in it. When not, the caller checks everything (same findings, same order)."""
        clean = self._acked_clean
        if clean is None or clean[0] != name or clean[2] != start:
            return False
        old_log, checked = clean[1], clean[3]
        if log is not old_log:
            known = agreed_prefix(log, old_log, start, start)
            if start + known <= self._highest:
                return False
        committed, end = self.committed, start + len(log)
        for offset in self._added[checked:]:
            record = committed.get(offset)
            if record is None or offset < start:
                continue
            if offset >= end or log[offset - start] != record:
                return False
        self._acked_clean = (name, log, start, len(self._added))
        return True

    # --- transition properties ---------------------------------------------------------

    def _transition(self, before: Mapping[str, Any], obs: Mapping[str, Any]) -> list[Finding]:
        out: list[Finding] = []
        e0, e1 = before.get("leader_epoch"), obs.get("leader_epoch")
        epochs = _int(e0) and _int(e1)
        if _int(e0) and _int(e1) and e1 < e0:
            out.append(Finding("SAFE-EPOCHS-INCREASE", f"controller epoch {e0} -> {e1}"))
        old_reps, new_reps = before.get("replicas"), obs.get("replicas")
        unchanged = self._unchanged
        if self.shared and old_reps is new_reps and unchanged is not None and unchanged[0] is new_reps:
            rep_epochs, monotonic = unchanged[1], unchanged[2]  # no replica changed: as the last time
        else:
            rep_epochs, monotonic = self._replica_transitions(old_reps, new_reps, out)
            if self.shared and old_reps is new_reps:
                self._unchanged = (new_reps, rep_epochs, monotonic)
        if epochs or rep_epochs:
            self._count("SAFE-EPOCHS-INCREASE")
        if monotonic:
            self._count("SAFE-LEADER-HW-MONOTONIC")
        return out

    def _replica_transitions(self, old_reps: Any, new_reps: Any, out: list[Finding]) -> tuple[bool, bool]:
        """SAFE-EPOCHS-INCREASE and SAFE-LEADER-HW-MONOTONIC per replica (findings into
        ``out``): whether each was evaluated."""
        epochs = monotonic = False
        if not isinstance(old_reps, _MAPPING) or not isinstance(new_reps, _MAPPING):
            return epochs, monotonic
        shared = self.shared
        for name, old in old_reps.items():
            new = new_reps.get(name)
            if not isinstance(old, _MAPPING) or not isinstance(new, _MAPPING):
                continue
            if shared and old is new:  # nothing changed: no finding; evaluated as below
                a = old.get("leader_epoch")
                if _int(a):
                    epochs = True
                    monotonic = monotonic or (
                        old.get("online") is True and old.get("role") == "leader" and _int(old.get("hw"))
                    )
                continue
            a, b = old.get("leader_epoch"), new.get("leader_epoch")
            if _int(a) and _int(b):
                epochs = True
                self._epoch_transition(name, a, b, out)
            same_term = (
                old.get("online") is True
                and new.get("online") is True
                and old.get("role") == "leader"
                and new.get("role") == "leader"
                and _int(a)
                and a == b
            )
            h0, h1 = old.get("hw"), new.get("hw")
            if same_term and _int(h0) and _int(h1):
                monotonic = True
                if h1 < h0:
                    out.append(Finding("SAFE-LEADER-HW-MONOTONIC", f"leader {name} hw {h0} -> {h1} in epoch {a}"))
        return epochs, monotonic

    def _epoch_transition(self, name: str, a: int, b: int, out: list[Finding]) -> None:
        """SAFE-EPOCHS-INCREASE for one replica whose epoch went from ``a`` to ``b``: a known
        epoch never goes below the highest known one the replica reported before. ``NO_EPOCH``
        is no epoch (a ZooKeeper broker restarted into a leaderless partition, LAI-4), so it is
        not compared, and the epoch it knew before still counts afterwards: 3 -> -1 -> 2 fails."""
        known = self._known_epochs
        high = known.get(name, NO_EPOCH)
        if a > high:
            high = a
        if b == NO_EPOCH:
            pass
        elif b < high:
            told = f"{a} -> {b}" if high == a else f"{a} -> {b}, below the epoch {high} it knew before"
            out.append(Finding("SAFE-EPOCHS-INCREASE", f"{name} epoch {told}"))
        elif b > high:
            high = b
        if high != NO_EPOCH:
            known[name] = high


def certificate(
    coverages: Iterable[dict[str, Coverage]], exercised: Mapping[str, int] | None = None
) -> tuple[bool, str]:
    """Whether safety is established over a set of runs: every required property that
    applies (in some run) was evaluated at least once. The reason names each that was not,
    with the fields it needs that some run lacked ("not checkable") or, if none, why no run
    gave it data ("never checked").

    ``exercised``: how often the *reference*, on the same runs, evaluated each property.
    A property the runs never exercise even on the reference (a selection of fixtures
    without a consume, say) says nothing about the implementation: it is named "not
    exercised by these runs" and does not block the certificate. One the reference did
    evaluate and the implementation never did (it refused the steps, or did nothing) does."""
    checked: dict[str, int] = {}
    missing: dict[str, set[str]] = {}
    applicable: set[str] = set()
    runs = 0
    for coverage in coverages:
        runs += 1
        for pid, c in coverage.items():
            checked[pid] = checked.get(pid, 0) + c.checked
            if c.applicable:
                applicable.add(pid)
                missing.setdefault(pid, set()).update(c.missing)
    if not runs:
        return False, "safety not established: no run"
    problems = []
    idle = []
    for pid, prop in PROPERTIES.items():
        if not prop.required or pid not in applicable or checked.get(pid, 0):
            continue
        lacks = sorted(missing.get(pid) or ())
        if not lacks and exercised is not None and not exercised.get(pid, 0):
            idle.append(pid)
            continue
        if lacks:
            top = [f for f in lacks if not f.startswith("replicas.")]
            reps = [f.removeprefix("replicas.") for f in lacks if f.startswith("replicas.")]
            parts = ([f"missing fields: {', '.join(top)}"] if top else []) + (
                [f"missing replica fields: {', '.join(reps)}"] if reps else []
            )
            problems.append(f"{pid} not checkable ({'; '.join(parts)})")
        else:
            problems.append(f"{pid} never checked ({prop.unchecked})")
    if problems:
        return False, "safety not established: " + "; ".join(problems)
    required = sorted(p for p in applicable if PROPERTIES[p].required and p not in idle)
    text = f"safety established: {len(required)} properties checked ({', '.join(required)})"
    if idle:
        text += f"; not exercised by these runs, on the reference either: {', '.join(idle)}"
    return True, text


# --- helpers over observations -------------------------------------------------------------


def _replica_findings(
    name: str, rep: Mapping[str, Any], caches: dict[str, tuple[Any, bool]] | None = None
) -> tuple[list[Finding], tuple[bool, bool, bool]]:
    """SAFE-HW-LE-LEO, SAFE-LOG-LEO and SAFE-EPOCH-CACHE on one replica: its findings,
    and whether each was evaluated (it reported the fields). ``caches`` (shared
    observations): per replica, the epoch cache list last found well formed and whether
    it strictly increases, so the same list is not walked again."""
    out = []
    hw_leo = log_leo = cache_seen = False
    hw, leo, log = rep.get("hw"), rep.get("leo"), rep.get("log")
    if _int(leo) and _int(hw):
        hw_leo = True
        if hw > leo:
            out.append(Finding("SAFE-HW-LE-LEO", f"{name} hw={hw} > leo={leo}"))
    if _int(leo) and isinstance(log, list):
        log_leo = True
        if len(log) != leo - _start(rep):
            out.append(
                Finding("SAFE-LOG-LEO", f"{name} leo={leo} but its log has {len(log)} records from {_start(rep)}")
            )
    cache: Any = rep.get("epoch_cache")
    known = caches.get(name) if caches is not None else None
    if known is not None and known[0] is cache:
        well_formed, increasing = True, known[1]
    elif known is not None and known[1] and isinstance(cache, list) and cache:
        # A cache that changed at its end (an election's entry, a truncation): only the
        # entries from the last one it shares with the increasing list checked before are
        # walked, not every election's.
        shared = _shared_prefix(cache, known[0])
        well_formed = _pairs(cache[shared:])
        increasing = well_formed and _strictly_increasing(cache[max(0, shared - 1) :])
        if well_formed and caches is not None:
            caches[name] = (cache, increasing)
    else:
        well_formed = isinstance(cache, list) and bool(cache) and _pairs(cache)
        increasing = well_formed and _strictly_increasing(cache)
        if caches is not None and well_formed:
            caches[name] = (cache, increasing)
    if well_formed:
        cache_seen = True
        if not increasing:
            out.append(Finding("SAFE-EPOCH-CACHE", f"{name} epoch cache {cache} does not strictly increase"))
        elif _int(leo) and cache[-1][1] > leo:
            out.append(Finding("SAFE-EPOCH-CACHE", f"{name} epoch cache entry {cache[-1]} starts past leo={leo}"))
    return out, (hw_leo, log_leo, cache_seen)


def _same_between(mine: list[Any], mstart: int, theirs: list[Any], tstart: int, first: int, end: int) -> bool:
    """Whether two logs (starting at those offsets) hold the same entries at the offsets
    in ``[first, end)`` they have (their slices there are equal); a prefix two
    ``LogRecords`` are known to share (``agreed_prefix``) is not read."""
    m_end = max(first, min(end, mstart + len(mine)))
    t_end = max(first, min(end, tstart + len(theirs)))
    if m_end != t_end:
        return False
    lo = first
    if mstart == tstart:
        lo = max(first, min(m_end, mstart + agreed_prefix(mine, theirs, mstart, tstart)))
    return mine[lo - mstart : m_end - mstart] == theirs[lo - tstart : t_end - tstart]


def _appended(
    before: Mapping[str, Any], obs: Mapping[str, Any], step: Mapping[str, Any]
) -> tuple[str, list[tuple[int, str]] | None, int | None] | None:
    """What a produce step appended: (the replica, its records at their offsets when logs
    are reported, the end offset when LEOs are); None if nothing was."""
    target = step.get("to") or obs.get("leader")
    old, new = _replica(before, target), _replica(obs, target)
    if old is None or new is None:
        return None
    values = list(step.get("values") or [])
    records: list[tuple[int, str]] | None = None
    end: int | None = None
    l0, l1 = old.get("leo"), new.get("leo")
    if _int(l0) and _int(l1):
        if l1 - l0 != len(values) or not values:
            return None
        end = l1
    if isinstance(old.get("log"), list) and isinstance(new.get("log"), list):
        grown = new["log"][len(old["log"]) :]
        if len(grown) != len(values) or [str(r).rsplit("@", 1)[0] for r in grown] != values:
            return None
        base = _start(new) + len(old["log"])
        records = [(base + i, r) for i, r in enumerate(grown)]
        end = base + len(grown) if end is None else end
    if records is None and end is None:
        return None
    return str(target), records, end


_PROPOSED = re.compile(r"AlterPartition\(.*isr=\[([^\]]*)\]")


def _behind(rep: Mapping[str, Any] | None, obs: Mapping[str, Any]) -> bool:
    """Whether the acknowledging leader ``rep`` leads an older epoch than the controller's
    (its new LeaderAndIsr not yet arrived): it counts the ISR of the epoch it led
    (PRODUCE-2), which no observation shows, so SAFE-ACK-MIN-ISR cannot judge its ack."""
    mine, current = (rep or {}).get("leader_epoch"), obs.get("leader_epoch")
    return _int(mine) and _int(current) and mine < current


def _maximal(obs: Mapping[str, Any], isr: list[Any]) -> int:
    """The size of the maximal ISR (diverging-epoch, ISR-ALTER-1): the ISR with the members
    an AlterPartition in flight proposes to add (``Partition.maximalIsr``; the acks=all
    minimum is checked against it, PRODUCE-5)."""
    members = set(isr)
    in_flight = obs.get("in_flight")
    proposals = in_flight.get("alter_partitions") if isinstance(in_flight, _MAPPING) else None
    for line in proposals if isinstance(proposals, list) else ():
        found = _PROPOSED.search(str(line))
        if found and found.group(1):
            members.update(found.group(1).split(","))
    return len(members)


def _start(rep: Mapping[str, Any]) -> int:
    """A replica's log start (protocol 3; 0 when not reported): ``log[i]`` is offset start + i."""
    start = rep.get("log_start", 0)
    return start if _int(start) else 0


def _end(rep: Mapping[str, Any]) -> int | None:
    """A replica's log end offset: its ``leo``, else its log start plus its records (None
    when it reports neither)."""
    leo = rep.get("leo")
    if _int(leo):
        return leo
    log = rep.get("log")
    return _start(rep) + len(log) if isinstance(log, list) else None


def _replica(obs: Mapping[str, Any] | None, name: Any) -> dict[str, Any] | None:
    reps = obs.get("replicas") if obs is not None else None
    if not isinstance(reps, _MAPPING) or name is None:
        return None
    rep = reps.get(name)
    return rep if isinstance(rep, dict) else None


def _current_leader(obs: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The controller's leader, when it is online and believes it leads the current epoch
    (a replica field left unreported does not disqualify it)."""
    name = obs.get("leader")
    rep = _replica(obs, name)
    if rep is None:
        return None
    if rep.get("online") is False or rep.get("role", "leader") != "leader":
        return None
    if "leader_epoch" in rep and "leader_epoch" in obs and rep["leader_epoch"] != obs["leader_epoch"]:
        return None
    return str(name), rep


def _shared_prefix(cache: list[Any], old: list[Any]) -> int:
    """How many leading entries ``cache`` is known to share with ``old``: found from the
    end (an observer that shares observations keeps the entries it did not change, the
    same objects), then confirmed by one C-level comparison; 0 when not found nearby."""
    shared = min(len(cache), len(old))
    for _ in range(8):
        if not shared or cache[shared - 1] is old[shared - 1]:
            break
        shared -= 1
    return shared if shared and cache[:shared] == old[:shared] else 0


def _pairs(cache: list[Any]) -> bool:
    """Whether every epoch cache entry is an ``[epoch, start offset]`` pair."""
    return all(isinstance(entry, list) and len(entry) == 2 for entry in cache)


def _strictly_increasing(cache: list[list[Any]]) -> bool:
    previous = cache[0]
    for entry in cache[1:]:
        if not (previous[0] < entry[0] and previous[1] < entry[1]):
            return False
        previous = entry
    return True


def _one_leader(reps: Mapping[str, Any], count: Any) -> list[Finding]:
    """SAFE-ONE-LEADER, evaluated when every replica reports online, role and leader_epoch."""
    rows = [(name, rep) for name, rep in reps.items() if isinstance(rep, _MAPPING)]
    if not rows or not all("online" in r and "role" in r and "leader_epoch" in r for _, r in rows):
        return []
    count("SAFE-ONE-LEADER")
    leaders: dict[Any, str] = {}
    out = []
    for name, rep in rows:
        if rep.get("role") != "leader" or rep.get("online") is not True:
            continue
        epoch = rep["leader_epoch"]
        if epoch in leaders:
            out.append(Finding("SAFE-ONE-LEADER", f"{leaders[epoch]} and {name} both lead epoch {epoch}"))
        leaders[epoch] = str(name)
    return out


__all__ = ["PROPERTIES", "Coverage", "Finding", "Property", "SafetyMonitor", "certificate"]
