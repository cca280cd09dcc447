"""The distance-2 colouring proofs: each fact as expected, the solver's answers checked, the script runs."""

from __future__ import annotations

import subprocess
import sys

import networkx as nx
import pytest
import z3

from lockstep.proofs import d2_coloring, facts

HEAVY = {"D2Coloring colours every tree with 9 nodes, from every initiator, with Δ+1 colours"}


@pytest.mark.parametrize("fact", [
    pytest.param(f, marks=pytest.mark.slow) if f.statement in HEAVY else f for f in d2_coloring.FACTS
], ids=lambda f: f.statement)
def test_fact_comes_out_as_expected(fact):
    result = facts.run([fact])[0]
    assert result.outcome.verdict == fact.expected, result.line()


@pytest.mark.parametrize("delta", [3, 8])
def test_the_star_with_delta_colours_is_unsat_and_with_one_more_sat(delta):
    star = nx.star_graph(delta)
    assert d2_coloring.colourable(star, delta) == z3.unsat
    s, x = d2_coloring.colouring(star, delta + 1)
    assert s.check() == z3.sat
    m = s.model()
    colour = {v: next(j for j in range(delta + 1) if z3.is_true(m.eval(x[v][j]))) for v in star.nodes}
    assert sorted(colour.values()) == list(range(delta + 1))


def test_a_wrong_colouring_is_not_accepted():
    """Pinning a colouring with two siblings alike makes the constraints unsat (the check can fail)."""
    path = nx.path_graph(3)
    s, x = d2_coloring.colouring(path, 3)
    s.add(x[0][1], x[1][0], x[2][1])
    assert s.check() == z3.unsat


@pytest.mark.slow
def test_module_runs_as_a_script():
    run = subprocess.run([sys.executable, "-m", "lockstep.proofs.d2_coloring"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout.splitlines()) == len(d2_coloring.FACTS)
