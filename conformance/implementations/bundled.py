"""The implementations kconform ships: the reference, whole and in each generation.

Registered under the ``kconform.implementations`` entry-point group in pyproject.toml,
as a third-party package registers its own adapter.
"""

from __future__ import annotations

from ..adapters.in_process import ReferenceAdapter


def reference() -> ReferenceAdapter:
    """The reference implementation, all three generations."""
    return ReferenceAdapter()


def reference_hw_truncation() -> ReferenceAdapter:
    """The reference restricted to hw-truncation (Kafka 0.10 and earlier)."""
    return ReferenceAdapter("hw-truncation")


def reference_leader_epoch() -> ReferenceAdapter:
    """The reference restricted to leader-epoch (Kafka 0.11 to 2.6)."""
    return ReferenceAdapter("leader-epoch")


def reference_diverging_epoch() -> ReferenceAdapter:
    """The reference restricted to diverging-epoch (Kafka 2.7 and later)."""
    return ReferenceAdapter("diverging-epoch")


DEFAULT_SUITE = ("reference",)
"""What ``kconform run`` checks when no --impl is given: the reference, which implements
every generation, so it runs (and passes) every bundled fixture."""

BUNDLED = {
    "reference": reference,
    "reference-hw-truncation": reference_hw_truncation,
    "reference-leader-epoch": reference_leader_epoch,
    "reference-diverging-epoch": reference_diverging_epoch,
}
"""The same factories as the entry points in pyproject.toml, resolved without scanning
installed packages (a test checks both agree)."""
