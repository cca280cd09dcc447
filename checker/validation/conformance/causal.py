"""Causal merge of per-node logs: events in an order consistent with happens-before, never by wall clock.

Each event gets a vector clock: the one it logged, or one derived from the message ids it sent and
received (the receiver's clock is the maximum of its previous clock and the sender's clock at the send).
An event is *ready* once every event it depends on has been taken; of the ready events the merge takes the
one logged earliest by its node's wall clock (when the logs give times), then the one with the smallest
clock sum, then the first node (logs with vector clocks and no times are merged by clock sums alone, which
is a linear extension of happens-before by itself): whatever the clocks say, the order is a linear extension of happens-before
(wall clocks only choose among events that happens-before leaves unordered). Memory holds one pending event
per node (and, for logs with message ids, the clock of each message sent).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from ...errors import TraceError
from .schema import Event, LogReader, first_node


class CausalGap(Exception):
    """No event can be taken next: some event depends on one that no log holds. `cut_short` says whether a
    log the missing event would be in lacks its end record (the log may have been cut short)."""

    def __init__(self, event: Event, reason: str, cut_short: bool):
        super().__init__(reason)
        self.event, self.reason, self.cut_short = event, reason, cut_short


def _order(node: str) -> tuple:
    return (0, int(node), "") if node.isdigit() else (1, 0, node)


@dataclass
class Logs:
    """The logs of one run: a path per node, the nodes in their merge order."""

    paths: dict[str, str]

    @classmethod
    def open(cls, paths: list[str]) -> Logs:
        by_node: dict[str, str] = {}
        for p in paths:
            node = first_node(p)
            if node in by_node:
                raise TraceError(f"{p} and {by_node[node]} are both logs of node {node}: give one log per node")
            by_node[node] = p
        return cls({n: by_node[n] for n in sorted(by_node, key=_order)})

    @property
    def nodes(self) -> list[str]:
        return list(self.paths)


class CausalMerge:
    """The events of `logs` in a linear extension of happens-before, each with its vector clock (`vc`, in the
    order of `logs.nodes`). Raises CausalGap where no event can be taken though some remain."""

    def __init__(self, logs: Logs):
        self.logs = logs
        self.nodes = logs.nodes
        self.index = {n: i for i, n in enumerate(self.nodes)}
        self.readers = [LogReader(logs.paths[n]) for n in self.nodes]
        self.taken = [0] * len(self.nodes)
        self._keys = self.index.keys()

    def __iter__(self) -> Iterator[Event]:
        its = [iter(r) for r in self.readers]
        firsts = [next(it, None) for it in its]
        its = [it if f is None else itertools.chain((f,), it) for f, it in zip(firsts, its)]
        if all(f is None or (f.clock is not None and f.time is None) for f in firsts):
            return self._by_sums(its)
        return self._general(its)

    def _by_sums(self, its: list[Iterator[Event]]) -> Iterator[Event]:
        """Logs with vector clocks and no times: in order of the clocks' sums (an event's sum exceeds those of
        all events before it in happens-before), each event checked to be ready when taken (happens-before is
        each node's order and the clocks' claims, taken together)."""
        nodes, index, taken = self.nodes, self.index, self.taken
        keys = self._keys
        n = len(nodes)

        def keyed(i: int, it: Iterator[Event]) -> Iterator[tuple[int, int, Event]]:
            for e in it:
                clock = e.clock
                if clock is None:
                    raise TraceError(f"{e.where}: an event without a vector clock in a log whose first event has one")
                if not keys >= clock.keys():
                    k = next(k for k in clock if k not in index)
                    raise TraceError(f"{e.where}: the vector clock names node {k!r}, which has no log here "
                                     f"(logs of: {', '.join(nodes)})")
                get = clock.get
                vc = tuple([get(x, 0) for x in nodes])
                e.vc = vc
                yield sum(vc), i, e

        others = [[j for j in range(n) if j != i] for i in range(n)]
        for _, i, e in heapq.merge(*(keyed(i, it) for i, it in enumerate(its))):
            vc = e.vc
            for j in others[i]:
                if vc[j] > taken[j]:
                    raise self._gap([e], {})
            taken[i] += 1
            yield e

    def _general(self, its: list[Iterator[Event]]) -> Iterator[Event]:
        n = len(self.nodes)
        taken = self.taken
        prev: list[tuple[int, ...]] = [(0,) * n for _ in range(n)]
        sent: dict[str, tuple[int, ...]] = {}
        clock = self._clock
        ready: list[tuple] = []  # a heap of (wall time or 0, clock sum, node, event) of the heads that are ready
        waiting: dict[int, Event] = {}  # the heads that are not
        push, pop = heapq.heappush, heapq.heappop

        def offer(i: int, e: Event) -> None:
            vc = clock(e, i, prev[i], sent)
            if vc is None:
                waiting[i] = e
            else:
                e.vc = vc
                t = e.time
                push(ready, (0.0 if t is None else t, sum(vc), i, e))

        for i, it in enumerate(its):
            e = next(it, None)
            if e is not None:
                offer(i, e)
        while ready or waiting:
            if not ready:
                raise self._gap(list(waiting.values()), sent)
            *_, i, e = pop(ready)
            vc = e.vc
            if e.clock is not None and any(a < b for a, b in zip(vc, prev[i])):
                raise TraceError(f"{e.where}: the vector clock {e.clock} is behind the node's previous one: a node's "
                                 "clock never goes back")
            taken[i] += 1
            prev[i] = vc
            if e.sent:
                for m in e.sent:
                    if m in sent:
                        raise TraceError(f"{e.where}: message id {m!r} is sent twice (message ids must be unique)")
                    sent[m] = vc
            nxt = next(its[i], None)
            if nxt is not None:
                offer(i, nxt)
            if waiting:
                for j, w in list(waiting.items()):
                    if j != i:
                        del waiting[j]
                        offer(j, w)
            yield e

    def _clock(self, e: Event, i: int, prev: tuple[int, ...], sent: dict[str, tuple[int, ...]]) -> tuple[int, ...] | None:
        """The event's vector clock if it is ready (every event it depends on taken), else None."""
        taken = self.taken
        clock = e.clock
        if clock is not None:
            if not self._keys >= clock.keys():
                k = next(k for k in clock if k not in self.index)
                raise TraceError(f"{e.where}: the vector clock names node {k!r}, which has no log here "
                                 f"(logs of: {', '.join(self.nodes)})")
            get = clock.get
            vc = tuple([get(n, 0) for n in self.nodes])
            for j, c in enumerate(vc):
                if c > taken[j] and j != i:
                    return None
            return vc
        out = prev
        if e.recv:
            for m in e.recv:
                got = sent.get(m)
                if got is None:
                    return None
                out = tuple(max(a, b) for a, b in zip(out, got))
        return out[:i] + (e.seq,) + out[i + 1:]

    def _gap(self, heads: list[Event], sent: dict[str, tuple[int, ...]]) -> CausalGap:
        e = heads[0]
        infos = {n: r.info for n, r in zip(self.nodes, self.readers)}
        if e.clock is not None:
            for k, c in e.clock.items():
                j = self.index[k]
                if k != e.node and c > self.taken[j]:
                    reason = (f"event {e.seq} of node {e.node} ({e.where}) happens after event {c} of node {k}, but "
                              f"node {k}'s log has {self.taken[j]} events before an event that itself waits")
                    if all(h.node != k for h in heads):
                        reason = (f"event {e.seq} of node {e.node} ({e.where}) happens after event {c} of node {k}, "
                                  f"which node {k}'s log does not have (it has {self.taken[j]} events)")
                    return CausalGap(e, reason, not infos[k].ended)
        missing = [m for m in e.recv or [] if m not in sent]
        cut = any(not info.ended for n, info in infos.items() if n != e.node)  # a log that may hold the send
        return CausalGap(e, f"event {e.seq} of node {e.node} ({e.where}) receives message {missing[0]!r}, which no "
                            "event of the logs sends before it", cut)
