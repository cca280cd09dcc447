"""The runner's side of a run: spawn one OS process per member, wire them up, stop them, leave none behind.

Processes are started with multiprocessing's `spawn` method and talk to the runner over a control
connection (length-prefixed JSON frames on 127.0.0.1, like the data plane). Data goes directly
between processes, or through the `Relay` when faults are injected or a scheduler controls delivery.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .relay import Relay
from .wire import frame, read_frame

START_TIMEOUT = 60.0  # seconds for a spawned process to import Lockstep, build the spec and say hello
STOP_TIMEOUT = 10.0


@dataclass
class Member:
    """One process of the run, as the runner sees it."""

    pid: int
    process: Any  # multiprocessing.Process
    port: int = 0
    writer: asyncio.StreamWriter | None = None
    hello: asyncio.Future | None = None
    bye: dict[str, Any] | None = None
    killed: bool = False  # by the runner, on purpose
    exit_note: str | None = None
    reports: asyncio.Queue = field(default_factory=asyncio.Queue)


class Cluster:
    """The processes of one run; a subclass per system model says what each process runs (`process_for`)."""

    def __init__(self, spec: str, params: dict[str, int], nproc: int, trace_dir: str | None, seed: int = 0,
                 relay: Relay | None = None, controlled: bool = False, durable: bool = False):
        self.spec, self.params, self.nproc = spec, params, nproc
        self.trace_dir = trace_dir
        self.seed = seed
        self.relay = relay
        self.controlled = controlled
        self.durable = durable
        self.members: dict[int, Member] = {}
        self.ctx = multiprocessing.get_context("spawn")
        self.loop_time0 = 0.0

    def trace_path(self, pid: int) -> str | None:
        return os.path.join(self.trace_dir, f"process-{pid}.jsonl") if self.trace_dir else None

    async def start(self, choices: dict[int, dict[str, Any] | None] | None = None) -> None:
        """Spawn every process, connect them to each other and tell them to start (with these start choices)."""
        self.server = await asyncio.start_server(self._on_control, "127.0.0.1", 0)
        self.control_port = self.server.sockets[0].getsockname()[1]
        if self.relay is not None:
            await self.relay.start()
        for pid in range(self.nproc):
            self._spawn(pid, restore=False)
        await self._await_hellos(list(range(self.nproc)))
        ports = self._peer_ports()
        for pid in range(self.nproc):
            if self.relay is not None:
                await self.relay.attach(pid, self.members[pid].port)
        for pid in range(self.nproc):
            self.send(pid, {"op": "peers", "ports": ports})
        for pid in range(self.nproc):
            self.send(pid, {"op": "go", "choice": (choices or {}).get(pid)})
        self.loop_time0 = asyncio.get_running_loop().time()
        if self.relay is not None:
            self.relay.t0 = time.monotonic()  # partitions are timed from here

    def _peer_ports(self) -> dict[str, int]:
        if self.relay is not None:
            return {str(p): self.relay.port for p in range(self.nproc)}
        return {str(p): m.port for p, m in self.members.items()}

    def process_for(self, pid: int, restore: bool) -> tuple[Callable[[dict[str, Any]], None], dict[str, Any], str]:
        """Process `pid`'s entry point, its configuration (plain data) and its name: one per system model."""
        raise NotImplementedError

    def _spawn(self, pid: int, restore: bool) -> None:
        target, cfg, name = self.process_for(pid, restore)
        proc = self.ctx.Process(target=target, args=(cfg,), name=name, daemon=True)
        proc.start()
        self.members[pid] = Member(pid, proc, hello=asyncio.get_running_loop().create_future())

    async def _await_hellos(self, pids: list[int]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT
        while True:
            late = [p for p in pids if not self.members[p].hello.done()]
            if not late:
                return
            dead = [p for p in late if not self.members[p].process.is_alive()]
            if dead or loop.time() > deadline:
                why = f"exited with code {self.members[dead[0]].process.exitcode}" if dead \
                    else f"did not start within {START_TIMEOUT:.0f} s"
                raise RuntimeError(f"process {(dead or late)[0]} {why} before connecting to the runner")
            await asyncio.sleep(0.02)

    async def _on_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        member = None
        try:
            while True:
                msg = await read_frame(reader)
                op = msg.get("op")
                if op == "hello":
                    member = self.members[int(msg["pid"])]
                    member.port, member.writer = int(msg["port"]), writer
                    if not member.hello.done():
                        member.hello.set_result(True)
                elif member is not None and op == "bye":
                    member.bye = msg
                    break
                elif member is not None:
                    member.reports.put_nowait(msg)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the process went away, or the run is over
        finally:
            if member is not None:
                member.reports.put_nowait({"op": "gone", "pid": member.pid})
            writer.close()

    def send(self, pid: int, obj: dict[str, Any]) -> None:
        w = self.members[pid].writer
        if w is not None and not w.is_closing():
            w.write(frame(obj))

    def elapsed(self) -> float:
        return asyncio.get_running_loop().time() - self.loop_time0

    async def kill(self, pid: int) -> None:
        """SIGKILL a process (a crash)."""
        m = self.members[pid]
        m.killed = True
        if m.process.is_alive():
            m.process.kill()
        await asyncio.get_running_loop().run_in_executor(None, m.process.join, 5)
        if self.relay is not None:
            self.relay.detach(pid)

    async def restart(self, pid: int) -> None:
        """Start a killed process again; it continues from the last state it recorded."""
        self._spawn(pid, restore=True)
        await self._await_hellos([pid])
        if self.relay is not None:
            await self.relay.attach(pid, self.members[pid].port)
        self.send(pid, {"op": "peers", "ports": self._peer_ports()})
        self.send(pid, {"op": "go", "elapsed": self.elapsed()})

    def dead(self) -> list[int]:
        """Processes that exited without being told to (not killed on purpose)."""
        return [p for p, m in self.members.items() if not m.killed and m.bye is None and not m.process.is_alive()]

    async def stop(self) -> None:
        """Ask every live process to stop and write its trace; reap them all."""
        live = [m for m in self.members.values() if m.process.is_alive() and not m.killed]
        for m in live:
            self.send(m.pid, {"op": "stop"})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_TIMEOUT
        while loop.time() < deadline and any(m.bye is None and m.process.is_alive() for m in live):
            await asyncio.sleep(0.02)
        for m in self.members.values():
            await loop.run_in_executor(None, m.process.join, 2)
            if m.process.is_alive():
                m.process.kill()
                m.process.join(2)
                m.exit_note = "did not stop when asked; killed"
            elif m.bye is None and not m.killed:
                m.exit_note = f"exited unexpectedly (exit code {m.process.exitcode})"
        self.close()

    def close(self) -> None:
        """Kill whatever is still running (on errors and interrupts too)."""
        for m in self.members.values():
            if m.process.is_alive():
                m.process.kill()
                m.process.join(2)
        if getattr(self, "server", None) is not None:
            self.server.close()
        if self.relay is not None and getattr(self.relay, "server", None) is not None:
            self.relay.close()
