"""The compact liveness graph's algorithms: the C library and the Python fallback agree on random graphs (fair
components, reachability, nearest target), and a known graph has the components the Streett check says."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.liveness import native, scc
from lockstep.checker.liveness.graph import StateGraph

needs_c = pytest.mark.skipif(native.library() is None, reason="no C compiler")


def graph(n: int, edges: list[tuple[int, int, int]], label_cons: list[int],
          extra: dict[int, set[int]] | None = None) -> StateGraph:
    """States 0..n-1, steps (source, label, target) kept in source order."""
    edges = sorted(edges, key=lambda e: e[0])
    counts = np.bincount([e[0] for e in edges], minlength=n) if edges else np.zeros(n, dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return StateGraph(offsets=offsets, targets=np.array([e[2] for e in edges], dtype=np.int32),
                      labels=np.array([e[1] for e in edges], dtype=np.int32),
                      label_cons=np.array(label_cons, dtype=np.int32), parent=np.full(n, -1, dtype=np.int64),
                      parent_label=np.full(n, -1, dtype=np.int32), depth=np.zeros(n, dtype=np.int32),
                      expanded=np.ones(n, dtype=bool), initial=np.array([0], dtype=np.int64),
                      label_of=lambda lid: lid, state_of=lambda i: i, evaluate=lambda p: [], extra=extra or {})


def partition(comp: np.ndarray) -> set[frozenset[int]]:
    return {frozenset(np.flatnonzero(comp == c).tolist()) for c in set(comp.tolist()) - {-1}}


def test_streett_check_on_a_known_graph():
    """0 <-> 1 by label 0 (WF c0) and 1 <-> 2 by label 1 (SF c1): one SCC that takes both, fair. Without the
    step 2 -> 1, the SCC {0, 1} enables c1 (in state 1) and never takes it: state 1 goes, and {0} is no cycle."""
    kinds = np.array([1, 2], dtype=np.uint8)
    g = graph(3, [(0, 0, 1), (1, 0, 0), (1, 1, 2), (2, 1, 1)], [0, 1])
    comp, k = scc.fair_components(g, np.ones(3, dtype=bool), None, kinds)
    assert k == 1 and partition(comp) == {frozenset({0, 1, 2})}
    g = graph(3, [(0, 0, 1), (1, 0, 0), (1, 1, 2)], [0, 1])
    comp, k = scc.fair_components(g, np.ones(3, dtype=bool), None, kinds)
    assert k == 0 and (comp == -1).all()
    # weak: a cycle 0 -> 1 -> 0 by label 0 (no constraint) while c0 (weak, label 1) is enabled in both and untaken
    g = graph(3, [(0, 0, 1), (1, 0, 0), (0, 1, 2), (1, 1, 2)], [-1, 0])
    assert scc.fair_components(g, np.ones(3, dtype=bool), None, np.array([1], dtype=np.uint8))[1] == 0
    # ... unless state 1 disables it
    g = graph(3, [(0, 0, 1), (1, 0, 0), (0, 1, 2)], [-1, 0])
    assert partition(scc.fair_components(g, np.ones(3, dtype=bool), None, np.array([1], dtype=np.uint8))[0]) == \
        {frozenset({0, 1})}
    # an extra enabled constraint (a step past the state bound) counts as enabled
    g = graph(3, [(0, 0, 1), (1, 0, 0), (0, 1, 2)], [-1, 0], extra={1: {0}})
    assert scc.fair_components(g, np.ones(3, dtype=bool), None, np.array([1], dtype=np.uint8))[1] == 0


@st.composite
def random_graphs(draw):
    n = draw(st.integers(1, 12))
    labels = draw(st.integers(1, 4))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, labels - 1), st.integers(0, n - 1)),
                          max_size=30, unique=True))
    ncons = draw(st.integers(0, 3))
    label_cons = [draw(st.integers(-1, ncons - 1)) for _ in range(labels)]
    kinds = [draw(st.sampled_from([1, 2])) for _ in range(ncons)]
    extra = draw(st.dictionaries(st.integers(0, n - 1), st.sets(st.integers(0, ncons - 1), min_size=1), max_size=2)) \
        if ncons else {}
    region = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    accepting = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n)))
    return n, edges, label_cons, kinds, extra, region, accepting


@needs_c
@settings(max_examples=300, deadline=None)
@given(random_graphs())
def test_c_and_python_agree(case):
    n, edges, label_cons, kinds, extra, region, accepting = case
    g = graph(n, edges, label_cons, extra)
    reg = np.array(region, dtype=bool)
    acc = None if accepting is None else np.array(accepting, dtype=bool)
    k = np.array(kinds, dtype=np.uint8)
    c_comp, c_k = scc.fair_components(g, reg, acc, k)
    p_comp, p_k = scc.fair_components(g, reg, acc, k, python=True)
    assert c_k == p_k and partition(c_comp) == partition(p_comp)
    assert (scc.fair_enabled(g) == scc.fair_enabled(g, python=True)).all()
    starts = np.flatnonzero(reg)[:3]
    reach_c, reach_p = scc.reach_within(g, starts, reg), scc.reach_within(g, starts, reg, python=True)
    assert (reach_c == reach_p).all()
    target = (c_comp >= 0) | ~scc.fair_enabled(g)
    hc, pc, ec = scc.nearest(g, starts, reach_c, target)
    hp, pp, ep = scc.nearest(g, starts, reach_c, target, python=True)
    assert hc == hp and (pc == pp).all() and (ec == ep).all()


@st.composite
def mostly_forward_graphs(draw):
    """Graphs whose steps mostly go to higher numbers (as breadth-first ones without cycles do), with a few others."""
    n = draw(st.integers(2, 60))
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
    forward = [(min(a, b), 0, max(a, b)) for a, b in draw(st.lists(pairs, max_size=120)) if a != b]
    other = [(a, 1, b) for a, b in draw(st.lists(pairs, max_size=3))]
    region = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda r: sum(r) > n // 2))
    return n, sorted(set(forward + other)), region


def on_a_cycle(g: StateGraph, region: np.ndarray) -> np.ndarray:
    """By brute force: the states of `region` that reach themselves in one step or more inside it."""
    out = np.zeros(g.n, dtype=bool)
    for v in np.flatnonzero(region).tolist():
        seen, todo = set(), [w for w, _ in g.steps(v) if region[w]]
        while todo and not out[v]:
            u = todo.pop()
            out[v] = u == v
            if u not in seen:
                seen.add(u)
                todo += [w for w, _ in g.steps(u) if region[w]]
    return out


@needs_c
@settings(max_examples=200, deadline=None)
@given(mostly_forward_graphs())
def test_the_region_cut_to_cycles_keeps_every_fair_component(case):
    """The C decomposition first cuts the region to the states reachable from the targets of steps that do not rise
    in number: that keeps every state on a cycle, so the fair components are those of the whole region."""
    n, edges, region = case
    g = graph(n, edges, [0, 1])
    reg = np.array(region, dtype=bool)
    assert not (on_a_cycle(g, reg) & ~scc.on_cycles(g, reg)).any()
    for kinds in ([1, 1], [2, 1], [1, 2]):
        k = np.array(kinds, dtype=np.uint8)
        c_comp, c_k = scc.fair_components(g, reg, None, k)
        p_comp, p_k = scc.fair_components(g, reg, None, k, python=True)
        assert c_k == p_k and partition(c_comp) == partition(p_comp)


def test_a_graph_without_cycles_has_no_fair_component_and_none_is_searched():
    """A breadth-first graph without cycles: one pass over its steps finds none that does not rise, and leaves the
    region empty (the decomposition is not run)."""
    g = graph(5, [(0, 0, 1), (0, 0, 2), (1, 0, 3), (2, 0, 3), (3, 0, 4)], [0])
    assert not scc.on_cycles(g, np.ones(5, dtype=bool)).any()
    comp, k = scc.fair_components(g, np.ones(5, dtype=bool), None, np.array([1], dtype=np.uint8))
    assert k == 0 and (comp == -1).all()
    g = graph(5, [(0, 0, 1), (0, 0, 2), (1, 0, 3), (2, 0, 3), (3, 0, 4), (4, 0, 4)], [0])  # a step to itself
    assert scc.on_cycles(g, np.ones(5, dtype=bool)).tolist() == [False, False, False, False, True]
    comp, k = scc.fair_components(g, np.ones(5, dtype=bool), None, np.array([1], dtype=np.uint8))
    assert k == 1 and partition(comp) == {frozenset({4})}
