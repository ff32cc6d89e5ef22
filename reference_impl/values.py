"""Building the model's immutable values quickly: ``evolve`` and ``fast_init``.

``evolve`` makes a copy of a frozen dataclass value with some fields changed. It does
what ``dataclasses.replace`` does for the model's value types, without calling
``__init__`` again: the transition functions build new replicas many times per step,
and ``replace`` was half of the model's run time (profiled; benchmarks/bench_adapters.py).

``fast_init`` gives a frozen dataclass an ``__init__`` with the same signature that
fills the new object's attribute dict in one go, where the generated one calls
``object.__setattr__`` once per field (a message or an outcome is built on most steps;
this makes building one about a third cheaper; benchmarks/bench_core.py).

``cached_hash`` makes a frozen dataclass remember its hash: the same value as the
generated ``__hash__`` (a tuple of the compared fields), computed once. A state shares
most of its replicas with the state it came from, so a search that hashes every state it
reaches (``kconform explore``) rehashes only what a step changed (profiled: hashing was a
fifth of explore's time). The hash is kept in the value's attribute dict under ``HASH``,
which ``evolve`` and a ``Draft`` never copy, and pickling leaves out (a string's hash
differs between processes), as it leaves out ``MEMO`` (the invariants' cache, which they
recognise by identity).

Values are still never mutated: both fill a fresh object, which stays frozen.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

T = TypeVar("T")

_new = object.__new__
_set = object.__setattr__
MEMO = "_memo"  # state.MEMO: results computed from the old value, never copied
HASH = "_hash"  # ``cached_hash``: the value's hash, never copied


def evolve(value: T, **changes: Any) -> T:
    old = value.__dict__
    new = old.copy()
    new.update(changes)
    if len(new) != len(old):
        unknown = next(name for name in changes if name not in old)
        raise TypeError(f"{type(value).__name__} has no field {unknown!r}")
    if MEMO in new:
        del new[MEMO]
    if HASH in new:
        del new[HASH]
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


def cached_hash(cls: type[T]) -> type[T]:
    """Give the frozen dataclass ``cls`` a ``__hash__`` equal to the generated one but
    computed once per value (the module doc), and a ``__getstate__`` that leaves it and
    ``MEMO`` out."""
    names = [f.name for f in dataclasses.fields(cls) if f.compare and (f.hash is None or f.hash)]  # type: ignore[arg-type]
    get = operator.attrgetter(*names) if len(names) > 1 else (lambda value: (getattr(value, names[0]),))

    def __hash__(self: Any) -> int:
        fields = self.__dict__
        h = fields.get(HASH)
        if h is None:
            h = fields[HASH] = hash(get(self))
        return h  # type: ignore[no-any-return]

    def __getstate__(self: Any) -> dict[str, Any]:
        fields = dict(self.__dict__)
        fields.pop(HASH, None)
        fields.pop(MEMO, None)  # a cache too, compared by identity (``invariants.CLEAN_ONLY``)
        return fields

    __hash__.__qualname__ = f"{cls.__qualname__}.__hash__"
    __getstate__.__qualname__ = f"{cls.__qualname__}.__getstate__"
    type.__setattr__(cls, "__hash__", __hash__)
    type.__setattr__(cls, "__getstate__", __getstate__)
    return cls
