"""The zoo's wrong implementations as module-level factories, for ``--impl zoo_impls:NAME``
(with ``tests/`` on the import path) and for Spark executors, which import them by name."""

from __future__ import annotations

from zoo import ZOO, Mutant


def no_purgatory() -> Mutant:
    return ZOO["no-purgatory"]()


def follower_hw_without_min() -> Mutant:
    return ZOO["follower-hw-without-min"]()


def truncate_to_hw_on_restart() -> Mutant:
    return ZOO["truncate-to-hw-on-restart"]()


def no_epoch_start_check() -> Mutant:
    return ZOO["no-epoch-start-check"]()


def response_carries_updated_hw() -> Mutant:
    return ZOO["response-carries-updated-hw"]()
