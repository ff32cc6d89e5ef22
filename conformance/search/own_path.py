"""Safety fuzzing on the implementation's own path.

At ``--level safety`` no reference is compared, so there is no reason to let the reference
choose the steps: a run driven by the reference's enabled set explores the reference's
behaviour, and once an implementation's state differs (another leader elected, a fetch
answered with fewer records) its own behaviour is explored less. Here each step is proposed
from the config and the implementation's *own* last observation (who it says leads, which
replicas it says are online, how long its logs are), sent, and kept whatever the answer: a
refusal is recorded and counted, and the run goes on. Every answer goes through the same
``judge.Watch`` as a fixture run (shape, conventions, safety monitor).

Proposals never consult ``reference_impl``'s state; they use the step kinds the
implementation declares, the weights of ``distribution.WEIGHTS`` and the tick lengths of
``distribution.tick_lengths``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from reference_impl import STEP_TYPES, Config, Step, step_from_dict

from ..adapters.base import Adapter, AdapterError, Description
from ..adapters.wire import wire_step
from ..judging.judge import CannotAnswer, Watch
from ..judging.progress import View
from ..judging.safety import Finding
from .distribution import OTHER_WEIGHT, Chooser, pick, tick_lengths

PROPOSED_KINDS: tuple[str, ...] = tuple(STEP_TYPES)
"""Every step kind a proposal can be of: the reference's step kinds (one definition)."""


@dataclass
class OwnPathRun:
    """One run on the implementation's own path: the steps sent, what it refused, and the
    first safety finding (None: every property held)."""

    config: Config
    steps: list[dict[str, Any]] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    """Step kind -> how many proposals of it the implementation refused."""
    accepted: Counter[str] = field(default_factory=Counter)
    finding: Finding | None = None
    at: int = 0
    """The step number (from 1) of the finding."""
    error: str = ""
    """The implementation failed to answer (crash, hang, a malformed observation)."""
    observations: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Step] = field(default_factory=list)
    watch: Watch | None = None


def _replicas(obs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    reps = (obs or {}).get("replicas")
    return reps if isinstance(reps, dict) else {}


def _online(config: Config, obs: Mapping[str, Any] | None, online: bool) -> list[str]:
    """The replicas the implementation reports (not) online; every replica when it does
    not report ``online``."""
    reps = _replicas(obs)
    known = [r for r in config.replicas if isinstance(reps.get(r), dict) and "online" in reps[r]]
    if not known:
        return list(config.replicas)
    return [r for r in known if reps[r]["online"] is online]


def _leo(obs: Mapping[str, Any] | None, replica: str) -> int:
    rep = _replicas(obs).get(replica)
    leo = rep.get("leo") if isinstance(rep, dict) else None
    return leo if isinstance(leo, int) and not isinstance(leo, bool) else 0


_FLIGHT = {
    "deliver_fetch": "fetch_responses",
    "deliver_epoch": "epoch_responses",
    "deliver_leader_and_isr": "leader_and_isr",
    "deliver_alter_partition": "alter_partitions",
}
"""A delivery kind -> the ``in_flight`` list whose messages it delivers."""


def _targets(kind: str, config: Config, obs: Mapping[str, Any] | None) -> list[str]:
    """The replicas a step of ``kind`` could name, as far as the implementation's own
    observation tells (every replica where it does not say)."""
    view = View(obs or {})
    anyone = list(config.replicas)
    leader = view.leader
    if kind in _FLIGHT:
        known = view.destinations(_FLIGHT[kind])
        return anyone if known is None else sorted(known)
    up = _online(config, obs, True)
    if kind in ("fetch", "fetch_round", "epoch_request", "epoch_round"):
        busy = (view.destinations("fetch_responses") or set()) | (view.destinations("parked_fetches") or set())
        busy |= view.destinations("epoch_responses") or set()
        return [r for r in up if r != leader and r not in busy]
    if kind == "isr_expiration":
        return [leader] if leader in up else up
    if kind == "crash":
        return up
    if kind == "heartbeat_lapse":  # CTRL-FENCE-PRE-1: a live follower
        return [r for r in up if r != leader]
    if kind == "restart":
        return _online(config, obs, False)
    return anyone


def propose(
    chooser: Chooser, config: Config, obs: Mapping[str, Any] | None, kinds: Mapping[str, int], produced: int
) -> Step | None:
    """One step of a kind drawn by weight among ``kinds``, its fields drawn from the config
    and the implementation's last observation ``obs`` (a kind with no replica it could
    name there is not drawn); None when no kind has one."""
    pool = dict(kinds)
    while pool:
        names = list(pool)
        kind = names[chooser.weighted([pool[k] for k in names])]
        targets = _targets(kind, config, obs) if kind not in ("produce", "tick", "elect", "consume") else []
        if kind in ("produce", "tick", "elect", "consume") or targets:
            return _fields(chooser, kind, config, obs, produced, targets)
        del pool[kind]
    return None


def _fields(
    chooser: Chooser, kind: str, config: Config, obs: Mapping[str, Any] | None, produced: int, targets: list[str]
) -> Step:
    view = View(obs or {})
    leader = view.leader if view.leader in config.replicas else config.leader_at_start
    data: dict[str, Any] = {"kind": kind}
    if kind == "produce":
        count = chooser.integer(1, 2)
        data["values"] = [f"v{produced + i + 1}" for i in range(count)]
        data["acks"] = pick(chooser, ("all", "all", "1", "0"))
        if chooser.integer(0, 4) == 0:
            data["to"] = pick(chooser, list(config.replicas))
    elif kind == "tick":
        data["ms"] = pick(chooser, tick_lengths(config))
    elif kind == "elect":
        isr = [r for r in view.isr if r != leader] or list(config.replicas)
        if chooser.integer(0, 1) == 0:
            data["leader"] = pick(chooser, isr)
    elif kind == "consume":
        data["offset"] = chooser.integer(0, _leo(obs, leader) + 1)
    elif kind == "epoch_query":
        epoch = (obs or {}).get("leader_epoch")
        top = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0
        data["replica"] = pick(chooser, targets)
        data["epoch"] = chooser.integer(0, top + 1)
    else:
        data["replica"] = pick(chooser, targets)
        if kind in ("fetch", "fetch_round"):
            if chooser.integer(0, 3) == 0:
                data["max_records"] = chooser.integer(1, 3)
            if chooser.integer(0, 5) == 0:
                data["max_wait_ms"] = 0
        elif kind == "crash" and chooser.integer(0, 3) == 0:
            data["unflushed_from"] = chooser.integer(0, _leo(obs, data["replica"]))
    return step_from_dict(data)


ROUND_OF = {"fetch_round": ("fetch", "deliver_fetch"), "epoch_round": ("epoch_request", "deliver_epoch")}
"""A whole round is drawn as often as its request and its answer together."""


def weight_of(kind: str, weights: Mapping[str, int]) -> int:
    """The weight of proposing ``kind``: its own, or a round's parts', or ``OTHER_WEIGHT``."""
    if kind in weights:
        return weights[kind]
    if kind in ROUND_OF:
        return sum(weights.get(part, OTHER_WEIGHT) for part in ROUND_OF[kind])
    return OTHER_WEIGHT


def honoured(step: Step, description: Description) -> Step:
    """``step`` without the optional fields the implementation says it does not honour
    (``Description.step_fields``: Kafka's adapters declare no ``crash.unflushed_from``), each
    back at its default: the run stays on steps the implementation can take."""
    allowed = description.step_fields.get(step.kind)
    if allowed is None:
        return step
    defaults = {
        f.name: f.default
        for f in dataclasses.fields(step)
        if f.default is not dataclasses.MISSING and f.name not in allowed and getattr(step, f.name) != f.default
    }
    return dataclasses.replace(step, **defaults) if defaults else step


def own_path(
    adapter: Adapter,
    description: Description,
    config: Config,
    chooser: Chooser,
    steps: int,
    weights: Mapping[str, int],
    check_shape: bool = True,
) -> OwnPathRun:
    """Reset ``adapter`` to ``config`` and send it ``steps`` proposed steps, judging every
    answer's safety; stops at the first finding or fault. (A run found failing is replayed
    and shrunk as a fixture at level safety, ``stateful.Judge.replay``: the same ``Watch``.)"""
    run = OwnPathRun(config)
    kinds = {k: w for k in PROPOSED_KINDS if k in description.steps and (w := weight_of(k, weights)) > 0}
    watch = Watch(description, config, check_shape)
    run.watch = watch
    try:
        adapter.reset(config.to_dict())
    except AdapterError as exc:
        run.error = f"reset failed: {exc.message}"
        return run
    if not kinds:
        return run
    obs: dict[str, Any] | None = None
    produced = 0
    for number in range(1, steps + 1):
        proposed = propose(chooser, config, obs, kinds, produced)
        if proposed is None:
            break
        step = honoured(proposed, description)
        run.sent.append(step)
        do = wire_step(step, produced)
        run.steps.append(dict(do))
        try:
            answer = adapter.step(do)
        except AdapterError as exc:
            run.error, run.at = f"step {number} ({step.kind}): {exc.message}", number
            return run
        if answer.rejected is not None:
            run.refused[step.kind] += 1
            continue
        run.accepted[step.kind] += 1
        if step.kind == "produce":
            produced += 1
        raw = answer.observation
        if raw is None:
            run.error, run.at = f"step {number} ({step.kind}): no observation", number
            return run
        problem = watch.shape(raw)
        if problem is not None:
            run.error = f"step {number} ({step.kind}): the observation does not fit the protocol schema: {problem}"
            run.at = number
            return run
        obs = watch.normalise(raw)
        run.observations.append(obs)
        findings = watch.safety(do, obs)
        if findings:
            run.finding, run.at = findings[0], number
            return run
    return run


__all__ = ["PROPOSED_KINDS", "CannotAnswer", "OwnPathRun", "own_path", "propose"]
