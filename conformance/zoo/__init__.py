"""The zoo: faulty implementations of Kafka replication, one broken rule each.

Every member is the reference with one rule broken the way a Kafka release once broke it
(a JIRA) or a reader could misread it (the seeds' errata, plausible shortcuts); the
catalogue with sources, witnesses and kill status is docs/research/historical-bugs.md.
``kconform sensitivity`` runs a suite against all of them: a strong suite fails every
one. Use a member as an implementation with ``--impl zoo:NAME``; list them with
``kconform sensitivity --list``. docs/suite-strength.md says how to add one.
"""

from __future__ import annotations

from collections.abc import Callable

from . import (  # noqa: F401 - each module registers its members
    checkpoint,
    consumers,
    elections,
    epochs,
    fetch,
    follower_hw,
    isr,
    leader_hw,
    messages,
    produce,
    truncation,
)
from .base import REGISTRY, Member, Mutant

MEMBERS: tuple[Member, ...] = tuple(sorted(REGISTRY.values(), key=lambda m: m.number))
"""Every member, in catalogue order."""

ALIASES = {
    "response-carries-updated-hw": "immediate-response-carries-updated-hw",
    "truncate-to-hw-on-restart": "hw-truncation-on-restart-under-epochs",
    "no-epoch-start-check": "isr-join-without-epoch-start-check",
    "no-purgatory": "no-fetch-purgatory",
}
"""Names the first five members had in tests/zoo.py."""

ZOO: dict[str, Callable[[], Mutant]] = {m.name: m.build for m in MEMBERS}
"""Name -> a factory of a fresh adapter (the names of ``MEMBERS``)."""

PREFIX = "zoo:"


class UnknownMember(KeyError):
    """No zoo member has this name; the message lists the names."""

    def __str__(self) -> str:
        return str(self.args[0])


def get(name: str) -> Member:
    """The member called ``name`` (or by one of its old names)."""
    found = REGISTRY.get(ALIASES.get(name, name))
    if found is None:
        raise UnknownMember(f"no zoo member {name!r} (see `kconform sensitivity --list`): {', '.join(ZOO)}")
    return found


__all__ = ["ALIASES", "MEMBERS", "PREFIX", "ZOO", "Member", "Mutant", "UnknownMember", "get"]
