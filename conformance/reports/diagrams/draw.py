"""Step diagrams: one observation drawn as the seeds draw replication.

Each replica is a row: its name, role, epoch and ISR membership on the left, then its log
as cells (offset above, value and epoch inside), with the HW and LEO marks below. As in
seed 001's figures, records below the HW (committed, visible to consumers) are dark
blue, records at or above it light blue, the LEO slot (where the next record goes) a
dashed box, and slots with no data pale yellow. A crashed replica is greyed out with the
log it keeps on disk. Messages in flight are arrows from sender to receiver at the right.

Everything is drawn from the observation alone (plain data, spec/adapter-protocol.md),
so the reference's expected state and an implementation's observed state are drawn the
same way; fields an implementation does not report are simply left out. ``highlight``
names field paths (``replicas.B.hw``, ``isr``) to draw in red: where a run diverged.
Given the ``previous`` observation, records the step removed (a truncation) stay visible
as struck-out ghosts, so "m1 is gone" reads off the picture as in seed 001 §3.1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from . import svg
from .messages import Arrow, arrows

M = 12
LABEL_W = 150
CELL_W = 52
CELL_H = 34
ROW_H = 96
RED = "#d00000"
REMOVED = "#a04a1c"
HW_COLOR = "#2e7d32"
LEO_COLOR = "#c55a11"
COMMITTED = ("#2f75b5", "#ffffff")
UNCOMMITTED = ("#bdd7ee", "#1d1d1f")
COMMITTED_OFF = ("#8c99a6", "#ffffff")
UNCOMMITTED_OFF = ("#d5dbe1", "#555555")
NO_DATA = ("#fff2cc", "#e8d9a0")
ARROW_COLORS = {
    "parked_fetches": "#44546a",
    "fetch_responses": "#1f4e79",
    "epoch_responses": "#00796b",
    "leader_and_isr": "#7b3f00",
    "pending_produces": "#6a1b9a",
}


@dataclass(frozen=True)
class Frame:
    """One diagram: an observation with its heading and the fields to mark."""

    observation: Mapping[str, Any]
    title: str = ""
    caption: str = ""
    highlight: frozenset[str] = field(default_factory=frozenset)
    """Observation field paths (``replicas.B.hw``) drawn in red."""
    previous: Mapping[str, Any] | None = None
    """The observation before this step: records it removed are drawn struck out."""


def _hot(highlight: frozenset[str], path: str) -> bool:
    return any(h == path or h.startswith(path + ".") or path.startswith(h + ".") for h in highlight)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _record(entry: Any) -> tuple[str, str]:
    """``"m1@0"`` -> (``m1``, ``e0``); anything else shown as it is."""
    value, sep, epoch = str(entry).rpartition("@")
    return (value, f"e{epoch}") if sep else (str(entry), "")


def log_cells(observation: Mapping[str, Any]) -> int:
    """How many cells the widest log of an observation needs (records plus the LEO slot)."""
    widest = 0
    for replica in (observation.get("replicas") or {}).values():
        if not isinstance(replica, Mapping):
            continue
        log = replica.get("log")
        n = len(log) if isinstance(log, list) else 0
        leo = _int(replica.get("leo")) or 0
        widest = max(widest, n + 1, leo + 1)
    return max(widest, 3)


def replica_ids(observations: Iterable[Mapping[str, Any]]) -> list[str]:
    """Replica ids in first-seen order across observations."""
    seen: dict[str, None] = {}
    for observation in observations:
        for name in observation.get("replicas") or {}:
            seen.setdefault(str(name), None)
    return list(seen)


class _Drawing:
    """Lays out one frame at the origin; ``width``/``height`` known after ``draw``."""

    def __init__(self, frame: Frame, cells: int, replicas: Sequence[str], min_width: float = 560.0) -> None:
        self.frame = frame
        self.obs = frame.observation
        self.cells = cells
        self.replicas = list(replicas)
        self.arrows, self.unread = arrows(self.obs.get("in_flight"))
        self.info = {name: self._info_lines(name) for name in self.replicas}
        info_w = max((svg.text_width(line, 11) for lines in self.info.values() for line, _ in lines), default=0)
        self.log_x = M + LABEL_W
        self.info_x = self.log_x + cells * CELL_W + 14
        self.lanes_x = self.info_x + info_w + (18 if info_w else 4)
        self.lane_w = [self._lane_width(a) for a in self.arrows]
        content_w = self.lanes_x + sum(self.lane_w) + M
        self.width = max(content_w, min_width)
        self.body: list[str] = []

    # --- pieces -----------------------------------------------------------------------

    def _replica(self, name: str) -> Mapping[str, Any]:
        replica = (self.obs.get("replicas") or {}).get(name)
        return replica if isinstance(replica, Mapping) else {}

    def _info_lines(self, name: str) -> list[tuple[str, str]]:
        """Side notes of a replica: (text, field path)."""
        r = self._replica(name)
        out: list[tuple[str, str]] = []
        remote = r.get("remote_leo")
        if isinstance(remote, Mapping) and remote:
            shown = " ".join(f"{k}={'none' if v is None else v}" for k, v in remote.items())
            out.append((f"remote LEO: {shown}", f"replicas.{name}.remote_leo"))
        ckpt = _int(r.get("checkpoint_hw"))
        if ckpt is not None and (r.get("online") is False or ckpt != r.get("hw")):
            out.append((f"checkpoint HW: {ckpt}", f"replicas.{name}.checkpoint_hw"))
        cache = r.get("epoch_cache")
        if isinstance(cache, list) and cache:
            shown = " ".join(f"({e[0]},{e[1]})" if isinstance(e, list) and len(e) == 2 else str(e) for e in cache)
            out.append((f"epoch cache: {shown}", f"replicas.{name}.epoch_cache"))
        if r.get("fetch_state") == "truncating":
            out.append(("must ask OffsetsForLeaderEpoch", f"replicas.{name}.fetch_state"))
        return out

    @staticmethod
    def _lane_width(arrow: Arrow) -> float:
        widest = max([svg.text_width(arrow.name, 11)] + [svg.text_width(d, 10) for d in arrow.details])
        return widest + 26

    def _row_y(self, index: int) -> float:
        return self.rows_y + index * ROW_H

    # --- drawing ----------------------------------------------------------------------

    def draw(self) -> None:
        y = float(M)
        f = self.frame
        chars = int((self.width - 2 * M) / (11 * svg.CHAR_W) * 0.92)
        if f.title:
            y += 14
            self.body.append(svg.text(M, y, f.title, 14, font_weight="bold"))
        for line in svg.wrap(f.caption, chars):
            y += 15
            self.body.append(svg.text(M, y, line, 11, fill="#555555"))
        y += 20
        self._partition_line(y)
        self.rows_y = y + 10
        for i, name in enumerate(self.replicas):
            self._row(name, self._row_y(i))
        rows_end = self._row_y(len(self.replicas))
        self._arrows(rows_end)
        self.height = self._footer(rows_end + 4) + M

    def _partition_line(self, y: float) -> None:
        obs, hl = self.obs, self.frame.highlight
        parts: list[tuple[str, bool]] = []
        if "leader" in obs:
            parts.append((f"leader {obs['leader'] or 'none (offline)'}", _hot(hl, "leader")))
        if "leader_epoch" in obs:
            parts.append((f"epoch {obs['leader_epoch']}", _hot(hl, "leader_epoch")))
        if isinstance(obs.get("isr"), list):
            parts.append((f"ISR [{', '.join(map(str, obs['isr']))}]", _hot(hl, "isr")))
        if "clock_ms" in obs:
            parts.append((f"clock {obs['clock_ms']} ms", _hot(hl, "clock_ms")))
        spans = []
        for i, (content, hot) in enumerate(parts):
            sep = " · " if i else ""
            attrs = {"fill": RED, "font_weight": "bold"} if hot else {}
            spans.append(svg.el("tspan", escape(sep + content, quote=False), **attrs))
        if spans:
            label = svg.text(M, y, "controller:", 12, fill="#555555")
            self.body.append(label)
            self.body.append(
                svg.el("text", "".join(spans), x=M + svg.text_width("controller: ", 12), y=y, font_size=12)
            )

    def _row(self, name: str, y0: float) -> None:
        r = self._replica(name)
        hl = self.frame.highlight
        base = f"replicas.{name}"
        online = r.get("online") is not False
        role = r.get("role")
        is_leader = role == "leader" and online
        isr = self.obs.get("isr")
        missing = not r
        fill = "#f4f4f4" if not online else ("#fff8e1" if is_leader else "#fbfbfb")
        stroke = RED if missing and _hot(hl, base) else ("#b8860b" if is_leader else "#d0d0d0")
        self.body.append(
            svg.el(
                "rect",
                x=M / 2,
                y=y0,
                width=self.width - M,
                height=ROW_H - 8,
                rx=6,
                fill=fill,
                stroke=stroke,
                stroke_width=2.5 if is_leader else 1,
            )
        )
        # label column
        self.body.append(
            svg.text(M + 4, y0 + 30, name, 22, font_weight="bold", fill="#333333" if online else "#888888")
        )
        role_text = "crashed" if not online else (str(role) if role else "")
        if missing:
            role_text = "not reported"
        role_color = "#8e3b46" if not online else ("#8a6d00" if is_leader else "#333333")
        role_hot = _hot(hl, base + ".online") or _hot(hl, base + ".role")
        label_x = M + 4 + svg.text_width(name, 22) + 10
        prefix = "✕ " if not online else ("★ " if is_leader else "")
        if role_text:
            self.body.append(
                svg.text(
                    label_x,
                    y0 + 22,
                    prefix + role_text,
                    13,
                    font_weight="bold",
                    fill=RED if role_hot else role_color,
                    text_decoration="underline" if role_hot else None,
                )
            )
        if "leader_epoch" in r:
            epoch_hot = _hot(hl, base + ".leader_epoch") or _hot(hl, base + ".leader")
            told = f"epoch {r['leader_epoch']}"
            if r.get("leader") and not is_leader:
                told += f", leader {r['leader']}"
            self.body.append(svg.text(label_x, y0 + 38, told, 11, fill=RED if epoch_hot else "#555555"))
        if isinstance(isr, list):
            inside = name in isr
            badge = "in ISR" if inside else "not in ISR"
            w = svg.text_width(badge, 11) + 12
            isr_hot = _hot(hl, "isr")
            self.body.append(
                svg.el(
                    "rect",
                    x=M + 4,
                    y=y0 + 50,
                    width=w,
                    height=18,
                    rx=9,
                    fill="#e3f6e5" if inside else "#ffffff",
                    stroke=RED if isr_hot else ("#2e7d32" if inside else "#999999"),
                    stroke_width=2 if isr_hot else 1,
                    stroke_dasharray=None if inside else "3 2",
                )
            )
            self.body.append(svg.text(M + 10, y0 + 63, badge, 11, fill="#2e7d32" if inside else "#777777"))
        self._log(name, r, y0, online)
        for i, (line, path) in enumerate(self.info[name]):
            hot = _hot(hl, path)
            self.body.append(
                svg.text(
                    self.info_x,
                    y0 + 28 + 15 * i,
                    line,
                    11,
                    fill=RED if hot else "#444444",
                    font_weight="bold" if hot else None,
                )
            )

    def _log(self, name: str, r: Mapping[str, Any], y0: float, online: bool) -> None:
        hl = self.frame.highlight
        base = f"replicas.{name}"
        log = r.get("log") if isinstance(r.get("log"), list) else None
        leo = _int(r.get("leo"))
        hw = _int(r.get("hw"))
        if leo is None and log is not None:
            leo = None  # not reported: no LEO mark, but the records still show
        top = y0 + 20
        log_hot = _hot(hl, base + ".log")
        for i in range(self.cells):
            x = self.log_x + i * CELL_W
            self.body.append(svg.text(x + CELL_W / 2, y0 + 14, str(i), 10, fill="#888888", text_anchor="middle"))
            attrs: dict[str, object] = {"x": x + 1, "y": top, "width": CELL_W - 2, "height": CELL_H, "rx": 3}
            if log is not None and i < len(log):
                committed = hw is not None and i < hw
                if online:
                    bg, fg = COMMITTED if committed else UNCOMMITTED
                else:
                    bg, fg = COMMITTED_OFF if committed else UNCOMMITTED_OFF
                value, epoch = _record(log[i])
                self.body.append(
                    svg.el(
                        "rect", **attrs, fill=bg, stroke=RED if log_hot else "#1f4e79", stroke_width=2 if log_hot else 1
                    )
                )
                self.body.append(
                    svg.text(x + CELL_W / 2, top + 15, value, 12, fill=fg, text_anchor="middle", font_weight="bold")
                )
                self.body.append(svg.text(x + CELL_W / 2, top + 28, epoch, 9, fill=fg, text_anchor="middle"))
            elif log is None and leo is not None and i < leo:
                self.body.append(svg.el("rect", **attrs, fill="#dddddd", stroke="#999999"))
                self.body.append(svg.text(x + CELL_W / 2, top + 21, "?", 12, fill="#555555", text_anchor="middle"))
            elif leo is not None and i == leo:
                self.body.append(
                    svg.el(
                        "rect",
                        **attrs,
                        fill="#ffffff",
                        stroke=RED if log_hot else LEO_COLOR,
                        stroke_dasharray="4 3",
                        stroke_width=1.2,
                    )
                )
            else:
                self.body.append(svg.el("rect", **attrs, fill=NO_DATA[0], stroke=RED if log_hot else NO_DATA[1]))
        self._removed(name, log, top)
        if hw is not None:
            self._mark("HW", hw, y0, HW_COLOR, _hot(hl, base + ".hw"), 0)
        if leo is not None:
            self._mark("LEO", leo, y0, LEO_COLOR, _hot(hl, base + ".leo"), 1)

    def _removed(self, name: str, log: list[Any] | None, top: float) -> None:
        """Records this step removed from the log (truncation), as struck-out ghosts."""
        previous = self.frame.previous
        if log is None or previous is None:
            return
        before = (previous.get("replicas") or {}).get(name)
        old = before.get("log") if isinstance(before, Mapping) else None
        if not isinstance(old, list):
            return
        for i in range(len(log), min(len(old), self.cells)):
            x = self.log_x + i * CELL_W
            value, _ = _record(old[i])
            self.body.append(
                svg.el(
                    "rect",
                    x=x + 3,
                    y=top + 2,
                    width=CELL_W - 6,
                    height=CELL_H - 4,
                    rx=3,
                    fill="#ffffff",
                    fill_opacity=0.6,
                    stroke=REMOVED,
                    stroke_dasharray="3 2",
                )
            )
            self.body.append(
                svg.text(
                    x + CELL_W / 2,
                    top + 15,
                    value,
                    12,
                    fill=REMOVED,
                    text_anchor="middle",
                    text_decoration="line-through",
                )
            )
            self.body.append(
                svg.el(
                    "line", x1=x + 12, y1=top + 11, x2=x + CELL_W - 12, y2=top + 11, stroke=REMOVED, stroke_width=1.5
                )
            )
            self.body.append(svg.text(x + CELL_W / 2, top + 28, "removed", 8, fill=REMOVED, text_anchor="middle"))

    def _mark(self, label: str, offset: int, y0: float, color: str, hot: bool, level: int) -> None:
        """A boundary mark before ``offset``: a line through the cells and a label below."""
        x = self.log_x + min(offset, self.cells) * CELL_W
        color = RED if hot else color
        top, bottom = y0 + 17, y0 + 20 + CELL_H + 4 + level * 14
        self.body.append(svg.el("line", x1=x, y1=top, x2=x, y2=bottom, stroke=color, stroke_width=2.5 if hot else 2))
        ly = bottom + 9
        self.body.append(svg.el("path", d=f"M{x - 4:.1f},{bottom + 1:.1f} l4,-6 l4,6 z", fill=color))
        self.body.append(
            svg.text(
                x + 6,
                ly - 2,
                f"{label}={offset}",
                11,
                fill=color,
                font_weight="bold",
                text_decoration="underline" if hot else None,
            )
        )

    def _arrows(self, rows_end: float) -> None:
        hl = self.frame.highlight
        index = {name: i for i, name in enumerate(self.replicas)}
        x = self.lanes_x
        for arrow, lane_w in zip(self.arrows, self.lane_w, strict=True):
            hot = _hot(hl, f"in_flight.{arrow.kind}")
            color = RED if hot else ARROW_COLORS.get(arrow.kind, "#333333")
            line_x = x + 6
            if arrow.src in index:
                y1 = self._row_y(index[arrow.src]) + ROW_H / 2 - 4
            else:
                y1 = self.rows_y - 2
                self.body.append(svg.text(line_x, y1 - 3, arrow.src, 10, fill=color, font_style="italic"))
            y2 = self._row_y(index[arrow.dst]) + ROW_H / 2 - 4 if arrow.dst in index else rows_end - 6
            direction = 1 if y2 >= y1 else -1
            tip = y2 - direction * 2
            self.body.append(svg.el("circle", cx=line_x, cy=y1, r=3, fill=color))
            self.body.append(
                svg.el(
                    "line",
                    x1=line_x,
                    y1=y1,
                    x2=line_x,
                    y2=tip - direction * 8,
                    stroke=color,
                    stroke_width=2,
                    stroke_dasharray="5 3" if arrow.waiting else None,
                )
            )
            self.body.append(
                svg.el(
                    "path",
                    d=f"M{line_x - 5:.1f},{tip - direction * 9:.1f} l5,{direction * 9} l5,{-direction * 9} z",
                    fill=color,
                )
            )
            lines = [(arrow.name, 11, "bold"), *[(d, 10, None) for d in arrow.details]]
            block_h = 13 * len(lines)
            ty = (y1 + y2) / 2 - block_h / 2 + 10
            self.body.append(
                svg.el(
                    "rect",
                    x=line_x + 5,
                    y=ty - 11,
                    width=lane_w - 14,
                    height=block_h + 2,
                    fill="#ffffff",
                    fill_opacity=0.85,
                )
            )
            for i, (content, size, weight) in enumerate(lines):
                self.body.append(svg.text(line_x + 8, ty + 13 * i, content, size, fill=color, font_weight=weight))
            x += lane_w

    def _footer(self, y: float) -> float:
        obs, hl = self.obs, self.frame.highlight
        lines: list[tuple[str, bool]] = []
        producer = obs.get("producer")
        if isinstance(producer, Mapping) and producer:
            shown = ", ".join(f"{k} {v}" for k, v in producer.items())
            lines.append((f"producer: {shown}", _hot(hl, "producer")))
        consumer = obs.get("consumer")
        if isinstance(consumer, Mapping):
            records = consumer.get("records") or []
            got = f"error {consumer['error']}" if consumer.get("error") else f"[{', '.join(map(str, records))}]"
            lines.append((f"consumer: read from offset {consumer.get('offset')}: {got}", _hot(hl, "consumer")))
        for line in self.unread:
            lines.append((f"in flight: {line}", _hot(hl, "in_flight")))
        for content, hot in lines:
            y += 16
            self.body.append(
                svg.text(M, y, content, 11, fill=RED if hot else "#333333", font_weight="bold" if hot else None)
            )
        return y + 4


def _drawing(frame: Frame, cells: int | None, replicas: Sequence[str] | None, min_width: float = 560.0) -> _Drawing:
    d = _Drawing(frame, cells or log_cells(frame.observation), replicas or replica_ids([frame.observation]), min_width)
    d.draw()
    return d


def step_svg(
    frame: Frame,
    *,
    cells: int | None = None,
    replicas: Sequence[str] | None = None,
    min_width: float = 560.0,
    inline: bool = False,
) -> str:
    """One frame as a standalone SVG document.

    ``cells`` fixes the number of log slots drawn (so frames of one fixture line up);
    ``replicas`` fixes the rows (an implementation that omits a replica shows it empty);
    ``min_width`` lets diagrams shown together share one width; ``inline`` gives an
    ``<svg>`` element for an HTML page rather than a standalone file.
    """
    d = _drawing(frame, cells, replicas, min_width)
    return svg.document(d.width, d.height, d.body, title=frame.title, inline=inline)


def strip_svg(frames: Sequence[Frame], title: str = "") -> str:
    """Frames stacked top to bottom with one width and one set of rows (a step strip)."""
    if not frames:
        raise ValueError("a strip needs at least one frame")
    cells = max(log_cells(f.observation) for f in frames)
    replicas = replica_ids(f.observation for f in frames)
    width = max(_drawing(f, cells, replicas).width for f in frames)
    drawings = [_drawing(f, cells, replicas, width) for f in frames]
    body: list[str] = []
    y = 0.0
    if title:
        for line in svg.wrap(title, int((width - 2 * M) / (16 * svg.CHAR_W))):
            y += 22
            body.append(svg.text(M, y + 4, line, 16, font_weight="bold"))
        y += 12
    for i, d in enumerate(drawings):
        if i:
            body.append(svg.el("line", x1=M, y1=y, x2=width - M, y2=y, stroke="#bbbbbb", stroke_dasharray="2 4"))
        body.append(svg.el("g", "".join(d.body), transform=f"translate(0 {y:.0f})"))
        y += d.height
    return svg.document(width, y, body, title=title)


def scale_cells(observations: Iterable[Mapping[str, Any]]) -> int:
    """The cell count that fits every observation (for side-by-side diagrams)."""
    return max((log_cells(o) for o in observations), default=3)


def frame_width(frame: Frame, cells: int, replicas: Sequence[str]) -> float:
    """The width ``step_svg`` gives a frame (to size frames shown together)."""
    return _drawing(frame, cells, replicas).width
