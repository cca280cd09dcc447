"""Self-contained SVG and HTML for sequence charts: no scripts or fonts from elsewhere.

Each lifeline is a `<g class="lifeline">`, each message an `<line class="arrow KIND">` (KIND:
delivered, duplicate, dropped, in-flight; `forged` added for forged ones), each step a
`<g class="event KIND">` whose `<title>` (and `data-state`) holds the process's state after it.
"""

from __future__ import annotations

import html
from xml.sax.saxutils import escape, quoteattr

from .chart import Arrow, Chart, Row

COL, LEFT, TOP, ROW, BOTTOM = 220, 40, 104, 44, 80
CHAR = 0.62  # a character's width in em, at most, in the sans-serif faces the style names: labels are placed by it
LABEL, MSG, LEGEND = 12, 11, 11  # font sizes (px) of step labels, message labels and stub legends
LABEL_CHARS = int((COL - 24) / (LABEL * CHAR))  # a step's label fits between its dot and the next lifeline's
CLEAR = 4  # px an arrow keeps from a dot it does not start or end at
COLOURS = {"start": "#4a6fa5", "deliver": "#2e7d32", "timeout": "#b26a00", "crash": "#c62828", "restart": "#00897b",
           "forge": "#d84315", "drop": "#6d4c41", "failure": "#c62828", "step": "#555"}
STYLE = """
svg.msc { font-family: ui-sans-serif, system-ui, sans-serif; font-size: 12px; background: #fff; }
svg.msc .head rect { fill: #eef2f8; stroke: #4a6fa5; }
svg.msc .head.byzantine rect { fill: #fdecea; stroke: #c62828; }
svg.msc .life { stroke: #9aa5b1; stroke-width: 1.5; }
svg.msc .life.down { stroke-dasharray: 3 4; stroke: #c62828; opacity: .6; }
svg.msc .arrow { stroke: #37474f; stroke-width: 1.4; fill: none; }
svg.msc .arrow.in-flight { stroke-dasharray: 5 4; stroke: #90a4ae; }
svg.msc .arrow.dropped { stroke: #6d4c41; stroke-dasharray: 2 3; }
svg.msc .arrow.duplicate { stroke: #7b1fa2; stroke-dasharray: 7 3; }
svg.msc .arrow.forged { stroke: #d84315; }
svg.msc .msg { fill: #263238; font-size: 11px; }
svg.msc .label { fill: #212121; }
svg.msc .note { fill: #c62828; font-weight: bold; }
svg.msc .band.bad { fill: #ffcdd2; opacity: .75; }
svg.msc .band.loop { fill: #e1bee7; opacity: .55; }
svg.msc .event:hover circle, svg.msc .event:hover rect { stroke: #000; stroke-width: 2.5; }
svg.msc .legend { fill: #555; font-size: 11px; }
"""


Box = tuple[float, float, float, float]  # left, top, right, bottom


def text_box(x: float, y: float, text: str, size: float, anchor: str = "start") -> Box:
    """The box a text at baseline (x, y) covers at most."""
    w = len(text) * size * CHAR
    left = x if anchor == "start" else x - w / 2 if anchor == "middle" else x - w
    return (left, y - size * 0.8, left + w, y + size * 0.25)


class _Space:
    """What is drawn so far, as boxes: a label is placed only where it covers none of them."""

    def __init__(self) -> None:
        self.boxes: list[Box] = []

    def free(self, b: Box) -> bool:
        return all(b[2] <= o[0] or o[2] <= b[0] or b[3] <= o[1] or o[3] <= b[1] for o in self.boxes)

    def take(self, b: Box) -> None:
        self.boxes.append(b)


def svg(chart: Chart, standalone: bool = True) -> str:
    """The chart as SVG (`standalone`: with an XML declaration, for a .svg file). No two texts overlap, no text covers
    a step's dot, and no arrow passes over the dot of a step it does not join (it bends round it)."""
    levels = chart.levels()
    height = TOP + ROW * (max(levels, default=0) + 1) + BOTTOM
    x = {p: LEFT + COL * i + COL // 2 for i, p in enumerate(chart.pids)}
    notes_x = LEFT + COL * len(chart.pids) + COL // 2 - 4  # the notes of marked rows, right of every step's label
    notes = [(i, r.note[:60] if r.bad else "the loop starts here") for i, r in enumerate(chart.rows)
             if r.bad or chart.loop == i]
    width = max([notes_x + 220, 640] + [int(notes_x + len(t) * LABEL * CHAR) + 12 for _, t in notes])

    def y(row: int) -> int:
        return TOP + ROW * levels[row] + ROW // 2

    space = _Space()
    dots = [(x[r.pid], y(i), _radius(r)) for i, r in enumerate(chart.rows)]
    for cx, cy, rad in dots:
        space.take((cx - rad - 1, cy - rad - 1, cx + rad + 1, cy + rad + 1))
    for i, r in enumerate(chart.rows):
        space.take(text_box(x[r.pid] + 12, y(i) + 13, _cut(r.label, LABEL_CHARS), LABEL))
    for i, text in notes:
        space.take(text_box(notes_x, y(i) + 4, text, LABEL))

    out = ['<?xml version="1.0" encoding="UTF-8"?>'] if standalone else []
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" class="msc" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" role="img" aria-label={quoteattr(chart.title)}>')
    out.append(f"<style>{STYLE}</style>")
    out.append('<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
               'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#37474f"/></marker></defs>')
    name, _, params = chart.title.partition(" (")
    out.append(f'<text x="12" y="22" font-size="15" font-weight="bold">{escape(name)}</text>')
    if params:
        out.append(f'<text x="12" y="40" class="legend">{escape("(" + params)}</text>')
    if chart.caption:
        out.append(f'<text x="12" y="56" class="legend">{escape(chart.caption[:200])}</text>')
    for i, text in notes:  # bands first, under everything
        cls = "bad" if chart.rows[i].bad else "loop"
        out.append(f'<rect class="band {cls}" x="0" y="{y(i) - ROW // 2}" width="{width}" height="{ROW}"/>')
        out.append(f'<text class="note" x="{notes_x}" y="{y(i) + 4}">{escape(text)}</text>')
    end = height - BOTTOM + 34
    for p in chart.pids:
        out += _lifeline(chart, p, x[p], end, y)
    stubs: dict[tuple[int, bool], int] = {}
    for a in chart.arrows:
        k = 0
        if a.received is None and a.kind != "dropped":
            side = (a.sent, x[a.dst] >= x[a.src])
            k = stubs[side] = stubs.get(side, -1) + 1
        out += _arrow(a, x, y, end, k, dots, space)
    for i, r in enumerate(chart.rows):
        out += _event(r, x[r.pid], y(i))
    out.append(f'<text class="legend" x="12" y="{height - 26}">circles: handler runs (blue start, green delivery, '
               'orange timer); red cross: crash or failed handler; teal square: restart</text>')
    out.append(f'<text class="legend" x="12" y="{height - 10}">arrows: a grey stub is never delivered (→ its destination), '
               'purple a duplicate, red forged, a cross dropped; hover a step for its state</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _radius(r: Row) -> int:
    """Half the size of a step's mark: a cross (crash, failure), a square (restart) or a dot."""
    return 9 if r.kind in ("crash", "failure") else 7 if r.kind == "restart" else 8 if r.kind == "timeout" else 6


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


def _lifeline(chart: Chart, p: int, x: int, end: int, y) -> list[str]:
    byz = p in chart.byzantine
    out = [f'<g class="lifeline" data-pid="{p}">',
           f'<g class="head{" byzantine" if byz else ""}"><rect x="{x - 60}" y="{TOP - 34}" width="120" height="26" '
           f'rx="4"/><text x="{x}" y="{TOP - 16}" text-anchor="middle" font-weight="bold">process {p}'
           f'{" (Byzantine)" if byz else ""}</text></g>']
    top, down = TOP - 8, False
    for i, r in enumerate(chart.rows):
        if r.pid != p or r.kind not in ("crash", "restart"):
            continue
        if r.kind == "crash" and not down:
            out.append(f'<line class="life" x1="{x}" y1="{top}" x2="{x}" y2="{y(i)}"/>')
            top, down = y(i), True
        elif r.kind == "restart" and down:
            out.append(f'<line class="life down" x1="{x}" y1="{top}" x2="{x}" y2="{y(i)}"/>')
            top, down = y(i), False
    out.append(f'<line class="life{" down" if down else ""}" x1="{x}" y1="{top}" x2="{x}" y2="{end}"/>')
    out.append("</g>")
    return out


def _arrow(a: Arrow, x: dict[int, int], y, end: int, stub: int, dots: list[tuple[int, int, int]],
           space: _Space) -> list[str]:
    x1, y1 = x[a.src], y(a.sent)
    cls = f"arrow {a.kind}" + (" forged" if a.forged else "")
    title = f"<title>{escape(a.msg)}: {a.src} → {a.dst} ({a.kind}{', forged' if a.forged else ''})</title>"
    if a.received is None and a.kind != "dropped":  # never delivered: a stub pointing at its destination
        d = 1 if x[a.dst] > x1 or a.dst == a.src else -1
        anchor = "start" if d > 0 else "end"
        x2, first = x1 + d * 46, y1 + 14 + 11 * stub
        for y2 in range(first, first + 11 * 8, 11):  # lower, until its legend covers nothing (else the title says it)
            if space.free(box := text_box(x2 + 3 * d, y2 + 10, f"→{a.dst}", LEGEND, anchor)):
                space.take(box)
                legend = f'<text class="legend" x="{x2 + 3 * d}" y="{y2 + 10}" text-anchor="{anchor}">→{a.dst}</text>'
                break
        else:
            y2, legend = first, ""
        return [f'<line class="{cls} stub" x1="{x1 + 7 * d}" y1="{y1 + 2}" x2="{x2}" y2="{y2}" marker-end="url(#head)">'
                f'{title}</line>', legend]
    x2, y2 = (x[a.dst], end - 8) if a.received is None else (x[a.dst], y(a.received))
    if a.kind == "dropped":
        x2, y2 = (x1 + x2) // 2, (y1 + y2) // 2
    out = []
    if a.src == a.dst and a.kind != "dropped":
        bend = x1 + 45
        out.append(f'<path class="{cls}" d="M{x1},{y1} C{bend},{y1} {bend},{y2} {x2 + 6},{y2}" '
                   f'marker-end="url(#head)">{title}</path>')

        def at(t: float) -> tuple[float, float]:
            return bend + 2, y1 + (y2 - y1) * t
        spots = [0.5, 0.3, 0.7]
    else:
        sx = 7 if x2 > x1 else (-7 if x2 < x1 else 0)
        (ax, ay), (bx, by) = (x1 + sx, y1), (x2 - sx, y2)
        bow = _bow((ax, ay), (bx, by), [d for d in dots if (d[0], d[1]) not in ((x1, y1), (x2, y2))])
        if bow == 0:
            out.append(f'<line class="{cls}" x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" marker-end="url(#head)">'
                       f'{title}</line>')
        else:  # bent round a step's dot it would cross, so that it does not read as that step's message
            out.append(f'<path class="{cls}" d="M{ax},{ay} Q{(ax + bx) / 2:g},{(ay + by) / 2 + bow:g} {bx},{by}" '
                       f'marker-end="url(#head)">{title}</path>')

        def at(t: float) -> tuple[float, float]:
            px, py = _on((ax, ay), (bx, by), bow, t)
            return px, py - 4
        spots = [0.3, 0.5, 0.7, 0.2, 0.4, 0.6, 0.8, 0.15, 0.85]
    if a.kind == "dropped":
        out.append(f'<path d="M{x2 - 6},{y2 - 6} L{x2 + 6},{y2 + 6} M{x2 - 6},{y2 + 6} L{x2 + 6},{y2 - 6}" '
                   'stroke="#6d4c41" stroke-width="2"/>')
    for label in (_cut(a.msg, 28), _cut(a.msg, 12)):  # where it covers nothing; else shorter; else only on hover
        for t in spots:
            tx, ty = at(t)
            box = text_box(tx, ty, label, MSG, "middle")
            if space.free(box):
                space.take(box)
                out.append(f'<text class="msg" x="{tx:.0f}" y="{ty:.0f}" text-anchor="middle">{escape(label)}</text>')
                return out
    return out


def _on(a: tuple[float, float], b: tuple[float, float], bow: float, t: float) -> tuple[float, float]:
    """The point at `t` of the arrow from `a` to `b` bowed by `bow` (a quadratic curve whose control point is the
    midpoint moved down by `bow`)."""
    cx, cy = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2 + bow
    u = 1 - t
    return u * u * a[0] + 2 * u * t * cx + t * t * b[0], u * u * a[1] + 2 * u * t * cy + t * t * b[1]


def _bow(a: tuple[float, float], b: tuple[float, float], dots: list[tuple[int, int, int]]) -> float:
    """How far to bow an arrow from `a` to `b` so that it keeps `CLEAR` px from every dot in `dots`: 0 (straight) if
    it does already, else the smallest bend up or down that does."""
    near = [d for d in dots if min(a[0], b[0]) - 12 < d[0] < max(a[0], b[0]) + 12
            and min(a[1], b[1]) - 220 < d[1] < max(a[1], b[1]) + 220]
    if not near:
        return 0
    n = max(64, int(_dist(a, (b[0], b[1], 0)) / 2))  # points at most 2 px apart (a bow adds little length)
    for bow in (0, *(s * k for k in range(12, 200, 8) for s in (-1, 1))):
        points = [_on(a, b, bow, i / n) for i in range(n + 1)]
        if all(min(_dist(p, d) for p in points) > d[2] + CLEAR for d in near):
            return bow
    return 0


def _dist(p: tuple[float, float], d: tuple[int, int, int]) -> float:
    return ((p[0] - d[0]) ** 2 + (p[1] - d[1]) ** 2) ** 0.5


def _event(r, x: int, y: int) -> list[str]:
    colour = COLOURS.get(r.kind, "#555")
    state = r.state + (f"\n{r.note}" if r.note else "")
    title = f"{r.label}\n{state}".strip()
    out = [f'<g class="event {r.kind}{" bad" if r.bad else ""}" data-state={quoteattr(title)}><title>{escape(title)}</title>']
    if r.kind in ("crash", "failure"):
        out.append(f'<path d="M{x - 8},{y - 8} L{x + 8},{y + 8} M{x - 8},{y + 8} L{x + 8},{y - 8}" stroke="{colour}" '
                   'stroke-width="3"/>')
        out.append(f'<rect x="{x - 9}" y="{y - 9}" width="18" height="18" fill="transparent"/>')
    elif r.kind == "restart":
        out.append(f'<rect x="{x - 7}" y="{y - 7}" width="14" height="14" fill="{colour}"/>')
    else:
        ring = ' stroke="#c62828" stroke-width="3"' if r.byzantine else ' stroke="#fff" stroke-width="1.5"'
        out.append(f'<circle cx="{x}" cy="{y}" r="{8 if r.kind == "timeout" else 6}" fill="{colour}"{ring}/>')
        if r.kind == "timeout":
            out.append(f'<path d="M{x},{y - 5} L{x},{y} L{x + 4},{y}" stroke="#fff" stroke-width="1.5" fill="none"/>')
    out.append(f'<text class="label" x="{x + 12}" y="{y + 13}">{escape(_cut(r.label, LABEL_CHARS))}</text>')
    out.append("</g>")
    return out


def page(chart: Chart) -> str:
    """The chart as one HTML page: the SVG inline, and a panel that shows the state of the step under the pointer."""
    return wrap(chart.title, svg(chart, standalone=False))


def wrap(title: str, body: str) -> str:
    """An inline SVG as a self-contained HTML page whose `data-state` elements show their state in a panel."""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ margin: 0; font-family: ui-sans-serif, system-ui, sans-serif; }}
#panel {{ position: fixed; right: 12px; top: 12px; max-width: 420px; background: #fffde7; border: 1px solid #ccc;
  padding: 8px 10px; font: 12px ui-monospace, monospace; white-space: pre-wrap; display: none; }}
</style></head>
<body>
{body}
<div id="panel"></div>
<script>
const panel = document.getElementById("panel");
document.querySelectorAll("[data-state]").forEach(g => {{
  g.addEventListener("mouseenter", () => {{ panel.textContent = g.dataset.state; panel.style.display = "block"; }});
  g.addEventListener("mouseleave", () => {{ panel.style.display = "none"; }});
}});
</script>
</body></html>
"""
