"""A client history as a picture, as Porcupine's visualiser draws one: a row per client, each operation a bar from
its invocation to its completion, and the verdict's evidence on it.

For a violation, the failing part's shortest illegal prefix is drawn: the window (operations that cannot be
linearized together) in red, the operation whose completion makes the prefix illegal outlined, the span of the
window shaded and the cut — the completion after which no linearization exists — as a line; operations left out
of the window are grey. An unknown verdict shows where the longest linearizable prefix of each open part ends.
The x axis is the order of events (invocations and completions), not wall-clock time. Each bar is a
`<g class="op ...">` whose `data-state` names the operation and where it was read.
"""

from __future__ import annotations

import bisect
import re
from xml.sax.saxutils import escape, quoteattr

from ..linearizability.history import History, Operation
from ..linearizability.report import verdict_lines
from ..linearizability.search import Verdict

STEP, ROW, LEFT, TOP, BAR = 30, 30, 120, 150, 18
MAX_DRAWN = 600  # operations drawn at most (those nearest the evidence)
STYLE = """
svg.hist { font-family: ui-sans-serif, system-ui, sans-serif; font-size: 11px; background: #fff; }
svg.hist .client { fill: #37474f; font-weight: bold; }
svg.hist .lane { stroke: #eceff1; }
svg.hist .op rect { fill: #cfd8dc; stroke: #78909c; }
svg.hist .op.later rect { fill: #f5f5f5; stroke: #cfd8dc; }
svg.hist .op.window rect { fill: #ef9a9a; stroke: #c62828; }
svg.hist .op.last rect { stroke: #b71c1c; stroke-width: 3; }
svg.hist .op.unknown rect { stroke-dasharray: 4 3; }
svg.hist .op.linearized rect { fill: #c8e6c9; stroke: #2e7d32; }
svg.hist .op text { fill: #212121; pointer-events: none; }
svg.hist .op:hover rect { stroke: #000; stroke-width: 2.5; }
svg.hist .span { fill: #ffcdd2; opacity: .45; }
svg.hist .cut { stroke: #b71c1c; stroke-width: 2; stroke-dasharray: 6 3; }
svg.hist .head { fill: #212121; }
svg.hist .legend { fill: #555; }
"""


_SHORT = [(re.compile(r"^read (?:(.+?) )?-> (.*)$"), r"r\1=\2"), (re.compile(r"^get (?:(.+?) )?-> (.*)$"), r"g\1=\2"),
          (re.compile(r"^write (.*) -> ok$"), r"w \1"), (re.compile(r"^put (.*) -> ok$"), r"p \1"),
          (re.compile(r"-> ok$"), "✓"), (re.compile(r"-> fail$"), "✗"), (re.compile(r" -> \?$"), " ?")]


def _label(op: Operation, width: int) -> str:
    """A label that fits a bar `width` pixels wide: f, value, output, shortened (the bar's title says it all)."""
    text = op.describe().split(": ", 1)[1]
    room = (width - 4) // 7
    for pattern, short in _SHORT:
        if len(text) <= room:
            break
        text = pattern.sub(short, text)
    return text if len(text) <= room else text[:room - 1] + "…" if room >= 4 else ""


def _drawn(ops: list[Operation], focus: list[Operation]) -> tuple[list[Operation], int]:
    """At most MAX_DRAWN of `ops`, those whose intervals come nearest the `focus` operations; and how many are left
    out."""
    if len(ops) <= MAX_DRAWN:
        return ops, 0
    lo = min((op.call for op in focus), default=ops[0].call)
    hi = max((op.ret for op in focus), default=ops[0].ret)

    def distance(op: Operation) -> int:
        return 0 if op.ret >= lo and op.call <= hi else min(abs(op.ret - lo), abs(op.call - hi))

    keep = sorted(sorted(ops, key=distance)[:MAX_DRAWN], key=lambda op: op.call)
    return keep, len(ops) - len(keep)


def history_svg(history: History, v: Verdict, standalone: bool = True) -> str:
    """The picture of `history` with the evidence of its verdict `v` (see the module docstring)."""
    window, cut, ops, caption = set(), None, list(history.operations), ""
    linearized: set[int] = set()
    if v.verdict == "not linearizable":
        window = {op.id for op in v.window}
        cut = v.last.ret if v.last else None
        key = v.failing_key
        part = [op for op in history.operations if v.partitions == 1 or op.key == key]
        ops = [op for op in part if cut is None or op.call <= cut] + [op for op in part if cut is not None and op.call > cut][:40]
        caption = (f"the shortest illegal prefix of {'key ' + repr(key) if key is not None else 'the history'}: "
                   f"{len(v.prefix)} operations; the window: {len(window)} that cannot be linearized together")
        focus = list(v.window)
    elif v.verdict == "unknown" and v.open:
        part_key = v.open[0].key
        ops = [op for op in history.operations if part_key is None or op.key == part_key]
        linearized = {op.id for op in v.open[0].linearized}
        cut = v.open[0].position
        caption = (f"{'key ' + repr(part_key) + ': ' if part_key is not None else ''}the longest prefix found "
                   f"linearizable ({len(linearized)} operations, green) ends at the line")
        focus = [v.open[0].until] if v.open[0].until is not None else ops[:1]
    else:
        caption = f"{len(ops)} operations, linearizable" if v.verdict == "linearizable" else f"{len(ops)} operations"
        focus = ops[:1]
    ops, left_out = _drawn(ops, focus)
    if left_out:
        caption += f" ({left_out:,} operations further from it not drawn)"
    end = max((op.ret for op in history.operations), default=0)
    times = sorted({t for op in ops for t in (op.call, op.ret)})
    x = {t: LEFT + STEP * (k + 1) for k, t in enumerate(times)}
    clients = sorted({op.client for op in ops}, key=lambda c: (str(type(c)), c))
    row = {c: k for k, c in enumerate(clients)}
    width = LEFT + STEP * (len(times) + 3) + 40
    height = TOP + ROW * len(clients) + 40
    out = ['<?xml version="1.0" encoding="UTF-8"?>'] if standalone else []
    title = f"{history.source or 'history'}: {v.verdict}"
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" class="hist" width="{max(width, 760)}" height="{height}" '
               f'viewBox="0 0 {max(width, 760)} {height}" role="img" aria-label={quoteattr(title)} data-testid="history">')
    out.append(f"<style>{STYLE}</style>")
    out.append(f'<text x="12" y="22" font-size="15" font-weight="bold" class="head">{escape(title)}</text>')
    for k, line in enumerate(verdict_lines(v)[:4]):
        out.append(f'<text x="12" y="{42 + 16 * k}" class="legend">{escape(line[:220])}</text>')
    out.append(f'<text x="12" y="{TOP - 22}" class="legend">{escape(caption)}</text>')
    if window:
        drawn_window = [op for op in ops if op.id in window]
        if drawn_window:
            x0 = x[min(op.call for op in drawn_window)] - 4
            x1 = x[max(op.ret for op in drawn_window)] + 4
            out.append(f'<rect class="span" data-testid="window-span" x="{x0}" y="{TOP - 10}" width="{x1 - x0}" '
                       f'height="{ROW * len(clients) + 14}"/>')
    for c in clients:
        y = TOP + ROW * row[c]
        out.append(f'<text class="client" x="12" y="{y + BAR - 4}">client {escape(str(c))}</text>')
        out.append(f'<line class="lane" x1="{LEFT}" x2="{width - 20}" y1="{y + ROW - 4}" y2="{y + ROW - 4}"/>')
    for op in ops:
        kinds = ["op"]
        if op.id in window:
            kinds.append("window")
        if v.last is not None and op.id == v.last.id and v.verdict == "not linearizable":
            kinds.append("last")
        if op.id in linearized:
            kinds.append("linearized")
        if cut is not None and op.call > cut:
            kinds.append("later")
        if op.unknown and op.ret == end:
            kinds.append("unknown")
        y = TOP + ROW * row[op.client]
        x0, x1 = x[op.call], x[op.ret]
        state = f"{op.describe()}\n{op.where}" if op.where else op.describe()
        out.append(f'<g class="{" ".join(kinds)}" data-id="{op.id}" data-state={quoteattr(state)}>'
                   f'<title>{escape(state)}</title>'
                   f'<rect x="{x0}" y="{y}" width="{max(x1 - x0, 6)}" height="{BAR}" rx="3"/>'
                   f'<text x="{x0 + 4}" y="{y + BAR - 5}">{escape(_label(op, x1 - x0))}</text></g>')
    if cut is not None and times and times[0] <= cut:
        xc = x[times[bisect.bisect_right(times, cut) - 1]] + STEP // 2  # just after the cut's event
        out.append(f'<line class="cut" data-testid="cut" x1="{xc}" x2="{xc}" y1="{TOP - 16}" '
                   f'y2="{TOP + ROW * len(clients)}"/>')
        label = "no linearization past here" if v.verdict == "not linearizable" else "linearizable up to here"
        out.append(f'<text x="{xc + 4}" y="{TOP - 6}" class="legend">{label}</text>')
    out.append("</svg>")
    return "\n".join(out)
