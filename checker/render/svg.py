"""Self-contained SVG and HTML for sequence charts: no scripts or fonts from elsewhere.

Each lifeline is a `<g class="lifeline">`, each message an `<line class="arrow KIND">` (KIND:
delivered, duplicate, dropped, in-flight; `forged` added for forged ones), each step a
`<g class="event KIND">` whose `<title>` (and `data-state`) holds the process's state after it.
"""

from __future__ import annotations

import html
from xml.sax.saxutils import escape, quoteattr

from .chart import Chart

COL, LEFT, TOP, ROW, BOTTOM = 190, 40, 104, 44, 80
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


def svg(chart: Chart, standalone: bool = True) -> str:
    """The chart as SVG (`standalone`: with an XML declaration, for a .svg file)."""
    levels = chart.levels()
    height = TOP + ROW * (max(levels, default=0) + 1) + BOTTOM
    width = max(LEFT + COL * len(chart.pids) + 220, 640)
    x = {p: LEFT + COL * i + COL // 2 for i, p in enumerate(chart.pids)}

    def y(row: int) -> int:
        return TOP + ROW * levels[row] + ROW // 2

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
    for i, r in enumerate(chart.rows):  # bands first, under everything
        if r.bad or chart.loop == i:
            cls = "bad" if r.bad else "loop"
            out.append(f'<rect class="band {cls}" x="0" y="{y(i) - ROW // 2}" width="{width}" height="{ROW}"/>')
            text = r.note if r.bad else "the loop starts here"
            out.append(f'<text class="note" x="{width - 12}" y="{y(i) + 4}" text-anchor="end">{escape(text[:60])}</text>')
    end = height - BOTTOM + 34
    for p in chart.pids:
        out += _lifeline(chart, p, x[p], end, y)
    stubs: dict[tuple[int, bool], int] = {}
    for a in chart.arrows:
        k = 0
        if a.received is None and a.kind != "dropped":
            side = (a.sent, x[a.dst] >= x[a.src])
            k = stubs[side] = stubs.get(side, -1) + 1
        out += _arrow(a, x, y, end, k)
    for i, r in enumerate(chart.rows):
        out += _event(r, x[r.pid], y(i))
    out.append(f'<text class="legend" x="12" y="{height - 26}">circles: handler runs (blue start, green delivery, '
               'orange timer); red cross: crash or failed handler; teal square: restart</text>')
    out.append(f'<text class="legend" x="12" y="{height - 10}">arrows: a grey stub is never delivered (→ its destination), '
               'purple a duplicate, red forged, a cross dropped; hover a step for its state</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


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


def _arrow(a, x: dict[int, int], y, end: int, stub: int = 0) -> list[str]:
    x1, y1 = x[a.src], y(a.sent)
    cls = f"arrow {a.kind}" + (" forged" if a.forged else "")
    title = f"<title>{escape(a.msg)}: {a.src} → {a.dst} ({a.kind}{', forged' if a.forged else ''})</title>"
    if a.received is None and a.kind != "dropped":  # never delivered: a stub pointing at its destination
        d = 1 if x[a.dst] > x1 else -1
        if a.dst == a.src:
            d = 1
        x2, y2 = x1 + d * 46, y1 + 14 + 11 * stub
        cls += " stub"
        return [f'<line class="{cls}" x1="{x1 + 7 * d}" y1="{y1 + 2}" x2="{x2}" y2="{y2}" marker-end="url(#head)">'
                f'{title}</line>',
                f'<text class="legend" x="{x2 + 3 * d}" y="{y2 + 10}" text-anchor="{"start" if d > 0 else "end"}">'
                f'→{a.dst}</text>']
    if a.received is None:
        x2, y2 = x[a.dst], end - 8
    else:
        x2, y2 = x[a.dst], y(a.received)
    if a.kind == "dropped":
        x2, y2 = (x1 + x2) // 2, (y1 + y2) // 2
    out = []
    if a.src == a.dst and a.kind != "dropped":
        bend = x1 + 45
        out.append(f'<path class="{cls}" d="M{x1},{y1} C{bend},{y1} {bend},{y2} {x2 + 6},{y2}" '
                   f'marker-end="url(#head)">{title}</path>')
        tx, ty = bend + 2, (y1 + y2) // 2
    else:
        sx = 7 if x2 > x1 else (-7 if x2 < x1 else 0)
        out.append(f'<line class="{cls}" x1="{x1 + sx}" y1="{y1}" x2="{x2 - sx}" y2="{y2}" '
                   f'marker-end="url(#head)">{title}</line>')
        tx, ty = x1 + (x2 - x1) * 3 // 10, y1 + (y2 - y1) * 3 // 10 - 4
    if a.kind == "dropped":
        out.append(f'<path d="M{x2 - 6},{y2 - 6} L{x2 + 6},{y2 + 6} M{x2 - 6},{y2 + 6} L{x2 + 6},{y2 - 6}" '
                   'stroke="#6d4c41" stroke-width="2"/>')
    label = a.msg if len(a.msg) <= 28 else a.msg[:27] + "…"
    out.append(f'<text class="msg" x="{tx}" y="{ty}" text-anchor="middle">{escape(label)}</text>')
    return out


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
    label = r.label if len(r.label) <= 30 else r.label[:29] + "…"
    out.append(f'<text class="label" x="{x + 12}" y="{y + 13}">{escape(label)}</text>')
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
