"""Validation as a search: is there a behaviour of the spec that the logs are a view of?

The spec's states that match the events so far form a *frontier*. Each event is mapped to its plan (the
spec steps it stands for, and the variables it logged); from each frontier state the search takes up to
`max_internal` unlogged internal steps, then the plan's steps, and keeps the states that agree with the
logged variables. Unlogged variables are whatever the spec makes them: every state consistent with the
log is kept, so nothing is assumed about what the implementation did not write.

The events are first taken in one linear extension of happens-before (`causal.CausalMerge`). If no
behaviour matches that order, the search starts again over every order consistent with happens-before:
its frontier holds (cut, state) pairs, a cut saying how many events of each node are taken, and it
advances one event of one node at a time where that event's causes are all taken. So a log is valid iff
some interleaving consistent with happens-before is a behaviour of the spec. Both searches stream the
logs: memory is bounded by the frontier and the causal window, not by the length of the logs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .causal import CausalGap, CausalMerge, Logs
from .schema import Event
from .spec_side import Plan, SpecSide, StepFails

DEFAULT_MAX_FRONTIER = 100_000


@dataclass
class Candidate:
    """A next event the search tried from a frontier state, and why it does not match there."""

    event: Event
    reasons: list[str]


@dataclass
class FrontierEntry:
    """A frontier element where the search stopped: the events taken per node, the state, the candidates."""

    taken: dict[str, int]
    state: tuple
    candidates: list[Candidate] = field(default_factory=list)


@dataclass
class Conformance:
    """The outcome of validating logs against a spec."""

    verdict: str  # "valid" | "invalid" | "violation" | "incomplete" | "inconclusive"
    events: int  # events matched
    total: int | None  # events in the logs, when all were read
    seconds: float
    nodes: list[str]
    frontier_max: int = 0  # the largest frontier
    searched_orders: bool = False  # the search over every happens-before order ran
    last_event: Event | None = None  # the last event matched (on the way to the deepest frontier)
    failed_event: Event | None = None  # the event no frontier state could take (the one-order search)
    frontier: list[FrontierEntry] = field(default_factory=list)
    frontier_size: int = 0
    violation: str | None = None  # an invariant every matching state violates
    reason: str | None = None  # why the verdict (incomplete, inconclusive, a failing spec step)
    notes: list[str] = field(default_factory=list)
    model: Any = field(default=None, repr=False)  # the spec's model (to show states)

    @property
    def exit_code(self) -> int:
        return {"valid": 0, "invalid": 1, "violation": 1, "incomplete": 3, "inconclusive": 3}[self.verdict]

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


class _Frontier(Exception):
    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


class Search:
    """Validate per-node logs against a spec (`side`), with at most `max_internal` internal steps before each event."""

    def __init__(self, side: SpecSide, logs: Logs, max_internal: int = 0, max_frontier: int = DEFAULT_MAX_FRONTIER,
                 explain_states: int = 3, one_order: bool = False):
        self.side, self.logs = side, logs
        self.one_order = one_order  # every order consistent with happens-before has the same verdict (the caller
        # knows why: its mapping's steps at different nodes commute): the first order decides
        self.k = max_internal
        self.max_frontier = max_frontier
        self.explain_states = explain_states
        self.nodes = logs.nodes

    # -- one order -----------------------------------------------------------------------------------
    def run(self) -> Conformance:
        t0 = time.monotonic()
        side = self.side
        init = side.model.initial_states()
        front: dict[tuple, None] = dict.fromkeys(init)
        res = Conformance("valid", 0, None, 0.0, self.nodes)
        k = self.k
        plan_of, apply, closure, violated = side.plan, side.apply, side.internal_closure, side.violated
        count = 0
        biggest = len(front)
        last: Event | None = None
        merge = CausalMerge(self.logs)
        try:
            for e in merge:
                plan = plan_of(e)
                if len(front) == 1 and not k:  # the common case: one state, no internal steps
                    try:
                        out = apply(plan, next(iter(front)))
                    except StepFails as f:
                        return self._fails(res, f, e, count, t0)
                    if len(out) == 1 and violated(out[0]) < 0:
                        front = {out[0]: None}
                        count += 1
                        last = e
                        continue
                nxt: dict[tuple, None] = {}
                try:
                    if k:
                        for s in front:
                            for s0 in closure(s, k):
                                nxt.update(dict.fromkeys(apply(plan, s0)))
                    else:
                        for s in front:
                            nxt.update(dict.fromkeys(apply(plan, s)))
                except StepFails as f:
                    return self._fails(res, f, e, count, t0)
                if not nxt:
                    res.failed_event = e
                    if self.one_order:
                        return self._explain_one(res, front, e, plan, merge, count, last, t0)
                    res.notes.append(f"no behaviour of the spec matches the logs in the first order tried "
                                     f"(event {e.seq} of node {e.node}, {e.where}, after {count:,} events); searching "
                                     "every order consistent with happens-before")
                    return self._orders(res, t0)
                good = {s: None for s in nxt if violated(s) < 0}
                if not good:
                    s = next(iter(nxt))
                    res.verdict, res.violation = "violation", side.model.invariant_names[violated(s)]
                    res.events, res.last_event, res.seconds = count + 1, e, time.monotonic() - t0
                    res.frontier = [FrontierEntry(dict(zip(self.nodes, merge.taken)), s)]
                    return res
                front = good
                if len(front) > biggest:
                    biggest = len(front)
                    if biggest > self.max_frontier:
                        raise _Frontier(biggest)
                count += 1
                last = e
        except CausalGap as g:
            return self._gap(res, g, count, last, t0)
        except _Frontier as f:
            return self._inconclusive(res, f.size, count, t0)
        res.events = res.total = count
        res.frontier_max, res.last_event = biggest, last
        res.frontier_size = len(front)
        res.seconds = time.monotonic() - t0
        self._ended(res, merge)
        return res

    def _ended(self, res: Conformance, merge: CausalMerge) -> None:
        cut = [n for n, r in zip(self.nodes, merge.readers) if not r.info.ended]
        if cut and res.verdict == "valid":
            res.notes.append(f"the log of node {cut[0]} has no end record: it may have been cut short, and only what it "
                             "holds was validated")

    def _fails(self, res: Conformance, f: StepFails, e: Event, count: int, t0: float) -> Conformance:
        res.verdict, res.events, res.failed_event = "violation", count, e
        res.reason = f"the spec's step {f.transition.label} fails where the implementation went on: {f.why}"
        res.seconds = time.monotonic() - t0
        return res

    def _gap(self, res: Conformance, g: CausalGap, count: int, last: Event | None, t0: float) -> Conformance:
        res.verdict = "incomplete" if g.cut_short else "invalid"
        res.events, res.last_event, res.failed_event = count, last, g.event
        res.reason = g.reason + (" (that log has no end record: it was cut short)" if g.cut_short else "")
        res.seconds = time.monotonic() - t0
        return res

    def _inconclusive(self, res: Conformance, size: int, count: int, t0: float) -> Conformance:
        res.verdict, res.events = "inconclusive", count
        res.reason = (f"the frontier grew to {size:,} states, more than --max-frontier {self.max_frontier:,}: the log "
                      "leaves too much unknown (log more variables, give more arguments, or allow fewer internal steps)")
        res.seconds = time.monotonic() - t0
        return res

    # -- every order consistent with happens-before ----------------------------------------------------
    def _orders(self, res: Conformance, t0: float) -> Conformance:
        res.searched_orders = True
        side = self.side
        side.restart_mapping()  # the mapping sees each node's events again from the first, with its state anew
        n = len(self.nodes)
        window = _Window(CausalMerge(self.logs), n, side)
        front: dict[tuple, Event | None] = {((0,) * n, s): None for s in side.model.initial_states()}
        level = 0
        try:
            while True:
                nxt: dict[tuple, Event | None] = {}
                bad: tuple | None = None  # a matching state that violates an invariant (dropped from the frontier)
                done = False
                for (cut, s) in front:
                    progressed = False
                    for i in range(n):
                        item = window.get(i, cut[i])
                        if item is None:
                            continue
                        progressed = True
                        e, plan = item
                        vc = e.vc
                        if any(vc[j] > cut[j] for j in range(n) if j != i):
                            continue
                        cut2 = cut[:i] + (cut[i] + 1,) + cut[i + 1:]
                        for s2 in self._event_states(plan, s):
                            if side.violated(s2) < 0:
                                nxt[(cut2, s2)] = e
                            elif bad is None:
                                bad = (s2, e, cut2)
                    if not progressed:
                        done = True
                        break
                if done:
                    res.verdict, res.events = "valid", level
                    res.total = level
                    res.notes.append("a behaviour of the spec matches another order of the events, consistent with "
                                     "happens-before")
                    break
                if not nxt and bad is not None:  # the logs match only states that violate an invariant
                    s2, e, cut2 = bad
                    res.verdict, res.events, res.last_event = "violation", level + 1, e
                    res.violation = side.model.invariant_names[side.violated(s2)]
                    res.frontier = [FrontierEntry(dict(zip(self.nodes, cut2)), s2)]
                    res.seconds = time.monotonic() - t0
                    return res
                if not nxt:
                    return self._explain(res, front, window, level, t0)
                if len(nxt) > self.max_frontier:
                    raise _Frontier(len(nxt))
                res.frontier_max = max(res.frontier_max, len(nxt))
                front = nxt
                res.last_event = next(iter(front.values()))
                level += 1
                window.trim(min(c[i] for c, _ in front) for i in range(n))
        except CausalGap as g:
            return self._gap(res, g, level, res.last_event, t0)
        except _Frontier as f:
            return self._inconclusive(res, f.size, level, t0)
        except StepFails as f:
            res.verdict, res.events = "violation", level
            res.reason = f"the spec's step {f.transition.label} fails where the implementation went on: {f.why}"
        res.seconds = time.monotonic() - t0
        return res

    def _event_states(self, plan: Plan, s: tuple) -> list[tuple]:
        if not self.k:
            return self.side.apply(plan, s)
        out: dict[tuple, None] = {}
        for s0 in self.side.internal_closure(s, self.k):
            out.update(dict.fromkeys(self.side.apply(plan, s0)))
        return list(out)

    def _explain_one(self, res: Conformance, front: dict[tuple, None], e: Event, plan: Plan, merge: CausalMerge,
                     count: int, last: Event | None, t0: float) -> Conformance:
        """The outcome where the first order decides and event `e` cannot be taken from any state of `front`."""
        from .explain import why_not

        res.verdict, res.events, res.last_event = "invalid", count, last
        res.frontier_size = len(front)
        taken = dict(zip(self.nodes, merge.taken))
        taken[e.node] -= 1  # the merge counts `e` as taken
        for s in list(front)[:self.explain_states]:
            res.frontier.append(FrontierEntry(dict(taken), s, [Candidate(e, why_not(self.side, plan, s, self.k))]))
        res.seconds = time.monotonic() - t0
        return res

    def _explain(self, res: Conformance, front: dict[tuple, Any], window: _Window, level: int, t0: float) -> Conformance:
        from .explain import why_not

        res.verdict, res.events = "invalid", level
        res.frontier_size = len(front)
        n = len(self.nodes)
        for (cut, s) in list(front)[:self.explain_states]:
            entry = FrontierEntry(dict(zip(self.nodes, cut)), s)
            for i in range(n):
                item = window.get(i, cut[i])
                if item is None:
                    continue
                e, plan = item
                waits = [self.nodes[j] for j in range(n) if j != i and e.vc[j] > cut[j]]
                if waits:
                    continue
                entry.candidates.append(Candidate(e, why_not(self.side, plan, s, self.k)))
            res.frontier.append(entry)
        res.seconds = time.monotonic() - t0
        return res


class _Window:
    """Each node's events from the lowest cut of the frontier on, pulled from a causal merge as needed, with
    their plans (each event is mapped once)."""

    def __init__(self, merge: CausalMerge, n: int, side: SpecSide):
        self.it: Iterator[Event] = iter(merge)
        self.merge = merge
        self.side = side
        self.base = [0] * n
        self.buf: list[deque[tuple[Event, Plan]]] = [deque() for _ in range(n)]
        self.exhausted = False

    def get(self, i: int, k: int) -> tuple[Event, Plan] | None:
        """Event k (0-based) of node i and its plan, or None if node i has no such event."""
        buf = self.buf[i]
        while k - self.base[i] >= len(buf):
            if self.exhausted:
                return None
            e = next(self.it, None)
            if e is None:
                self.exhausted = True
                return None
            j = self.merge.index[e.node]
            self.buf[j].append((e, self.side.plan(e)))
        return buf[k - self.base[i]]

    def trim(self, lows: Any) -> None:
        for i, low in enumerate(lows):
            buf = self.buf[i]
            while self.base[i] < low and buf:
                buf.popleft()
                self.base[i] += 1
