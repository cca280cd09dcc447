"""The runner's side of a run: spawn one OS process per member, wire them up, stop them, leave none behind.

Processes are started with multiprocessing (`spawn`, or a preloaded fork server) through
`wire.member_main`, which hands each its credentials: the run's secret, made here per run, and its
member id. They talk to the runner over an authenticated control connection (`wire.Endpoint`), and
to each other over authenticated data connections, directly or through the `Relay` when faults are
injected or a scheduler controls delivery. A connection that does not authenticate, or a malformed
control frame, is refused and counted in `rejected` (it becomes a note of the run), never a crash.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .relay import Relay
from .wire import RELAY, RUNNER, Credentials, Endpoint, FrameError, member_main, member_name, parse, serve

START_TIMEOUT = 60.0  # seconds in which some spawned process says hello (per CPU's share of those still starting)
STOP_TIMEOUT = 10.0
MAX_REJECTION_NOTES = 20  # rejected connections and frames described in the run's notes (all are counted)
T = TypeVar("T")


def cpu_seconds(pid: int | None) -> float | None:
    """The CPU time a process has used so far (Linux; None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def interrupted_header(cluster: Cluster) -> dict[str, float]:
    """The merged trace's mark of a run the user interrupted: `{"interrupted": seconds into the run}` (else nothing)."""
    return {} if cluster.interrupted is None else {"interrupted": cluster.interrupted}


def default_trace_path(name: str) -> str:
    """A new file in the temporary directory for a run's merged trace (created here, so its name cannot be
    taken over by another user of the machine, as a predictable name could)."""
    fd, path = tempfile.mkstemp(prefix=f"lockstep-{name}-", suffix=".jsonl")
    os.close(fd)
    return path


@dataclass
class Member:
    """One process of the run, as the runner sees it."""

    pid: int
    process: Any  # multiprocessing.Process
    port: int = 0
    link: Endpoint | None = None
    hello: asyncio.Future | None = None
    bye: dict[str, Any] | None = None
    killed: bool = False  # by the runner, on purpose
    exit_note: str | None = None
    reports: asyncio.Queue = field(default_factory=asyncio.Queue)

    def drained(self) -> bool:
        """Whether the runner has read all this process said: its control connection is closed (or never opened).
        A process that said bye and exited may still have its bye in the runner's socket buffer until then."""
        return self.link is None or self.link.closed


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
        self.creds = Credentials.fresh(RUNNER)  # the run's secret: only this run's processes get it
        self.start_timeout = START_TIMEOUT
        self.interrupted: float | None = None  # seconds into the run when the user interrupted it (SIGINT)
        self.rejected = 0
        self.rejections: list[str] = []

    def trace_path(self, pid: int) -> str | None:
        return os.path.join(self.trace_dir, f"process-{pid}.jsonl") if self.trace_dir else None

    async def start(self, choices: dict[int, dict[str, Any] | None] | None = None) -> None:
        """Spawn every process, connect them to each other and tell them to start (with these start choices)."""
        self.server, self.control_port = await serve(self.creds, self.nproc, on_frame=self._on_control,
                                                     on_rejected=self._reject, accept=self._may_connect, on_lost=self._lost)
        if self.relay is not None:
            await self.relay.start(self.creds.as_member(RELAY), self.nproc)
        for pid in range(self.nproc):
            self._spawn(pid, restore=False)
        await self._await_hellos(list(range(self.nproc)))
        ports = self._peer_ports()
        for pid in range(self.nproc):
            if self.relay is not None:
                await self.relay.attach(pid, self.members[pid].port)
        for pid in range(self.nproc):
            self.send(pid, {"op": "peers", "ports": ports, "relay": self.relay is not None})
        for pid in range(self.nproc):
            self.send(pid, {"op": "go", "choice": (choices or {}).get(pid)})
        self.loop_time0 = asyncio.get_running_loop().time()
        if self.relay is not None:
            self.relay.t0 = time.monotonic()  # partitions are timed from here

    async def drive(self, work: Awaitable[T]) -> T | None:
        """Run the run's main phase, `work`, until it ends or the user interrupts it (SIGINT, Ctrl-C): then `work` is
        cancelled, `interrupted` says when, and None is returned; the caller stops the processes as usual, so
        that they close their traces and what they recorded is kept. A second SIGINT aborts at once."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(work)
        before = signal.getsignal(signal.SIGINT)

        def interrupt() -> None:
            self.interrupted = round(self.elapsed(), 3)
            restore()
            task.cancel()

        def restore() -> None:
            if loop.remove_signal_handler(signal.SIGINT) and before is not None:
                signal.signal(signal.SIGINT, before)

        try:
            loop.add_signal_handler(signal.SIGINT, interrupt)
        except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: SIGINT aborts, as it did
            pass
        try:
            return await task
        except asyncio.CancelledError:
            if self.interrupted is None:
                raise
            return None
        finally:
            restore()

    def interruption_note(self) -> list[str]:
        """What the run's notes say of an interruption (nothing if there was none)."""
        if self.interrupted is None:
            return []
        return [f"interrupted (SIGINT) {self.interrupted:.2f} s into the run: the processes were stopped there and "
                "closed their traces, which keep what was recorded up to then"]

    def _peer_ports(self) -> dict[str, int]:
        if self.relay is not None:
            return {str(p): self.relay.port for p in range(self.nproc)}
        return {str(p): m.port for p, m in self.members.items()}

    def process_for(self, pid: int, restore: bool) -> tuple[Callable[[dict[str, Any]], None], dict[str, Any], str]:
        """Process `pid`'s entry point, its configuration (plain data) and its name: one per system model."""
        raise NotImplementedError

    def _spawn(self, pid: int, restore: bool) -> None:
        target, cfg, name = self.process_for(pid, restore)
        proc = self.ctx.Process(target=member_main, args=(target, cfg, self.creds.as_member(pid)), name=name,
                                daemon=True)
        proc.start()
        self.members[pid] = Member(pid, proc, hello=asyncio.get_running_loop().create_future())

    async def _await_hellos(self, pids: list[int]) -> None:
        """Wait until the processes `pids` have said hello. Starting (importing Lockstep, building the spec) is slow
        on a loaded machine, so the bound is on progress: the run gives up only when no process has said hello
        for `start_timeout` seconds times the number still starting per CPU, and then says what is slow."""
        loop = asyncio.get_running_loop()
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        starting, since = len(pids) + 1, loop.time()
        while True:
            late = [p for p in pids if not self.members[p].hello.done()]
            if not late:
                return
            if len(late) < starting:
                starting, since = len(late), loop.time()
            dead = [p for p in late if not self.members[p].process.is_alive()]
            if dead:
                raise RuntimeError(f"process {dead[0]} exited with code {self.members[dead[0]].process.exitcode} "
                                   "before connecting to the runner")
            bound = self.start_timeout * max(1.0, len(late) / cpus)
            if loop.time() - since > bound:
                raise RuntimeError(self._slow_start(late, len(pids), bound, cpus))
            await asyncio.sleep(0.02)

    def _slow_start(self, late: list[int], total: int, waited: float, cpus: int) -> str:
        """Why start-up gave up: how many started, what the others did meanwhile, how busy the machine is."""
        used = [t for t in (cpu_seconds(self.members[p].process.pid) for p in late) if t is not None]
        cpu = f", using {sum(used) / len(used):.1f} s of CPU each on average" if used else ""
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
        if load > cpus:
            why = (f"the machine is busy (load average {load:.1f} on {cpus} CPUs): run again when it is less loaded, "
                   "or with fewer processes")
        else:
            why = f"load average {load:.1f} on {cpus} CPUs: a process may be stuck importing or building the spec"
        return (f"process {late[0]} did not start: no process said hello for {waited:.3g} s ({total - len(late)} of "
                f"{total} started; {len(late)} still starting{cpu}); {why}")

    # -- control connections ---------------------------------------------------------------------------
    def _may_connect(self, peer: int) -> bool:
        """An authenticated process may hold one control connection (its current incarnation's)."""
        m = self.members.get(peer)
        return m is not None and (m.link is None or m.link.is_closing())

    def _reject(self, reason: str) -> None:
        self.rejected += 1
        if len(self.rejections) < MAX_REJECTION_NOTES:
            self.rejections.append(reason)

    def _on_control(self, ep: Endpoint, body: bytes) -> None:
        member = self.members[ep.peer]  # type: ignore[index]
        try:
            msg = parse(body)
            op = msg.get("op")
            if member.link is None:
                if op != "hello":
                    raise FrameError(f"expected hello, got {op!r}")
                port = msg.get("port")
                if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
                    raise FrameError(f"hello with port {port!r}, not a TCP port")
                member.port, member.link = port, ep
                if not member.hello.done():
                    member.hello.set_result(True)
            elif ep is not member.link:
                raise FrameError("a second control connection")
            elif op == "bye":
                member.bye = msg
            else:
                member.reports.put_nowait(msg)
        except FrameError as e:
            self._reject(f"a malformed control frame from {member_name(ep.peer)}: {e}")

    def _lost(self, ep: Endpoint) -> None:
        m = self.members.get(ep.peer) if ep.peer is not None else None  # type: ignore[arg-type]
        if m is not None and m.link is ep:
            m.reports.put_nowait({"op": "gone", "pid": m.pid})

    def send(self, pid: int, obj: dict[str, Any]) -> None:
        link = self.members[pid].link
        if link is not None and not link.is_closing():
            link.send(obj)

    def rejection_notes(self) -> list[str]:
        """What the runner refused (connections without the run's secret, malformed control frames), for the run's notes."""
        if not self.rejected:
            return []
        more = f" (the first {len(self.rejections)}: " if self.rejected > len(self.rejections) else " ("
        return [f"the runner rejected {self.rejected} control connection(s) or frame(s){more}"
                + "; ".join(self.rejections) + ")"]

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
        old = self.members[pid].link
        if old is not None:
            old.close()
        self._spawn(pid, restore=True)
        await self._await_hellos([pid])
        if self.relay is not None:
            await self.relay.attach(pid, self.members[pid].port)
        self.send(pid, {"op": "peers", "ports": self._peer_ports(), "relay": self.relay is not None})
        self.send(pid, {"op": "go", "elapsed": self.elapsed()})

    def dead(self) -> list[int]:
        """Processes that exited without being told to (not killed on purpose)."""
        return [p for p, m in self.members.items() if not m.killed and m.bye is None and not m.process.is_alive()
                and m.drained()]

    async def stop(self) -> None:
        """Ask every live process to stop and write its trace; reap them all."""
        live = [m for m in self.members.values() if m.process.is_alive() and not m.killed]
        for m in live:
            self.send(m.pid, {"op": "stop"})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STOP_TIMEOUT
        while loop.time() < deadline and any(m.bye is None and (m.process.is_alive() or not m.drained()) for m in live):
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
