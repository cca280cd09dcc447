"""Termination of an SSP evaluation under every schedule: the reachable state graph has no cycle and no
dead end before every worker has stopped.

A stopped worker's `iterate` timer is a no-op step: a stutter, ignored here (as in TLA+, a run may not
stutter for ever while another process has a step to take). Any other cycle is a run that never
terminates, and a state without a non-stuttering step before every worker has stopped is one where
termination is never detected. Both are reported with a path from an initial state.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from ..loader import load_model
from ..model import Model


@dataclass
class Termination:
    """The outcome: `verdict` is "terminates", "diverges" (a cycle), "stuck" (a dead end), "fails" (a step
    fails, e.g. the divergence assertion) or "inconclusive"."""

    verdict: str
    states: int
    finished: int  # states where every worker has stopped
    cut: int = 0  # states outside the spec's constraint (not expanded)
    path: list[tuple[str, Any]] = field(default_factory=list)  # (step label, state) from an initial state
    loop: int | None = None  # where the cycle starts in `path`
    message: str = ""


def check_termination(ref: str, params: dict[str, int], max_states: int = 2_000_000) -> Termination:
    model = load_model(ref, params)
    return explore(model, max_states)


def explore(model: Model, max_states: int = 2_000_000) -> Termination:
    prog = model.prog  # type: ignore[attr-defined]
    done_field = prog.field("done")

    def finished(st) -> bool:
        return all(done_field.decode(st).values())

    parent: dict[Any, tuple[Any, Any]] = {}
    graph = nx.DiGraph()
    queue = deque()
    for s0 in model.initial_states():
        if s0 not in parent:
            parent[s0] = (None, None)
            queue.append(s0)
    cut = nfinished = 0
    while queue:
        st = queue.popleft()
        if len(parent) > max_states:
            return Termination("inconclusive", len(parent), nfinished, cut, message=f"more than {max_states:,} states")
        if finished(st):
            nfinished += 1
            continue
        if model.outside(st) >= 0:
            cut += 1
            continue
        try:
            succs = [(lid, nxt) for lid, nxt in model.successors(st) if nxt != st]  # a stopped worker's no-op
        except Exception:  # a failing step (e.g. the divergence assertion): diagnosed by re-running it
            failure = model.diagnose(st)
            return Termination("fails", len(parent), nfinished, cut, _path(model, parent, st),
                               message=failure.describe())
        if not succs:
            return Termination("stuck", len(parent), nfinished, cut, _path(model, parent, st),
                               message="no step is enabled, but not every worker has stopped")
        graph.add_node(st)
        for lid, nxt in succs:
            if not finished(nxt):
                graph.add_edge(st, nxt, label=lid)
            if nxt not in parent:
                parent[nxt] = (st, lid)
                queue.append(nxt)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        start = cycle[0][0]
        path = _path(model, parent, start)
        loop = len(path) - 1
        for a, b in cycle:
            path.append((model.label(graph.edges[a, b]["label"]), model.show_state(b)))
        return Termination("diverges", len(parent), nfinished, cut, path, loop,
                           "a cycle of steps before every worker has stopped: a run that never terminates")
    if cut:
        return Termination("inconclusive", len(parent), nfinished, cut,
                           message=f"{cut:,} states reached the clock bound and were not expanded (raise --param clocks)")
    return Termination("terminates", len(parent), nfinished, cut)


def _path(model: Model, parent: dict, st) -> list[tuple[str, Any]]:
    out = []
    while st is not None:
        prev, lid = parent[st]
        out.append((model.label(lid) if lid is not None else "init", model.show_state(st)))
        st = prev
    return list(reversed(out))
