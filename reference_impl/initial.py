"""The initial state of a partition built from its configuration (or given: ``given.py``).

Every replica is online with an empty log at time 0; the initial leader leads epoch 0
with every replica in the ISR (a freshly created topic). The leader's view of its
followers starts as Kafka's does for a new leader: remote LEO unknown (-1), ISR members
counted as caught up now. Under the epoch generations the leader's cache holds
``(0, 0)`` (KIP-279 assigns the epoch when leadership starts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import epoch_cache
from .config import Config
from .log import Log
from .state import FETCHING, FOLLOWER, LEADER, Controller, FollowerProgress, Replica, State, state_at_start


def initial_state(config: Config, initial: Mapping[str, Any] | None = None) -> State:
    """The start of a partition: a fresh topic, or the state ``initial`` describes (a
    fixture's ``initial:`` block; ``given.py``, INIT-1..5)."""
    if initial is not None:
        from .given import given_state

        return given_state(config, initial)
    config = config.validate()
    leader_id = config.leader_at_start
    # Every replica starts with the same empty log; appends of the same records keep
    # the logs sharing one buffer (see log.py).
    log = Log()
    replicas = []
    for name in config.replicas:
        is_leader = name == leader_id
        progress: tuple[FollowerProgress, ...] = ()
        cache: epoch_cache.EpochCache = ()
        if is_leader:
            progress = tuple(
                FollowerProgress(
                    replica=other,
                    remote_leo=None,
                    last_caught_up_ms=0,
                    last_fetch_leader_leo=0,
                    last_fetch_ms=0,
                )
                for other in config.replicas
                if other != name
            )
            if config.profile.keeps_epoch_cache:
                cache = epoch_cache.assign(cache, 0, 0)
        replicas.append(
            Replica(
                id=name,
                online=True,
                log=log,
                hw=0,
                checkpoint_hw=0,
                epoch_cache=cache,
                role=LEADER if is_leader else FOLLOWER,
                leader=leader_id,
                leader_epoch=0,
                fetch_state=FETCHING,
                progress=progress,
                started_ms=0,
                incarnation=0,
            )
        )
    return state_at_start(config, tuple(replicas), Controller(leader=leader_id, epoch=0, isr=tuple(config.replicas)))
