"""Safety: the spec's invariants, checked on an implementation's OWN observations.

No reference is involved: after every step, the (normalised) observation is checked
alone (state properties) and against the previous one (transition properties), with a
small history (acknowledged and consumed records) carried along. Each property has an id
in spec/replication.md ("Safety properties over observations") and is derived from an
invariant there. A property is evaluated only on fields the implementation reports, and
never where the spec lets the value legitimately change (a new epoch, a crash, a power
failure, an unclean election): the reference passes every property on every fixture and on
random runs in every generation (tests/test_safety.py), so a finding is never a false alarm
caused by kconform's model.

Under ``hw-truncation`` two properties are not required (SAFE-STRONG-ISR, SAFE-ACKED):
Kafka before 0.11 loses acknowledged writes (KIP-101), which is what that generation models.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

PROPERTIES: dict[str, str] = {
    "SAFE-HW-LE-LEO": "on every replica hw <= leo (HwLeLeo)",
    "SAFE-LOG-LEO": "on every replica the log holds leo - log_start records",
    "SAFE-LEADER-HW-MONOTONIC": "a leader's hw never decreases while it stays leader, online, in one epoch "
    "(LeaderHwMonotonic)",
    "SAFE-EPOCHS-INCREASE": "the controller's epoch and each replica's known epoch never decrease (EpochsIncrease)",
    "SAFE-ONE-LEADER": "no two online replicas lead the same epoch (OneLeaderPerEpoch)",
    "SAFE-STRONG-ISR": "every online ISR member holds the current leader's records below the leader's hw (after a "
    "power failure it may lack some, and hold others only from the lowest offset lost) (StrongIsr)",
    "SAFE-ACKED": "records acknowledged to an acks=all producer or returned to a consumer stay in the current "
    "leader's log at their offsets, unless an unclean election or a power failure happened (AckedNotLost)",
    "SAFE-CONSUMER-BELOW-HW": "a consumer gets only records below the leader's hw (ConsumerBelowHw)",
    "SAFE-EPOCH-CACHE": "epoch cache epochs and start offsets strictly increase, none starts past leo "
    "(EpochCacheMonotonic)",
}
_MAPPING = (dict, Mapping)
"""``isinstance`` against this settles a plain dict (every decoded observation) without the
slower abstract-class check."""
WEAK_GENERATIONS: dict[str, frozenset[str]] = {"hw-truncation": frozenset({"SAFE-STRONG-ISR", "SAFE-ACKED"})}


@dataclass(frozen=True)
class Finding:
    property: str
    detail: str

    def __str__(self) -> str:
        return f"{self.property}: {self.detail}"


@dataclass
class SafetyMonitor:
    """Checks one run, step by step. Feed it every accepted step and its observation."""

    replicas: Sequence[str]
    generation: str
    previous: dict[str, Any] | None = None
    committed: dict[int, str] = field(default_factory=dict)
    """offset -> ``value@epoch`` of every record acknowledged (acks=all) or consumed."""
    guarantee_given_up: str = ""
    """Why SAFE-ACKED no longer applies (an unclean election, a power failure)."""
    lost_from: int | None = None
    """The lowest offset a power failure lost records from (None before any): from there on
    an ISR member may lack records, or hold others written since (SAFE-STRONG-ISR)."""
    _pending: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    _acks_all: set[str] = field(default_factory=set)

    def observe(self, step: Mapping[str, Any], obs: Mapping[str, Any]) -> list[Finding]:
        """The findings of this step (empty when every property holds)."""
        before = self.previous
        self._history(step, before, obs)
        out = list(_state_findings(obs, self.replicas, self.lost_from))
        if before is not None:
            out += _transition_findings(before, obs)
        if step.get("kind") == "consume":
            out += _consumer_findings(obs)
        out += self._acked_findings(obs)
        weak = WEAK_GENERATIONS.get(self.generation, frozenset())
        self.previous = dict(obs)
        return [f for f in out if f.property not in weak]

    # --- history: what was acknowledged or consumed -------------------------------------

    def _history(self, step: Mapping[str, Any], before: Mapping[str, Any] | None, obs: Mapping[str, Any]) -> None:
        kind = step.get("kind")
        unflushed_from = step.get("unflushed_from") if kind == "crash" else None
        if _int(unflushed_from):
            self.guarantee_given_up = self.guarantee_given_up or "a power failure (crash with unflushed_from)"
            leo = _reported_leo(before, step.get("replica"))
            lost = leo is None or unflushed_from < leo  # nothing lost when it had flushed all
            if lost and (self.lost_from is None or unflushed_from < self.lost_from):
                self.lost_from = unflushed_from
        if kind in ("elect", "restart") and before is not None:  # a restart may elect (RESTART-2)
            leader = obs.get("leader")
            isr_before = before.get("isr")
            if leader is not None and isinstance(isr_before, list) and leader not in isr_before:
                self.guarantee_given_up = self.guarantee_given_up or f"an unclean election of {leader}"
        if kind == "produce" and before is not None and step.get("id") is not None:
            appended = _appended(before, obs, step)
            if appended is not None and str(step.get("acks", "all")) == "all":
                self._pending[str(step["id"])] = appended
                self._acks_all.add(str(step["id"]))
        producer = obs.get("producer")
        if isinstance(producer, _MAPPING):
            for pid, records in list(self._pending.items()):
                if producer.get(pid) == "acked":
                    for offset, record in records:
                        self.committed.setdefault(offset, record)
                    del self._pending[pid]
        consumer = obs.get("consumer")
        if kind == "consume" and isinstance(consumer, _MAPPING) and isinstance(consumer.get("records"), list):
            offset = consumer.get("offset") or 0
            for i, record in enumerate(consumer["records"]):
                self.committed.setdefault(offset + i, record)

    def _acked_findings(self, obs: Mapping[str, Any]) -> list[Finding]:
        if self.guarantee_given_up or not self.committed:
            return []
        leader = _current_leader(obs)
        if leader is None:
            return []
        name, rep = leader
        log = rep.get("log")
        if not isinstance(log, list):
            return []
        start = _start(rep)
        out = []
        for offset, record in sorted(self.committed.items()):
            have = log[offset - start] if start <= offset < start + len(log) else None
            if have != record:
                out.append(
                    Finding(
                        "SAFE-ACKED",
                        f"{record} at offset {offset} was acknowledged or consumed, but leader {name} has "
                        f"{have or 'nothing'} there",
                    )
                )
        return out


def _appended(
    before: Mapping[str, Any], obs: Mapping[str, Any], step: Mapping[str, Any]
) -> list[tuple[int, str]] | None:
    """The records a produce step appended: the tail the leader's log grew by."""
    target = step.get("to") or obs.get("leader")
    old = _replica(before, target)
    new = _replica(obs, target)
    if old is None or new is None or not isinstance(old.get("log"), list) or not isinstance(new.get("log"), list):
        return None
    values = list(step.get("values") or [])
    grown = new["log"][len(old["log"]) :]
    if len(grown) != len(values) or [str(r).rsplit("@", 1)[0] for r in grown] != values:
        return None
    base = _start(new) + len(old["log"])
    return [(base + i, r) for i, r in enumerate(grown)]


def _start(rep: Mapping[str, Any]) -> int:
    """A replica's log start (protocol 3; 0 when not reported): ``log[i]`` is offset start + i."""
    start = rep.get("log_start", 0)
    return start if _int(start) else 0


def _replica(obs: Mapping[str, Any], name: Any) -> dict[str, Any] | None:
    reps = obs.get("replicas")
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


def _int(value: Any) -> TypeGuard[int]:
    return value.__class__ is int or (isinstance(value, int) and not isinstance(value, bool))


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


def _state_findings(obs: Mapping[str, Any], replicas: Sequence[str], lost_from: int | None = None) -> Iterator[Finding]:
    reps = obs.get("replicas")
    reps = reps if isinstance(reps, _MAPPING) else {}
    for name, rep in reps.items():
        if not isinstance(rep, _MAPPING):
            continue
        hw, leo, log = rep.get("hw"), rep.get("leo"), rep.get("log")
        if _int(leo) and _int(hw) and hw > leo:
            yield Finding("SAFE-HW-LE-LEO", f"{name} hw={hw} > leo={leo}")
        if _int(leo) and isinstance(log, list) and len(log) != leo - _start(rep):
            yield Finding("SAFE-LOG-LEO", f"{name} leo={leo} but its log has {len(log)} records from {_start(rep)}")
        cache = rep.get("epoch_cache")
        if isinstance(cache, list) and cache and _pairs(cache):
            if not _strictly_increasing(cache):
                yield Finding("SAFE-EPOCH-CACHE", f"{name} epoch cache {cache} does not strictly increase")
            elif _int(leo) and cache[-1][1] > leo:
                yield Finding("SAFE-EPOCH-CACHE", f"{name} epoch cache entry {cache[-1]} starts past leo={leo}")
    leaders: dict[Any, str] = {}
    for name, rep in reps.items():
        if not isinstance(rep, _MAPPING) or rep.get("role") != "leader" or rep.get("online") is False:
            continue
        if "online" not in rep or "leader_epoch" not in rep:
            continue
        epoch = rep["leader_epoch"]
        if epoch in leaders:
            yield Finding("SAFE-ONE-LEADER", f"{leaders[epoch]} and {name} both lead epoch {epoch}")
        leaders[epoch] = str(name)
    leader = _current_leader(obs)
    isr = obs.get("isr")
    if leader is not None and isinstance(isr, list):
        lname, lrep = leader
        hw, log = lrep.get("hw"), lrep.get("log")
        if _int(hw) and isinstance(log, list) and "online" in lrep and "role" in lrep:
            for member in isr:
                mrep = reps.get(member) if member != lname else None
                if not isinstance(mrep, _MAPPING) or mrep.get("online") is not True:
                    continue
                mlog = mrep.get("log")
                if not isinstance(mlog, list):
                    continue
                lstart, mstart = _start(lrep), _start(mrep)
                first = max(lstart, mstart)  # nothing is compared below a log start
                theirs, ours = mlog[first - mstart : hw - mstart], log[first - lstart : hw - lstart]
                if first < hw and theirs != ours and not _lost_since(lost_from, first, theirs, ours):
                    yield Finding(
                        "SAFE-STRONG-ISR",
                        f"ISR member {member} has {theirs} below leader {lname}'s hw={hw}, the leader {ours}",
                    )


def _reported_leo(obs: Mapping[str, Any] | None, name: Any) -> int | None:
    """The LEO ``obs`` reports for replica ``name``, if it does."""
    reps = obs.get("replicas") if obs is not None else None
    rep = reps.get(name) if isinstance(reps, _MAPPING) else None
    leo = rep.get("leo") if isinstance(rep, _MAPPING) else None
    return leo if _int(leo) else None


def _lost_since(lost_from: int | None, first: int, theirs: list[Any], ours: list[Any]) -> bool:
    """After a power failure (records lost from offset ``lost_from``) an ISR member may
    lack the leader's records (a prefix of them) or, from ``lost_from`` on, hold others
    (written over the lost tail since); below ``lost_from`` it must hold the leader's."""
    if lost_from is None:
        return False
    if len(theirs) < len(ours) and ours[: len(theirs)] == theirs:
        return True
    keep = max(0, lost_from - first)
    return theirs[:keep] == ours[:keep]


def _transition_findings(before: Mapping[str, Any], obs: Mapping[str, Any]) -> Iterator[Finding]:
    e0, e1 = before.get("leader_epoch"), obs.get("leader_epoch")
    if _int(e0) and _int(e1) and e1 < e0:
        yield Finding("SAFE-EPOCHS-INCREASE", f"controller epoch {e0} -> {e1}")
    old_reps, new_reps = before.get("replicas"), obs.get("replicas")
    if not isinstance(old_reps, _MAPPING) or not isinstance(new_reps, _MAPPING):
        return
    for name, old in old_reps.items():
        new = new_reps.get(name)
        if not isinstance(old, _MAPPING) or not isinstance(new, _MAPPING):
            continue
        a, b = old.get("leader_epoch"), new.get("leader_epoch")
        if _int(a) and _int(b) and b < a:
            yield Finding("SAFE-EPOCHS-INCREASE", f"{name} epoch {a} -> {b}")
        same_term = (
            old.get("online") is True
            and new.get("online") is True
            and old.get("role") == "leader"
            and new.get("role") == "leader"
            and _int(a)
            and a == b
        )
        h0, h1 = old.get("hw"), new.get("hw")
        if same_term and _int(h0) and _int(h1) and h1 < h0:
            yield Finding("SAFE-LEADER-HW-MONOTONIC", f"leader {name} hw {h0} -> {h1} in epoch {a}")


def _consumer_findings(obs: Mapping[str, Any]) -> list[Finding]:
    consumer = obs.get("consumer")
    leader = _current_leader(obs)
    if not isinstance(consumer, _MAPPING) or leader is None or not isinstance(consumer.get("records"), list):
        return []
    hw = leader[1].get("hw")
    offset = consumer.get("offset") or 0
    end = offset + len(consumer["records"])
    if _int(hw) and consumer["records"] and end > hw:
        return [Finding("SAFE-CONSUMER-BELOW-HW", f"consumer got offsets {offset}..{end - 1} with leader hw={hw}")]
    return []
