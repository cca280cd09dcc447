"""Stale-synchronous parallel (SSP) evaluation of a linear recursive Datalog program, as actor processes.

Source: A. Das, C. Zaniolo, "A Case for Stale Synchronous Distributed Model for Declarative Recursive
Computation", TPLP 19(5–6), 2019 (arXiv 1907.10278): PreM-optimised, lock-free, decomposable parallel
semi-naive evaluation gives the single-executor result under BSP, SSP and asynchronous execution.
SSP itself is Ho et al., "More effective distributed ML via a stale synchronous parallel parameter
server", NIPS 2013: each worker has a clock; a worker may start a new iteration only while it is at
most s iterations ahead of the slowest (s = 0 is BSP, unbounded s is asynchronous). The non-linear
APSP, in the paper's hybrid form, is `lockstep.specs.datalog.hybrid`.

Mechanism by mechanism:

- PreM and the decomposable plan — as in the paper: γ (min/max) is pushed into the recursion (each
  key keeps one best value), which `lockstep datalog prem` proves per rule; the plan
  (`lockstep.specs.datalog.plan`) is the program's recursive rule bound to the graph, as steps from a
  key read to a key derived, by the language's reference semantics (`lockstep.specs.datalog.semantics`,
  which also gives the sequential least model); the workers bind the same plan with the evaluator
  (`lockstep.checker.datalog.plan`).
- Partitioning — hash-partitioned on the key (a key belongs to worker key mod W); each worker keeps
  the value of its keys and `changed`, its keys improved since its last iteration (its δ).
- Deltas — delivering `Delta(k, v)` (a candidate for a key the worker owns) keeps the better of the
  stored value and v (`combine`: γ), and marks k changed if it improved.
- An iteration — applies the plan's steps to the changed keys: a candidate for an own key improves it
  directly (for the next iteration); the candidates for another worker's keys are pre-aggregated per
  key (PreM lets γ run before sending) and sent as one `Delta` each.
- SSP clocks, ticks and quiescence detection — `lockstep.specs.datalog.protocol` (shared with the
  hybrid spec): an iteration starts only within s clocks of every clock the worker has heard of; ticks
  over FIFO channels carry clocks; termination is detected from the ticks, without a coordinator.

Properties: `staleness`, `knowledge_sound` (the protocol's), `derivable` (every stored value is the
value of some derivation), `fixpoint` (a worker that has stopped holds the sequential least model on
its keys), and two assertions in the handlers: values only improve, and no value better than every
derivation of at most |keys| steps (that needs an improving cycle: the run diverges, as SSSP on a
negative cycle). A state with nothing enabled is a real deadlock (termination not detected);
`lockstep datalog terminates` checks that no run cycles before every worker stops.

Simplified, and how: only the abstract and introduction of the paper were available, so the worker
loop, the message layout and the quiescence detection are this module's own (after the SSP definition
of Ho et al. and the counting argument for termination detection). The clock bound is
`--param clocks=C` (a state where a clock reaches C is not expanded: the check is then inconclusive).
Candidates worse than every derivation of at most |keys| steps are not sent: they can never improve a
key (see `LinearPlan.bounds`), and the model's value type must be finite. Graphs are small
(`--param graph=N`, a catalogue entry, or N >= 100 for a random graph with seed N − 100); the default,
graph 0, has both a stale route and a chain of one worker's keys long enough to show a staleness bound
off by one. Out of scope: the paper's systems (BigDatalog on Spark, Myria) and their shuffles, failures
of workers, and real graph sizes (`lockstep run` runs those on processes; on `ssp:N` graphs their runs
are traced and validated against this spec).

Seeded bugs, each found by `lockstep check NAME` at the default parameters:
- `SSPStaleDelta` — a worker stores a delivered delta even when it holds a better value (a stale delta
  applied after a better one), caught by the values-only-improve assertion.
- `SSPStalenessOffByOne` — a worker starts an iteration while s + 1 clocks ahead, caught by
  `staleness` (worker 0 runs its chain of keys s + 2 iterations ahead of worker 1).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..lang import And, Assert, If, Int, Max, Min, Not, Param, Range, invariant
from ..lang.actors import ActorSpec, on_start, on_timeout, send, set_timer
from ..lang.params import ParamExpr
from .analysis import analyse
from .catalog import load
from .plan import LinearPlan, Reference, linear_plan
from .protocol import clocked, holds_derivable, holds_fixpoint

RANDOM_BASE = 100  # graph parameters from here on are random graphs (seed = graph - RANDOM_BASE)

# name, edges (from, to, weight); the weight is dropped for programs whose edge relation has two columns
GRAPHS: list[tuple[str, list[tuple[int, int, int]]]] = [
    # 3 is reached over a short local route (through 1, on worker 1) and a long remote one (through 2, on
    # worker 0), so a stale delta can arrive after a better value; 4 is improved by a remote delta; 2, 4, 6
    # are a chain of worker 0's keys, so worker 0 has s + 2 = 3 iterations of work of its own (at W = 2) and
    # a bound off by one lets it finish s + 2 iterations ahead of worker 1
    ("two routes", [(0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 5), (3, 4, 1), (2, 4, 7), (4, 6, 1)]),
    ("diamond", [(0, 1, 1), (0, 2, 4), (1, 2, 2), (1, 3, 6), (2, 3, 1)]),
    ("path", [(0, 1, 1), (1, 2, 2)]),
    ("cycle with a chord", [(0, 1, 1), (1, 2, 1), (2, 0, 1), (1, 3, 2), (2, 3, 0)]),
    ("negative cycle", [(0, 1, 1), (1, 2, -2), (2, 1, 1)]),
    ("two components", [(0, 1, 1), (2, 3, 1), (3, 2, 1)]),
    # a chain of worker 0's keys: asynchronous workers drift apart, SSP(s) ones by at most s + 1
    ("local chain", [(0, 2, 1), (2, 4, 1), (4, 6, 1), (0, 1, 1), (6, 7, 1)]),
]


def graph_edges(graph: int) -> np.ndarray:
    """The weighted edges of catalogue graph `graph` (or of a random small graph)."""
    if graph < len(GRAPHS):
        return np.asarray(GRAPHS[graph][1], dtype=np.int64)
    if graph < RANDOM_BASE:
        raise ValueError(f"graph {graph} is not in the catalogue (0..{len(GRAPHS) - 1}) nor random (>= {RANDOM_BASE})")
    rng = np.random.default_rng(graph - RANDOM_BASE)
    pairs = set()
    while len(pairs) < 5:
        u, v = (int(x) for x in rng.integers(0, 4, size=2))
        if u != v:
            pairs.add((u, v))
    return np.asarray([(u, v, int(rng.integers(0, 4))) for u, v in sorted(pairs)], dtype=np.int64)


@lru_cache(maxsize=64)
def plan_for(program: str, graph: int, source: int) -> LinearPlan:
    """The decomposable plan of a shipped program on a small graph, bound by the reference semantics (cached: specs
    are built often)."""
    prog = load(program)
    params = {"source": source} if any(d.name == "source" for d in prog.params) else {}
    a = analyse(prog, params)
    edges = graph_edges(graph)
    arity = a.arity[next(iter(a.inputs))]
    return linear_plan(a, Reference(a, {next(iter(a.inputs)): edges[:, :arity]}))


def ssp_spec(program: str, doc: str, capacity: int = 8, clocks: int = 6) -> type[ActorSpec]:
    """The SSP actor spec of one shipped linear program (`capacity`: messages a channel holds by default;
    `clocks`: the default clock bound, high enough that no run on the default graph reaches it)."""
    W = Param("workers", 2, lo=1, hi=4, doc="workers")
    S = Param("s", 1, lo=-1, doc="staleness bound (0: BSP, -1: unbounded, i.e. asynchronous)")
    G = Param("graph", 0, lo=0, doc=f"catalogue graph 0..{len(GRAPHS) - 1}, or >= {RANDOM_BASE}: random")
    SRC = Param("source", 0, lo=0, doc="the source node (programs with a source)")
    C = Param("clocks", clocks, lo=1, hi=30, doc="clock bound: states at this clock are not expanded")

    def plan() -> LinearPlan:
        return plan_for(program, int(G), int(SRC))

    def derived(fn, sym: str) -> ParamExpr:
        return ParamExpr(lambda g, src: fn(plan_for(program, g, src)), sym, (G, SRC))

    def bounds(pl: LinearPlan) -> tuple[int, int]:
        return pl.bounds()

    # values: best..worst derivable; the one beyond `worst` means "no value yet"
    LO = derived(lambda pl: min(bounds(pl)) - (1 if pl.func == "max" else 0), "lo")
    HI = derived(lambda pl: max(bounds(pl)) + (1 if pl.func == "min" else 0), "hi")
    Key = Range(derived(lambda pl: max(len(pl.keys), 1), "keys"))
    Value = Int(LO, HI)

    def none(pl: LinearPlan) -> int:
        best, worst = bounds(pl)
        return worst + 1 if pl.func == "min" else worst - 1

    def owner(pl: LinearPlan, k: int, w: int) -> int:
        return int(pl.keys[k]) % w

    def keys_of(pl: LinearPlan, wk: int) -> list[int]:
        """The keys worker wk owns (its stored values; the others' are never set)."""
        return [k for k in range(len(pl.keys)) if owner(pl, k, int(W)) == wk]

    Base, Delta = clocked(doc, W, S, C, Key, Value, plan_for(program, 0, 0).func, capacity)

    class SSP(Base):  # type: ignore[valid-type,misc]
        graph, source = G, SRC

        @on_start
        def start(p):
            pl = plan()
            nil = none(pl)
            mine = [k for k in range(len(pl.keys)) if owner(pl, k, int(W)) == p.id]
            for k in range(len(pl.keys)):
                p.val[k] = pl.init[k] if k in pl.init and k in mine else nil
            p.changed = frozenset(k for k in mine if k in pl.init)
            set_timer("iterate")

        def delta(p, src, m):
            pl = plan()
            if owner(pl, m.k, int(W)) != p.id:
                return  # never sent: deltas go to the key's owner
            old = p.val[m.k]
            new = p.spec.combine(old, m.v)
            Assert(Not(_better(pl, old, new)), f"values only improve: key {pl.keys[m.k]} got worse")
            p.val[m.k] = new
            p.changed = If(new != old, p.changed.add(m.k), p.changed)

        @on_timeout
        def iterate(p, timer):
            """One iteration: apply the plan's steps to the changed keys, send the deltas and a tick."""
            pl, w = plan(), int(W)
            go = Base.begin(p)
            nil = none(pl)
            best, worst = bounds(pl)
            cand: dict[int, object] = {}
            mine = [k for k in range(len(pl.keys)) if owner(pl, k, w) == p.id]
            for k in mine:
                read = p.val[k]
                active = And(go, p.changed.contains(k))
                for st in pl.by_src.get(k, []):
                    v, ok = st.apply(read, lambda cs: And(*cs))
                    on = And(active, ok)
                    Assert(Not(And(on, _better(pl, v, best))),
                           f"divergence: key {pl.keys[st.dst]} would get a {pl.func} value better than every "
                           f"derivation of at most {len(pl.keys)} steps (an improving cycle, e.g. a negative cycle)")
                    useful = And(on, Not(_better(pl, worst, v)))  # worse than every derivation: never an improvement
                    v = If(useful, v, nil)
                    if st.dst in cand:
                        v = Min(cand[st.dst], v) if pl.func == "min" else Max(cand[st.dst], v)
                    cand[st.dst] = v
            after = p.changed
            for k in mine:
                after = after.remove(k)  # this iteration consumes every changed key
            for k, v in sorted(cand.items()):
                if owner(pl, k, w) == p.id:
                    old = p.val[k]
                    improved = And(go, _better(pl, v, old))
                    p.val[k] = If(improved, v, old)
                    after = If(improved, after.add(k), after)
                else:
                    send(owner(pl, k, w), Delta(k, v), when=And(go, v != nil))
            p.changed = If(go, after, p.changed)
            Base.finish(p, go)

        # -- properties --------------------------------------------------------------------------
        @invariant
        def derivable(s):
            """Every stored value is the value of some derivation from the exit rules."""
            pl = plan()
            return holds_derivable(s, int(W), lambda wk: keys_of(pl, wk), pl.derivable(*bounds(pl)), none(pl))

        @invariant
        def fixpoint(s):
            """A worker that has stopped holds the sequential least model on its keys."""
            pl = plan()
            return holds_fixpoint(s, int(W), lambda wk: keys_of(pl, wk), pl.fixpoint, none(pl))

    SSP.__name__ = SSP.__qualname__ = f"SSP_{program}"
    return SSP


def _better(pl: LinearPlan, a, b):
    return a < b if pl.func == "min" else a > b


SSPShortestPaths = ssp_spec("sssp", "SSP evaluation of single-source shortest paths (sssp.dl).", capacity=16, clocks=8)
SSPComponents = ssp_spec("cc", "SSP evaluation of connected components (cc.dl).", capacity=16)
SSPReach = ssp_spec("reach", "SSP evaluation of reachability (reach.dl).", capacity=12)


class SSPStaleDelta(SSPShortestPaths):
    """Seeded bug: a delivered delta overwrites the stored value even when that value is better.

    `lockstep check ssp_stale_delta` finds key 3 made worse by worker 0's stale delta."""

    def combine(old, new):
        return new


class SSPStalenessOffByOne(SSPShortestPaths):
    """Seeded bug: a worker starts an iteration while it is s + 1 clocks ahead (the bound off by one).

    `lockstep check ssp_staleness_off_by_one` finds worker 0 s + 2 finished iterations ahead (`staleness`)."""

    def ahead(s: int) -> int:
        return s + 1


__all__ = ["GRAPHS", "SSPComponents", "SSPReach", "SSPShortestPaths", "SSPStaleDelta", "SSPStalenessOffByOne",
           "graph_edges", "plan_for", "ssp_spec"]
