"""Observations as changes: the ``observation_deltas`` option of the stdio protocol (version 4).

A stdio step used to carry the whole observation: every replica's whole log, every produce
outcome, every answer. Most of it is what the previous step's reply already said, and
encoding, piping and parsing it made a stdio step cost several times an in-process one. With
the option, a step's reply may carry ``observation_delta`` instead: only what changed since
the previous observation of the same run (spec/adapter-protocol.md, "Changes instead of whole
observations"; schema ``adapter-messages.schema.json#/$defs/observation_delta``).

Two pure functions, one for each side of the wire:

- ``diff(old, new)``: the delta an adapter sends (the SDK and the example adapter use it);
- ``apply_delta(old, delta)``: the whole observation kconform rebuilds before anything judges
  it, so the judge never sees a delta. A delta that does not apply raises ``DeltaError``
  naming the field (``replicas.B.log.truncate_to: 7 is above the log end 5``).

Neither mutates its arguments; ``apply_delta`` shares unchanged parts (a replica's dict, a
log list) with ``old``, so callers treat observations as immutable values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain, compress
from operator import ne
from types import MappingProxyType
from typing import Any

from reference_impl.observe import AMENDED_FROM, Amended, changed_keys

MERGE_DEPTH: dict[str, int] = {"producer": 1, "in_flight": 1, "answers": 2}
"""Top-level fields a delta may change entry by entry (``merge``), and how deep: a produce
outcome per id, an ``in_flight`` list per kind, an answer per kind and replica."""

DELTA_KEYS = frozenset({"set", "unset", "merge", "replicas"})
REPLICA_DELTA_KEYS = frozenset({"set", "unset", "log"})
LOG_DELTA_KEYS = frozenset({"truncate_to", "append"})


_ABSENT: Any = object()
"""A field missing from an observation (``None`` is a value: JSON's null)."""
_NOTHING: Mapping[str, Any] = MappingProxyType({})
"""An absent part of a delta (no allocation per call)."""


class DeltaError(ValueError):
    """A delta that does not apply to the previous observation; the message names the field."""


# --- the adapter's side ------------------------------------------------------------------


def _json_type(value: Any) -> type:
    """The type that says which JSON type a value is (an ``Amended`` mapping is an object)."""
    kind = type(value)
    return dict if kind is Amended else kind


def diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The delta that turns ``old`` into ``new`` (``apply_delta(old, diff(old, new)) == new``).

    Top-level fields are replaced whole, except ``replicas`` (per replica, per field; a log
    as a truncation and an append) and the ``MERGE_DEPTH`` fields (changed entries only,
    whole when an entry disappeared). An empty dict means nothing changed. Values are
    compared with their JSON types (``1`` and ``true`` differ) down to a replica's fields; merged
    entries (produce outcomes, ``in_flight`` lists, answers) by value.

    Parts ``new`` shares with ``old`` (the same object, as the reference's ``Observer``
    makes them) are unchanged without being read, and a map ``Amended`` from the one
    before is read only at its changed keys, so a diff of two such observations costs
    what changed; fresh observations (the SDK's) are compared value by value."""
    out: dict[str, Any] = {}
    set_: dict[str, Any] = {}
    merge: dict[str, Any] = {}
    for name, value in new.items():
        before = old.get(name, _ABSENT)
        if before is value:
            continue
        if _json_type(before) is not _json_type(value):  # new, or another JSON type
            set_[name] = value
        elif name == "replicas" and isinstance(value, dict):
            replicas = _diff_replicas(before, value)
            if replicas is None:
                set_[name] = value
            elif replicas:
                out["replicas"] = replicas
        elif name in MERGE_DEPTH and isinstance(value, dict):
            entries = _diff_entries(before, value, MERGE_DEPTH[name])
            if entries is None:
                set_[name] = value
            elif entries:
                merge[name] = entries
        elif before != value:
            set_[name] = value
    if set_:
        out["set"] = set_
    if not old.keys() <= new.keys():
        out["unset"] = [name for name in old if name not in new]
    if merge:
        out["merge"] = merge
    return out


def _diff_entries(before: Any, after: Any, depth: int) -> dict[str, Any] | None:
    """The changed entries of a map (recursing ``depth`` levels), or None when it must go whole."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    known = changed_keys(after, before)
    if known is not None:  # amended from ``before``: only these keys can differ
        if any(key not in after for key in known):
            return None  # an entry disappeared: the field goes whole
        return {key: after[key] for key in known if before.get(key, _ABSENT) != after[key]}
    if not before.keys() <= after.keys():
        return None
    if depth == 1:
        # A run's produce ids only grow, so this map gets long: find the changed entries with
        # C loops (keys in the same order, values compared pairwise), not a Python loop.
        keys = list(after)
        n = len(before)
        if keys[:n] == list(before):
            changed = compress(keys, map(ne, before.values(), after.values()))
            return {key: after[key] for key in chain(changed, keys[n:])}
    out: dict[str, Any] = {}
    for key, value in after.items():
        if key in before:
            old = before[key]
            if type(old) is type(value) and old == value:
                continue
            if depth > 1:
                inner = _diff_entries(old, value, depth - 1)
                if inner is None:
                    return None  # an inner map lost an entry (or is no map): the field goes whole
                out[key] = inner
                continue
        elif depth > 1:
            return None
        out[key] = value
    return out


def _diff_replicas(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    if before.keys() != after.keys():
        return None  # a replica appeared or vanished: not a change within one run
    out: dict[str, Any] = {}
    for name, rep in after.items():
        old = before[name]
        if old is rep or old == rep:
            continue
        if not isinstance(old, dict) or not isinstance(rep, dict):
            return None
        out[name] = _diff_replica(old, rep)
    return out


def _diff_replica(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    set_: dict[str, Any] = {}
    for name, value in new.items():
        before = old.get(name, _ABSENT)
        if before is value or (type(before) is type(value) and before == value):
            continue
        if (
            name == "log"
            and isinstance(value, list)
            and isinstance(old.get(name), list)
            and old.get("log_start", 0) == new.get("log_start", 0)
            and isinstance(new.get("log_start", 0), int)
        ):
            out["log"] = _diff_log(old["log"], value, new.get("log_start", 0))
        else:
            set_[name] = value
    if set_:
        out["set"] = set_
    if not old.keys() <= new.keys():
        out["unset"] = [name for name in old if name not in new]
    return out


def _diff_log(old: list[Any], new: list[Any], log_start: int) -> dict[str, Any]:
    """``{truncate_to, append}``: keep the common prefix, then append the rest."""
    n = len(old)
    if len(new) >= n and new[:n] == old:
        return {"append": new[n:]}
    keep, limit = 0, min(n, len(new))
    while keep < limit and old[keep] == new[keep]:
        keep += 1
    out: dict[str, Any] = {"truncate_to": log_start + keep}
    if len(new) > keep:
        out["append"] = new[keep:]
    return out


# --- kconform's side ----------------------------------------------------------------------


def apply_delta(old: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """The whole observation ``delta`` describes after ``old``; ``DeltaError`` if it does not apply."""
    if not isinstance(delta, dict):
        raise DeltaError(f"observation_delta: must be an object, got {type(delta).__name__}")
    if not delta.keys() <= DELTA_KEYS:
        unknown = sorted(set(delta) - DELTA_KEYS)[0]
        raise DeltaError(f"observation_delta: unknown key {unknown!r} (allowed: set, unset, merge, replicas)")
    new = dict(old)
    set_ = _object(delta.get("set", _NOTHING), "set")
    unset = _names(delta.get("unset", ()), "unset")
    merge = _object(delta.get("merge", _NOTHING), "merge")
    replicas = _object(delta.get("replicas", _NOTHING), "replicas")
    if (bool(set_) + bool(unset) + bool(merge) + bool(replicas)) > 1:
        _disjoint("", set_.keys(), unset, merge.keys(), {"replicas"} if replicas else ())
    for name in unset:
        if name not in new:
            raise DeltaError(f"unset: {name!r} is not in the previous observation")
        del new[name]
    new.update(set_)
    for name, entries in merge.items():
        depth = MERGE_DEPTH.get(name)
        if depth is None:
            merged = ", ".join(MERGE_DEPTH)
            raise DeltaError(f"merge.{name}: only {merged} are merged entry by entry; send {name} in set")
        new[name] = _merge(new.get(name), entries, depth, name)
    if replicas:
        before = new.get("replicas")
        if not isinstance(before, dict):
            raise DeltaError("replicas: the previous observation has no replicas object to change; send it in set")
        after = dict(before)
        for rid, rep_delta in replicas.items():
            rep = before.get(rid)
            if not isinstance(rep, dict):
                raise DeltaError(f"replicas.{rid}: not a replica of the previous observation")
            after[rid] = _apply_replica(rep, rep_delta, rid)
        new["replicas"] = after
    return new


def _apply_replica(old: dict[str, Any], delta: Any, rid: str) -> dict[str, Any]:
    where = "replicas." + rid
    if not isinstance(delta, dict):
        raise DeltaError(f"{where}: must be an object, got {type(delta).__name__}")
    if not delta.keys() <= REPLICA_DELTA_KEYS:
        raise DeltaError(
            f"{where}: unknown key {sorted(set(delta) - REPLICA_DELTA_KEYS)[0]!r} (allowed: set, unset, log)"
        )
    set_ = _object(delta.get("set", _NOTHING), where, ".set")
    unset = _names(delta.get("unset", ()), where, ".unset")
    log = delta.get("log")
    if unset or (log is not None and set_):
        _disjoint(f"{where}.", set_.keys(), unset, {"log"} if log is not None else ())
    new = dict(old)
    for name in unset:
        if name not in new:
            raise DeltaError(f"{where}.unset: {name!r} is not in the previous observation")
        del new[name]
    new.update(set_)
    if log is not None:
        new["log"] = _apply_log(new, _object(log, where, ".log"), where + ".log")
    return new


def _apply_log(rep: dict[str, Any], delta: Mapping[str, Any], where: str) -> list[Any]:
    if not delta.keys() <= LOG_DELTA_KEYS:
        unknown = sorted(set(delta) - LOG_DELTA_KEYS)[0]
        raise DeltaError(f"{where}: unknown key {unknown!r} (allowed: truncate_to, append)")
    old = rep.get("log")
    if not isinstance(old, list):
        raise DeltaError(f"{where}: the previous observation has no log list to change; send log in set")
    start = rep.get("log_start", 0)
    if type(start) is not int:
        raise DeltaError(f"{where}: log_start is {start!r}, not an offset")
    end = start + len(old)
    keep = len(old)
    if "truncate_to" in delta:
        to = delta["truncate_to"]
        if type(to) is not int:
            raise DeltaError(f"{where}.truncate_to: must be an integer offset, got {to!r}")
        if to > end:
            raise DeltaError(
                f"{where}.truncate_to: {to} is above the log end {end} (log_start {start} + {len(old)} records)"
            )
        if to < start:
            raise DeltaError(f"{where}.truncate_to: {to} is below the log start {start}")
        keep = to - start
    append = delta.get("append", [])
    if not isinstance(append, list):
        raise DeltaError(f"{where}.append: must be a list of records, got {type(append).__name__}")
    if keep == len(old) and not append:
        return old
    if type(old) is Grown:
        old.base = None  # one step back only (``Grown``)
    return Grown(old[:keep] + append if keep < len(old) else old + append, old, keep)


class Grown(list[Any]):
    """A log rebuilt from a delta: its first ``kept`` records are those of ``base``, the
    previous observation's log, so a judge that checked ``base`` checks only the rest
    (``observation_check``: a growing log costs what was appended). Only one step back:
    the next delta's log drops this one's ``base``. Equal to, and encoded as, a plain list."""

    __slots__ = ("base", "kept")

    def __init__(self, records: list[Any], base: list[Any], kept: int) -> None:
        super().__init__(records)
        self.base: list[Any] | None = base
        self.kept = kept


def _merge(before: Any, entries: Any, depth: int, where: str) -> dict[str, Any]:
    if not isinstance(before, dict):
        raise DeltaError(f"merge.{where}: the previous observation has no {where} object to merge into; send it in set")
    if not isinstance(entries, dict):
        raise DeltaError(f"merge.{where}: must be an object, got {type(entries).__name__}")
    if depth == 1:  # a large map amended: a judge that matched ``before`` reads only these entries
        out: dict[str, Any] = Amended(before, list(entries)) if len(before) > AMENDED_FROM else dict(before)
        out.update(entries)
    else:
        out = dict(before)
        for key, value in entries.items():
            out[key] = _merge(before.get(key), value, depth - 1, where + "." + str(key))
    return out


def _object(value: Any, where: str, suffix: str = "") -> Mapping[str, Any]:
    if value is _NOTHING or isinstance(value, dict):
        return value
    raise DeltaError(f"{where}{suffix}: must be an object, got {type(value).__name__}")


def _names(value: Any, where: str, suffix: str = "") -> Sequence[str]:
    if value == () or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value  # type: ignore[no-any-return]
    raise DeltaError(f"{where}{suffix}: must be a list of field names")


def _disjoint(where: str, *groups: Any) -> None:
    """A field changed in two ways at once is ambiguous: refuse it."""
    seen: set[str] = set()
    for group in groups:
        for name in group:
            if name in seen:
                raise DeltaError(
                    f"{where}{name}: changed twice in one delta (in more than one of set, unset, merge, log)"
                )
            seen.add(name)
