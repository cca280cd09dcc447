"""The relay between processes: injects network faults, or holds every message for a scheduler.

Each process sends all its frames to the relay over an authenticated connection; the relay checks
that a frame's `src` is the process that sent it, and forwards it, sealed again on its own
authenticated connection to the receiver, with the fault plan applied (drop, duplicate, delay,
reorder, partitions). Frames to a process that is down wait in the relay (at most MAX_WAITING per
process; more are lost and counted) until it is restarted (frames it had received but not handled
are lost). In controlled mode nothing is forwarded on its own: frames wait in `held` until `release`
hands one to its receiver, in the order a counterexample prescribes.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

from .faults import Faults
from .wire import RUNNER, Credentials, Endpoint, connect, dumps, member_name, serve

MAX_WAITING = 100_000  # frames held for one process that is down (or, controlled, in all)


class Relay:
    """Forwards frames between processes, applying `faults` (or holding them when `controlled`)."""

    def __init__(self, faults: Faults | None, seed: int = 0, controlled: bool = False):
        self.faults = faults or Faults()
        self.rng = random.Random(seed)
        self.controlled = controlled
        self.to: dict[int, Endpoint] = {}
        self.held: list[tuple[int, int, Any, bytes]] = []  # (src, dst, msg JSON, body), oldest first
        self.waiting: dict[int, list[bytes]] = {}  # frames for processes that are down
        self.stats = {"forwarded": 0, "dropped": 0, "duplicated": 0, "delayed": 0, "reordered": 0,
                      "partitioned": 0, "waited": 0, "lost": 0, "malformed": 0, "rejected": 0}
        self.rejections: list[str] = []
        self.t0 = time.monotonic()
        self.port = 0

    async def start(self, creds: Credentials, peers: int = 0) -> int:
        """Listen for the run's `peers` processes; the port."""
        self.creds = creds
        self.server, self.port = await serve(creds, peers, on_frame=self.on_frame, on_rejected=self._rejected,
                                             accept=lambda peer: peer != RUNNER)
        return self.port

    async def attach(self, pid: int, port: int) -> None:
        """(Re)connect to process `pid`'s data port and hand it the frames that waited while it was down."""
        old = self.to.pop(pid, None)
        if old is not None:
            old.close()
        ep = await connect(port, self.creds, pid, on_frame=lambda _ep, _body: None, on_rejected=self._rejected)
        self.to[pid] = ep
        for body in self.waiting.pop(pid, []):
            self._forward(pid, body)

    def detach(self, pid: int) -> None:
        """Process `pid` is down: frames for it wait here until it is attached again."""
        self.waiting.setdefault(pid, [])
        ep = self.to.pop(pid, None)
        if ep is not None:
            ep.close()

    def close(self) -> None:
        self.server.close()
        for ep in self.to.values():
            ep.close()

    def _rejected(self, why: str) -> None:
        self.stats["rejected"] += 1
        if len(self.rejections) < 20:
            self.rejections.append(why)

    def on_frame(self, ep: Endpoint, body: bytes) -> None:
        try:
            obj = json.loads(body)
            src, dst = obj["src"], obj["dst"]
            if not (isinstance(src, int) and isinstance(dst, int)) or isinstance(src, bool) or isinstance(dst, bool):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):
            # not routable: pass it to nobody, the receivers would reject it anyway
            self.stats["malformed"] += 1
            return
        if src != ep.peer:  # a process speaks only for itself
            self._rejected(f"a frame from {member_name(ep.peer)} claiming src {src}")
            return
        if self.controlled:
            if len(self.held) >= MAX_WAITING:
                self.stats["lost"] += 1
                return
            self.held.append((src, dst, obj.get("msg"), body))
            return
        f, now = self.faults, time.monotonic() - self.t0
        if any(p.separates(src, dst, now) for p in f.partitions):
            self.stats["partitioned"] += 1
            return
        if f.drop and self.rng.random() < f.drop:
            self.stats["dropped"] += 1
            return
        copies = 2 if f.duplicate and self.rng.random() < f.duplicate else 1
        if copies == 2:
            self.stats["duplicated"] += 1
        for _ in range(copies):
            delay = self.rng.uniform(*f.delay_ms) if f.delay_ms[1] else 0.0
            if f.reorder and self.rng.random() < f.reorder:
                delay += self.rng.uniform(0, f.reorder_ms)
                self.stats["reordered"] += 1
            if delay > 0:
                self.stats["delayed"] += 1
                asyncio.get_running_loop().call_later(delay / 1000, self._forward, dst, body)
            else:
                self._forward(dst, body)

    def _forward(self, dst: int, body: bytes) -> None:
        ep = self.to.get(dst)
        if ep is None or ep.is_closing():
            box = self.waiting.get(dst)
            if box is not None and len(box) < MAX_WAITING:
                box.append(body)
                self.stats["waited"] += 1
            else:
                self.stats["lost"] += 1
            return
        ep.send_body(body)
        self.stats["forwarded"] += 1

    def release(self, src: int, dst: int, msg: Any, choice: dict[str, Any] | None = None) -> bool:
        """Forward the oldest held frame from src to dst carrying `msg` (its JSON form); False if none.

        `choice` is added to the frame: the receiver takes that nondeterministic choice of its handler.
        """
        for i, (s, d, m, body) in enumerate(self.held):
            if s == src and d == dst and m == msg:
                del self.held[i]
                if choice:
                    obj = json.loads(body)
                    obj["choice"] = choice
                    body = dumps(obj)
                self._forward(dst, body)
                return True
        return False

    def discard(self, src: int, dst: int, msg: Any) -> bool:
        """Drop the oldest held frame matching (a lost message in a replayed trace)."""
        for i, (s, d, m, _) in enumerate(self.held):
            if s == src and d == dst and m == msg:
                del self.held[i]
                return True
        return False
