"""A PySyncObj cluster on 127.0.0.1, one OS process per node, with crashes, restarts and partitions on cue.

Every run has a fresh random password (PySyncObj then authenticates and encrypts every frame before it
unpickles anything) and binds loopback ports only. The harness waits for events (a leader, a commit
reached by a majority), each with a deadline, never for fixed times.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import queue
import secrets
import signal
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from .node import run_node

TIMING = {"min_timeout": 0.4, "max_timeout": 1.0, "period": 0.1, "connection_timeout": 1.5}


def free_ports(n: int) -> list[int]:
    """n ports of 127.0.0.1 that were free a moment ago."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def sent_counts(path: str) -> dict[int, int]:
    """Per destination, the Raft messages a node's log says it sent (a restarted node numbers on from there)."""
    out: dict[int, int] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue  # the line the crash cut
            for op in (e.get("args") or {}).get("ops", []):
                if op[0] == "send":
                    out[op[1]] = out.get(op[1], 0) + 1
    return out


@dataclass
class Status:
    pid: int = 0
    role: str = "follower"
    term: int = 0
    log: int = 0
    commit: int = 0


@dataclass
class Cluster:
    """n PySyncObj nodes logging to `directory` (node-I.jsonl), journals beside them."""

    n: int
    directory: str
    password: str = field(default_factory=lambda: secrets.token_hex(16))
    procs: dict[int, Any] = field(default_factory=dict)
    control: dict[int, Any] = field(default_factory=dict)
    status_q: dict[int, Any] = field(default_factory=dict)
    status: dict[int, Status] = field(default_factory=dict)
    events: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ctx = mp.get_context("spawn")
        ports = free_ports(self.n)
        self.addresses = [f"127.0.0.1:{p}" for p in ports]
        os.makedirs(self.directory, exist_ok=True)
        self.t0 = time.monotonic()

    def log_path(self, i: int) -> str:
        return os.path.join(self.directory, f"node-{i}.jsonl")

    def start(self, i: int, restart: bool = False) -> None:
        cfg = {"index": i, "addresses": self.addresses, "password": self.password, "log": self.log_path(i),
               "journal": os.path.join(self.directory, f"journal-{i}.bin"), "restart": restart,
               "sent_to": sent_counts(self.log_path(i)) if restart else {}, **TIMING}
        self.control[i], self.status_q[i] = self.ctx.Queue(), self.ctx.Queue()
        p = self.ctx.Process(target=run_node, args=(cfg, self.control[i], self.status_q[i]), daemon=True)
        p.start()
        self.procs[i] = p
        self.status[i] = Status(p.pid)
        self._note(f"{'restarted' if restart else 'started'} node {i}")

    def start_all(self) -> None:
        for i in range(self.n):
            self.start(i)

    def kill(self, i: int) -> None:
        """Crash node i (SIGKILL): its log ends where it was."""
        p = self.procs.pop(i)
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        self.status[i] = Status()
        self._note(f"crashed node {i}")

    def partition(self, *groups: list[int]) -> None:
        """Cut the cluster into groups: a node hears only the nodes of its group."""
        where = {i: g for g in groups for i in g}
        for i in self.procs:
            self.control[i].put(("block", [j for j in range(self.n) if j not in where.get(i, [i])]))
        self._note(f"partition {' | '.join(','.join(map(str, g)) for g in groups)}")

    def heal(self) -> None:
        for i in self.procs:
            self.control[i].put(("block", []))
        self._note("healed")

    def poll(self) -> None:
        for i, q in list(self.status_q.items()):
            if i not in self.procs:
                continue
            try:
                while True:
                    _, pid, role, term, log, commit = q.get_nowait()
                    self.status[i] = Status(pid, role, term, log, commit)
            except queue.Empty:
                pass
            except (EOFError, OSError):
                continue

    def wait(self, what: str, cond, deadline: float = 60.0) -> Any:
        """Wait until cond() is truthy (polling the nodes' reports), at most `deadline` seconds; its value."""
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            self.poll()
            out = cond()
            if out:
                return out
            dead = [i for i, p in self.procs.items() if not p.is_alive()]
            if dead:
                raise RuntimeError(f"node {dead[0]} died unexpectedly while waiting for {what}")
            time.sleep(0.02)
        raise TimeoutError(f"no {what} within {deadline:.0f} s: {self.status}")

    def leader(self, among: list[int] | None = None) -> int | None:
        """The live node that reports itself leader in the highest term (among `among`)."""
        best = None
        for i in (among if among is not None else list(self.procs)):
            s = self.status.get(i)
            if i in self.procs and s and s.role == "leader" and (best is None or s.term > self.status[best].term):
                best = i
        return best

    def wait_leader(self, among: list[int] | None = None, deadline: float = 60.0) -> int:
        """Wait for a leader (among `among`); its index."""
        self.wait("a leader", lambda: self.leader(among) is not None, deadline)
        out = self.leader(among)
        assert out is not None
        return out

    def add(self, leader: int, count: int) -> None:
        for k in range(count):
            self.control[leader].put(("add", k + 1))

    def committed(self, nodes: list[int], length: int) -> bool:
        """Whether every node of `nodes` has a log of `length` entries (beyond the first) and has committed them."""
        return all(i in self.procs and self.status[i].log >= length and self.status[i].commit >= length + 1
                   for i in nodes)

    def stop_all(self) -> None:
        for i in list(self.procs):
            self.control[i].put(("stop",))
        for p in list(self.procs.values()):
            p.join(20)
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join(5)
        self.procs.clear()
        self._note("stopped")

    def _note(self, text: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:6.2f} s  {text}")

    @property
    def logs(self) -> list[str]:
        return [self.log_path(i) for i in range(self.n)]
