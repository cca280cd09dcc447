"""Run the P-SMR key-value service for a while: spawn its processes, load it with client proxies, inject the fault
plan (crashes of replicas, drops, delays and partitions on their links), stop, and hand back where the traces and
the client history are."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing import shared_memory
from typing import Any

from lockstep.checker.errors import UsageError
from lockstep.checker.safeio import replacing

from ..cluster import Cluster
from ..faults import Faults
from .faults import network
from .layout import Layout, ServiceConfig
from .process import main


@dataclass
class ServiceRun:
    """What one run did."""

    service: ServiceConfig
    seconds: float
    completed: int
    stats: dict[int, dict[str, Any]]
    traces: dict[int, str]
    history: list[str]
    notes: list[str] = field(default_factory=list)
    crashed: list[int] = field(default_factory=list)  # replicas killed
    interrupted: float | None = None  # seconds into the run when SIGINT stopped it

    @property
    def throughput(self) -> float:
        return self.completed / self.seconds if self.seconds > 0 else 0.0

    @property
    def injected(self) -> dict[str, int]:
        """The messages the fault plan lost or held back, over all processes: dropped, partitioned, delayed."""
        return {k: sum(s.get(k, 0) for s in self.stats.values()) for k in ("dropped", "partitioned", "delayed")}


class PsmrCluster(Cluster):
    """The processes of one run: what each runs is `process.main` with its role's configuration."""

    def __init__(self, service: ServiceConfig, trace_dir: str, stores: list[str], durable: bool,
                 faults: dict[str, Any] | None = None):
        self.service, self.layout, self.stores, self.faults = service, Layout(service), stores, faults
        super().__init__("psmr", {}, self.layout.size, trace_dir, service.seed, None, durable=durable)

    def process_for(self, pid: int, restore: bool) -> tuple[Callable[[dict[str, Any]], None], dict[str, Any], str]:
        role, a, _ = self.layout.role(pid)
        cfg: dict[str, Any] = {"pid": pid, "control_port": self.control_port, "trace": self.trace_path(pid),
                               "service": self.service.as_dict(), "durable": self.durable, "faults": self.faults}
        if role == "worker":
            cfg["store"] = self.stores[a]
        if role == "client":
            cfg["history"] = os.path.join(self.trace_dir, f"history-{a}.jsonl")  # type: ignore[arg-type]
        return main, cfg, f"psmr-{role}-{pid}"


async def run_async(service: ServiceConfig, duration: float, trace_dir: str, faults: Faults | None = None,
                    progress: Callable[[float], None] | None = None,
                    nemesis: Callable[[PsmrCluster], Awaitable[None]] | None = None) -> ServiceRun:
    """Run the service for `duration` seconds (or until the client of the spec's workload has every reply), with the fault plan
    `faults`, checked by `faults.check_plan` (its pids are replicas: a crash SIGKILLs that replica's workers).
    `nemesis(cluster)` runs beside the clients, if given, until the end (when it is cancelled)."""
    crashes = sorted((c.at, c.pid) for c in faults.crashes) if faults is not None else []
    segs = [shared_memory.SharedMemory(create=True, size=8 * service.keys) for _ in range(service.replicas)]
    for s in segs:
        s.buf[:] = bytes(len(s.buf))
    cluster = PsmrCluster(service, trace_dir, [s.name for s in segs], durable=bool(crashes), faults=network(faults))
    notes: list[str] = []
    crashed: list[int] = []
    seconds = 0.0

    async def serve_for() -> None:
        side = asyncio.ensure_future(nemesis(cluster)) if nemesis is not None else None
        try:
            await serve()
        finally:
            if side is not None:
                side.cancel()
                await asyncio.gather(side, return_exceptions=True)

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + duration
        next_report = loop.time() + 2.0
        while loop.time() < end:
            await asyncio.sleep(0.05)
            while crashes and cluster.elapsed() >= crashes[0][0]:
                _, replica = crashes.pop(0)
                if replica in crashed:
                    continue
                for pid in cluster.layout.replica_workers(replica):
                    await cluster.kill(pid)
                crashed.append(replica)
                notes.append(f"replica {replica} killed (SIGKILL, its {service.workers} workers) at "
                             f"{cluster.elapsed():.2f} s")
            if progress is not None and loop.time() >= next_report:
                next_report += 2.0
                progress(cluster.elapsed())
            dead = cluster.dead()
            if dead:
                notes.append(f"process {dead[0]} exited unexpectedly")
                return
            if service.spec_commands and _done(cluster.members[cluster.layout.client(0)]):
                notes.append(f"the client had the replies of the spec's {service.spec_commands} commands at "
                             f"{cluster.elapsed():.2f} s: the run ends there")
                return

    try:
        await cluster.start()
        await cluster.drive(serve_for())
        seconds = cluster.elapsed()
        await cluster.stop()
    finally:
        cluster.close()
        for s in segs:
            s.close()
            s.unlink()
    stats = {p: (m.bye or {}).get("stats", {}) for p, m in cluster.members.items()}
    for p, m in sorted(cluster.members.items()):
        if m.exit_note:
            notes.append(f"process {p} {m.exit_note}")
    notes += cluster.interruption_note()
    lay = cluster.layout
    completed = sum(stats[lay.client(i)].get("completed", 0) for i in range(service.clients))
    traces = {p: cluster.trace_path(p) for p in range(lay.size)}  # type: ignore[misc]
    history = [os.path.join(trace_dir, f"history-{i}.jsonl") for i in range(service.clients)]
    return ServiceRun(service, seconds, completed, stats, traces, history, notes, crashed,  # type: ignore[arg-type]
                      cluster.interrupted)


def _done(member: Any) -> bool:
    """Whether the client has reported (since the last look) that its workload is complete."""
    while not member.reports.empty():
        if member.reports.get_nowait().get("op") == "done":
            return True
    return False


def run(service: ServiceConfig, duration: float, trace_dir: str, faults: Faults | None = None,
        progress: Callable[[float], None] | None = None,
        nemesis: Callable[[PsmrCluster], Awaitable[None]] | None = None) -> ServiceRun:
    """Run the service as OS processes; see `run_async`."""
    return asyncio.run(run_async(service, duration, trace_dir, faults, progress, nemesis))


def merge_history(run: ServiceRun, out: str) -> str:
    """The clients' histories in one JSON-lines file, ordered by time."""
    events = []
    for path in run.history:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as fh:
                events.extend(line for line in fh if line.strip())
    import json

    events.sort(key=lambda line: json.loads(line)["time"])
    try:
        with replacing(out) as fh:
            fh.writelines(events)
    except OSError as e:
        raise UsageError(f"cannot write the history {out}: {e.strerror}") from None
    return out
