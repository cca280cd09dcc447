"""Distance-2 colouring of trees: Δ+1 colours are needed and enough, and the algorithm uses exactly that.

For every tree T with 2..9 nodes (`networkx.nonisomorphic_trees`), z3 decides two colouring
problems — one integer colour per node in 0..k-1, different for every pair at distance 1 or 2:
with k = Δ(T)+1 it finds a colouring, with k = Δ(T) it proves there is none (unsat). So the
distance-2 chromatic number of every such tree is Δ+1. The colouring `lockstep.specs.d2_coloring`
computes from each initiator is then checked against the same constraints with k = Δ+1 (with
its colours fixed, they must stay satisfiable). Colours are one-hot Booleans with cardinality
constraints, and each closed neighbourhood (pairwise at distance <= 2) says every colour is used
at most once in it: redundant, but it lets the solver count instead of splitting cases, which
makes the pigeonhole refutations fast. A star with Δ leaves is refuted with Δ colours for
Δ = 1..8: its centre and leaves are pairwise at distance <= 2. Last, why the spec lets a parent
name its children (each node knows its neighbours' labels): with labels 0..Δ (the spec's label
type), no rule that colours a child from its own label alone separates every set of siblings
(Δ = 3..6); with labels 0..Δ-1 such a rule exists (the child's rank among the labels other than
its grandparent's).
"""

from __future__ import annotations

import sys

import networkx as nx
import z3

from lockstep.checker.typed_model import TypedModel
from lockstep.specs.d2_coloring import D2Coloring, near_pairs
from lockstep.specs.lang import build_program
from lockstep.specs.lang.rounds.trees import tree_params

from .facts import PROVED, REFUTED, UNKNOWN, Fact, Outcome, main

MAX_NODES = 9
STARS = range(1, 9)


def colouring(g: nx.Graph, k: int) -> tuple[z3.Solver, list[list[z3.BoolRef]]]:
    """The constraints of a distance-2 colouring of g with colours 0..k-1: x[v][j] says v has colour j."""
    x = [[z3.Bool(f"x{v}_{j}") for j in range(k)] for v in range(g.number_of_nodes())]
    s = z3.SolverFor("QF_FD")
    s.add(*(z3.PbEq([(b, 1) for b in row], 1) for row in x))
    s.add(*(z3.Not(z3.And(x[u][j], x[v][j])) for u, v in near_pairs(g) for j in range(k)))
    for v in g.nodes:  # a closed neighbourhood is pairwise at distance <= 2: each colour at most once in it
        clique = [v, *g.neighbors(v)]
        s.add(*(z3.AtMost(*(x[u][j] for u in clique), 1) for j in range(k)))
    return s, x


def max_degree(g: nx.Graph) -> int:
    return max(d for _, d in g.degree)


def colourable(g: nx.Graph, k: int) -> z3.CheckSatResult:
    return colouring(g, k)[0].check()


def chromatic_is_delta_plus_one(n: int) -> Outcome:
    """Every tree with n nodes has a distance-2 colouring with Δ+1 colours and none with Δ."""
    trees = list(nx.nonisomorphic_trees(n))
    for t in trees:
        d = max_degree(t)
        with_more, with_delta = colourable(t, d + 1), colourable(t, d)
        if with_more == z3.unknown or with_delta == z3.unknown:
            return Outcome(UNKNOWN, f"z3 gave up on the tree {sorted(t.edges)}")
        if with_more != z3.sat or with_delta != z3.unsat:
            return Outcome(REFUTED, f"counterexample: tree {sorted(t.edges)}, Δ={d}: Δ+1 colours {with_more}, "
                                    f"Δ colours {with_delta}")
    return Outcome(PROVED, f"{len(trees)} trees")


def delta_colours_suffice(n: int) -> Outcome:
    """Claim (false): every tree with n nodes can be distance-2 coloured with Δ colours."""
    for t in nx.nonisomorphic_trees(n):
        r = colouring(t, max_degree(t))[0].check()
        if r == z3.unsat:
            return Outcome(REFUTED, f"counterexample: the tree {sorted(t.edges)} (Δ={max_degree(t)}) is unsat")
        if r == z3.unknown:
            return Outcome(UNKNOWN, f"z3 gave up on the tree {sorted(t.edges)}")
    return Outcome(PROVED)


def algorithm_colourings(n: int) -> list[tuple[nx.Graph, int, dict[int, int]]]:
    """(tree, initiator, final colouring) of D2Coloring on every tree with n nodes, from every initiator."""
    out = []
    for t in nx.nonisomorphic_trees(n):
        model = TypedModel(build_program(D2Coloring, tree_params(t)), "d2_coloring")
        for root, s in enumerate(model.initial_states()):
            while True:
                moves = [x for lid, x in model.successors(s) if not model.label(lid).startswith("halt")]
                if not moves:
                    break
                s = moves[0]
            out.append((t, root, model.prog.decode(s)["color"]))
    return out


def algorithm_attains(n: int) -> Outcome:
    """The algorithm's colouring of every tree with n nodes, from every initiator, satisfies the Δ+1 constraints."""
    runs = algorithm_colourings(n)
    for t, root, col in runs:
        k = max_degree(t) + 1
        if any(col[v] is None or not 0 <= col[v] < k for v in t.nodes):
            return Outcome(REFUTED, f"tree {sorted(t.edges)}, initiator {root}: colours outside 0..{k - 1}: {col}")
        s, x = colouring(t, k)
        s.add(*(x[v][col[v]] for v in t.nodes))
        r = s.check()
        if r != z3.sat:
            return Outcome(REFUTED if r == z3.unsat else UNKNOWN,
                           f"tree {sorted(t.edges)}, initiator {root}: colouring {col} is not a model ({r})")
    return Outcome(PROVED, f"{len(runs)} runs")


def star_with_delta_colours(delta: int) -> Outcome:
    """Claim (false): the star with Δ leaves has a distance-2 colouring with Δ colours."""
    r = colourable(nx.star_graph(delta), delta)
    if r == z3.unsat:
        return Outcome(REFUTED, f"unsat: the centre and its {delta} leaves need {delta + 1} colours")
    return Outcome(PROVED if r == z3.sat else UNKNOWN)


def colours_from_own_labels(delta: int, label_values: int) -> Outcome:
    """Claim: a non-root parent of degree Δ that does not name its children can still colour them, each
    child computing its colour from its own label (and what every sibling hears alike: the parent's
    colour, the grandparent's colour and label), when labels range over `label_values` values and are
    distinct among the parent's neighbours. The Δ-1 children may hold any labels other than the
    grandparent's, and any two of those can be siblings, so the rule must be one-to-one on them, into
    the Δ-1 colours other than the parent's and the grandparent's."""
    possible = label_values - 1  # labels a child may hold: all but the grandparent's
    f = [z3.Int(f"colour_of_label_{i}") for i in range(possible)]
    s = z3.Solver()
    s.add(*(z3.And(0 <= x, x < delta - 1) for x in f), z3.Distinct(*f) if possible > 1 else z3.BoolVal(True))
    r = s.check()
    if r == z3.unsat:
        return Outcome(REFUTED, f"{possible} possible labels, {delta - 1} free colours: no one-to-one rule")
    return Outcome(PROVED if r == z3.sat else UNKNOWN, f"{possible} possible labels, {delta - 1} free colours")


FACTS = [
    *(Fact(f"every tree with {n} nodes has distance-2 chromatic number Δ+1", PROVED,
           lambda n=n: chromatic_is_delta_plus_one(n)) for n in range(2, MAX_NODES + 1)),
    Fact(f"every tree with {MAX_NODES} nodes can be distance-2 coloured with Δ colours", REFUTED,
         lambda: delta_colours_suffice(MAX_NODES)),
    *(Fact(f"D2Coloring colours every tree with {n} nodes, from every initiator, with Δ+1 colours", PROVED,
           lambda n=n: algorithm_attains(n)) for n in range(2, MAX_NODES + 1)),
    *(Fact(f"the star with {d} leaves can be distance-2 coloured with {d} colours", REFUTED,
           lambda d=d: star_with_delta_colours(d)) for d in STARS),
    *(Fact(f"Δ = {d}, labels 0..Δ: children can take colours from their own labels, unnamed by their parent",
           REFUTED, lambda d=d: colours_from_own_labels(d, d + 1)) for d in range(3, 7)),
    *(Fact(f"Δ = {d}, labels 0..Δ-1: children can take colours from their own labels, unnamed by their parent",
           PROVED, lambda d=d: colours_from_own_labels(d, d)) for d in range(3, 7)),
]


if __name__ == "__main__":
    sys.exit(main(FACTS))
