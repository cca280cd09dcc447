"""The stale-synchronous protocol every SSP evaluation spec shares: clocks, ticks, quiescence.

`clocked` builds the base actor spec of W workers (and its `Delta` message): each keeps `val` (one best value per key of its
table), `changed` (its δ), its `clock` (iterations finished), and what it has heard of the others
(`known` clocks, and whether their latest tick said idle and which clocks its sender had seen). A
subclass supplies the evaluation: the start (`on_start`), a delivered `Delta` (`delta`) and one
iteration (`on_timeout`, between `begin` and `finish`).

- An iteration may start while the worker has changed keys or lags behind a clock it has heard of,
  and `clock - known clock of every other worker <= s` (`ahead(s)`; s < 0: asynchronous). It ends with
  `Tick(fresh, idle, seen)` to every other worker: channels are FIFO (as TCP), so the receiver knows
  the sender's clock by counting fresh ticks; a re-announcement is a tick that is not fresh.
- Quiescence: the tick ending v's iteration c tells w that it has every delta v sent in iterations up
  to c. A worker that is idle detects termination when every other worker's latest tick says it was
  idle and had received all ticks of every worker up to the clocks it knows (its own: its current
  clock), then sends `Stop`. When a tick raises what a worker knows and it is idle, it announces again
  (same clock), so the last ticks of a finished run carry complete information. A stopped worker's
  timer is a no-op, so a state with nothing enabled is a real deadlock (termination not detected).

Properties: `staleness` (no worker more than s + 1 finished iterations ahead of another: one starts
only within s), `knowledge_sound` (what a worker knows of another's clock is not ahead of it), and the
`clocks` bound (a state where a clock reaches it is checked but not expanded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..lang import And, Bool, Enum, If, Int, Map, Max, Min, Not, Or, Range, Record, Set, Union, constraint, invariant, require
from ..lang.actors import ActorSpec, Local, Network, on_message, send, set_timer
from ..lang.params import Param, ParamExpr


def others(pid: int, w: int) -> list[int]:
    return [u for u in range(w) if u != pid]


def holds_derivable(s: Any, w: int, held: Callable[[int], Iterable[int]], derivable: Mapping[int, set[int]], nil: int) -> Any:
    """That each of the w workers holds, on each key `held(worker)` it answers for, no value yet (`nil`) or a value of
    some derivation (`derivable`: key -> its derivable values)."""
    return And(*[Or(s.val[wk][k] == nil, *[s.val[wk][k] == x for x in sorted(derivable.get(k, set()))])
                 for wk in range(w) for k in held(wk)])


def holds_fixpoint(s: Any, w: int, held: Callable[[int], Iterable[int]], fixpoint: Mapping[int, int] | None,
                   nil: int) -> Any:
    """That each of the w workers that has stopped holds the sequential least model `fixpoint` (key -> value, `nil`
    where it has none) on each key `held(worker)` it answers for; true when the least model is not known."""
    if fixpoint is None:
        return True
    return And(*[Or(Not(s.done[wk]), And(*[s.val[wk][k] == fixpoint.get(k, nil) for k in held(wk)])) for wk in range(w)])


def clocked(doc: str, W: Param, S: Param, C: Param, Key: Any, Value: Any, func: str,
            capacity: int) -> tuple[type[ActorSpec], Any]:
    """The base spec of SSP workers over a table of `Key` -> `Value` (an `Int`), γ = `func` (min or max),
    and its `Delta(k, v)` message."""
    Proc = Range(W)
    Clock = Int(0, C)
    Seen = Int(0, ParamExpr(lambda c, w: (c + 1) ** max(w - 1, 1) - 1, "seen", (C, W)))
    Delta = Record("Delta", k=Key, v=Value)
    Tick = Record("Tick", fresh=Bool, idle=Bool, seen=Seen)
    Stop = Record("Stop")

    class Clocked(ActorSpec):
        __doc__ = doc
        Process = Proc
        Message = Union(Delta, Tick, Stop)
        Timer = Enum("iterate")
        network = Network(ordered=True, capacity=capacity)
        workers, s, clocks = W, S, C

        val = Local(Map(Key, Value))  # set by the start handler
        changed = Local(Set(Key))
        clock = Local(Clock, init=0)
        known = Local(Map(Proc, Clock), init=0)  # the latest tick clock heard from each worker
        rep_idle = Local(Map(Proc, Bool), init=False)  # ... whether that tick said idle
        rep_seen = Local(Map(Proc, Map(Proc, Clock)), init=0)  # ... and what its sender had seen
        done = Local(Bool, init=False)

        def ahead(s: int) -> int:
            """How far ahead of the slowest worker it has heard of a worker may start an iteration: s."""
            return s

        def combine(old, new):
            """The value kept when a delta arrives: γ (the better of the two)."""
            return Min(old, new) if func == "min" else Max(old, new)

        def delta(p, src: int, m: Any) -> None:
            """A delivered `Delta` (the evaluation's own)."""
            raise NotImplementedError

        @on_message
        def receive(p, src, m):
            if m.tag == "Delta":
                p.spec.delta(p, src, m)
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
                    send(v, Tick(False, True, Clocked.seen_code(p, v)), when=again)
                Clocked.detect(p)
            else:
                p.done = True

        def begin(p) -> Any:
            """The start of an iteration: whether it goes (a stopped worker's timer is a no-op; otherwise it
            waits for work, within the staleness bound)."""
            set_timer("iterate")
            w = int(W)
            lag = Or(*[p.clock < p.known[v] for v in others(p.id, w)]) if w > 1 else False
            work = Or(Not(p.changed.is_empty()), lag)
            within = And(*[p.clock - p.known[v] <= p.spec.ahead(int(S)) for v in others(p.id, w)]) \
                if int(S) >= 0 and w > 1 else True
            go = And(Not(p.done), work, within)
            require(Or(p.done, go))
            return go

        def finish(p, go: Any) -> None:
            """The end of an iteration that went: the clock advances, a tick to every other worker, detection."""
            p.clock = If(go, p.clock + 1, p.clock)
            idle = p.changed.is_empty()
            for v in others(p.id, int(W)):
                send(v, Tick(True, idle, Clocked.seen_code(p, v)), when=go)
            Clocked.detect(p, go)

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

        @constraint
        def clock_bound(s):
            """States where a clock reached its bound are checked but not expanded."""
            return And(*[s.clock[wk] < int(C) for wk in range(int(W))])

    return Clocked, Delta


__all__ = ["clocked", "holds_derivable", "holds_fixpoint", "others"]
