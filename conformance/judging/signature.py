"""A failure's signature: what kind of difference it is, with the particulars left out.

Ten thousand failing traces are rarely ten thousand problems. Grouping them by where they
first differ (the step kind, the field with replica ids and producer ids wildcarded, or
the refusal with its numbers blanked) gives the handful of classes a person then reads
one example of each: ``kconform replay`` counts every failing trace per signature
(``conformance/corpus/aggregate.py``), and fuzz names a disagreement by the same field
kind (``conformance/search/stateful.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

WILDCARDED = ("replicas", "producer")
"""Observation sections whose second path part is an id (a replica, a produce);
``answers.<kind>.<replica>`` has it third."""

_NUMBER = re.compile(r"(?<![\w-])-?\d+(?:\.\d+)?")
"""A number standing alone (not a rule id's ``-3``, not part of a name)."""

MAX_TEXT = 160
"""A refusal or error message is cut here: the start says what it is."""


def field_kind(path: str) -> str:
    """``path`` with the ids in it wildcarded: ``replicas.B.remote_leo.C`` ->
    ``replicas.*.remote_leo.*``."""
    parts = path.split(".")
    if len(parts) > 1 and parts[0] in WILDCARDED:
        parts[1] = "*"
    if len(parts) > 2 and parts[0] == "answers":
        parts[2] = "*"
    if len(parts) > 3 and parts[2] in ("remote_leo", "last_caught_up_ms"):
        parts[3] = "*"
    return ".".join(parts)


def blank(text: str, names: Iterable[str] = ()) -> str:
    """A message without its particulars: numbers as ``N``, the given names (replica ids)
    as ``*``, cut at ``MAX_TEXT`` characters."""
    out = _NUMBER.sub("N", text)
    ids = sorted({n for n in names if n}, key=len, reverse=True)
    if ids:
        out = re.sub(r"(?<![\w-])(?:" + "|".join(map(re.escape, ids)) + r")(?![\w-])", "*", out)
    return out if len(out) <= MAX_TEXT else out[: MAX_TEXT - 1] + "…"


def skip_signature(reason: str, names: Iterable[str] = ()) -> str:
    """A skip reason without its particulars, for counting: a run's summary and a corpus
    replay's totals both list skips by it. "step 3 (fetch_round) uses max_wait_ms" and
    "step 5 (...)" are one reason, as are the two ways a run ends at a step the
    implementation lacks before any check (``runner._nothing_left``); other reasons are
    ``blank``-ed."""
    unsupported = _ENDS_AT_UNSUPPORTED.match(reason)
    if unsupported is not None:
        return f"ends at a step it does not support ({unsupported['kind']}) before anything is checked"
    field = _UNHONOURED_FIELD.match(reason)
    if field is not None:  # ``runner.skip_reason``
        return f"uses {field['field']} (in {field['kind']}), which the implementation does not honour"
    return blank(reason, names)


_ENDS_AT_UNSUPPORTED = re.compile(
    r"(?:nothing left to run: |none of its \d+ expectations? survive lowering \()"
    r"step \d+ \((?P<kind>\w+)\) is not supported and cannot be lowered"
)
_UNHONOURED_FIELD = re.compile(
    r"step \d+ \((?P<kind>\w+)\) uses (?P<field>\w+), which the implementation does not honour$"
)


def failure_signature(result: Mapping[str, Any], replicas: Iterable[str] = ()) -> str:
    """The signature of a failed or errored run's result record (``runner`` shape): its
    first difference as ``<step kind>: <field kind>`` (a refused or refusing step:
    ``<step kind>: <what happened>``), or ``error: <message>`` for an errored run."""
    names = tuple(replicas)
    if result.get("outcome") == "errored":
        return "error: " + blank(str(result.get("reason") or result.get("detail") or "no reason"), names)
    first = result.get("divergence") or next(iter(result.get("failures") or ()), None)
    if not first:
        return "failed: " + blank(str(result.get("reason") or "no reason"), names)
    kind = first.get("kind") or "step"
    if first.get("property"):
        return f"{kind}: safety {first['property']}"
    field = str(first.get("field") or "")
    if field == "(step)":
        return f"{kind}: expected {first.get('expected')}, " + blank(str(first.get("actual")), names)
    return f"{kind}: {field_kind(field)}{_direction(first.get('expected'), first.get('actual'))}"


def _direction(expected: Any, actual: Any) -> str:
    """Which way the implementation's value went, where that has a meaning: a number
    higher or lower, a list (a log, an ISR) longer, shorter or the same length."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return ""
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return " higher" if actual > expected else " lower"
    if isinstance(expected, list) and isinstance(actual, list):
        if len(actual) == len(expected):
            return " same length"
        return " longer" if len(actual) > len(expected) else " shorter"
    return ""
