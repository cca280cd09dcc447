"""Fair cycles in the compact graph: reachability inside a region, the fair strongly connected components
(the Streett check, in linear time per refinement) and the nearest target. Each runs in C (`native`) where
it is built, else the same algorithm here in Python, with the same results."""

from __future__ import annotations

import numpy as np

from . import native
from .graph import StateGraph

WEAK, STRONG = 1, 2


def _b(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.uint8)


def fair_enabled(g: StateGraph, python: bool = False) -> np.ndarray:
    """Per state: whether some fairness constraint is enabled there."""
    lib = None if python else native.library()
    xoff, xcons = g.extra_arrays()
    if lib is not None:
        out = np.zeros(g.n, dtype=np.uint8)
        lib.fair_enabled(g.n, native.ptr(g.offsets), native.ptr(g.labels), native.ptr(g.label_cons),
                         native.ptr(xoff), native.ptr(xcons), native.ptr(out))
        return out.astype(bool)
    fair_edge = g.label_cons[g.labels] >= 0 if len(g.labels) else np.zeros(0, dtype=bool)
    counts = np.add.reduceat(np.append(fair_edge, False).astype(np.int64), g.offsets[:-1]) if g.n else np.zeros(0)
    counts[np.diff(g.offsets) == 0] = 0  # reduceat reads one element of an empty segment
    return (counts > 0) | (np.diff(xoff) > 0)


def reach_within(g: StateGraph, starts: np.ndarray, region: np.ndarray, python: bool = False) -> np.ndarray:
    """The states reachable from `starts` through states of `region`, the starts included."""
    lib = None if python else native.library()
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    seen = np.zeros(g.n, dtype=np.uint8)
    if lib is not None:
        region = _b(region)
        if lib.reach_within(g.n, native.ptr(g.offsets), native.ptr(g.targets), native.ptr(region),
                            native.ptr(starts), len(starts), native.ptr(seen)) < 0:
            raise MemoryError("liveness: no memory for the reachability search")
        return seen.astype(bool)
    off, tgt, reg = g.offsets.tolist(), g.targets.tolist(), region.tolist()
    out = [False] * g.n
    queue = []
    for s in starts.tolist():
        if not out[s]:
            out[s] = True
            queue.append(s)
    for u in queue:
        for e in range(off[u], off[u + 1]):
            v = tgt[e]
            if reg[v] and not out[v]:
                out[v] = True
                queue.append(v)
    return np.array(out, dtype=bool)


def on_cycles(g: StateGraph, region: np.ndarray) -> np.ndarray:
    """The states of `region` that may lie on a cycle inside it (a superset): those reachable inside it from a state
    that a step inside it enters from a state numbered after it, or from itself. Numbers cannot rise all the way
    round a cycle, so every cycle takes such a step; a graph explored breadth-first without cycles has none, and its
    region is left empty after one pass over the steps in order (in C; without it, the whole region)."""
    lib = native.library()
    if lib is None:
        return region
    reg = _b(region)
    seeds = np.zeros(g.n, dtype=np.uint8)
    k = lib.back_targets(g.n, native.ptr(g.offsets), native.ptr(g.targets), native.ptr(reg), native.ptr(seeds))
    if 4 * k >= g.n:  # cycles everywhere: the search of what they reach would keep most of the region
        return region
    return reach_within(g, np.flatnonzero(seeds), reg)


def fair_components(g: StateGraph, region: np.ndarray, accepting: np.ndarray | None, kinds: np.ndarray,
                    python: bool = False) -> tuple[np.ndarray, int]:
    """(each state's fair component inside `region`, or -1; how many components). A fair component is a
    strongly connected set of states (more than one, or one with a step to itself) that takes a step of each
    weakly fair constraint enabled in all its states and of each strongly fair one enabled in any, and (with
    `accepting`) holds an accepting state. A strongly connected component with a strongly fair constraint
    enabled but not taken loses the states where it is enabled, and what is left is decomposed again. In C the
    region is first cut to the states that may lie on a cycle in it (`on_cycles`), which leaves every component
    as it is; the Python fallback decomposes the whole region, with the same components."""
    lib = None if python else native.library()
    xoff, xcons = g.extra_arrays()
    kinds = np.ascontiguousarray(kinds, dtype=np.uint8)
    if lib is not None:
        region = on_cycles(g, region)
        if not region.any():  # no component: -1 for every state, read only (no array as large as the graph made)
            return np.broadcast_to(np.int64(-1), (g.n,)), 0
        comp = np.empty(g.n, dtype=np.int64)
        acc = None if accepting is None else _b(accepting)
        reg = _b(region)
        k = lib.fair_sccs(g.n, native.ptr(g.offsets), native.ptr(g.targets), native.ptr(g.labels),
                          native.ptr(g.label_cons), native.ptr(xoff), native.ptr(xcons), native.ptr(kinds),
                          len(kinds), reg.ctypes.data, native.ptr(acc), native.ptr(comp))
        if k < 0:
            raise MemoryError("liveness: no memory for the strongly connected components")
        return comp, int(k)
    return _fair_components(g, region, accepting, kinds, xoff, xcons)


def _fair_components(g: StateGraph, region: np.ndarray, accepting: np.ndarray | None, kinds: np.ndarray,
                     xoff: np.ndarray, xcons: np.ndarray) -> tuple[np.ndarray, int]:
    off, tgt = g.offsets.tolist(), g.targets.tolist()
    cons = g.label_cons[g.labels].tolist() if len(g.labels) else []
    xo, xc, kind = xoff.tolist(), xcons.tolist(), kinds.tolist()
    acc = None if accepting is None else accepting.tolist()
    n = g.n
    comp = [-1] * n
    part = [0 if r else -1 for r in region.tolist()]
    idx = [-1] * n
    low = [0] * n
    onstk = [False] * n
    work = [([u for u in range(n) if part[u] == 0], 0)]
    labels, found = 1, 0
    while work:
        nodes, lab = work.pop()
        for u in nodes:
            idx[u] = -1
        counter = 0
        stk: list[int] = []
        for root in nodes:
            if part[root] != lab or idx[root] >= 0:
                continue
            idx[root] = low[root] = counter
            counter += 1
            stk.append(root)
            onstk[root] = True
            calls = [[root, off[root]]]
            while calls:
                frame = calls[-1]
                v, e = frame
                if e < off[v + 1]:
                    frame[1] += 1
                    w = tgt[e]
                    if part[w] != lab:
                        continue
                    if idx[w] < 0:
                        idx[w] = low[w] = counter
                        counter += 1
                        stk.append(w)
                        onstk[w] = True
                        calls.append([w, off[w]])
                    elif onstk[w] and idx[w] < low[v]:
                        low[v] = idx[w]
                    continue
                calls.pop()
                if calls and low[v] < low[calls[-1][0]]:
                    low[calls[-1][0]] = low[v]
                if low[v] != idx[v]:
                    continue
                s0 = len(stk) - 1
                while stk[s0] != v:
                    s0 -= 1
                scc = stk[s0:]
                del stk[s0:]
                for x in scc:
                    onstk[x] = False
                labels, sub, fair = _judge(scc, labels, part, off, tgt, cons, xo, xc, kind, acc)
                if sub:
                    work.append((sub, part[sub[0]]))
                if fair:
                    for x in scc:
                        comp[x] = found
                    found += 1
    return np.array(comp, dtype=np.int64), found


def _judge(scc: list[int], labels: int, part: list[int], off: list[int], tgt: list[int], cons: list[int],
           xo: list[int], xc: list[int], kind: list[int], acc: list[bool] | None) -> tuple[int, list[int], bool]:
    """Decide one strongly connected component: (labels used, the states to decompose again, fair)."""
    s = labels
    labels += 1
    for x in scc:
        part[x] = s
    keep = len(scc) > 1 or any(tgt[e] == scc[0] for e in range(off[scc[0]], off[scc[0] + 1]))
    if keep and acc is not None:
        keep = any(acc[x] for x in scc)
    if not keep:
        for x in scc:
            part[x] = -1
        return labels, [], False
    count: dict[int, int] = {}
    taken: set[int] = set()
    for x in scc:
        here = {xc[f] for f in range(xo[x], xo[x + 1])}
        for e in range(off[x], off[x + 1]):
            c = cons[e]
            if c >= 0:
                here.add(c)
                if part[tgt[e]] == s:
                    taken.add(c)
        for c in here:
            count[c] = count.get(c, 0) + 1
    if any(kind[c] == WEAK and k == len(scc) and c not in taken for c, k in count.items()):
        for x in scc:
            part[x] = -1
        return labels, [], False
    unmet = {c for c, k in count.items() if kind[c] == STRONG and c not in taken}
    if not unmet:
        return labels, [], True
    sub = []
    for x in scc:
        here = {cons[e] for e in range(off[x], off[x + 1])} | {xc[f] for f in range(xo[x], xo[x + 1])}
        if here & unmet:
            part[x] = -1
        else:
            part[x] = labels
            sub.append(x)
    return labels + 1, sub, False


def nearest(g: StateGraph, starts: np.ndarray, within: np.ndarray, target: np.ndarray,
            python: bool = False) -> tuple[int, np.ndarray, np.ndarray]:
    """(the target nearest to an initial state, each state's predecessor and step position on the way, -1 at
    a start). The stem to a start counts its depth; the states of each distance are taken in ascending
    order, and a state's predecessor is the first of the distance before with a step to it."""
    lib = None if python else native.library()
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    sdepth = np.ascontiguousarray(g.depth[starts], dtype=np.int64)
    pred = np.full(g.n, -1, dtype=np.int64)
    pedge = np.full(g.n, -1, dtype=np.int64)
    if lib is not None:
        dist = np.empty(g.n, dtype=np.int64)
        win, tg = _b(within), _b(target)
        hit = lib.nearest(g.n, native.ptr(g.offsets), native.ptr(g.targets), native.ptr(win),
                          native.ptr(starts), native.ptr(sdepth), len(starts), native.ptr(tg),
                          native.ptr(pred), native.ptr(pedge), native.ptr(dist))
        if hit == -2:
            raise MemoryError("liveness: no memory for the search of the nearest fair cycle")
        return int(hit), pred, pedge
    off, tgt, win, tg = g.offsets.tolist(), g.targets.tolist(), within.tolist(), target.tolist()
    dist: dict[int, int] = {}
    by_depth: dict[int, list[int]] = {}
    for s, d in zip(starts.tolist(), sdepth.tolist()):
        if d < dist.get(s, 1 << 62):
            dist[s] = d
        by_depth.setdefault(d, []).append(s)
    cur: list[int] = []
    d, last = 0, max(by_depth, default=0)
    while cur or d <= last:
        cur += [s for s in by_depth.get(d, []) if dist[s] == d and pred[s] < 0]
        cur.sort()
        for u in cur:
            if tg[u]:
                return u, pred, pedge
        nxt = []
        for u in cur:
            for e in range(off[u], off[u + 1]):
                v = tgt[e]
                if win[v] and dist.get(v, 1 << 62) > d + 1:
                    dist[v] = d + 1
                    pred[v], pedge[v] = u, e
                    nxt.append(v)
        cur, d = nxt, d + 1
    return -1, pred, pedge
