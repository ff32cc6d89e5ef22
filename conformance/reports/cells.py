"""The cells every report view is made of: a ``Table``, an implementation's label, a
count by status, a rule's sort key. Used by the suite's views (``views.py``) and the
corpus views (``corpus.py``), which the suite's views hand a corpus document to.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str = ""


def impl_label(impl: dict[str, Any]) -> str:
    name = impl.get("name") or impl["id"]
    label = impl["id"] if name == impl["id"] else f"{impl['id']} ({name})"
    return f"{label} {impl.get('version', '')}".strip()


COUNTED = (("FAIL", "failed"), ("ERROR", "errored"), ("SKIP", "skipped"), ("XFAIL", "xfail"), ("XPASS", "xpass"))
"""How each status other than PASS is counted in the summary, in order."""


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def counts_cell(counter: Counter[str]) -> str:
    """``3/5 passed, 1 failed, 1 xfail``: counted by status, so an expected failure
    (XFAIL) is never shown as a failure."""
    total = sum(counter.values())
    if not total:
        return "-"
    parts = [f"{counter['PASS']}/{total} passed"]
    for status, word in COUNTED:
        if counter[status]:
            parts.append(f"{counter[status]} {word}")
    return ", ".join(parts)


def short_level(met: str) -> str:
    """A ``level met`` cell: the level, or its first words when none is established (the
    reason follows the table)."""
    if met.startswith("safety not established"):
        return "safety not established"
    return met


def rule_key(rule: str) -> tuple[str, int]:
    head, _, num = rule.rpartition("-")
    return head, int(num) if num.isdigit() else 0
