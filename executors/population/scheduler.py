"""The scheduler of a population run, as its own OS process: it draws the ordered pairs and tells the agents.

Interaction k is the k-th pair of `lockstep.specs.lang.population.agents.pairs(seed, n)`; both agents of the
pair get the frame `{"k": k, "i": initiator, "r": responder}`, on the connection the agent opened
to the scheduler (authenticated with the run's secret: the connection's member id says whose it is; its first
frame is `{"done": 0, "src": agent}`). At most `window` interactions are
outstanding: initiators acknowledge completed interactions (`{"done": count, "src": agent}`), and
the scheduler reports progress to the runner and, when every interaction is done, `complete`.
Its choices need no trace: the validator draws the same pairs from the run's seed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from lockstep.specs.lang.population.agents import pairs

from ..wire import RUNNER, Endpoint, FrameError, connect, credentials, parse, serve

CHUNK = 256  # interactions announced per write
PROGRESS_EVERY = 0.5  # seconds between progress reports to the runner


@dataclass
class SchedulerConfig:
    """What the spawned scheduler is told (plain data)."""

    pid: int  # = the number of agents
    control_port: int
    seed: int
    interactions: int
    window: int = 4096


def main(cfg: dict[str, Any]) -> None:
    """Entry point of the spawned scheduler."""
    try:
        asyncio.run(Scheduler(SchedulerConfig(**cfg)).run())
    except (KeyboardInterrupt, ConnectionError):
        pass


class Scheduler:
    """Issues the run's interactions to the agents and counts the completed ones."""

    def __init__(self, cfg: SchedulerConfig):
        self.cfg = cfg
        self.n = cfg.pid
        self.done = [0] * self.n
        self.completed = 0
        self.issued = 0
        self.rejected = 0
        self.progress = asyncio.Event()
        self.registered = asyncio.Event()  # every agent has connected
        self.out: dict[int, Endpoint] = {}

    async def run(self) -> None:
        creds = credentials()
        server, port = await serve(creds, self.n, on_frame=self.on_ack, on_rejected=self._rejected,
                                   accept=lambda peer: 0 <= peer < self.n)
        self.ctl = await connect(self.cfg.control_port, creds, RUNNER)
        self.ctl.send({"op": "hello", "port": port})
        task = None
        try:
            while True:
                try:
                    cmd = await self.ctl.read()
                except FrameError:
                    self.rejected += 1
                    continue
                op = cmd.get("op")
                if op == "go":
                    task = asyncio.create_task(self.issue())
                elif op == "stop":
                    stats = {"issued": self.issued, "completed": self.completed, "rejected": self.rejected}
                    self.ctl.send({"op": "bye", "stats": stats})
                    await self.ctl.drain()
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            if task is not None:
                task.cancel()
            server.close()
            for t in self.out.values():
                t.close()

    def _rejected(self, why: str) -> None:
        self.rejected += 1

    def on_ack(self, transport: Endpoint, body: bytes) -> None:
        try:
            obj = parse(body)
            src, done = obj.get("src"), obj.get("done")
            if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < self.n or src != transport.peer:
                raise FrameError(f"src {src!r} is not the agent on this connection")
            if isinstance(done, bool) or not isinstance(done, int) or not self.done[src] <= done <= self.issued:
                raise FrameError(f"done {done!r} is not a count of interactions agent {src} may have completed")
        except FrameError:
            self.rejected += 1
            return
        if src not in self.out:
            self.out[src] = transport
            if len(self.out) == self.n:
                self.registered.set()
        elif self.out[src] is not transport:
            self.rejected += 1
            return
        self.completed += done - self.done[src]
        self.done[src] = done
        self.progress.set()

    async def issue(self) -> None:
        """Announce every interaction, keeping at most `window` outstanding; report progress and completion."""
        gen, total, window = pairs(self.cfg.seed, self.n), self.cfg.interactions, self.cfg.window
        await self.registered.wait()
        last_report = time.monotonic()
        while self.completed < total:
            room = min(total - self.issued, window - (self.issued - self.completed), CHUNK)
            if room > 0:
                bufs: dict[int, list[bytes]] = {}
                for k in range(self.issued + 1, self.issued + room + 1):
                    i, r = next(gen)
                    body = f'{{"k":{k},"i":{i},"r":{r}}}'.encode()
                    bufs.setdefault(i, []).append(body)
                    bufs.setdefault(r, []).append(body)
                self.issued += room
                for pid, bodies in bufs.items():
                    self.out[pid].send_many(bodies)
                await asyncio.sleep(0)
            else:
                self.progress.clear()
                await self.progress.wait()
            if time.monotonic() - last_report >= PROGRESS_EVERY:
                last_report = time.monotonic()
                self.ctl.send({"op": "progress", "completed": self.completed, "issued": self.issued})
        self.ctl.send({"op": "complete", "completed": self.completed, "issued": self.issued})
