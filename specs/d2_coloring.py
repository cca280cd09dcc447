"""Distance-2 colouring of a synchronous broadcast/receive tree, collision- and conflict-free.

After D. Frey, H. Lakhlef, M. Raynal, "Optimal Collision/Conflict-free Distance-2 Coloring in
Synchronous Broadcast/Receive Tree Networks" (arXiv 1601.03225, 2016). The paper's claims: the
algorithm is itself collision-free and conflict-free, uses Δ+1 colours (optimal: a node and its
Δ neighbours are pairwise at distance ≤ 2), runs in O(dΔ) rounds on a tree whose root is defined
dynamically, and does not need all processes to have distinct identities.

The algorithm, as written here: the initiator takes colour 0 and becomes the root. A coloured
node broadcasts once, in the first round whose slot ((round - 1) mod (Δ+1)) equals its colour,
a `Color` message naming its children; each child takes, by its rank among the named children,
a colour distinct from its parent's and its grandparent's, learns the slot phase from the
parent's colour, and stays silent until its own slot. All nodes broadcasting in one round share
a colour, and the colouring built so far is distance-2 proper, so two broadcasters are always
at distance ≥ 3: no collision, no conflict. Each internal node broadcasts exactly once; a leaf
never broadcasts.

The paper's full text was not available: the public copies we could reach (arXiv 1601.03225 and
its listings, the conference version "… in Wireless Synchronous Broadcast/Receive Tree Networks",
whose index terms include network traversal) give the abstract only, and the follow-up (Lakhlef,
Raynal, Taïani, TPDS 2019) likewise. So whether the paper's processes learn identities, labels or
the root in rounds of their own is unknown; the model keeps the assumptions below, and says why
each is needed. These are the gaps filled and the deviations:

- Identities: anonymous deterministic processes cannot solve the problem (on a star the leaves
  have identical histories, so they collide if they ever broadcast and end with one colour,
  though they are at distance 2). The claim "no reliance on distinct identities" holds here in
  this sense: a node's identity is a *label* that need only differ from the labels of the
  other neighbours of each of its neighbours (distinct at distance exactly 2); labels repeat
  across the tree and are at most Δ-1. `labels()` assigns them from an arbitrary rooting at
  node 0, independent of the initiator, unless the graph carries its own (`graph.graph
  ["d2_labels"]`, values 0..Δ); each node knows its own and its neighbours' labels. Siblings
  with equal labels break the algorithm (the tests show the checker's counterexample): two
  siblings with one label and alike subtrees hear the same messages in every round.
- Why a node knows its neighbours' labels at the start: the parent names its children in its
  broadcast. Without that, each child would have to pick its colour from its own label and what
  all its siblings hear alike; with labels ranging over 0..Δ a child of a non-root node may hold
  any of Δ labels and only Δ-1 colours are free, so no such rule separates every set of siblings
  (`python -m lockstep.proofs.d2_coloring` refutes it for Δ = 3..6 and proves a rule exists when
  labels range over 0..Δ-1 only: there a child's rank among the labels other than its
  grandparent's would do, and the default `labels()` are of that kind; the model names children
  so that every labelling distinct among neighbours works). Learning the labels in first rounds
  is possible but is not in
  the sources we have: in a round per label value, the nodes holding that label broadcast it —
  never a collision, as a node's neighbours hold distinct labels — and a node that misses a
  neighbour (it broadcast in that round too) infers that the neighbour's label is its own, if it
  knows its degree; that would add Δ̂+1 rounds to the bound below. We do not model it.
- Addressing anonymous children: the parent's broadcast carries the set of its children's
  labels (`kids`); a child's rank in that set (by label) picks its colour: the rank-th value
  of 0, 1, 2, ... skipping the parent's colour and the grandparent's colour (`skip`).
- Message format: `Color(sid, col, skip, kids)`: sender label, sender colour (also the current
  slot), the sender's parent's colour (none at the root), the children's labels (as a bit mask,
  which the symbolic engine reads as arithmetic, where it does not encode a set inside a record).
- Root: exactly one spontaneous initiator (any node; every choice is checked); every other
  node is passive until it is coloured. Several initiators are not handled (they collide or
  break the colouring where their waves meet); the paper's abstract does not say how it
  handles them.
- Knowledge of Δ: every node knows Δ (parameter `delta`, by default the tree's maximum degree;
  a larger value is a common upper bound Δ̂: colours stay ≤ Δ, rounds grow with Δ̂).
- Schedule and bound: eager; a newly coloured node broadcasts at the next round of its slot,
  at most Δ̂ rounds later. Every node is coloured and has terminated by round
  1 + (e - 1)·Δ̂, e ≥ 1 the initiator's eccentricity (the depth of the tree rooted there),
  which is at most e·Δ̂: the O(dΔ) bound with constant 1. `within_round_bound` checks it; it is
  attained (a path of five nodes started at its centre takes 1 + 1·2 = 3 rounds).
- Termination is local: a leaf stops when coloured, an internal node after its broadcast; no
  node learns that the whole tree is done.

`D2ColoringUncoordinated` is the seeded bug: siblings take a colour without using their rank,
so they all take the same one.
"""

from __future__ import annotations

from typing import Any

import networkx as nx

from .lang import And, Enum, If, Implies, Int, Option, Or, Param, Range, Record, Set, invariant
from .lang.params import ParamExpr
from .lang.rounds import Local, RoundsSpec, broadcast, on_receive, on_start, on_transmit, terminated
from .lang.rounds.trees import distance2_violations, tree_code, tree_from_code

DEFAULT_TREE = nx.Graph([(0, 1), (1, 2), (2, 3), (1, 4), (4, 5), (2, 6)])

DELTA = Param("delta", default=0, lo=0, doc="the maximum degree every node knows (0: the tree's own)")
Node = Range("n", default=DEFAULT_TREE.number_of_nodes())
Label = Int(0, DELTA)
Colour = Int(0, DELTA + 1)  # one more than the algorithm needs, so that an overflow is an invariant violation
MaybeColour = Option(Colour)
Labels = Set(Label)
LabelMask = Int(0, ParamExpr(lambda d: (1 << (d + 1)) - 1, "2^1+", (DELTA,)))  # a set of labels as a bit mask
Color = Record("Color", sid=Label, col=Colour, skip=MaybeColour, kids=LabelMask)


def labels(g: nx.Graph) -> dict[int, int]:
    """Labels distinct among the neighbours of every node: rooted at node 0, the children of v get
    0, 1, 2, ... skipping the label of v's parent (so no label exceeds Δ - 1)."""
    hit = g.graph.get("d2_labels")
    if hit is None:
        parent = dict(nx.bfs_predecessors(g, 0))
        hit = {0: 0}
        for v in nx.bfs_tree(g, 0):
            taken = hit[parent[v]] if v in parent else None
            free = (x for x in range(g.number_of_nodes()) if x != taken)
            for c in sorted(u for u in g.neighbors(v) if parent.get(u) == v):
                hit[c] = next(free)
        g.graph["d2_labels"] = hit
    return hit


def eccentricity(g: nx.Graph, r: int) -> int:
    return max(nx.single_source_shortest_path_length(g, r).values())


def round_bound(g: nx.Graph, r: int, delta: int) -> int:
    """Rounds within which every node is coloured and stopped, when r initiates: 1 + (e - 1)·Δ̂ (0 for one node)."""
    e = eccentricity(g, r)
    return 0 if e == 0 else 1 + (e - 1) * delta


class D2Coloring(RoundsSpec):
    """Collision/conflict-free distance-2 colouring of a tree (Frey, Lakhlef, Raynal 2016)."""

    Node = Node
    Message = Color
    starters = "one"
    n = Node
    tree = Param("tree", default=tree_code(DEFAULT_TREE), lo=0, doc="the tree's Prüfer code (see specs/lang/rounds/trees.py)")
    delta = DELTA

    status = Local(Enum("idle", "pending", "done"), init="idle")
    color = Local(MaybeColour, init=None)
    pcolor = Local(MaybeColour, init=None)  # the parent's colour: the grandchildren skip it
    slot = Local(Int(0, DELTA), init=0)  # the slot of the coming round, once coloured
    kids = Local(Labels, init=frozenset())

    @staticmethod
    def graph(params: dict[str, int]) -> nx.Graph:
        return tree_from_code(params["n"], params["tree"])

    @classmethod
    def derive(cls, graph: nx.Graph, params: dict[str, int]) -> dict[str, int]:
        actual = max((d for _, d in graph.degree), default=0)
        given = params.get("delta", 0)
        if given and given < actual:
            from .lang import SpecError

            raise SpecError(f"{cls.__name__}: delta={given} is below the tree's maximum degree {actual}", None,
                            f"drop --param delta or give at least {actual}")
        return {"delta": max(given or actual, 1)}

    @classmethod
    def max_rounds(cls, graph: nx.Graph, params: dict[str, int]) -> int:
        return max(round_bound(graph, r, params["delta"]) for r in graph.nodes) + 1

    @on_start
    def start(p, initiator: bool) -> None:
        if initiator:
            p.status = "pending" if p.degree else "done"
            p.color = 0
            p.slot = 0
            lab = labels(p.graph)
            p.kids = frozenset(lab[q] for q in p.neighbours)

    @on_transmit
    def transmit(p) -> None:
        go = And(p.status == "pending", p.color == p.slot)
        mask = sum(If(p.kids.contains(j), 1 << j, 0) for j in range(p.delta + 1))
        broadcast(Color(sid=labels(p.graph)[p.id], col=p.color.get(), skip=p.pcolor, kids=mask), when=go)
        p.status = If(go, "done", p.status)

    @on_receive
    def receive(p, m: Any) -> None:
        lab = labels(p.graph)
        me = lab[p.id]
        msg = m.get()
        accept = And(p.status == "idle", m.is_some(), names(msg.kids, me))
        v = p.spec.choose_colour(p, msg, me)
        period = p.delta + 1
        p.slot = If(accept, (msg.col + 1) % period, If(p.color.is_some(), (p.slot + 1) % period, p.slot))
        before = p.color, p.pcolor
        p.color, p.pcolor = v, msg.col
        p.color, p.pcolor = If(accept, p.color, before[0]), If(accept, p.pcolor, before[1])
        before_kids = p.kids
        p.kids = frozenset(lab[q] for q in p.neighbours)
        p.kids = If(accept, p.kids.remove(msg.sid), before_kids)
        p.status = If(accept, "pending" if p.degree > 1 else "done", p.status)

    @staticmethod
    def choose_colour(p: Any, msg: Any, me: int) -> Any:
        """The rank-th colour of 0, 1, ... that is neither the parent's nor the grandparent's."""
        rank: Any = 0
        for j in range(me):
            rank = rank + If(names(msg.kids, j), 1, 0)
        return skip_two(rank, msg.col, msg.skip, p.delta + 2)

    @terminated
    def done(p) -> Any:
        return p.status == "done"

    @classmethod
    def round_limit(cls, graph: nx.Graph, initial: dict[str, Any], params: dict[str, int]) -> int | None:
        roots = [p for p, c in initial["color"].items() if c is not None]
        return round_bound(graph, roots[0], params["delta"]) if len(roots) == 1 else None

    @classmethod
    def check_outcome(cls, graph: nx.Graph, final: dict[int, dict[str, Any]]) -> list[str]:
        colour = {p: final.get(p, {}).get("color") for p in graph.nodes}
        top = max((d for _, d in graph.degree), default=0)
        out = [f"node {p} has no colour" for p, c in colour.items() if c is None]
        out += [f"nodes {u} and {v} are at distance <= 2 and share colour {colour[u]}"
                for u, v in distance2_violations(graph, colour) if colour[u] is not None]
        out += [f"node {p} has colour {c} > Δ = {top}" for p, c in colour.items() if c is not None and c > top]
        return out

    @classmethod
    def outcome_summary(cls, graph: nx.Graph, final: dict[int, dict[str, Any]]) -> str:
        used = len({s.get("color") for s in final.values()})
        top = max((d for _, d in graph.degree), default=0)
        return f"a proper distance-2 colouring with {used} colours (Δ+1 = {top + 1})"

    # -- properties ------------------------------------------------------------------------------
    @invariant
    def no_collision(s) -> Any:
        return s.collisions.is_empty()

    @invariant
    def no_conflict(s) -> Any:
        return s.conflicts.is_empty()

    @invariant
    def proper_distance2(s) -> Any:
        """Coloured nodes at distance 1 or 2 have different colours (in every state, not only at the end)."""
        return And(*(Or(s.color[u].is_none(), s.color[u] != s.color[v]) for u, v in near_pairs(s.graph)))

    @invariant
    def coloured_at_termination(s) -> Any:
        return Implies(And(*(s.status[p] == "done" for p in s.nodes)), And(*(s.color[p].is_some() for p in s.nodes)))

    @invariant
    def at_most_delta_plus_one_colours(s) -> Any:
        top = max(d for _, d in s.graph.degree)
        return And(*(Or(s.color[p].is_none(), s.color[p].get() <= top) for p in s.nodes))

    @invariant
    def within_round_bound(s) -> Any:
        """If r initiated (the root: coloured, no parent colour), all nodes are done by round 1 + (e(r) - 1)·Δ̂."""
        done = And(*(s.status[p] == "done" for p in s.nodes))
        return And(*(Implies(And(s.color[r].is_some(), s.pcolor[r].is_none(),
                                 s.round >= round_bound(s.graph, r, s.delta)), done) for r in s.nodes))


def names(mask: Any, label: int) -> Any:
    """Whether a label mask (bit i: label i) holds `label`."""
    return (mask // (1 << label)) % 2 == 1


def skip_two(rank: Any, a: Any, b: Any, top: int) -> Any:
    """The rank-th value of 0, 1, 2, ... other than a and b (b an Option; none skips only a)."""
    lo = If(b.is_some(), If(a < b.get(), a, b.get()), a)
    hi = If(b.is_some(), If(a < b.get(), b.get(), a), top)
    v = If(rank >= lo, rank + 1, rank)
    return If(v >= hi, v + 1, v)


def near_pairs(g: nx.Graph) -> list[tuple[int, int]]:
    """Pairs u < v at distance 1 or 2."""
    out = set()
    for v in g.nodes:
        nb = sorted(g.neighbors(v))
        out.update((min(v, u), max(v, u)) for u in nb)
        out.update((a, b) for i, a in enumerate(nb) for b in nb[i + 1:])
    return sorted(out)


class D2ColoringUncoordinated(D2Coloring):
    """Seeded bug: each child takes the least colour other than its parent's and grandparent's, ignoring its siblings."""

    @staticmethod
    def choose_colour(p: Any, msg: Any, me: int) -> Any:
        return skip_two(0, msg.col, msg.skip, p.delta + 2)


__all__ = ["D2Coloring", "D2ColoringUncoordinated", "labels", "near_pairs", "round_bound"]
