"""``evolve``: a copy of a frozen dataclass value with some fields changed.

It does what ``dataclasses.replace`` does for the model's value types, without calling
``__init__`` again: the transition functions build a new state many times per step, and
``replace`` was half of the model's run time (profiled; benchmarks/bench_adapters.py). Values are
still never mutated: ``evolve`` fills a fresh object.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def evolve(value: T, **changes: Any) -> T:
    fresh = object.__new__(type(value))
    old = value.__dict__
    new = fresh.__dict__
    new.update(old)
    for name in changes:
        if name not in old:
            raise TypeError(f"{type(value).__name__} has no field {name!r}")
    new.update(changes)
    if "_memo" in new:  # results computed from the old value (state.MEMO)
        del new["_memo"]
    return fresh
