"""The Datalog evaluator's compiled passes against numpy's: each pass on random inputs (both ends of int64
included), and whole evaluations (every relation, in order, and the rounds of each recursion) of the shipped
programs and of programs whose recursive rule is joined and aggregated in one compiled pass."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lockstep.checker.datalog.evaluate import Evaluator
from lockstep.checker.datalog.kernels import compiled
from lockstep.checker.datalog.relations import NUMPY
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


@needs_c
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), anyint), min_size=1, max_size=80), st.sampled_from(["min", "max"]))
def test_best_in_table(pairs, func):
    codes, vals = arr([c for c, _ in pairs]), arr([v for _, v in pairs])
    got, want = C.best_in_table(codes, vals, func, 41), NUMPY.best_in_table(codes, vals, func, 41)
    assert [x.tolist() for x in got] == [x.tolist() for x in want]


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


def same(prog, inputs) -> tuple[dict, dict]:
    sites = {s: True for s in prog.sites}
    a = Evaluator(prog, inputs, sites, kernels=C).run()
    b = Evaluator(prog, inputs, sites, kernels=NUMPY).run()
    assert a.iterations == b.iterations
    assert set(a.relations) == set(b.relations)
    for p in a.relations:
        assert [c.tolist() for c in a.relations[p]] == [c.tolist() for c in b.relations[p]], p
    return a.relations, a.iterations


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
    rels, _ = same(prog, {"edge": np.stack(cols, axis=1)})
    if name == "cc":  # every node of an edge is labelled with the least node of its component
        import networkx as nx

        g = nx.Graph(list(zip(cols[0].tolist(), cols[1].tolist())))
        want = {v: min(c) for c in nx.connected_components(g) for v in c}
        assert dict(zip(rels["cc"][0].tolist(), rels["cc"][1].tolist())) == want


@needs_c
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", [MAX_LABEL, BACK], ids=["max-label", "group-from-delta"])
def test_one_pass_join_and_aggregate_evaluates_alike(text, seed):
    rng = np.random.default_rng(seed)
    prog = analyse(parse(text, "t.dl"))
    cols = [rng.integers(-20, 200, 600), rng.integers(-20, 200, 600)]
    if prog.arity["edge"] == 3:
        cols.append(rng.integers(-1000, 1000, 600))
    _, rounds = same(prog, {"edge": np.stack(cols, axis=1)})
    assert max(rounds.values()) >= 2


def test_without_the_compiled_passes_the_engine_runs_numpys():
    code = ("from lockstep.checker.datalog.kernels import kernels, why\n"
            "from lockstep.checker.datalog.relations import NUMPY\n"
            "assert kernels() is NUMPY, kernels()\n"
            "print(why())\n")
    env = {**os.environ, "LOCKSTEP_NATIVE": "never"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "LOCKSTEP_NATIVE=never"
