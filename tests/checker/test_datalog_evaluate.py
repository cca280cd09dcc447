"""The evaluator (semi-naive, numpy) against networkx and scipy on random graphs; PreM verdicts required for an
aggregate in recursion; divergence; stratified and recursive count and sum."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from lockstep.checker.datalog.evaluate import Divergence, NotPreM, evaluate
from lockstep.specs.datalog.analysis import analyse
from lockstep.specs.datalog.catalog import load
from lockstep.specs.datalog.parser import parse


def test_recursive_aggregate_without_prem_verdict_is_refused():
    prog = analyse(load("sssp"))
    with pytest.raises(NotPreM, match="needs a PreM proof"):
        evaluate(prog, {"edge": np.array([[0, 1, 1]])})
    with pytest.raises(NotPreM, match="is not PreM"):
        evaluate(prog, {"edge": np.array([[0, 1, 1]])}, {s: False for s in prog.sites})


def run(name: str, edges: np.ndarray, **params):
    prog = analyse(load(name), params)
    return evaluate(prog, {"edge": edges}, {s: True for s in prog.sites})


# ------------------------------------------------------------------------- against networkx / scipy


@st.composite
def weighted_graphs(draw, max_nodes=12, lo=0, hi=9):
    n = draw(st.integers(1, max_nodes))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=4 * n))
    ws = draw(st.lists(st.integers(lo, hi), min_size=len(pairs), max_size=len(pairs)))
    return np.array([(u, v, w) for (u, v), w in zip(pairs, ws)], dtype=np.int64).reshape(-1, 3)


def digraph(edges: np.ndarray) -> nx.DiGraph:
    g = nx.DiGraph()
    for u, v, w in edges.tolist():  # parallel edges: the lightest counts
        if not g.has_edge(u, v) or g[u][v]["weight"] > w:
            g.add_edge(u, v, weight=w)
    return g


@settings(max_examples=60, deadline=None)
@given(weighted_graphs())
def test_sssp_equals_dijkstra(edges):
    src = int(edges[0, 0])
    res = run("sssp", edges, source=src)
    assert res.mapping("sp") == nx.single_source_dijkstra_path_length(digraph(edges), src)


@settings(max_examples=60, deadline=None)
@given(weighted_graphs(lo=1))  # csgraph reads an explicit zero as a missing edge
def test_sssp_equals_scipy_csgraph(edges):
    src = int(edges[0, 0])
    n = int(edges[:, :2].max()) + 1
    g = digraph(edges)
    m = sp.csr_matrix(([float(d) for _, _, d in g.edges(data="weight")],
                       ([u for u, _ in g.edges()], [v for _, v in g.edges()])), shape=(n, n))
    dist = csgraph.dijkstra(m, indices=src)
    ours = run("sssp", edges, source=src).mapping("sp")
    assert ours == {i: round(d) for i, d in enumerate(dist) if np.isfinite(d)}


@settings(max_examples=60, deadline=None)
@given(weighted_graphs())
def test_cc_equals_connected_components(edges):
    pairs = edges[:, :2]
    res = run("cc", pairs)
    g = nx.Graph(pairs.tolist())
    assert res.mapping("cc") == {v: min(c) for c in nx.connected_components(g) for v in c}
    n = int(pairs.max()) + 1
    ncomp, labels = csgraph.connected_components(sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])),
                                                               shape=(n, n)), directed=False)
    present = sorted(set(pairs.ravel().tolist()))
    assert len(set(res.mapping("cc").values())) == len({labels[v] for v in present})


@settings(max_examples=60, deadline=None)
@given(weighted_graphs())
def test_reach_equals_descendants(edges):
    src = int(edges[0, 0])
    res = run("reach", edges[:, :2], source=src)
    g = digraph(edges)
    assert res.set("reach") == {src} | nx.descendants(g, src)


@settings(max_examples=40, deadline=None)
@given(weighted_graphs(max_nodes=8))
def test_apsp_equals_floyd_warshall(edges):
    res = run("apsp", edges).mapping("path")
    g = digraph(edges)
    n = int(edges[:, :2].max()) + 1
    fw = nx.floyd_warshall_numpy(g, nodelist=range(n)) if g.number_of_nodes() == n else None
    expect = {(x, y): d for x, row in nx.all_pairs_dijkstra_path_length(g) for y, d in row.items() if x != y}
    assert {k: v for k, v in res.items() if k[0] != k[1]} == expect
    # a diagonal entry is the lightest cycle through the node
    for (x, y), d in res.items():
        if x == y:
            assert d == min(w + (0 if v == x else expect.get((v, x), np.inf)) for _, v, w in g.out_edges(x, data="weight"))
    if fw is not None:
        for (x, y), d in expect.items():
            assert fw[x, y] == d


def test_negative_cycle_diverges():
    edges = np.array([[0, 1, 1], [1, 2, -3], [2, 1, 1]])
    prog = analyse(load("sssp"))
    with pytest.raises(Divergence, match="has not settled"):
        evaluate(prog, {"edge": edges}, {s: True for s in prog.sites}, max_iterations=50)


def test_negative_weights_without_cycle_converge():
    edges = np.array([[0, 1, 4], [0, 2, 1], [2, 1, -2], [1, 3, 1]])
    assert run("sssp", edges).mapping("sp") == {0: 0, 1: -1, 2: 1, 3: 0}


def test_count_and_sum_stratified():
    prog = analyse(parse(".input e(a, b, w).\nindeg(Y, count<X>) <- e(X, Y, _).\nload(Y, sum<W>) <- e(X, Y, W).\n"
                         "busy(Y) <- indeg(Y, N), N >= 2."))
    res = evaluate(prog, {"e": np.array([[0, 2, 5], [1, 2, 5], [0, 1, 3], [0, 2, 7]])})
    assert res.mapping("indeg") == {1: 1, 2: 2}
    assert res.mapping("load") == {1: 3, 2: 17}
    assert res.set("busy") == {2}


def test_monotone_count_in_recursion_with_upward_threshold():
    # a node joins once two joined nodes point at it: count in recursion, PreM (the threshold is upward closed)
    text = (".input e(a, b).\njoined(X) <- e(X, _), X <= 1.\nsupport(Y, count<X>) <- joined(X), e(X, Y).\n"
            "joined(Y) <- support(Y, N), N >= 2.")
    prog = analyse(parse(text))
    edges = np.array([[0, 2], [1, 2], [2, 3], [0, 3], [3, 4], [1, 5]])
    res = evaluate(prog, {"e": edges}, {s: True for s in prog.sites})
    assert res.set("joined") == {0, 1, 2, 3}
