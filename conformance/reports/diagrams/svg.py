"""A tiny SVG writer: elements as escaped strings, no dependency.

Diagrams are a few hundred rectangles, lines and text runs; building them as strings with
one escaping helper is simpler than a drawing library and keeps the output byte-stable
(the same observation always gives the same SVG, so diagrams can be compared in tests).
"""

from __future__ import annotations

from html import escape

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
CHAR_W = 0.6
"""Advance width of one monospace character, in ems (DejaVu Sans Mono: 0.602)."""


def text_width(text: str, size: float) -> float:
    """Width of ``text`` at ``size`` px in the monospace font (layout without a renderer)."""
    return len(text) * size * CHAR_W


def _attrs(attrs: dict[str, object]) -> str:
    parts = []
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        if isinstance(value, float):
            value = f"{value:.1f}".rstrip("0").rstrip(".")
        parts.append(f'{key.rstrip("_").replace("_", "-")}="{escape(str(value), quote=True)}"')
    return " ".join(parts)


def el(tag: str, body: str = "", /, **attrs: object) -> str:
    """``<tag attrs>body</tag>``; attribute names use ``_`` for ``-`` (``stroke_width``)."""
    head = f"{tag} {_attrs(attrs)}".strip()
    return f"<{head}>{body}</{tag}>" if body else f"<{head}/>"


def text(x: float, y: float, content: str, size: float = 12, /, **attrs: object) -> str:
    return el("text", escape(content, quote=False), x=x, y=y, font_size=size, **attrs)


def document(width: float, height: float, body: list[str], title: str = "", inline: bool = False) -> str:
    """A standalone SVG document, or with ``inline`` an ``<svg>`` element for an HTML page
    (which needs no namespace declaration: the HTML parser knows ``svg``)."""
    head = el("title", escape(title, quote=False)) if title else ""
    xmlns = "" if inline else 'xmlns="http://www.w3.org/2000/svg" '
    return (
        f'<svg {xmlns}width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="{FONT}">' + head + "".join(body) + "</svg>"
    )


def wrap(content: str, width_chars: int) -> list[str]:
    """Greedy word wrap to at most ``width_chars`` characters per line."""
    lines: list[str] = []
    line = ""
    for word in content.split():
        if line and len(line) + 1 + len(word) > width_chars:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines
