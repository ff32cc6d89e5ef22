"""Comparing an expected (partial) observation with an actual one.

Mappings are compared key by key, only on the keys the expectation states; lists and
scalars are compared whole. The first difference is reported with its field path, so a
failure reads "step 4, replicas.B.hw: expected 1, got 0".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reference_impl.observe import Amended, changed_keys

MISSING = object()
_PLAIN = frozenset({int, str, list, bool, float, type(None)})
_MAPPINGS = frozenset({dict, Amended})


@dataclass(frozen=True)
class Divergence:
    path: str
    expected: Any
    actual: Any
    """``MISSING`` when the implementation did not report the field at all."""

    @property
    def missing(self) -> bool:
        return self.actual is MISSING


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` shows ``expected`` (the rules of ``first_divergence``), without
    building field paths: the common case, checked first.

    A field whose whole value equals the expectation is settled by one equality test (done
    in C, however deep the value); only a ``True``/``False`` expected where a number came
    (equal in Python, not in JSON) is then looked for."""
    kind = type(expected)
    if kind in _MAPPINGS and type(actual) in _MAPPINGS:
        for key, value in expected.items():
            if key not in actual:
                return False
            if not _field_matches(value, actual[key]):
                return False
        return True
    if kind in _PLAIN:
        return not (expected != actual or (kind is bool and type(actual) is not bool))
    if isinstance(expected, Mapping):
        return _first(expected, actual, "") is None
    return not (expected != actual or (type(expected) is bool and type(actual) is not bool))


def matches_since(expected: Any, actual: Any, before: Any, seen: Any) -> bool:
    """``matches(expected, actual)``, given that ``before`` matched ``seen`` (the last
    comparison of the run that found no difference) and that neither side's parts are
    ever changed once made (``Adapter.shares_observations``; a corpus trace's
    expectations are copied on write, ``corpus.format.apply_changes``): a field whose
    expected and actual values are both the very objects compared then matched then and
    still does, so only the fields that changed on either side are compared (a long run's
    logs and producer outcomes, the same objects step after step, are not read again).
    A mapping amended on both sides from the pair that matched (``Amended``: the producer
    outcomes of a long run) is compared on the changed keys only; another small mapping
    that changed is walked the same way; a large one is compared whole, in C, rather than
    key by key in Python."""
    kinds = _MAPPINGS
    if type(expected) not in kinds or type(actual) not in kinds or type(before) not in kinds or type(seen) not in kinds:
        return matches(expected, actual)
    for key, value in expected.items():
        if key not in actual:
            return False
        got = actual[key]
        old = before.get(key, MISSING)
        if value is old and got is seen.get(key, MISSING):
            continue
        vkind, gkind = type(value), type(got)
        if (vkind is dict or vkind is Amended) and (gkind is dict or gkind is Amended):
            was = seen.get(key, MISSING)
            if (vkind is Amended or gkind is Amended) and (
                (ours := changed_keys(value, old)) is not None and (theirs := changed_keys(got, was)) is not None
            ):  # both amended from what matched (or one of them the same): only those keys
                if not _entries_match(value, got, ours, theirs):
                    return False
                continue
            if len(value) <= LARGE and type(old) in kinds and type(was) in kinds:  # a large one: whole, in C
                if not matches_since(value, got, old, was):
                    return False
                continue
        if not _field_matches(value, got):
            return False
    return True


def _entries_match(
    expected: dict[str, Any], actual: dict[str, Any], ours: Sequence[str], theirs: Sequence[str]
) -> bool:
    """Two mappings, each amended (``reference_impl.observe.Amended``) by the keys ``ours`` and
    ``theirs`` from a pair that matched: they match where those keys do (every other entry is
    the matched pair's own)."""
    for keys in (ours, theirs):
        for k in keys:
            if k in expected and (k not in actual or not _field_matches(expected[k], actual[k])):
                return False
    return True


def _field_matches(value: Any, got: Any) -> bool:
    """One field of ``matches``: equal values settle it in one test (done in C, however
    deep), unless a ``True``/``False`` was expected where a number came."""
    if value == got:
        vkind = type(value)
        if vkind in _MAPPINGS:
            return not _bool_as_number(value, got)
        return not (vkind is bool and type(got) is not bool)
    return matches(value, got)


LARGE = 16
"""A mapping with more keys than this (the producer outcomes) has the kinds of its values
compared in C before any Python loop (``_bool_as_number``)."""


def _bool_as_number(expected: dict[Any, Any], actual: dict[Any, Any]) -> bool:
    """In two equal dicts, whether a ``bool`` of ``expected`` is a number in ``actual``
    (a large mapping without a bool or a mapping, such as the producer outcomes of a long
    run, is settled by gathering the kinds of its values in C)."""
    if len(expected) > LARGE:  # most large mappings hold no bool and no mapping: settled in C
        kinds = set(map(type, expected.values()))
        if bool not in kinds and dict not in kinds:
            return False
    for key, value in expected.items():
        vkind = type(value)
        if vkind is bool:
            if type(actual[key]) is not bool:
                return True
        elif vkind in _MAPPINGS and _bool_as_number(value, actual[key]):
            return True
    return False


def first_divergence(expected: Any, actual: Any, path: str = "") -> Divergence | None:
    """The first place ``actual`` differs from ``expected``, or None if it matches."""
    return None if matches(expected, actual) else _first(expected, actual, path)


def _first(expected: Any, actual: Any, path: str) -> Divergence | None:
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return Divergence(path, expected, actual)
        for key, value in expected.items():
            if key not in actual:
                return Divergence(_join(path, key), value, MISSING)
            found = _first(value, actual[key], _join(path, key))
            if found is not None:
                return found
        return None
    if expected != actual or (type(expected) is bool and type(actual) is not bool):
        return Divergence(path, expected, actual)
    return None


def all_divergences(expected: Any, actual: Any, path: str = "") -> list[Divergence]:
    """Every place ``actual`` differs from ``expected`` (for a failure's step table)."""
    return [] if matches(expected, actual) else _all(expected, actual, path)


def _all(expected: Any, actual: Any, path: str) -> list[Divergence]:
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [Divergence(path, expected, actual)]
        out: list[Divergence] = []
        for key, value in expected.items():
            if key not in actual:
                out.append(Divergence(_join(path, key), value, MISSING))
            else:
                out += _all(value, actual[key], _join(path, key))
        return out
    found = _first(expected, actual, path)
    return [found] if found is not None else []


def leaf_paths(expected: Any, path: str = "") -> list[str]:
    """Every compared field path in an expectation (for capability checks)."""
    if isinstance(expected, Mapping):
        out: list[str] = []
        for key, value in expected.items():
            out += leaf_paths(value, _join(path, key))
        return out
    return [path]


def logs_mismatch(replicas: tuple[str, ...], observation: Mapping[str, Any], path: str) -> Divergence | None:
    """A ``logs_match`` expectation: these replicas report equal logs (the same records
    from the same log start), whatever the records are. None when they do."""
    reported = observation.get("replicas") or {}
    logs = {}
    for name in replicas:
        replica = reported.get(name)
        if not isinstance(replica, Mapping) or "log" not in replica:
            return Divergence(path, "equal logs", MISSING)
        logs[name] = (replica.get("log_start", 0), replica["log"])
    if len({repr(log) for log in logs.values()}) <= 1:
        return None
    actual = "; ".join(
        f"{name}: " + (f"from {start} " if start else "") + str(log) for name, (start, log) in logs.items()
    )
    return Divergence(path, "equal logs", actual)
