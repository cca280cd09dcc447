"""Rounds traces as a grid: one row per round, one column per node.

A cell shows what the node did in the round: broadcast (blue, the message), heard exactly one
message (green), heard nothing; a collision (two or more neighbours broadcast: red) or a
conflict (the node and a neighbour broadcast: orange) is marked. Hovering a cell shows the node's
state after the round. The round in which an invariant fails is marked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from lockstep.specs.lang.rounds.spec import RoundsProgram, RoundsSystem

from ..itf import encode_typed
from ..trace import Trace, TraceError
from ..typed_model import TypedModel
from ..validation.runtrace import MergedRun, vector_clock
from .text import nodes
from .values import NONE, Node, fmt, from_itf


@dataclass
class Cell:
    broadcast: str | None = None
    heard: str | None = None
    collision: bool = False
    conflict: bool = False
    state: str = ""


@dataclass
class Grid:
    title: str
    n: int
    edges: list[tuple[int, int]]
    rounds: list[list[Cell]] = field(default_factory=list)
    initial: list[str] = field(default_factory=list)  # each node's state before round 1
    bad_round: int | None = None  # index into rounds
    note: str = ""


def _system(model: TypedModel) -> RoundsSystem:
    if not isinstance(model.prog, RoundsProgram):
        raise TraceError(f"spec {model.name} is not a rounds spec")
    return model.prog.system


def _title(name: str, params: dict[str, Any]) -> str:
    ps = ", ".join(f"{k}={v}" for k, v in params.items())
    return name + (f" ({ps})" if ps else "")


def grid_of_trace(trace: Trace, model: TypedModel) -> Grid:
    """The grid of a counterexample of a rounds spec: each transmit step and the receive step after it."""
    sysm = _system(model)
    doms = {f.name: f.dom for f in model.prog.fields}
    locals_ = [f.name for f in sysm.state_fields]
    n = sysm.graph.number_of_nodes()
    grid = Grid(_title(trace.spec_name, trace.params), n, sorted(tuple(sorted(e)) for e in sysm.graph.edges))
    states = [{k: v for k, v in nodes(s.state, _Doms(doms)).items()} for s in trace.steps]
    grid.initial = [_node_state(states[0], locals_, q) for q in range(n)]
    for i, step in enumerate(trace.steps[1:], start=1):
        name = (step.action or {}).get("action")
        st = states[i]
        if name == "transmit":
            out, inbox = _entries(st["outbox"]), _entries(st["inbox"])
            col, con = _members(st["collisions"]), _members(st["conflicts"])
            grid.rounds.append([Cell(_some(out[q]), _some(inbox[q]), q in col, q in con, _node_state(st, locals_, q))
                                for q in range(n)])
        elif name == "receive" and grid.rounds:
            for q, cell in enumerate(grid.rounds[-1]):
                cell.state = _node_state(st, locals_, q)
    if (trace.property or {}).get("kind") == "invariant" and grid.rounds:
        grid.bad_round, grid.note = len(grid.rounds) - 1, f"violates {trace.property.get('name')}"
    return grid


class _Doms:
    """The notation `nodes` needs: field domains only."""

    def __init__(self, doms: dict[str, Any]):
        self.doms = doms


def _entries(m: Node) -> dict[int, Node]:
    return {int(k.text): v for k, v in m.items}


def _members(s: Node) -> set[int]:
    return {int(x.text) for x in s.items}


def _some(v: Node) -> str | None:
    return None if v == NONE else fmt(v).plain


def _node_state(st: dict[str, Node], locals_: list[str], q: int) -> str:
    parts = []
    for f in locals_:
        v = st.get(f)
        if v is not None and v.kind == "map":
            parts.append(f"{f} = {fmt(dict((int(k.text), x) for k, x in v.items).get(q, NONE)).plain}")
    return f"node {q}: " + ", ".join(parts)


def grid_of_run(run: MergedRun, model: TypedModel, bad_round: int | None = None, note: str = "") -> Grid:
    """The grid of a recorded rounds run (`bad_round`: a round number to mark)."""
    sysm = _system(model)
    n = sysm.graph.number_of_nodes()
    h = run.header
    grid = Grid("run of " + _title(str(h.get("spec_name", h.get("spec"))), h.get("params") or {}), n,
                sorted(tuple(sorted(e)) for e in sysm.graph.edges), note=note)
    grid.initial = [""] * n
    rounds: dict[int, list[Cell]] = {}
    for e in run.events:
        q = e.get("pid")
        if not isinstance(q, int) or not 0 <= q < n:
            continue
        if e.get("kind") == "start":
            grid.initial[q] = _run_state(sysm, q, e.get("state"))
        elif e.get("kind") == "round" and isinstance(e.get("round"), int):
            row = rounds.setdefault(e["round"], [Cell() for _ in range(n)])
            heard = e.get("heard") if isinstance(e.get("heard"), int) else 0
            spoke = e.get("broadcast") is not None
            row[q] = Cell(_run_msg(sysm, e.get("broadcast")), _run_msg(sysm, e.get("received")), heard >= 2,
                          spoke and heard >= 1, _run_state(sysm, q, e.get("state")))
    order = sorted(rounds)
    grid.rounds = [rounds[r] for r in order]
    if bad_round is not None and bad_round in rounds:
        grid.bad_round = order.index(bad_round)
    return grid


def _run_msg(sysm: RoundsSystem, j: Any) -> str | None:
    if j is None:
        return None
    try:
        rep = sysm.message_rep(j)
    except ValueError:
        return str(j)
    m = sysm.message.unrep(rep - 1)
    return fmt(from_itf(encode_typed(sysm.message, m), sysm.message)).plain


def _run_state(sysm: RoundsSystem, q: int, j: Any) -> str:
    try:
        local = sysm.local_from_json(j)
    except ValueError:
        return f"node {q}: {j}"
    return f"node {q}: " + ", ".join(f"{f.name} = {fmt(from_itf(encode_typed(f.dom, f.decode(local)), f.dom)).plain}"
                                     for f in sysm.state_fields)


def rounds_events(run: MergedRun, model: TypedModel) -> list[tuple[str, int, list[int] | None]]:
    """(what happened, node, recorded vector clock) for each start and round event of a rounds run."""
    sysm = _system(model)
    out = []
    for e in run.events:
        q, kind = e.get("pid"), e.get("kind")
        if not isinstance(q, int) or kind not in ("start", "round"):
            continue
        state = _run_state(sysm, q, e.get("state"))
        if kind == "start":
            text = ("start as the initiator" if e.get("initiator") else "start") + f"; {state}"
        else:
            heard = e.get("heard") if isinstance(e.get("heard"), int) else 0
            sent, got = _run_msg(sysm, e.get("broadcast")), _run_msg(sysm, e.get("received"))
            did = [f"broadcasts {sent}"] if sent else []
            did += [f"hears {got}"] if got else ([f"collision ({heard} neighbours broadcast)"] if heard >= 2 else [])
            if sent and heard:
                did.append("conflict")
            text = f"round {e.get('round')}: " + (", ".join(did) or "listens, hears nothing") + f"; {state}"
        out.append((text, q, vector_clock(e, sysm.graph.number_of_nodes())))
    return out


# ------------------------------------------------------------------------------------- SVG

CW, CH, LEFT, TOP = 150, 34, 90, 92


def grid_svg(grid: Grid, standalone: bool = True) -> str:
    """The grid as SVG: `<rect class="cell KIND">` per node and round (KIND: broadcast, heard, silent,
    collision, conflict)."""
    width = max(LEFT + CW * grid.n + 20, 640)
    height = TOP + CH * (len(grid.rounds) + 1) + 60
    out = ['<?xml version="1.0" encoding="UTF-8"?>'] if standalone else []
    out.append(f'<svg xmlns="http://www.w3.org/2000/svg" class="grid" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" font-family="ui-sans-serif, system-ui, sans-serif" font-size="11">')
    out.append("<style>.cell{stroke:#b0bec5}.cell.broadcast{fill:#bbdefb}.cell.heard{fill:#c8e6c9}"
               ".cell.silent{fill:#fff}.cell.collision{fill:#ffcdd2;stroke:#c62828;stroke-width:2}"
               ".cell.conflict{fill:#ffe0b2;stroke:#e65100;stroke-width:2}.bad{fill:#c62828;font-weight:bold}"
               "g.c:hover rect{stroke:#000;stroke-width:2}</style>")
    out.append(f'<text x="12" y="22" font-size="15" font-weight="bold">{escape(grid.title)}</text>')
    edges = ", ".join(f"{u}-{v}" for u, v in grid.edges)
    out.append(f'<text x="12" y="40" fill="#555">edges: {escape(edges[:150])}</text>')
    for q in range(grid.n):
        x = LEFT + CW * q
        out.append(f'<g class="c" data-state={quoteattr(grid.initial[q])}><title>{escape(grid.initial[q])}</title>'
                   f'<text x="{x + CW // 2}" y="{TOP - 12}" text-anchor="middle" font-weight="bold">node {q}</text></g>')
    for r, row in enumerate(grid.rounds):
        y = TOP + CH * r
        bad = grid.bad_round == r
        out.append(f'<text x="12" y="{y + 21}"{" class=" + quoteattr("bad") if bad else ""}>round {r + 1}</text>')
        for q, cell in enumerate(row):
            kind = ("collision" if cell.collision else "conflict" if cell.conflict else
                    "broadcast" if cell.broadcast else "heard" if cell.heard else "silent")
            text = (f"▲ {cell.broadcast}" if cell.broadcast else f"▼ {cell.heard}" if cell.heard else "")
            if cell.collision:
                text = "collision" + (f": ▲ {cell.broadcast}" if cell.broadcast else "")
            elif cell.conflict:
                text = f"conflict: ▲ {cell.broadcast}"
            tip = "\n".join(t for t in (text, cell.state) if t)
            x = LEFT + CW * q
            out.append(f'<g class="c" data-state={quoteattr(tip)}><title>{escape(tip)}</title>'
                       f'<rect class="cell {kind}" x="{x + 2}" y="{y + 2}" width="{CW - 4}" height="{CH - 4}" rx="3"/>'
                       f'<text x="{x + 8}" y="{y + 21}">{escape(text if len(text) <= 24 else text[:23] + "…")}</text></g>')
        if bad:
            out.append(f'<text class="bad" x="{LEFT}" y="{y + CH + 22}">{escape(grid.note)}</text>')
    out.append(f'<text x="12" y="{height - 12}" fill="#555">▲ broadcast (blue) · ▼ heard one message (green) · '
               'red: collision (two or more neighbours broadcast) · orange: conflict (a node and a neighbour '
               'broadcast) · hover a cell for the state</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
