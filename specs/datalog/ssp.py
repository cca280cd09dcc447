"""Stale-synchronous parallel (SSP) evaluation of a linear recursive Datalog program, as actor processes.

Source: A. Das, C. Zaniolo, "A Case for Stale Synchronous Distributed Model for Declarative Recursive
Computation", TPLP 19(5–6), 2019 (arXiv 1907.10278): PreM-optimised, lock-free, decomposable parallel
semi-naive evaluation gives the single-executor result under BSP, SSP and asynchronous execution.
SSP itself is Ho et al., "More effective distributed ML via a stale synchronous parallel parameter
server", NIPS 2013: each worker has a clock; a worker may start a new iteration only while it is at
most s iterations ahead of the slowest (s = 0 is BSP, unbounded s is asynchronous).

W workers evaluate the program's decomposable plan (`lockstep.specs.datalog.plan`): the recursive
relation is hash-partitioned on its key (a key belongs to worker key mod W); each worker keeps the
value of its keys (γ pushed into the recursion: one best value per key) and the set `changed` of its
keys improved since its last iteration (its δ).

- Delivering `Delta(k, v)` (a candidate for a key the worker owns) keeps the better of the stored
  value and v, and marks k changed if it improved (`combine`).
- An iteration (the `iterate` timer; enabled while the worker has changed keys or lags behind a clock
  it has heard of, and `clock − known clock of every other worker ≤ s`) applies the plan's steps to the
  changed keys: a candidate for an own key improves it directly (for the next iteration), a candidate
  for another worker's key is pre-aggregated per key (PreM lets γ run before sending) and sent as one
  `Delta`; then the clock advances and `Tick(fresh, idle, seen)` goes to every other worker (`fresh`:
  it ends an iteration; channels are FIFO, as TCP, so the receiver knows the sender's clock by counting
  fresh ticks, and a re-announcement is a tick that is not fresh).
- Quiescence: FIFO channels also mean that the tick ending v's iteration c tells w that it has every
  delta v sent in its iterations up to c. `seen` carries the clocks of the others' ticks the sender has received. A
  worker that is idle detects termination when every other worker's latest tick says it was idle and
  had received all ticks of every worker up to the clocks w knows (its own current clock for w); then
  it sends `Stop` to the others. When a tick raises what a worker knows and it is idle, it announces
  again (same clock), so the last ticks of a finished run always carry complete information. Why this
  is sound: the first change of a value after those ticks would be the delivery of a delta sent before
  its sender's last tick; the receiver had that tick, and FIFO delivered the delta before it.

Properties: `staleness` (every worker is at most s + 1 clocks ahead of every other, counting finished
iterations: one starts only within s), `knowledge_sound` (what a worker knows of another's clock is
not ahead of it), `derivable` (every stored value is the value of some derivation), `fixpoint` (a
worker that has stopped holds the sequential least model on its keys), and two assertions in the
handlers: values only improve, and no value better than every derivation of at most |keys| steps
(that needs an improving cycle: the run diverges, as SSSP on a negative cycle). A finished worker's
`iterate` timer is a no-op, so a state with nothing enabled is a real deadlock (termination not
detected); `lockstep.checker.datalog.termination` checks that no run cycles before every worker stops.

Deviations and gaps filled: only the abstract and introduction of the paper were available, so the
worker loop, the message layout and the quiescence detection are this module's own (after the SSP
definition of Ho et al. and the counting argument for termination detection). The clock bound is
`--param clocks=C` (a state where a clock reaches C is not expanded: the check is then inconclusive).
Candidates worse than every derivation of at most |keys| steps are not sent: they can never improve a
key (see `LinearPlan.bounds`), and the model's value type must be finite. Graphs are small
(`--param graph=N`, a catalogue entry, or N >= 100 for a random graph with seed N − 100).

Seeded bug: `SSPStaleDelta` — a worker stores a delivered delta even when it holds a better value (a
stale delta applied after a better one), caught by the values-only-improve assertion.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..lang import (
    And,
    Assert,
    Bool,
    Enum,
    If,
    Int,
    Map,
    Max,
    Min,
    Not,
    Or,
    Param,
    Range,
    Record,
    Set,
    Union,
    constraint,
    invariant,
    require,
)
from ..lang.actors import ActorSpec, Local, Network, on_message, on_start, on_timeout, send, set_timer
from ..lang.params import ParamExpr
from .analysis import analyse
from .catalog import load
from .plan import LinearPlan, linear_plan

RANDOM_BASE = 100  # graph parameters from here on are random graphs (seed = graph - RANDOM_BASE)

# name, edges (from, to, weight); the weight is dropped for programs whose edge relation has two columns
GRAPHS: list[tuple[str, list[tuple[int, int, int]]]] = [
    # 3 is reached over a short local route (through 1, on worker 1) and a long remote one (through 2, on
    # worker 0), so a stale delta can arrive after a better value; 4 is improved by a remote delta
    ("two routes", [(0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 5), (3, 4, 1), (2, 4, 7)]),
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
    """The decomposable plan of a shipped program on a small graph (cached: specs are built often)."""
    prog = load(program)
    params = {"source": source} if any(d.name == "source" for d in prog.params) else {}
    a = analyse(prog, params)
    edges = graph_edges(graph)
    arity = a.arity[next(iter(a.inputs))]
    return linear_plan(a, {next(iter(a.inputs)): edges[:, :arity]})


def ssp_spec(program: str, doc: str, capacity: int = 8) -> type[ActorSpec]:
    """The SSP actor spec of one shipped linear program (`capacity`: messages a channel holds by default)."""
    W = Param("workers", 2, lo=1, hi=4, doc="workers")
    S = Param("s", 1, lo=-1, doc="staleness bound (0: BSP, -1: unbounded, i.e. asynchronous)")
    G = Param("graph", 0, lo=0, doc=f"catalogue graph 0..{len(GRAPHS) - 1}, or >= {RANDOM_BASE}: random")
    SRC = Param("source", 0, lo=0, doc="the source node (programs with a source)")
    C = Param("clocks", 6, lo=1, hi=30, doc="clock bound: states at this clock are not expanded")

    def plan() -> LinearPlan:
        return plan_for(program, int(G), int(SRC))

    def derived(fn, sym: str) -> ParamExpr:
        return ParamExpr(lambda g, src: fn(plan_for(program, g, src)), sym, (G, SRC))

    def bounds(pl: LinearPlan) -> tuple[int, int]:
        return pl.bounds()

    # values: best..worst derivable; the one beyond `worst` means "no value yet"
    LO = derived(lambda pl: min(bounds(pl)) - (1 if pl.func == "max" else 0), "lo")
    HI = derived(lambda pl: max(bounds(pl)) + (1 if pl.func == "min" else 0), "hi")
    Proc = Range(W)
    Key = Range(derived(lambda pl: max(len(pl.keys), 1), "keys"))
    Value = Int(LO, HI)
    Clock = Int(0, C)
    Seen = Int(0, ParamExpr(lambda c, w: (c + 1) ** max(w - 1, 1) - 1, "seen", (C, W)))
    Delta = Record("Delta", k=Key, v=Value)
    Tick = Record("Tick", fresh=Bool, idle=Bool, seen=Seen)
    Stop = Record("Stop")

    def none(pl: LinearPlan) -> int:
        best, worst = bounds(pl)
        return worst + 1 if pl.func == "min" else worst - 1

    def owner(pl: LinearPlan, k: int, w: int) -> int:
        return int(pl.keys[k]) % w

    def others(pid: int, w: int) -> list[int]:
        return [u for u in range(w) if u != pid]

    class SSP(ActorSpec):
        __doc__ = doc
        Process = Proc
        Message = Union(Delta, Tick, Stop)
        Timer = Enum("iterate")
        network = Network(ordered=True, capacity=capacity)
        workers, s, graph, source, clocks = W, S, G, SRC, C

        val = Local(Map(Key, Value), init=0)  # set by the start handler
        changed = Local(Set(Key))
        clock = Local(Clock, init=0)
        known = Local(Map(Proc, Clock), init=0)  # the latest tick clock heard from each worker
        rep_idle = Local(Map(Proc, Bool), init=False)  # ... whether that tick said idle
        rep_seen = Local(Map(Proc, Map(Proc, Clock)), init=0)  # ... and what its sender had seen
        done = Local(Bool, init=False)

        # -- the worker ------------------------------------------------------------------------
        def combine(old, new):
            """The value kept when a delta arrives: γ (the better of the two)."""
            return Min(old, new) if plan().func == "min" else Max(old, new)

        @on_start
        def start(p):
            pl = plan()
            nil = none(pl)
            mine = [k for k in range(len(pl.keys)) if owner(pl, k, int(W)) == p.id]
            for k in range(len(pl.keys)):
                p.val[k] = pl.init[k] if k in pl.init and k in mine else nil
            p.changed = frozenset(k for k in mine if k in pl.init)
            set_timer("iterate")

        @on_message
        def receive(p, src, m):
            pl = plan()
            if m.tag == "Delta":
                if owner(pl, m.k, int(W)) != p.id:
                    return  # never sent: deltas go to the key's owner
                old = p.val[m.k]
                new = p.spec.combine(old, m.v)
                Assert(Not(_better(pl, old, new)), f"values only improve: key {pl.keys[m.k]} got worse")
                p.val[m.k] = new
                p.changed = If(new != old, p.changed.add(m.k), p.changed)
            elif m.tag == "Tick":
                raised = m.fresh  # a tick that ends an iteration: FIFO, so the sender's clock is one more
                if m.fresh:
                    p.known[src] = p.known[src] + 1
                p.rep_idle[src] = m.idle
                base = int(C) + 1
                for i, u in enumerate(others(src, int(W))):
                    p.rep_seen[src][u] = (m.seen // base ** i) % base
                idle = p.changed.is_empty()
                again = And(raised, idle, Not(p.done))
                for v in others(p.id, int(W)):
                    send(v, Tick(False, True, SSP.seen_code(p, v)), when=again)
                SSP.detect(p)
            else:
                p.done = True

        @on_timeout
        def iterate(p, timer):
            SSP.step(p, plan(), int(W))

        def step(p, pl: LinearPlan, w: int):
            """One iteration: apply the plan's steps to the changed keys, send the deltas and a tick."""
            set_timer("iterate")
            lag = Or(*[p.clock < p.known[v] for v in others(p.id, w)]) if w > 1 else False
            work = Or(Not(p.changed.is_empty()), lag)
            within = And(*[p.clock - p.known[v] <= int(S) for v in others(p.id, w)]) \
                if int(S) >= 0 and w > 1 else True
            go = And(Not(p.done), work, within)
            require(Or(p.done, go))  # a finished worker's timer is a no-op; otherwise it waits for work
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
            p.clock = If(go, p.clock + 1, p.clock)
            idle = p.changed.is_empty()
            for v in others(p.id, w):
                send(v, Tick(True, idle, SSP.seen_code(p, v)), when=go)
            SSP.detect(p, go)

        def seen_code(p, dst):
            """The clocks of the other workers' latest ticks p has received, packed into one integer."""
            base = int(C) + 1
            code = 0
            for i, u in enumerate(others(p.id, int(W))):
                code = code + p.known[u] * base ** i
            return code

        def detect(p, when=True):
            """Termination: p is idle, and every other worker's latest tick says it was idle and had every
            worker's ticks up to the clocks p knows (p's own: its current clock)."""
            w = int(W)
            conds = [p.changed.is_empty(), Not(p.done)]
            for v in others(p.id, w):
                conds.append(p.rep_idle[v])
                for u in others(v, w):
                    conds.append(p.rep_seen[v][u] == (p.clock if u == p.id else p.known[u]))
            found = And(when, *conds)
            p.done = If(found, True, p.done)
            for v in others(p.id, w):
                send(v, Stop(), when=found)

        # -- properties --------------------------------------------------------------------------
        @invariant
        def staleness(s):
            """No worker is more than s + 1 finished iterations ahead of another (it starts one within s)."""
            if int(S) < 0:
                return True
            return And(*[s.clock[a] - s.clock[b] <= int(S) + 1 for a in range(int(W)) for b in range(int(W))])

        @invariant
        def knowledge_sound(s):
            """What a worker knows of another's clock is not ahead of that clock."""
            return And(*[s.known[a][b] <= s.clock[b] for a in range(int(W)) for b in range(int(W)) if a != b])

        @invariant
        def derivable(s):
            """Every stored value is the value of some derivation from the exit rules."""
            pl = plan()
            best, worst = bounds(pl)
            d = pl.derivable(best, worst)
            nil = none(pl)
            conds = []
            for k in range(len(pl.keys)):
                o = owner(pl, k, int(W))
                allowed = sorted(d.get(k, set()))
                conds.append(Or(s.val[o][k] == nil, *[s.val[o][k] == x for x in allowed]))
            return And(*conds)

        @invariant
        def fixpoint(s):
            """A worker that has stopped holds the sequential least model on its keys."""
            pl = plan()
            if pl.fixpoint is None:
                return True
            nil = none(pl)
            conds = []
            for wk in range(int(W)):
                eq = [s.val[wk][k] == pl.fixpoint.get(k, nil) for k in range(len(pl.keys)) if owner(pl, k, int(W)) == wk]
                conds.append(Or(Not(s.done[wk]), And(*eq)))
            return And(*conds)

        @constraint
        def clock_bound(s):
            """States where a clock reached its bound are checked but not expanded."""
            return And(*[s.clock[wk] < int(C) for wk in range(int(W))])

    SSP.__name__ = SSP.__qualname__ = f"SSP_{program}"
    return SSP


def _better(pl: LinearPlan, a, b):
    return a < b if pl.func == "min" else a > b


SSPShortestPaths = ssp_spec("sssp", "SSP evaluation of single-source shortest paths (sssp.dl).")
SSPComponents = ssp_spec("cc", "SSP evaluation of connected components (cc.dl).", capacity=16)
SSPReach = ssp_spec("reach", "SSP evaluation of reachability (reach.dl).")


class SSPStaleDelta(SSPShortestPaths):
    """Seeded bug: a delivered delta overwrites the stored value even when that value is better."""

    def combine(old, new):
        return new


__all__ = ["GRAPHS", "SSPComponents", "SSPReach", "SSPShortestPaths", "SSPStaleDelta", "graph_edges", "plan_for",
           "ssp_spec"]
