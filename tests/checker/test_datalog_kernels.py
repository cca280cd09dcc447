"""The Datalog evaluator's compiled passes against numpy's: each pass on random inputs (both ends of int64
included), and whole evaluations (every relation, in order, and the rounds of each recursion) of the shipped
programs and of programs whose recursive rule is joined and aggregated in one compiled pass; the recursions the
compiled passes propagate in place, against numpy's semi-naive rounds and the reference semantics."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.datalog.evaluate import Divergence, Evaluator
from lockstep.checker.datalog.kernels import compiled
from lockstep.checker.datalog.relations import NUMPY
from lockstep.specs.datalog import semantics
from lockstep.specs.datalog.analysis import analyse
from lockstep.specs.datalog.catalog import load
from lockstep.specs.datalog.parser import parse

C = compiled()
needs_c = pytest.mark.skipif(C is None, reason="no C compiler: the engine runs numpy's passes only")
I64 = np.iinfo(np.int64)
anyint = st.one_of(st.integers(I64.min, I64.max), st.integers(-40, 40), st.integers(0, 1 << 40))


def arr(xs: list[int]) -> np.ndarray:
    return np.array(xs, dtype=np.int64)


@needs_c
@settings(max_examples=150, deadline=None)
@given(st.lists(anyint, max_size=300))
def test_sort(xs):
    assert C.sort(arr(xs)).tolist() == sorted(xs)


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=100))
def test_offsets(codes):
    for got, want in zip(C.offsets(arr(codes), 31), NUMPY.offsets(arr(codes), 31)):
        assert got.tolist() == want.tolist()
    for lo in (-9, 1 << 40):  # codes from lo
        for got, want in zip(C.offsets(arr(codes) + lo, 31, lo), NUMPY.offsets(arr(codes) + lo, 31, lo)):
            assert got.tolist() == want.tolist()


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), anyint, anyint), max_size=100), st.sampled_from([-9, 0, 1 << 40]))
def test_group_rows(rows, lo):
    codes = arr([c for c, _, _ in rows]) + lo
    a, b = arr([x for _, x, _ in rows]), arr([y for _, _, y in rows])
    for cols in ([a, b], [None, b], [a, None], [a]):
        (indptr, got), (want_indptr, want) = C.group_rows(codes, 31, lo, cols), NUMPY.group_rows(codes, 31, lo, cols)
        assert indptr.tolist() == want_indptr.tolist()
        assert [None if x is None else x.tolist() for x in got] == [None if x is None else x.tolist() for x in want]


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 6)), max_size=60))
def test_expand(ranges):
    probes = arr(list(range(0, 3 * len(ranges), 3)))
    start, stop = arr([a for a, _ in ranges]), arr([a + k for a, k in ranges])
    for got, want in zip(C.expand(probes, start, stop), NUMPY.expand(probes, start, stop)):
        assert got.tolist() == want.tolist()


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.sets(st.integers(0, 1 << 62), min_size=1, max_size=80), st.sets(st.integers(0, 1 << 62), min_size=1, max_size=80))
def test_merge_sorted(old, new):
    a, b = arr(sorted(old)), arr(sorted(new))
    merged, fresh = C.merge_sorted(a, b)
    assert merged.tolist() == sorted(old | new) and fresh.tolist() == sorted(new - old)
    assert [x.tolist() for x in NUMPY.merge_sorted(a, b)] == [merged.tolist(), fresh.tolist()]
    assert C.fresh_sorted(a, b).tolist() == NUMPY.fresh_sorted(a, b).tolist() == fresh.tolist()


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), anyint), min_size=1, max_size=80), st.sampled_from(["min", "max"]))
def test_best_in_table(pairs, func):
    codes, vals = arr([c for c, _ in pairs]), arr([v for _, v in pairs])
    got, want = C.best_in_table(codes, vals, func, 41), NUMPY.best_in_table(codes, vals, func, 41)
    assert [x.tolist() for x in got] == [x.tolist() for x in want]
    for lo in (-9, 1 << 40):  # codes from lo
        from_lo = C.best_in_table(codes + lo, vals, func, 41, lo), NUMPY.best_in_table(codes + lo, vals, func, 41, lo)
        assert all([x.tolist() for x in pair] == [x.tolist() for x in want] for pair in from_lo)


MAX_LABEL = """
.input edge(from, to).
link(X, Y) <- edge(X, Y).
top(X, max<X>) <- link(X, _).
top(Y, max<Z>) <- top(X, Z), link(X, Y).
"""
# the value from the other atom, the group from either: nodes that reach node 0, each with the lightest of its
# edges into such a node or out of it
BACK = """
.input edge(from, to, weight).
light(X, min<W>) <- edge(X, _, W), X = 0.
light(X, min<W>) <- light(Y, _), edge(X, Y, W).
light(X, min<W>) <- light(X, _), edge(X, _, W).
"""
# a rule with a comparison beside one of the one-pass shape: the recursion is evaluated semi-naively
FILTERED = MAX_LABEL + "top(Y, max<Z>) <- top(X, Z), link(Y, X), Y != 7.\n"


class Spy:
    """The compiled passes, counting the recursions taken to their fixpoint by `propagate` and the one-pass joins
    and aggregates of semi-naive rounds (`join_best`)."""

    def __init__(self):
        self.propagated = self.joined = 0

    def __getattr__(self, name):
        return getattr(C, name)

    def propagate(self, *args):
        self.propagated += 1
        return C.propagate(*args)

    def join_best(self, *args):
        self.joined += 1
        return C.join_best(*args)


def same(prog, inputs, propagated: int = 0) -> tuple[dict, dict, Spy]:
    """Both evaluations' relations (the same, in the same order), the compiled one's rounds and its calls.
    `propagated` recursions are taken by chaotic iteration in C, in at most as many sweeps as numpy's semi-naive
    rounds; the others in as many rounds."""
    sites = {s: True for s in prog.sites}
    spy = Spy()
    a = Evaluator(prog, inputs, sites, kernels=spy).run()
    b = Evaluator(prog, inputs, sites, kernels=NUMPY).run()
    assert spy.propagated == propagated
    assert set(a.iterations) == set(b.iterations)
    assert all(a.iterations[p] <= b.iterations[p] for p in a.iterations)
    if not propagated:
        assert a.iterations == b.iterations
    assert set(a.relations) == set(b.relations)
    for p in a.relations:
        assert [c.tolist() for c in a.relations[p]] == [c.tolist() for c in b.relations[p]], p
    return a.relations, a.iterations, spy


@needs_c
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", ["cc", "sssp", "reach", "apsp"])
def test_shipped_programs_evaluate_alike(name, seed):
    rng = np.random.default_rng(seed)
    n, m = (40, 120) if name == "apsp" else (300, 900)
    prog = load(name)
    weighted = name in ("sssp", "apsp")
    spread = 1 << 20 if seed == 3 and not weighted else 1  # node ids too far apart for a table: the sorted paths
    cols = [rng.integers(0, n, m) * spread, rng.integers(0, n, m) * spread]
    if weighted:
        cols.append(rng.integers(1, 50, m))
    prog = analyse(prog, {"source": int(cols[0][0])} if name in ("sssp", "reach") else None)
    rels, _, _ = same(prog, {"edge": np.stack(cols, axis=1)}, int(name == "cc" and spread == 1))
    if name == "cc":  # every node of an edge is labelled with the least node of its component
        import networkx as nx

        g = nx.Graph(list(zip(cols[0].tolist(), cols[1].tolist())))
        want = {v: min(c) for c in nx.connected_components(g) for v in c}
        assert dict(zip(rels["cc"][0].tolist(), rels["cc"][1].tolist())) == want


@needs_c
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text, propagated", [(MAX_LABEL, 1), (BACK, 1), (FILTERED, 0)],
                         ids=["max-label", "group-from-delta", "semi-naive"])
def test_one_pass_join_and_aggregate_evaluates_alike(text, propagated, seed):
    rng = np.random.default_rng(seed)
    prog = analyse(parse(text, "t.dl"))
    cols = [rng.integers(-20, 200, 600), rng.integers(-20, 200, 600)]
    if prog.arity["edge"] == 3:
        cols.append(rng.integers(-1000, 1000, 600))
    _, rounds, spy = same(prog, {"edge": np.stack(cols, axis=1)}, propagated)
    assert max(rounds.values()) >= 2
    assert propagated or spy.joined >= max(rounds.values())


def test_without_the_compiled_passes_the_engine_runs_numpys():
    code = ("from lockstep.checker.datalog.kernels import kernels, why\n"
            "from lockstep.checker.datalog.relations import NUMPY\n"
            "assert kernels() is NUMPY, kernels()\n"
            "print(why())\n")
    env = {**os.environ, "LOCKSTEP_NATIVE": "never"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "LOCKSTEP_NATIVE=never"


# recursions taken by chaotic iteration, against the reference semantics
CC_NODES = """
.input node(id).
.input edge(from, to).
link(X, Y) <- edge(X, Y).
link(Y, X) <- edge(X, Y).
cc(X, min<X>) <- node(X).
cc(Y, min<Z>) <- cc(X, Z), link(X, Y).
"""
DIRECTED = """
.input node(id).
.input edge(from, to).
low(X, min<X>) <- node(X).
low(Y, min<Z>) <- low(X, Z), edge(X, Y).
"""
FIRST_STEP = """
.input node(id).
.input edge(from, to).
first(X, min<X>) <- node(X), X <= 5.
first(Y, min<X>) <- first(X, _), edge(X, Y).
"""
CHAOTIC = {"cc": None, "cc-nodes": CC_NODES, "directed": DIRECTED, "max-label": MAX_LABEL, "first-step": FIRST_STEP,
           "group-from-delta": BACK}


def components_graph(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, edges): nodes of many small components, the first without edges (when there are two nodes or more),
    self-loops, a parallel and a two-way edge, ids scattered over a range that includes negatives."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(np.arange(-60, 140), size=int(rng.integers(1, 70)), replace=False)
    comp = rng.integers(0, max(1, len(ids) // int(rng.integers(2, 6))), len(ids))
    linked = np.arange(1 if len(ids) > 1 else 0, len(ids))
    edges = []
    for _ in range(int(rng.integers(0, 2 * len(ids) + 1))):
        i = int(rng.choice(linked))
        mates = linked[comp[linked] == comp[i]]
        j = int(rng.choice(mates)) if rng.random() < 0.9 else int(rng.choice(linked))
        edges.append((ids[i], ids[j], int(rng.integers(-5, 30))))
    for i in rng.choice(linked, size=min(3, len(linked)), replace=False):  # self-loops
        edges.append((ids[i], ids[i], int(rng.integers(-5, 30))))
    u, v, w = edges[0]
    edges += [(u, v, w + 1), (v, u, w)]
    return ids, np.array(edges, dtype=np.int64)


@needs_c
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("name", sorted(CHAOTIC))
def test_chaotic_iteration_gives_the_reference_least_model(name, seed):
    prog = analyse(parse(CHAOTIC[name], "t.dl")) if CHAOTIC[name] else analyse(load(name))
    nodes, edges = components_graph(seed)
    inputs = {"edge": edges[:, :prog.arity["edge"]]}
    if "node" in prog.inputs:
        inputs["node"] = nodes.reshape(-1, 1)
    rels, _, _ = same(prog, inputs, 1)
    ref = semantics.least_model(prog, {p: rows.tolist() for p, rows in inputs.items()})
    assert {p: set(zip(*(c.tolist() for c in cols))) for p, cols in rels.items()} == ref
    if name == "cc-nodes":  # every node is labelled with the least node of its component, a node without edges too
        import networkx as nx

        g = nx.Graph(edges[:, :2].tolist())
        g.add_nodes_from(nodes.tolist())
        assert ref["cc"] == {(v, min(c)) for c in nx.connected_components(g) for v in c}


@needs_c
def test_a_propagation_is_bounded_by_max_iterations_as_rounds_are():
    """On a path whose greatest label travels against the sweeps' order, each sweep moves it one node: with fewer
    iterations allowed than that, both evaluations refuse; with enough, both give the label everywhere."""
    prog = analyse(parse(MAX_LABEL, "t.dl"))
    path = np.array([[i + 1, i] for i in range(12)])
    sites = {s: True for s in prog.sites}
    spy = Spy()
    for kernels in (spy, NUMPY):
        with pytest.raises(Divergence, match="has not settled after 6 iterations"):
            Evaluator(prog, {"edge": path}, sites, max_iterations=6, kernels=kernels).run()
        res = Evaluator(prog, {"edge": path}, sites, max_iterations=20, kernels=kernels).run()
        assert res.mapping("top") == {i: 12 for i in range(13)}
    assert spy.propagated == 2
