"""The relay between processes: injects network faults, or holds every message for a scheduler.

Each process sends all its frames to the relay, which forwards them to their receivers with the
fault plan applied (drop, duplicate, delay, reorder, partitions). Frames to a process that is
down wait in the relay until it is restarted (frames it had received but not handled are lost).
In controlled mode nothing is forwarded on its own: frames wait in `held` until `release` hands
one to its receiver, in the order a counterexample prescribes.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

from .faults import Faults
from .wire import FrameProtocol


class Relay:
    """Forwards frames between processes, applying `faults` (or holding them when `controlled`)."""

    def __init__(self, faults: Faults | None, seed: int = 0, controlled: bool = False):
        self.faults = faults or Faults()
        self.rng = random.Random(seed)
        self.controlled = controlled
        self.to: dict[int, asyncio.Transport] = {}
        self.held: list[tuple[int, int, Any, bytes]] = []  # (src, dst, msg JSON, body), oldest first
        self.waiting: dict[int, list[bytes]] = {}  # frames for processes that are down
        self.stats = {"forwarded": 0, "dropped": 0, "duplicated": 0, "delayed": 0, "reordered": 0,
                      "partitioned": 0, "waited": 0, "lost": 0, "malformed": 0}
        self.t0 = time.monotonic()
        self.port = 0

    async def start(self) -> int:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: FrameProtocol(self.on_frame, self._malformed), "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self.port

    async def attach(self, pid: int, port: int) -> None:
        """(Re)connect to process `pid`'s data port and hand it the frames that waited while it was down."""
        old = self.to.pop(pid, None)
        if old is not None:
            old.close()
        transport, _ = await asyncio.get_running_loop().create_connection(asyncio.Protocol, "127.0.0.1", port)
        self.to[pid] = transport
        for body in self.waiting.pop(pid, []):
            self._forward(pid, body)

    def detach(self, pid: int) -> None:
        """Process `pid` is down: frames for it wait here until it is attached again."""
        self.waiting.setdefault(pid, [])
        t = self.to.pop(pid, None)
        if t is not None:
            t.close()

    def close(self) -> None:
        self.server.close()
        for t in self.to.values():
            t.close()

    def _malformed(self, why: str) -> None:
        self.stats["malformed"] += 1

    def on_frame(self, body: bytes) -> None:
        try:
            obj = json.loads(body)
            src, dst = int(obj["src"]), int(obj["dst"])
        except (ValueError, KeyError, TypeError):
            # not routable: pass it to nobody, the receivers would reject it anyway
            self.stats["malformed"] += 1
            return
        if self.controlled:
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
        t = self.to.get(dst)
        if t is None or t.is_closing():
            if dst in self.waiting:
                self.waiting[dst].append(body)
                self.stats["waited"] += 1
            else:
                self.stats["lost"] += 1
            return
        t.write(len(body).to_bytes(4, "big") + body)
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
                    body = json.dumps(obj, separators=(",", ":")).encode()
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

