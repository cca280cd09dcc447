"""Lasso counterexamples: the property's region and start states, the nearest fair cycle (or fair stuttering
state) reached from a start, a witness cycle through it that covers its fairness, and the check that a given
lasso is a fair violation (what `lockstep replay` runs)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..model import Model
from ..temporal import Fairness, Property
from . import scc
from .graph import StateGraph, constraint_kinds


@dataclass
class Lasso:
    """A violating behaviour: states by id with the labels of the steps into them; the last state
    steps back to `path[loop]` (or, when `loop` is the last index, stutters there for ever)."""

    path: list[tuple[Any, int]]
    loop: int


def shape(g: StateGraph, prop: Property) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(region, start states, accepting states or None) of the property's violations:

        ◇P        start: an initial ¬P state        region: ¬P
        □◇P       start: any ¬P state               region: ¬P
        ◇□P       start: an initial state           region: all, and the cycle visits a ¬P state
        P ↝ Q     start: a P ∧ ¬Q state             region: ¬Q
    """
    vals = g.evaluate(prop)
    live = g.expanded
    accepting = None
    if prop.kind == "eventually":
        region = live & ~vals[0]
        starts = g.initial[region[g.initial]]
    elif prop.kind == "always_eventually":
        region = live & ~vals[0]
        starts = np.flatnonzero(region)
    elif prop.kind == "eventually_always":
        region = live.copy()
        starts = g.initial[region[g.initial]]
        accepting = ~vals[0]
    else:
        region = live & ~vals[1]
        starts = np.flatnonzero(region & vals[0])
    return region, starts, accepting


def find_lasso(g: StateGraph, prop: Property, fair: Fairness) -> Lasso | None:
    """A fair behaviour of the graph that violates `prop`, or None."""
    region, starts, accepting = shape(g, prop)
    stutter = region & ~scc.fair_enabled(g)  # where a behaviour may stop for ever
    if accepting is not None:
        stutter &= accepting
    cycles = scc.on_cycles(g, region)
    if not stutter.any() and not cycles.any():
        return None  # neither stopping nor a cycle in the region: no violation, whatever the start states reach
    reach = scc.reach_within(g, starts, region)
    # the states of `reach` that may lie on a cycle: every fair component of `reach` is among them
    comp, _ = scc.fair_components(g, reach & cycles, accepting, constraint_kinds(fair))
    targets = (stutter & reach) | (comp >= 0)
    if not targets.any():
        return None
    hit, pred, pedge = scc.nearest(g, starts, reach, targets)
    assert hit >= 0, "a target state is not reachable from the start states"
    within: list[tuple[Any, int]] = []
    j = hit
    while pred[j] >= 0:
        within.append((int(g.labels[pedge[j]]), j))
        j = int(pred[j])
    stem = g.path_to(j) + within[::-1]
    if comp[hit] < 0:
        return Lasso(stem, len(stem) - 1)
    cycle = witness_cycle(g, hit, comp == comp[hit], fair, accepting)
    return Lasso(stem + cycle[:-1], len(stem) - 1)


def _bfs_within(g: StateGraph, comp: np.ndarray, src: int, goal: Callable[[int], bool]) -> list[tuple[int, int]]:
    """Steps [(label id, id), ...] of a shortest path inside `comp` from src to a state satisfying goal."""
    if goal(src):
        return []
    pred: dict[int, tuple[int, int]] = {src: (src, -1)}
    queue = deque([src])
    while queue:
        u = queue.popleft()
        for v, lid in g.steps(u):
            if comp[v] and v not in pred:
                pred[v] = (u, lid)
                if goal(v):
                    out = []
                    while v != src:
                        p, lab = pred[v]
                        out.append((lab, v))
                        v = p
                    return out[::-1]
                queue.append(v)
    raise AssertionError("a strongly connected component is not connected")


def witness_cycle(g: StateGraph, entry: int, comp: np.ndarray, fair: Fairness,
                  accepting: np.ndarray | None) -> list[tuple[int, int]]:
    """A cycle from `entry` back to it inside `comp` that takes each fair action the component takes,
    visits a state disabling each weakly fair action it does not take, and an accepting state."""
    members = np.flatnonzero(comp).tolist()
    en_any: set[int] = set()
    first: dict[int, tuple[int, int, int]] = {}  # constraint -> a step inside taking it
    for u in members:
        en_any |= g.enabled(u)
        for v, lid in g.steps(u):
            c = g.constraint(lid)
            if c >= 0 and comp[v]:
                first.setdefault(c, (u, lid, v))
    taken = set(first)
    cycle: list[tuple[int, int]] = []
    cur, done, seen = entry, set(), {entry}

    def walk(steps: list[tuple[int, int]]) -> None:
        nonlocal cur
        for lid, v in steps:
            if g.constraint(lid) >= 0:
                done.add(g.constraint(lid))
            seen.add(v)
        cycle.extend(steps)
        if steps:
            cur = steps[-1][1]

    for c in sorted(first):
        if c not in done:
            u, lid, v = first[c]
            walk(_bfs_within(g, comp, cur, lambda x, u=u: x == u) + [(lid, v)])
    weak = {i for i, k in enumerate(fair.constraints) if k.kind == "weak"}
    for c in sorted((weak & en_any) - taken):
        if not any(c not in g.enabled(x) for x in seen):
            walk(_bfs_within(g, comp, cur, lambda x, c=c: c not in g.enabled(x)))
    if accepting is not None and not any(accepting[x] for x in seen):
        walk(_bfs_within(g, comp, cur, lambda x: bool(accepting[x])))
    if not cycle:
        v, lid = next((v, lid) for v, lid in g.steps(entry) if comp[v])
        walk([(lid, v)])
    walk(_bfs_within(g, comp, cur, lambda x: x == entry))
    return cycle


def lasso_violates(model: Model, prop: Property, fair: Fairness, states: list[Any], labels: list[Any],
                   loop: int) -> str | None:
    """Why the lasso (states[i] reached by labels[i]; the last state returns to states[loop], or
    stutters when loop is the last index) is not a fair violation of `prop`, or None if it is one."""
    n = len(states)
    vals = [[bool(c(st)) for st in states] for c in prop.conditions]
    cyc = range(loop, n)
    if prop.kind == "eventually" and any(vals[0]):
        return f"P holds in state {vals[0].index(True)}"
    if prop.kind == "always_eventually" and any(vals[0][i] for i in cyc):
        return "P holds inside the loop"
    if prop.kind == "eventually_always" and all(vals[0][i] for i in cyc):
        return "P holds throughout the loop"
    if prop.kind == "leads_to":
        firsts = [i for i in range(n) if vals[0][i] and all(not vals[1][j] for j in range(i, n))]
        if not firsts or any(vals[1][i] for i in cyc):
            return "every P-state is followed by a Q-state"
    enabled = []
    for st in states[loop:]:
        mask = 0
        for lid, t in model.successors(st):
            c = fair.of(lid)
            if t != st and c >= 0:
                mask |= 1 << c
        enabled.append(mask)
    en_any, en_all = 0, -1
    for m in enabled:
        en_any |= m
        en_all &= m
    if loop == n - 1:
        if en_any & (fair.weak_mask | fair.strong_mask):
            return f"stuttering in state {loop} is not fair: {_names(fair, en_any)} is enabled there"
        return None
    taken = 0
    for i in range(loop + 1, n):
        c = fair.of(labels[i])
        if c >= 0 and states[i] != states[i - 1]:
            taken |= 1 << c
    closing = [fair.of(lid) for lid, t in model.successors(states[-1]) if t == states[loop]]
    taken |= sum(1 << c for c in set(closing) if c >= 0)
    unfair = (fair.weak_mask & en_all & ~taken) | (fair.strong_mask & en_any & ~taken)
    if unfair:
        return f"the loop is not fair: {_names(fair, unfair)} is enabled but never taken"
    return None


def _names(fair: Fairness, mask: int) -> str:
    return ", ".join(c.describe() for i, c in enumerate(fair.constraints) if mask >> i & 1)
