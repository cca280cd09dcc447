"""Refinement between two Büchi transition systems with termination and abort: decided exactly.

`spec ⊑ impl` holds when every trace of `impl` is a trace of `spec`, where a trace is a finite
word (an incomplete prefix, or one ending in ✓ or ↯) or an infinite word whose run takes
infinitely many accepting steps, and where a system that can abort after a prefix w allows
every trace that extends w (abort closure). An automaton offers `initial()` ->
[(letter, config)], `steps(config)` -> [(letter, config, accepting)], `done(config)` and
`aborts(config)`.

Finite traces are compared by the subset construction: explore pairs (impl config, set of spec
configs after the same word) breadth-first, so the counterexample found is a shortest one.
Infinite traces are compared by the Ramsey-based method (Sistla, Vardi and Wolper; Fogarty and
Vardi): each finite word w has a *graph* g_w, the set of (p, q, f) such that the spec automaton
can go from p to q reading w, f telling whether an accepting step can be on the way. Graphs
are finitely many and compose. impl ⊄ spec on infinite words iff some word u·v^ω is accepted by
impl (u reaches an impl state a, v loops at a through an accepting step) while for g = g_v
idempotent (g·g = g) no spec state p reached by u has (p, q) ∈ g with an accepting (q, q) ∈ g.
The search enumerates the pairs (impl arc, graph) reachable by words. `limit` bounds both the
pairs of the subset construction and the word classes of the Ramsey search; reaching it makes
the answer inconclusive, never wrong.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

SINK = "⊥"  # the spec after an abort: it accepts every continuation


class Automaton(Protocol):
    def initial(self) -> list[tuple[Hashable, Hashable]]: ...

    def steps(self, config: Any) -> list[tuple[Hashable, Hashable, bool]]: ...

    def done(self, config: Any) -> bool: ...

    def aborts(self, config: Any) -> bool: ...


@dataclass
class Counterexample:
    """A trace of impl that spec lacks: letters, then how it ends ("prefix", "done", "abort") or a loop."""

    word: list[Hashable]
    end: str  # "prefix" | "done" | "abort" | "infinite"
    loop: list[Hashable] | None = None


@dataclass
class Verdict:
    """The answer to spec ⊑ impl: holds, or a counterexample; inconclusive when the limit was reached."""

    holds: bool | None
    counterexample: Counterexample | None = None
    graphs: int = 0  # word classes explored by the infinite-trace check
    pairs: int = 0  # (impl config, spec subset) pairs explored by the finite-trace check
    note: str = ""


class _Spec:
    """The spec automaton with aborts redirected to SINK, and interned states."""

    def __init__(self, a: Automaton):
        self.a = a
        self.ids: dict[Any, int] = {SINK: 0}
        self.configs: list[Any] = [SINK]
        self._moves: dict[tuple[int, Hashable], frozenset[tuple[int, bool]]] = {}

    def intern(self, config: Any) -> int:
        if self.a.aborts(config):
            return 0
        i = self.ids.get(config)
        if i is None:
            i = self.ids[config] = len(self.configs)
            self.configs.append(config)
        return i

    def initial(self, letter: Hashable) -> frozenset[int]:
        return frozenset(self.intern(c) for lt, c in self.a.initial() if lt == letter)

    def moves(self, p: int, letter: Hashable) -> frozenset[tuple[int, bool]]:
        """(successor, accepting) of spec state p on letter."""
        key = (p, letter)
        r = self._moves.get(key)
        if r is None:
            if p == 0:
                r = frozenset({(0, True)})
            else:
                best: dict[int, bool] = {}
                for lt, c, m in self.a.steps(self.configs[p]):
                    if lt == letter:
                        q = self.intern(c)
                        best[q] = best.get(q, False) or m or q == 0
                r = frozenset(best.items())
            self._moves[key] = r
        return r

    def done(self, p: int) -> bool:
        return p == 0 or self.a.done(self.configs[p])


class _Budget:
    """A count limit and an optional time limit shared by both phases of a check."""

    def __init__(self, limit: int, seconds: float | None):
        self.limit = limit
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.seconds = seconds

    def spent(self, count: int) -> bool:
        if count > self.limit:
            return True
        return self.deadline is not None and time.monotonic() > self.deadline

    def note(self, what: str) -> str:
        within = f" or its time budget of {self.seconds:g} s" if self.seconds is not None else ""
        return f"the {what} check reached its limit of {self.limit:,} steps{within}"


def refines(spec: Automaton, impl: Automaton, limit: int = 200_000, seconds: float | None = None) -> Verdict:
    """Decide spec ⊑ impl (every trace of impl is one of spec, modulo spec's aborts); `limit` and
    `seconds` bound the work, and a check that reaches them is inconclusive."""
    s = _Spec(spec)
    budget = _Budget(limit, seconds)
    finite = _finite(s, impl, budget)
    if finite is None:
        return Verdict(None, note=budget.note("finite-trace"))
    if isinstance(finite, Counterexample):
        return Verdict(False, finite)
    pairs, prefix_arcs = finite
    inf = _infinite(s, impl, prefix_arcs, budget)
    if isinstance(inf, Counterexample):
        return Verdict(False, inf, pairs=pairs)
    if inf is None:
        return Verdict(None, pairs=pairs, note=budget.note("infinite-trace"))
    return Verdict(True, pairs=pairs, graphs=inf)


def _finite(s: _Spec, impl: Automaton, budget: _Budget) -> Counterexample | tuple[int, dict] | None:
    """Subset construction: the first counterexample, or (pairs explored, prefix arcs by impl config);
    None if the budget ran out."""
    start = []
    for letter, c in impl.initial():
        start.append(((c, s.initial(letter)), [letter]))
    seen: dict[tuple, list] = {}
    queue: deque = deque()
    for key, word in start:
        if key not in seen:
            seen[key] = word
            queue.append(key)
    arcs: dict[Any, list[tuple[frozenset[int], list]]] = {}
    while queue:
        key = queue.popleft()
        c, subset = key
        word = seen[key]
        if 0 in subset:
            continue  # the spec has aborted: every continuation is allowed
        if not subset:
            return Counterexample(word, "prefix")
        if impl.aborts(c):
            return Counterexample(word, "abort")
        if impl.done(c) and not any(s.done(p) for p in subset):
            return Counterexample(word, "done")
        arcs.setdefault(c, []).append((subset, word))
        for letter, c2, _ in impl.steps(c):
            nxt = frozenset(q for p in subset for q, _ in s.moves(p, letter))
            k2 = (c2, nxt)
            if k2 not in seen:
                if budget.spent(len(seen)):
                    return None
                seen[k2] = word + [letter]
                queue.append(k2)
    return len(seen), arcs


Graph = tuple[int, ...]
"""A word's graph over the spec states 0..k-1 (local numbering): for each p, the bitmask of states q it can
reach reading the word, then the bitmask of those it can reach through an accepting step: (r0, a0, r1, a1, ...)."""


def _compose(g: Graph, h: Graph) -> Graph:
    out = []
    for i in range(0, len(g), 2):
        r, a = g[i], g[i + 1]
        reach = acc = 0
        m = r
        while m:
            low = m & -m
            q = 2 * (low.bit_length() - 1)
            reach |= h[q]
            acc |= h[q + 1]
            m ^= low
        m = a
        while m:
            low = m & -m
            acc |= h[2 * (low.bit_length() - 1)]
            m ^= low
        out += (reach, acc)
    return tuple(out)


def _infinite(s: _Spec, impl: Automaton, prefix_arcs: dict, budget: _Budget) -> Counterexample | int | None:
    """Ramsey-based search for an infinite trace of impl that spec lacks (None: the limit was reached)."""
    count = 0
    for a, prefixes in prefix_arcs.items():
        # The spec states that matter: those after the prefixes, closed under the letters impl reads from a.
        local = sorted(_close(s, impl, a, set().union(*(sub for sub, _ in prefixes))))
        pos = {p: i for i, p in enumerate(local)}
        letter_graphs: dict[Hashable, Graph] = {}

        def letter_graph(letter: Hashable) -> Graph:
            g = letter_graphs.get(letter)
            if g is None:
                out = []
                for p in local:
                    reach = acc = 0
                    for q, f in s.moves(p, letter):
                        reach |= 1 << pos[q]
                        if f:
                            acc |= 1 << pos[q]
                    out += (reach, acc)
                g = letter_graphs[letter] = tuple(out)
            return g

        starts = [(sum(1 << pos[p] for p in sub), word) for sub, word in prefixes]
        frontier: deque = deque()
        seen: dict[tuple, tuple] = {}
        for letter, c2, m in impl.steps(a):
            if not impl.aborts(c2):
                key = (c2, m, letter_graph(letter))
                if key not in seen:
                    seen[key] = (None, letter)
                    frontier.append(key)
        while frontier:
            key = frontier.popleft()
            c, acc, g = key
            count += 1
            if budget.spent(count):
                return None
            if c == a and acc:
                cex = _check_loop(starts, g, key, seen)
                if cex is not None:
                    return cex
            for letter, c2, m in impl.steps(c):
                if impl.aborts(c2):
                    continue
                k2 = (c2, acc or m, _compose(g, letter_graph(letter)))
                if k2 not in seen:
                    seen[k2] = (key, letter)
                    frontier.append(k2)
    return count


def _close(s: _Spec, impl: Automaton, a: Any, sources: set[int]) -> set[int]:
    """Spec states reachable from `sources` on the letters of words that impl can read from a."""
    out = set(sources)
    seen = {a}
    todo = deque([a])
    letters: set[Hashable] = set()
    while todo:
        c = todo.popleft()
        for letter, c2, _ in impl.steps(c):
            letters.add(letter)
            if c2 not in seen:
                seen.add(c2)
                todo.append(c2)
    pending = deque(sources)
    while pending:
        p = pending.popleft()
        for letter in letters:
            for q, _ in s.moves(p, letter):
                if q not in out:
                    out.add(q)
                    pending.append(q)
    return out


def _check_loop(starts: list[tuple[int, list]], g: Graph, key: tuple, seen: dict) -> Counterexample | None:
    """A counterexample u·v^ω if g = g_v is idempotent and no spec state after some prefix u reaches,
    by v, a state with an accepting v-loop."""
    if _compose(g, g) != g:
        return None
    looping = 0
    for i in range(0, len(g), 2):
        if g[i + 1] >> (i // 2) & 1:
            looping |= 1 << (i // 2)
    for mask, word in starts:
        m, good = mask, False
        while m and not good:
            low = m & -m
            good = bool(g[2 * (low.bit_length() - 1)] & looping)
            m ^= low
        if not good:
            return Counterexample(word, "infinite", _word(key, seen))
    return None


def _word(key: tuple, seen: dict) -> list[Hashable]:
    out = []
    while key is not None:
        key, letter = seen[key]
        out.append(letter)
    return out[::-1]


def accepts_lasso(a: Automaton, stem: list[Hashable], loop: list[Hashable]) -> bool:
    """Whether automaton `a` (with abort closure) has the infinite trace stem·loop^ω: an independent check."""
    current = {c for lt, c in a.initial() if lt == stem[0]}
    for letter in stem[1:]:
        if any(a.aborts(c) for c in current):
            return True
        current = {c2 for c in current for lt, c2, _ in a.steps(c) if lt == letter}
    if any(a.aborts(c) for c in current):
        return True
    # Product of a with the loop word: nodes (config, position); look for a reachable cycle with an accepting step.
    n = len(loop)
    edges: dict[tuple, list[tuple[tuple, bool]]] = {}
    nodes = {(c, 0) for c in current}
    todo = deque(nodes)
    while todo:
        node = todo.popleft()
        c, i = node
        if a.aborts(c):
            return True
        out = []
        for lt, c2, m in a.steps(c):
            if lt == loop[i]:
                nxt = (c2, (i + 1) % n)
                out.append((nxt, m))
                if nxt not in nodes:
                    nodes.add(nxt)
                    todo.append(nxt)
        edges[node] = out
    import networkx as nx  # imported when a refinement is decided

    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((u, v) for u, outs in edges.items() for v, _ in outs)
    for comp in nx.strongly_connected_components(graph):
        for u in comp:
            for v, m in edges.get(u, ()):
                if m and v in comp:
                    return True
    return False
