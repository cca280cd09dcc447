"""Fault plans of a P-SMR run (`lockstep run psmr --faults FILE`): what they mean there, and how a process injects
the network's part.

A P-SMR plan names replicas, not processes: `"pid": R` and the partitions' groups are replicas 0..R-1.

- `crashes`: SIGKILL every worker of replica R at `at` seconds (a replica does not restart);
- `drop`: each message to or from a replica's workers is lost with this probability;
- `delay_ms`: each such message is held back a time drawn from [min, max], its channel staying in order;
- `partitions`: from `start` to `end`, the replicas outside the first group are cut off from the ordering layer
  and the clients (their deliveries and replies are lost); the first group is the service's side.

The ordering layer itself (clients to sequencers, the hub to sequencers) is never faulted: a lost multicast is a
lost command, which P-SMR's atomic multicast does not allow. A replica that misses a delivery refuses the later
ones of that group (there is no state transfer): it stops, and the clients take the other replicas' replies.
Duplication, reordering and stragglers are refused: P-SMR's channels are TCP streams, and its workers have no
iteration to slow.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable
from typing import Any

from ..faults import Faults, FaultsError


def check_plan(faults: Faults, where: str) -> Faults:
    """The plan, if P-SMR can inject all of it (FaultsError saying what cannot be, and how to fix the plan)."""
    unsupported = [name for name, used in (("duplicate", faults.duplicate), ("reorder", faults.reorder),
                                           ("stragglers", faults.stragglers)) if used]
    if unsupported:
        raise FaultsError(f"{where}: {unsupported[0]!r} is not supported by `lockstep run psmr` (its channels keep "
                          "order and deliver once; its workers have no iteration to slow)\n"
                          "  fix: use drop, delay_ms, partitions and crashes")
    if any(c.restart is not None for c in faults.crashes):
        raise FaultsError(f"{where}: a P-SMR replica does not restart after a crash\n  fix: drop \"restart\"")
    return faults


def network(faults: Faults | None) -> dict[str, Any] | None:
    """The plan's network part as plain data for the processes (None if it injects nothing there)."""
    if faults is None or not (faults.drop or faults.delay_ms[1] or faults.partitions):
        return None
    return {"drop": faults.drop, "delay_ms": list(faults.delay_ms),
            "partitions": [[p.start, p.end, [sorted(g) for g in p.groups]] for p in faults.partitions]}


class Injector:
    """One process's side of the plan: for each message it sends to `dst`, whether it is lost, or when it leaves.

    `replica_of(pid)` is the replica of a worker (None for any other process); `now()` is the run's clock.
    A message on a faulted link is passed to `deliver(dst, msg)` at once, later, or never; `lost(dst, msg, why)`
    hears of each loss."""

    def __init__(self, plan: dict[str, Any], me: int, seed: int, replica_of: Callable[[int], int | None],
                 now: Callable[[], float], deliver: Callable[[int, Any], None],
                 lost: Callable[[int, Any, str], None]) -> None:
        self.drop, (self.lo, self.hi) = plan["drop"], plan["delay_ms"]
        self.partitions = [(start, end, set(groups[0]) if groups else set()) for start, end, groups in plan["partitions"]]
        self.me, self.rng = me, random.Random(seed * 1_000_003 + me)
        self.replica_of, self.now, self.deliver, self.lost = replica_of, now, deliver, lost
        self.held: dict[int, deque[tuple[float, Any]]] = {}  # per channel, in order: (when it leaves, message)
        self.stats = {"dropped": 0, "partitioned": 0, "delayed": 0}

    def send(self, dst: int, msg: Any) -> None:
        mine, theirs = self.replica_of(self.me), self.replica_of(dst)
        if mine is None and theirs is None:  # the ordering layer and the clients: never faulted
            self.deliver(dst, msg)
            return
        side = theirs if mine is None else mine
        if (mine is None or theirs is None) and self._cut_off(side):
            self.stats["partitioned"] += 1
            self.lost(dst, msg, "partition")
            return
        if self.drop and self.rng.random() < self.drop:
            self.stats["dropped"] += 1
            self.lost(dst, msg, "drop")
            return
        if not self.hi:
            self.deliver(dst, msg)
            return
        loop = asyncio.get_running_loop()
        channel = self.held.setdefault(dst, deque())
        when = max(channel[-1][0] if channel else 0.0, loop.time() + self.rng.uniform(self.lo, self.hi) / 1000)
        channel.append((when, msg))
        self.stats["delayed"] += 1
        if len(channel) == 1:
            loop.call_at(when, self._release, dst)

    def _cut_off(self, replica: int) -> bool:
        t = self.now()
        return any(start <= t < end and replica not in first for start, end, first in self.partitions)

    def _release(self, dst: int) -> None:
        loop = asyncio.get_running_loop()
        channel = self.held[dst]
        while channel and channel[0][0] <= loop.time():
            self.deliver(dst, channel.popleft()[1])
        if channel:
            loop.call_at(channel[0][0], self._release, dst)
