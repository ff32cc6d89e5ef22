"""Tables that fit a width without breaking a word: ids such as ``FETCH-LEADER-5`` or
``seed-08b-unclean-election-enabled/leader-epoch`` stay whole.

tabulate's own ``maxcolwidths`` wraps with ``textwrap``'s defaults, which cut long words
and split at hyphens (``FETCH-`` / ``LEADER-5``). Here cells are wrapped before tabulate
sees them, at spaces only; a column is never narrower than its longest word. When a
terminal width is given, the widest columns give way first until the table fits (or
every column is down to its longest word: then the table is as narrow as it can be
without breaking an id).
"""

from __future__ import annotations

import re
import shutil
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, TextIO

from tabulate import tabulate

_ANSI = re.compile(r"\x1b\[[0-9;]*m")

BORDERS = {"simple": (0, 2), "plain": (0, 2), "rounded_outline": (4, 3), "github": (4, 3), "grid": (4, 3)}
"""Per table format: the characters a table adds besides its cells, as (a fixed part,
per column between two cells): ``simple`` puts two spaces between columns; the boxed
formats ``│ a │ b │`` put one border and two spaces per column, plus the outer edge."""


def visible(text: str) -> int:
    """The printed width of the longest line of ``text`` (colour codes take no room)."""
    return max((len(_ANSI.sub("", line)) for line in text.split("\n")), default=0)


def _longest_word(text: str) -> int:
    return max((len(w) for w in _ANSI.sub("", text).split()), default=0)


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The terminal's width if ``stream`` (default: stdout) is one, else None: output
    into a pipe or a file is not wrapped to a guess."""
    stream = stream or sys.stdout
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    return shutil.get_terminal_size((100, 20)).columns


def widths(
    rows: Sequence[Sequence[str]],
    headers: Sequence[str],
    tablefmt: str = "simple",
    caps: Sequence[int | None] | None = None,
    width: int | None = None,
) -> list[int]:
    """The width of each column: its natural width, at most its cap, and narrower still
    (widest first) while the table is wider than ``width``; never below its longest word."""
    columns = len(headers)
    cells = [[str(h)] + [str(r[i]) if i < len(r) else "" for r in rows] for i, h in enumerate(headers)]
    natural = [max(visible(c) for c in column) for column in cells]
    floor = [max(_longest_word(c) for c in column) for column in cells]
    out = []
    for i in range(columns):
        cap = caps[i] if caps is not None and i < len(caps) else None
        out.append(max(floor[i], min(natural[i], cap)) if cap is not None else natural[i])
    if width is not None:
        fixed, per = BORDERS.get(tablefmt, (4, 3))
        budget = width - fixed - per * columns
        while sum(out) > budget:
            shrinkable = [i for i in range(columns) if out[i] > floor[i]]
            if not shrinkable:
                break
            widest = max(shrinkable, key=lambda i: out[i])
            out[widest] -= 1
    return out


def wrap(text: str, width: int) -> str:
    """``text`` wrapped at spaces to ``width`` (its own line breaks kept; no word cut)."""
    if visible(text) <= width:
        return text
    lines = []
    for line in text.split("\n"):
        lines += textwrap.wrap(line, width=width, break_long_words=False, break_on_hyphens=False) or [""]
    return "\n".join(lines)


def fit(
    rows: Sequence[Sequence[Any]],
    headers: Sequence[str],
    tablefmt: str = "simple",
    caps: Sequence[int | None] | None = None,
    width: int | None = None,
    **options: Any,
) -> str:
    """``tabulate`` with every cell wrapped to ``widths(...)``; cells become text (``None``
    is an empty cell, never the word None)."""
    text_rows = [["" if c is None else str(c) for c in row] for row in rows]
    budget = width
    for _ in range(4):  # tabulate pads some columns beyond our estimate (headers): narrow and retry
        sizes = widths(text_rows, headers, tablefmt, caps, budget)
        wrapped = [[wrap(c, sizes[i]) if i < len(sizes) else c for i, c in enumerate(row)] for row in text_rows]
        heads = [wrap(str(h), sizes[i]) for i, h in enumerate(headers)]
        text = tabulate(wrapped, headers=heads, tablefmt=tablefmt, disable_numparse=True, **options)
        if width is None or budget is None or visible(text) <= width:
            break
        budget -= visible(text) - width
    return text
