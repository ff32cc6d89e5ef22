"""Python's cyclic garbage collector while a run is judged: young generations only.

A judged run keeps a growing history (the settled level's pending operations hold every
observation of the run, ``settle.Frontier``; the safety monitor the committed records),
and the collector's full collections scanned all of it again and again: in a 5,000-step
run about a third of the judge's CPU time, and the main reason a step of a long fixture
cost more than a step of a short one (``benchmarks/bench_judging.py``, ``run``). While a
run is judged the collector keeps collecting the young generations (their cost follows
what the last steps allocated, not the history, and cyclic garbage an implementation in
the same process makes is still found there) but makes no full collection; what
survives waits for the first full collection after the run.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

NO_FULL = 1 << 30
"""A third threshold no run reaches: young collections between two full ones."""


def young_only(function: Callable[P, R]) -> Callable[P, R]:
    """``function`` run with no full collection (thresholds restored after)."""

    @functools.wraps(function)
    def judged(*args: P.args, **kwargs: P.kwargs) -> R:
        young, middle, full = gc.get_threshold()
        gc.set_threshold(young, middle, NO_FULL)
        try:
            return function(*args, **kwargs)
        finally:
            gc.set_threshold(young, middle, full)

    return judged
