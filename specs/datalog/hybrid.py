"""Hybrid SSP evaluation of a non-linear recursive Datalog program (APSP), as actor processes.

Source: A. Das, C. Zaniolo, "A Case for Stale Synchronous Distributed Model for Declarative Recursive
Computation", TPLP 19(5–6), 2019 (arXiv 1907.10278), which runs the non-linear all-pairs shortest paths
(`path(X, Y, min<D>) <- path(X, Z, D1), path(Z, Y, D2), D = D1 + D2`) in a hybrid of the SSP model:
a derivation of a pair joins two pairs that may belong to different workers. This is the protocol of the
pair workers (`lockstep.executors.datalog.pairs`), checked for every schedule on small graphs.

Mechanism by mechanism:

- Partitioning — as the workers do: pair (x, y) belongs to the worker of node x (x mod W); the pair
  table is `val` (one best value per pair: γ = min pushed into the recursion, PreM) and `changed` (δ).
- The replicated table — each worker keeps a replica of the whole table (a row's derivations read
  every other row) and starts from the whole exit table (every pair's edge value, changed).
- An iteration — joins, for its own rows x, every pair (x, z) and (z, y) of which one changed since
  its last iteration: the candidate D[x, z] + D[z, y] for (x, y), read from its own rows and its
  replica; keeps the improvements of its own pairs (changed, for its next iteration) and broadcasts
  each as `Delta(pair, value)` to every other worker, then a tick. Replica values may be up to s
  iterations old: they are values of derivations and only improve, so a stale one is only a worse
  candidate.
- Broadcast deltas — a delivered delta updates the replica with the better of the two values (γ) and
  marks the pair changed (a right-hand side of the receiver's next joins); deltas only ever come for
  pairs of other workers' rows.
- Clocks, the staleness bound, ticks and quiescence detection — the linear evaluation's
  (`lockstep.specs.datalog.protocol`): BSP at s = 0, asynchronous at s = -1.

Properties: `staleness`, `knowledge_sound`; `derivable` (every value a worker holds, in its rows or its
replica, is the value of some derivation); `fixpoint` (a worker that has stopped holds the sequential
least model on every pair — its rows and its replica: every schedule gives every worker the same
fixpoint); the assertions that values only improve and that no candidate beats every walk of at most n
edges (that needs an improving cycle: a negative cycle diverges); no deadlock (termination is always
detected); `lockstep datalog terminates ssp_apsp` shows that no run cycles.

Simplified, and how: candidates worse than every walk of at most n edges (n nodes) are not kept — they
can never be a pair's final value (`PairPlan.bounds`) and the value type must be finite; graphs are the
spec catalogue's (`--param graph=N`, default 1, the diamond: 4 nodes, 16 pairs). Out of scope, as for
the linear specs: the paper's other systems (BigDatalog, Myria), failures, and graphs beyond a few nodes
(the workers on processes run those; on `ssp:N` graphs their runs are traced and validated against this
spec). The paper's text was not available beyond its abstract and introduction: the replicated table
and the broadcast are the workers' design, which this spec states and checks.
"""

from __future__ import annotations

from functools import lru_cache

from ..lang import And, Assert, If, Int, Max, Min, Not, Or, Param, Range, invariant
from ..lang.actors import ActorSpec, on_start, on_timeout, send, set_timer
from ..lang.params import ParamExpr
from .analysis import analyse
from .catalog import load
from .plan import PairPlan, Reference, pair_plan
from .protocol import clocked, holds_derivable, holds_fixpoint, others
from .ssp import GRAPHS, RANDOM_BASE, graph_edges


@lru_cache(maxsize=32)
def pair_plan_for(program: str, graph: int) -> PairPlan:
    """The pair plan of a shipped path-composition program on a small graph, bound by the reference semantics
    (cached: specs are built often)."""
    a = analyse(load(program), {})
    edges = graph_edges(graph)
    inp = next(iter(a.inputs))
    return pair_plan(a, Reference(a, {inp: edges[:, :a.arity[inp]]}))


def none(pl: PairPlan) -> int:
    """The value meaning "no value yet": just beyond the worst bounded derivation."""
    best, worst = pl.bounds()
    return worst + 1 if pl.func == "min" else worst - 1


def hybrid_spec(program: str, doc: str, graph: int = 1, capacity: int = 12) -> type[ActorSpec]:
    """The hybrid SSP actor spec of one shipped path-composition program."""
    W = Param("workers", 2, lo=1, hi=4, doc="workers")
    S = Param("s", 1, lo=-1, doc="staleness bound (0: BSP, -1: unbounded, i.e. asynchronous)")
    G = Param("graph", graph, lo=0, doc=f"catalogue graph 0..{len(GRAPHS) - 1}, or >= {RANDOM_BASE}: random")
    C = Param("clocks", 6, lo=1, hi=30, doc="clock bound: states at this clock are not expanded")

    def plan() -> PairPlan:
        return pair_plan_for(program, int(G))

    def derived(fn, sym: str) -> ParamExpr:
        return ParamExpr(lambda g: fn(pair_plan_for(program, g)), sym, (G,))

    LO = derived(lambda pl: min(pl.bounds()) - (1 if pl.func == "max" else 0), "lo")
    HI = derived(lambda pl: max(pl.bounds()) + (1 if pl.func == "min" else 0), "hi")
    Pair = Range(derived(lambda pl: max(len(pl.nodes) ** 2, 1), "pairs"))
    Value = Int(LO, HI)

    def owner(pl: PairPlan, k: int, w: int) -> int:
        """The worker of pair k: the worker of its row's node."""
        return int(pl.nodes[k // len(pl.nodes)]) % w

    Base, Delta = clocked(doc, W, S, C, Pair, Value, pair_plan_for(program, graph).func, capacity)

    class Hybrid(Base):  # type: ignore[valid-type,misc]
        graph = G

        @on_start
        def start(p):
            pl = plan()
            nil = none(pl)
            for k in range(len(pl.nodes) ** 2):
                p.val[k] = pl.init.get(k, nil)  # every worker holds the whole exit table
            p.changed = frozenset(pl.init)
            set_timer("iterate")

        def delta(p, src, m):
            pl = plan()
            if owner(pl, m.k, int(W)) == p.id:
                return  # never sent: deltas update the replicas of other workers' rows
            old = p.val[m.k]
            new = p.spec.combine(old, m.v)
            x, y = pl.pair(m.k)
            Assert(Not(pl.better(old, new)), f"values only improve: pair ({x}, {y}) got worse")
            p.val[m.k] = new
            p.changed = If(new != old, p.changed.add(m.k), p.changed)

        @on_timeout
        def iterate(p, timer):
            """One iteration: join the changed pairs with the own rows and the replica, keep the own
            improvements, broadcast them, tick."""
            pl, w = plan(), int(W)
            n = len(pl.nodes)
            go = Base.begin(p)
            nil = none(pl)
            best, worst = pl.bounds()
            rows = [x for x in range(n) if owner(pl, x * n, w) == p.id]
            improved = {}
            for x in rows:
                for y in range(n):
                    cand = nil
                    for z in range(n):
                        d1, d2 = p.val[x * n + z], p.val[z * n + y]
                        v, ok = pl.apply(d1, d2, lambda cs: And(*cs))
                        on = And(go, Or(p.changed.contains(x * n + z), p.changed.contains(z * n + y)),
                                 d1 != nil, d2 != nil, ok)
                        Assert(Not(And(on, pl.better(v, best))),
                               f"divergence: pair ({pl.nodes[x]}, {pl.nodes[y]}) would get a {pl.func} value better "
                               f"than every walk of at most {n} edges (an improving cycle, e.g. a negative cycle)")
                        useful = And(on, Not(pl.better(worst, v)))  # worse than every bounded walk: never final
                        v = If(useful, v, nil)
                        cand = Min(cand, v) if pl.func == "min" else Max(cand, v)
                    improved[x * n + y] = And(go, pl.better(cand, p.val[x * n + y])), cand
            after = If(go, frozenset(), p.changed)  # this iteration consumes every changed pair
            for k, (better, v) in improved.items():
                p.val[k] = If(better, v, p.val[k])
                after = If(better, after.add(k), after)
                for dst in others(p.id, w):
                    send(dst, Delta(k, v), when=better)
            p.changed = after
            Base.finish(p, go)

        # -- properties --------------------------------------------------------------------------
        @invariant
        def derivable(s):
            """Every value a worker holds (its rows and its replica) is the value of some derivation."""
            pl = plan()
            pairs = range(len(pl.nodes) ** 2)
            return holds_derivable(s, int(W), lambda wk: pairs, pl.derivable(*pl.bounds()), none(pl))

        @invariant
        def fixpoint(s):
            """A worker that has stopped holds the sequential least model on every pair, its replica too."""
            pl = plan()
            pairs = range(len(pl.nodes) ** 2)
            return holds_fixpoint(s, int(W), lambda wk: pairs, pl.fixpoint, none(pl))

    Hybrid.__name__ = Hybrid.__qualname__ = f"SSP_{program}"
    return Hybrid


SSPAllPairs = hybrid_spec("apsp", "Hybrid SSP evaluation of all-pairs shortest paths (apsp.dl), non-linear.")


__all__ = ["SSPAllPairs", "hybrid_spec", "none", "pair_plan_for"]
