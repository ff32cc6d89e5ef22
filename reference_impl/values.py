"""Building the model's immutable values quickly: ``evolve`` and ``fast_init``.

``evolve`` makes a copy of a frozen dataclass value with some fields changed. It does
what ``dataclasses.replace`` does for the model's value types, without calling
``__init__`` again: the transition functions build new replicas many times per step,
and ``replace`` was half of the model's run time (profiled; benchmarks/bench_adapters.py).

``fast_init`` gives a frozen dataclass an ``__init__`` with the same signature that
fills the new object's attribute dict in one go, where the generated one calls
``object.__setattr__`` once per field (a message or an outcome is built on most steps;
this makes building one about a third cheaper; benchmarks/bench_core.py).

Values are still never mutated: both fill a fresh object, which stays frozen.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

_new = object.__new__
_set = object.__setattr__
MEMO = "_memo"  # state.MEMO: results computed from the old value, never copied


def evolve(value: T, **changes: Any) -> T:
    old = value.__dict__
    new = old.copy()
    new.update(changes)
    if len(new) != len(old):
        unknown = next(name for name in changes if name not in old)
        raise TypeError(f"{type(value).__name__} has no field {unknown!r}")
    if MEMO in new:
        del new[MEMO]
    fresh = _new(type(value))
    _set(fresh, "__dict__", new)
    return fresh


def fast_init(cls: type[T]) -> type[T]:
    """Replace the ``__init__`` of the frozen dataclass ``cls`` (see the module doc).

    Only for plain classes (no ``__slots__``, no ``__post_init__``, no default
    factories, every field in ``__init__``); anything else is returned unchanged."""
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if (
        "__slots__" in cls.__dict__
        or hasattr(cls, "__post_init__")
        or any(not f.init or f.default_factory is not dataclasses.MISSING for f in fields)
    ):
        return cls
    namespace: dict[str, Any] = {"_set": _set}
    params = []
    for f in fields:
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
    body = ", ".join(f"{f.name!r}: {f.name}" for f in fields)
    source = f"def __init__(self, {', '.join(params)}):\n    _set(self, '__dict__', {{{body}}})\n"
    exec(source, namespace)  # as dataclasses itself builds __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    type.__setattr__(cls, "__init__", init)
    return cls
