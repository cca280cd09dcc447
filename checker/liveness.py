"""Liveness: temporal properties under weak and strong fairness, decided over the state graph.

Behaviours are TLA+ behaviours: infinite sequences of states in which the system may also
stutter (take no step), so a behaviour that stops is one that stutters for ever. A step of
an action counts for fairness only if it changes the state (TLA+'s ⟨A⟩_vars); an action is
enabled where it has such a step. WF(A): if A is enabled from some point on for ever, A is
taken infinitely often; SF(A): if A is enabled infinitely often, it is taken infinitely often.

The reachable graph is built breadth-first (states and steps are kept), then a violating
behaviour is searched as a lasso: a stem from an initial state to a "start" state, then a fair
cycle inside a region of states where the property's obligation stays unmet:

    ◇P        start: an initial ¬P state        region: ¬P
    □◇P       start: any ¬P state               region: ¬P
    ◇□P       start: an initial state           region: all, and the cycle visits a ¬P state
    P ↝ Q     start: a P ∧ ¬Q state             region: ¬Q

A fair cycle is either stuttering in a state where no fair action is enabled, or a strongly
connected set of states that covers its own fairness (the classic Streett check: drop a
component whose weakly fair action is enabled everywhere and never taken; remove the states
where an untaken strongly fair action is enabled and split what is left into components
again). Everything is iterative (networkx's SCC functions), so graph size, not Python's
recursion limit, bounds the search.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from lockstep.specs.lang.errors import SpecError

from .explicit import Options
from .model import Model
from .progress import NoProgress, Progress, Stats
from .result import HOLDS, INCONCLUSIVE, VIOLATION, CheckResult, Violation
from .temporal import Fairness, Property
from .trace import Trace


@dataclass
class Graph:
    """The explored state graph: states by id, their steps (self-loops dropped), and fairness bits."""

    states: list[Any] = field(default_factory=list)
    index: dict[Any, int] = field(default_factory=dict)
    out: list[list[tuple[int, Any, int]]] = field(default_factory=list)  # (successor, label, constraint bit)
    enabled: list[int] = field(default_factory=list)  # bitmask of fairness constraints enabled in the state
    expanded: list[bool] = field(default_factory=list)
    parent: list[tuple[int, Any] | None] = field(default_factory=list)  # breadth-first tree: (id, label)
    depth: list[int] = field(default_factory=list)
    initial: list[int] = field(default_factory=list)
    generated: int = 0
    cut: str | None = None
    outside: int = 0

    def path_to(self, i: int) -> list[tuple[Any, int]]:
        """[(None, initial id), (label, id), ...] along the breadth-first tree to state i."""
        rev: list[tuple[Any, int]] = []
        while True:
            p = self.parent[i]
            if p is None:
                rev.append((None, i))
                break
            rev.append((p[1], i))
            i = p[0]
        rev.reverse()
        return rev


class _Stop(Exception):
    """Stops the exploration: a safety violation (with its trace) on the way."""

    def __init__(self, violation: Violation):
        self.violation = violation


def explore(model: Model, fair: Fairness, opts: Options, progress: Progress, g: Graph) -> Graph:
    """Build the reachable graph into `g`; raise _Stop at an invariant violation, a deadlock or a failing step."""
    queue: deque[int] = deque()

    def add(st: Any, parent: tuple[int, Any] | None) -> None:
        g.index[st] = len(g.states)
        g.states.append(st)
        g.out.append([])
        g.enabled.append(0)
        g.expanded.append(False)
        g.parent.append(parent)
        g.depth.append(0 if parent is None else g.depth[parent[0]] + 1)
        i = len(g.states) - 1
        try:
            bad = model.violated(st)
        except Exception:
            f = model.diagnose_predicate(st)
            raise _Stop(_safety(model, g, i, f.kind, f.action, f.message, f.location)) from None
        if bad >= 0:
            name = model.invariant_names[bad]
            raise _Stop(_safety(model, g, i, "invariant", name, f"invariant {name} is violated", None))
        outside = False
        if model.constraint_names:
            try:
                outside = model.outside(st) >= 0
            except Exception:
                outside = False
        if outside:
            g.outside += 1
        else:
            queue.append(i)

    for st in model.initial_states():
        g.generated += 1
        if st not in g.index:
            add(st, None)
            g.initial.append(g.index[st])
    cap = opts.max_states
    while queue:
        i = queue.popleft()
        st = g.states[i]
        if opts.max_depth is not None and g.depth[i] >= opts.max_depth:
            g.cut = opts.depth_cut()
            continue
        try:
            succs = model.successors(st)
        except Exception:
            f = model.diagnose(st)
            raise _Stop(_safety(model, g, i, f.kind, f.action, f.describe(), f.location)) from None
        g.generated += len(succs)
        if not succs and opts.deadlock:
            raise _Stop(_safety(model, g, i, "deadlock", "", "deadlock: no action is enabled", None))
        g.expanded[i] = True
        mask = 0
        for lid, t in succs:
            c = fair.of(lid)
            if t == st:
                continue  # a step that changes nothing is a stuttering step
            bit = 1 << c if c >= 0 else 0
            mask |= bit
            j = g.index.get(t)
            if j is None:
                if cap is not None and len(g.states) >= cap:
                    g.cut = f"state bound {cap} reached"
                    continue
                add(t, (i, lid))
                j = len(g.states) - 1
            g.out[i].append((j, lid, bit))
        g.enabled[i] = mask
        if progress.due():
            progress.report(Stats(len(g.states), g.generated, len(queue), g.depth[i] + 1))
    return g


def _safety(model: Model, g: Graph, i: int, kind: str, name: str, message: str, location: str | None) -> Violation:
    path = [(lid, g.states[j]) for lid, j in g.path_to(i)]
    prop = {"kind": "invariant" if kind == "invariant" else ("deadlock" if kind == "deadlock" else "step"), "name": name}
    return Violation(kind, name, message, location, Trace.from_states(model, path, property=prop, message=message,
                                                                        location=location))


# ------------------------------------------------------------------------------- fair cycles


@dataclass
class Lasso:
    """A violating behaviour: states by id with the labels of the steps into them; the last state
    steps back to `path[loop]` (or, when `loop` is the last index, stutters there for ever)."""

    path: list[tuple[Any, int]]
    loop: int


def _holds(prop: Property, g: Graph) -> list[list[bool]]:
    out = []
    for k, cond in enumerate(prop.conditions):
        col = []
        for st in g.states:
            try:
                col.append(bool(cond(st)))
            except Exception as e:
                raise SpecError(f"temporal property {prop.name}: condition {'PQ'[k]} fails on state "
                                f"{model_state(st)}: {type(e).__name__}: {e}") from None
        out.append(col)
    return out


def model_state(st: Any) -> str:
    text = repr(st)
    return text if len(text) < 200 else text[:197] + "..."


def find_lasso(g: Graph, prop: Property, fair: Fairness) -> Lasso | None:
    """A fair behaviour of the graph that violates `prop`, or None."""
    vals = _holds(prop, g)
    n = len(g.states)
    live = [g.expanded[i] for i in range(n)]
    accepting: list[bool] | None = None
    if prop.kind == "eventually":
        region = [live[i] and not vals[0][i] for i in range(n)]
        starts = [i for i in g.initial if region[i]]
    elif prop.kind == "always_eventually":
        region = [live[i] and not vals[0][i] for i in range(n)]
        starts = [i for i in range(n) if region[i]]
    elif prop.kind == "eventually_always":
        region = live
        starts = [i for i in g.initial if region[i]]
        accepting = [not v for v in vals[0]]
    else:
        region = [live[i] and not vals[1][i] for i in range(n)]
        starts = [i for i in range(n) if region[i] and vals[0][i]]
    reach = _reach_within(g, starts, region)
    targets, cycles = _fair_targets(g, reach, fair, accepting)
    if not targets:
        return None
    hit, start, pred = _nearest(g, starts, reach, targets)
    stem = g.path_to(start)
    within: list[tuple[Any, int]] = []
    j = hit
    while j != start:
        p, lid = pred[j]
        within.append((lid, j))
        j = p
    stem += reversed(within)
    if hit not in cycles:
        return Lasso(stem, len(stem) - 1)
    cycle = _witness_cycle(g, hit, cycles[hit], fair, accepting)
    return Lasso(stem + cycle[:-1], len(stem) - 1)


def _reach_within(g: Graph, starts: list[int], region: list[bool]) -> set[int]:
    seen = set(starts)
    queue = deque(starts)
    while queue:
        u = queue.popleft()
        for v, _, _ in g.out[u]:
            if region[v] and v not in seen:
                seen.add(v)
                queue.append(v)
    return seen


def _fair_targets(g: Graph, reach: set[int], fair: Fairness,
                  accepting: list[bool] | None) -> tuple[set[int], dict[int, frozenset[int]]]:
    """States where a fair violating cycle can be entered: stuttering states, and the states of fair components."""
    fair_mask = fair.weak_mask | fair.strong_mask
    targets = {u for u in reach if not g.enabled[u] & fair_mask and (accepting is None or accepting[u])}
    graph = nx.DiGraph()
    graph.add_nodes_from(reach)
    graph.add_edges_from((u, v) for u in reach for v, _, _ in g.out[u] if v in reach)
    cycles: dict[int, frozenset[int]] = {}
    work = [c for c in nx.strongly_connected_components(graph) if len(c) > 1]
    weak, strong = fair.weak_mask, fair.strong_mask
    while work:
        comp = work.pop()
        if accepting is not None and not any(accepting[u] for u in comp):
            continue
        en_any, en_all, taken = 0, -1, 0
        for u in comp:
            en_any |= g.enabled[u]
            en_all &= g.enabled[u]
            for v, _, bit in g.out[u]:
                if v in comp:
                    taken |= bit
        if weak & en_all & ~taken:
            continue
        unmet = strong & en_any & ~taken
        if unmet:
            rest = [u for u in comp if not g.enabled[u] & unmet]
            work.extend(c for c in nx.strongly_connected_components(graph.subgraph(rest)) if len(c) > 1)
            continue
        frozen = frozenset(comp)
        for u in comp:
            cycles.setdefault(u, frozen)
        targets |= comp
    return targets, cycles


def _nearest(g: Graph, starts: list[int], reach: set[int],
             targets: set[int]) -> tuple[int, int, dict[int, tuple[int, Any]]]:
    """The target closest to an initial state (stem length counted through the start state)."""
    dist = {s: g.depth[s] for s in starts}
    origin = {s: s for s in starts}
    pred: dict[int, tuple[int, Any]] = {}
    heap = [(g.depth[s], s) for s in starts]
    heapq.heapify(heap)
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        if u in targets:
            return u, origin[u], pred
        for v, lid, _ in g.out[u]:
            if v in reach and d + 1 < dist.get(v, 1 << 62):
                dist[v] = d + 1
                origin[v] = origin[u]
                pred[v] = (u, lid)
                heapq.heappush(heap, (d + 1, v))
    raise AssertionError("a target state is not reachable from the start states")


def _bfs_within(g: Graph, comp: frozenset[int], src: int, goal: Callable[[int], bool]) -> list[tuple[Any, int]]:
    """Steps [(label, id), ...] of a shortest path inside `comp` from src to a state satisfying goal."""
    if goal(src):
        return []
    pred: dict[int, tuple[int, Any]] = {src: (src, None)}
    queue = deque([src])
    while queue:
        u = queue.popleft()
        for v, lid, _ in g.out[u]:
            if v in comp and v not in pred:
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


def _witness_cycle(g: Graph, entry: int, comp: frozenset[int], fair: Fairness,
                   accepting: list[bool] | None) -> list[tuple[Any, int]]:
    """A cycle from `entry` back to it inside `comp` that takes each fair action the component takes,
    visits a state disabling each weakly fair action it does not take, and an accepting state."""
    en_any, taken = 0, 0
    edges: dict[int, tuple[int, Any, int]] = {}
    for u in comp:
        en_any |= g.enabled[u]
        for v, lid, bit in g.out[u]:
            if v in comp and bit:
                taken |= bit
                edges.setdefault(bit, (u, lid, v))
    cycle: list[tuple[Any, int]] = []
    cur, done, seen = entry, 0, {entry}

    def walk(steps: list[tuple[Any, int]]) -> None:
        nonlocal cur, done
        prev = cur
        for lid, v in steps:
            done |= next(b for w, lab, b in g.out[prev] if w == v and lab == lid)
            seen.add(v)
            prev = v
        cycle.extend(steps)
        cur = prev

    for bit in sorted(edges):
        if not done & bit:
            u, lid, v = edges[bit]
            walk(_bfs_within(g, comp, cur, lambda x, u=u: x == u) + [(lid, v)])
    idle = fair.weak_mask & en_any & ~taken
    for c in range(idle.bit_length()):
        if idle >> c & 1 and not any(not g.enabled[x] >> c & 1 for x in seen):
            walk(_bfs_within(g, comp, cur, lambda x, c=c: not g.enabled[x] >> c & 1))
    if accepting is not None and not any(accepting[x] for x in seen):
        walk(_bfs_within(g, comp, cur, lambda x: accepting[x]))
    if not cycle:
        v, lid, _ = next((v, lid, b) for v, lid, b in g.out[entry] if v in comp)
        walk([(lid, v)])
    walk(_bfs_within(g, comp, cur, lambda x: x == entry))
    return cycle


# ------------------------------------------------------------------------------- entry point


def check_properties(model: Model, props: list[Property], fair: Fairness, opts: Options,
                     progress: Progress | None = None) -> CheckResult:
    """Explore `model` once and decide each of `props` under `fair`; the first violation comes with a lasso."""
    if model.symmetry:
        raise SpecError(f"spec {model.name}: temporal properties are checked without symmetry reduction "
                        "(it is not sound for per-process fairness); load the model with symmetry=False")
    progress = progress or NoProgress()
    t0 = time.monotonic()
    g = Graph()
    try:
        explore(model, fair, opts, progress, g)
    except _Stop as stop:
        return CheckResult(VIOLATION, len(g.states), g.generated, max(g.depth, default=-1) + 1,
                           time.monotonic() - t0, violation=stop.violation, fingerprinted=False)
    finally:
        progress.close()
    unused = fair.unused()
    if unused:
        raise SpecError(f"fairness is declared for action {unused[0]!r}, but no step of spec {model.name} has that action")
    res = CheckResult(HOLDS, len(g.states), g.generated, max(g.depth, default=-1) + 1, 0.0, fingerprinted=False)
    if g.outside:
        res.notes.append(f"{g.outside:,} states outside the state constraints were not expanded")
    for prop in props:
        lasso = find_lasso(g, prop, fair)
        if lasso is not None:
            res.verdict = VIOLATION
            res.violation = _temporal_violation(model, g, prop, fair, lasso)
            break
    else:
        if g.cut:
            res.verdict = INCONCLUSIVE
            res.cut = g.cut
    res.seconds = time.monotonic() - t0
    return res


def _temporal_violation(model: Model, g: Graph, prop: Property, fair: Fairness, lasso: Lasso) -> Violation:
    path = [(lid, g.states[i]) for lid, i in lasso.path]
    last = len(path) - 1
    how = (f"the behaviour stutters for ever in state {last}" if lasso.loop == last
           else f"states {lasso.loop}..{last} repeat for ever")
    message = f"temporal property {prop.name} ({prop.formula}) is violated: {how}"
    kinds = {"kind": "temporal", "name": prop.name, "fairness": fair.describe(), "overrides": fair.overrides}
    trace = Trace.from_states(model, path, property=kinds, message=message, loop=lasso.loop)
    return Violation("temporal", prop.name, message, None, trace)


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
