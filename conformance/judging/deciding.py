"""The rules that decide an observation field, for naming culprits at a divergent step.

The reference records the rules it *fires* at each step: the ones that changed something.
A defect often shows where a rule *held* a value: an implementation moving the leader's HW
on a produce differs at a step where the reference fired only PRODUCE-3 and PRODUCE-4,
because HW-LEADER-1/2 decided that the HW stays. So a failure names, beside the rules
fired, the rules that decide each differing field and did not fire there ("held"): here
HW-LEADER-1, HW-LEADER-2, HW-LEADER-3, HW-LEADER-4.

The table maps an observation field (a replica field by the replica's role in the
reference's observation at that step) to the spec rules that compute it; it is checked
against spec/replication.md by ``tests/test_deciding.py`` (every rule exists).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DECIDING: dict[tuple[str, str], tuple[str, ...]] = {
    ("hw", "leader"): ("HW-LEADER-1", "HW-LEADER-2", "HW-LEADER-3", "HW-LEADER-4"),
    ("hw", "follower"): ("HW-FOLLOWER-1", "TRUNC-HW-1"),
    ("hw", "none"): ("CKPT-1", "RESTART-1"),
    ("leo", "leader"): ("PRODUCE-3", "LAI-2"),
    ("log", "leader"): ("PRODUCE-3", "LAI-2"),
    ("leo", "follower"): ("FOLLOWER-FETCH-2", "TRUNC-1", "TRUNC-HW-1", "TRUNC-EPOCH-1", "FOLLOWER-DIVERGE-1"),
    ("log", "follower"): ("FOLLOWER-FETCH-2", "TRUNC-1", "TRUNC-HW-1", "TRUNC-EPOCH-1", "FOLLOWER-DIVERGE-1"),
    ("remote_leo", "leader"): ("FETCH-LEADER-5",),
    ("epoch_cache", "leader"): ("EPOCH-CACHE-1", "EPOCH-CACHE-2"),
    ("epoch_cache", "follower"): ("EPOCH-CACHE-1", "EPOCH-CACHE-2", "EPOCH-CACHE-3"),
    ("role", "*"): ("LAI-2", "LAI-3", "CRASH-1", "RESTART-1"),
    ("online", "*"): ("CRASH-1", "RESTART-1"),
    ("isr", "*"): ("ISR-SHRINK-1", "ISR-SHRINK-2", "ISR-EXPAND-1", "ISR-EXPAND-2", "ISR-ALTER-2", "CTRL-FAIL-1"),
    ("leader", "*"): ("CTRL-ELECT-1", "CTRL-ELECT-2", "CTRL-ELECT-3", "CTRL-ELECT-4"),
    ("leader_epoch", "*"): ("CTRL-ELECT-5",),
    ("producer", "*"): ("PRODUCE-4", "PRODUCE-5", "PRODUCE-6", "PRODUCE-7"),
    ("consumer", "*"): ("CONSUME-1", "CONSUME-2"),
}
"""(field, role in the reference's observation, ``*``: any) -> the rules that compute it."""


PROPERTY_DECIDING: dict[str, tuple[str, ...]] = {
    "SAFE-HW-LE-LEO": ("HW-LEADER-1", "HW-FOLLOWER-1"),
    "SAFE-LOG-LEO": ("PRODUCE-3", "FOLLOWER-FETCH-2", "TRUNC-1"),
    "SAFE-LEADER-HW-MONOTONIC": ("HW-LEADER-1", "HW-LEADER-2"),
    "SAFE-EPOCHS-INCREASE": ("CTRL-ELECT-5", "LAI-1"),
    "SAFE-ONE-LEADER": ("LAI-2", "LAI-3", "LAI-5"),
    "SAFE-STRONG-ISR": ("HW-LEADER-1", "HW-LEADER-2", "ISR-EXPAND-1", "TRUNC-EPOCH-1"),
    "SAFE-ACKED": ("PRODUCE-5", "HW-LEADER-1", "CTRL-ELECT-1", "TRUNC-EPOCH-1"),
    "SAFE-CONSUMER-BELOW-HW": ("CONSUME-1",),
    "SAFE-EPOCH-CACHE": ("EPOCH-CACHE-1", "EPOCH-CACHE-2"),
}
"""A safety property -> the rules whose guards keep it (a finding names those that held)."""


def _field_and_role(path: str, reference: Mapping[str, Any] | None) -> tuple[str, str]:
    parts = path.split(".")
    if parts[0] == "replicas" and len(parts) >= 3:
        rep = ((reference or {}).get("replicas") or {}).get(parts[1]) or {}
        role = rep.get("role") if isinstance(rep, dict) else None
        return parts[2], str(role or "none")
    return parts[0], "*"


def deciding(path: str, reference: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The rules that decide the field at ``path`` (e.g. ``replicas.A.hw``), given the
    reference's observation at that step (for the replica's role)."""
    if path.startswith("safety "):
        return PROPERTY_DECIDING.get(path[len("safety ") :], ())
    name, role = _field_and_role(path, reference)
    return DECIDING.get((name, role)) or DECIDING.get((name, "*")) or ()


def held(paths: Iterable[str], fired: Iterable[str], reference: Mapping[str, Any] | None) -> list[str]:
    """The rules deciding any of ``paths`` that did not fire at the step (they held the
    value the reference kept), in table order."""
    done = set(fired)
    out: dict[str, None] = {}
    for path in paths:
        for rule in deciding(path, reference):
            if rule not in done:
                out[rule] = None
    return list(out)


__all__ = ["DECIDING", "PROPERTY_DECIDING", "deciding", "held"]
