"""The partition configuration: which replicas, which protocol generation, which timeouts.

Defaults are Apache Kafka's broker defaults, so a fixture states only what it changes.
The protocol generation selects which rule set governs truncation, the ISR and the
fetch protocol (see ``spec/replication.md``, section "Generations").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any

from .errors import ConfigError
from .generation import Generation, Profile
from .values import cached_hash

__all__ = ["Config", "ConfigError", "Generation", "Profile", "config_from_dict"]


@cached_hash
@dataclass(frozen=True)
class Config:
    """Everything fixed for the life of one partition."""

    replicas: tuple[str, ...] = ("A", "B")
    initial_leader: str | None = None
    generation: Generation = Generation.LEADER_EPOCH
    min_insync_replicas: int = 1
    unclean_leader_election: bool = False
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    """0 means the HW is checkpointed on every change (what the seeds' stories assume)."""
    request_timeout_ms: int = 30000
    """How long an acks=all produce waits in purgatory before REQUEST_TIMED_OUT."""

    @cached_property
    def profile(self) -> Profile:
        """The generation's flags (``generation.py``): what actions ask instead of the name."""
        return self.generation.profile

    @cached_property
    def position(self) -> dict[str, int]:
        """Replica id -> its position in ``replicas`` (replica lookup by id in O(1))."""
        return {name: i for i, name in enumerate(self.replicas)}

    @property
    def leader_at_start(self) -> str:
        return self.initial_leader if self.initial_leader is not None else self.replicas[0]

    def validate(self) -> Config:
        """This config, if every field is valid (else ``ConfigError`` naming the field).
        A config that passed once is not checked again: it is frozen, and a corpus
        replay starts a million traces from a few configs."""
        if "_valid" in self.__dict__:
            return self
        if not self.replicas:
            raise ConfigError("replicas", "a partition needs at least one replica")
        for name in self.replicas:
            if not isinstance(name, str) or not name:
                raise ConfigError("replicas", f"replica ids must be non-empty strings, got {name!r}")
        if len(set(self.replicas)) != len(self.replicas):
            raise ConfigError("replicas", f"replica ids must be unique, got {list(self.replicas)}")
        if self.leader_at_start not in self.replicas:
            raise ConfigError(
                "initial_leader",
                f"{self.initial_leader!r} is not one of the replicas {list(self.replicas)}",
            )
        if not 1 <= self.min_insync_replicas <= len(self.replicas):
            raise ConfigError(
                "min_insync_replicas",
                f"must be between 1 and the number of replicas ({len(self.replicas)}), got {self.min_insync_replicas}",
            )
        for name in (
            "replica_lag_time_max_ms",
            "replica_fetch_wait_max_ms",
            "request_timeout_ms",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(name, f"must be a positive number of milliseconds, got {getattr(self, name)}")
        if self.replica_high_watermark_checkpoint_interval_ms < 0:
            raise ConfigError(
                "replica_high_watermark_checkpoint_interval_ms",
                "must be 0 (checkpoint on every change) or a positive number of milliseconds",
            )
        self.__dict__["_valid"] = True  # (as cached_property stores: a frozen dataclass's dict)
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Generation):
                value = value.value
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


_INT_FIELDS = {
    "min_insync_replicas",
    "replica_lag_time_max_ms",
    "replica_fetch_wait_max_ms",
    "replica_high_watermark_checkpoint_interval_ms",
    "request_timeout_ms",
}


def config_from_dict(data: Mapping[str, Any]) -> Config:
    """Build a validated ``Config`` from plain data (a fixture's ``config`` mapping)."""
    known = {f.name for f in fields(Config)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(unknown[0], f"unknown config field (known: {', '.join(sorted(known))})")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "replicas":
            if not isinstance(value, list | tuple):
                raise ConfigError("replicas", "must be a list of replica ids")
            kwargs[key] = tuple(value)
        elif key == "generation":
            try:
                kwargs[key] = Generation(value)
            except ValueError:
                choices = ", ".join(g.value for g in Generation)
                raise ConfigError("generation", f"unknown generation {value!r} (one of: {choices})") from None
        elif key in _INT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(key, f"must be an integer, got {value!r}")
            kwargs[key] = value
        elif key == "unclean_leader_election":
            if not isinstance(value, bool):
                raise ConfigError(key, f"must be true or false, got {value!r}")
            kwargs[key] = value
        else:
            kwargs[key] = value
    return Config(**kwargs).validate()
