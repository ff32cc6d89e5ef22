"""Messages in flight, from their one-line renderings back to arrows.

An observation carries each in-flight message as one canonical line
(``reference_impl/describe.py``, spec/adapter-protocol.md): ``B->A Fetch(epoch=0
offset=1) parked until 500``. A diagram needs who sends to whom and a short label, so
this module reads those lines back; a line it cannot read is still shown, as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

KINDS = ("parked_fetches", "fetch_responses", "epoch_responses", "leader_and_isr", "pending_produces")

_HEAD = re.compile(r"^(?P<src>[^\s>-]+)->(?P<dst>\S+)\s+(?P<name>\w+)")


@dataclass(frozen=True)
class Arrow:
    """One message: sender, receiver, what it is, and its details as short lines."""

    kind: str
    """The ``in_flight`` list it came from (``parked_fetches``, ...)."""
    src: str
    dst: str
    name: str
    details: tuple[str, ...]
    line: str
    """The message as the observation wrote it."""

    @property
    def waiting(self) -> bool:
        """A request held at its receiver (a parked fetch, a produce waiting for acks)."""
        return self.kind in ("parked_fetches", "pending_produces")


def parse(kind: str, line: str) -> Arrow | None:
    """The arrow for one rendered message, or None if the line is not ``SRC->DST Name(...)``."""
    line = line.strip()
    m = _HEAD.match(line)
    if m is None:
        return None
    args, rest = _split_args(line[m.end() :])
    details = _chunk(args.split())
    if rest:
        details.append(rest)
    return Arrow(kind, m.group("src"), m.group("dst"), m.group("name"), tuple(details), line)


def _split_args(tail: str) -> tuple[str, str]:
    """``(a=1 b=(0,1)) rest`` -> (``a=1 b=(0,1)``, ``rest``): parentheses may nest."""
    if not tail.startswith("("):
        return "", tail.strip()
    depth = 0
    for i, ch in enumerate(tail):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return tail[1:i].strip(), tail[i + 1 :].strip()
    return tail[1:].strip(), ""


def _chunk(words: list[str], width: int = 24) -> list[str]:
    out: list[str] = []
    for word in words:
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def arrows(in_flight: Any) -> tuple[list[Arrow], list[str]]:
    """Every message of an observation's ``in_flight``; lines that do not parse apart."""
    found: list[Arrow] = []
    unread: list[str] = []
    if not isinstance(in_flight, dict):
        return found, unread
    kinds = [k for k in KINDS if k in in_flight] + sorted(k for k in in_flight if k not in KINDS)
    for kind in kinds:
        lines = in_flight.get(kind)
        if not isinstance(lines, list):
            continue
        for line in lines:
            arrow = parse(kind, str(line))
            if arrow is None:
                unread.append(str(line))
            else:
                found.append(arrow)
    return found, unread
