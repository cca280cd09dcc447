"""`run`: run an actor spec as real processes for a while, with faults, and merge their traces."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lockstep.checker.loader import LoadError, load_model
from lockstep.checker.validation.runtrace import MergedRun, merge
from lockstep.specs.lang.actors import ActorProgram

from ..cluster import Cluster, default_trace_path, interrupted_header
from ..faults import Faults, check_network
from ..relay import Relay
from .process import NodeConfig, main

PROGRESS_EVERY = 2.0  # seconds between progress reports of a run


@dataclass
class RunReport:
    """What happened in a run."""

    spec: str
    spec_name: str
    params: dict[str, int]
    seconds: float
    stats: dict[int, dict[str, Any]]  # pid -> counters reported by the process when it stopped
    relay: dict[str, int] | None
    notes: list[str] = field(default_factory=list)
    trace: str | None = None
    merged: MergedRun | None = None
    interrupted: float | None = None  # seconds into the run when SIGINT stopped it

    @property
    def delivered(self) -> int:
        return sum(s.get("events", 0) for s in self.stats.values())


class ActorCluster(Cluster):
    """The processes of one run of an actor spec: one per actor."""

    def process_for(self, pid: int, restore: bool) -> tuple[Callable[[dict[str, Any]], None], dict[str, Any], str]:
        cfg = NodeConfig(self.spec, self.params, pid, self.control_port, self.trace_path(pid), self.seed,
                         self.controlled, restore, self.durable)
        return main, asdict(cfg), f"lockstep-{pid}"


def actor_program(spec: str, params: dict[str, int]) -> ActorProgram:
    """The program of an actor spec (a LoadError for any other kind of spec)."""
    model = load_model(spec, params)
    prog = getattr(model, "prog", None)
    if not isinstance(prog, ActorProgram):
        raise LoadError(f"{spec} is not an actor spec: only specs written with lockstep.specs.lang.actors run as processes")
    return prog


async def run_async(spec: str, params: dict[str, int], duration: float, faults: Faults | None = None,
                    trace: str | None = None, seed: int = 0, tracing: bool = True,
                    progress: Callable[[float], None] | None = None) -> RunReport:
    prog = actor_program(spec, params)
    params = dict(prog.params)
    n = prog.system.proc.size
    faults = faults or Faults()
    check_network(faults, params)
    relay = Relay(faults, seed) if faults.needs_relay else None
    with tempfile.TemporaryDirectory(prefix="lockstep-run-") as tmp:
        trace_dir = tmp if tracing else None
        cluster = ActorCluster(spec, params, n, trace_dir, seed, relay, durable=bool(faults.crashes))
        notes: list[str] = []
        try:
            await cluster.start()
            await cluster.drive(_schedule(cluster, faults, duration, notes, progress))
            await cluster.stop()
        finally:
            cluster.close()
        stats = {p: (m.bye or {}).get("stats", {}) for p, m in cluster.members.items()}
        for p, m in sorted(cluster.members.items()):
            if m.exit_note:
                notes.append(f"process {p} {m.exit_note}")
        notes += cluster.rejection_notes() + cluster.interruption_note()
        if relay is not None and relay.stats["rejected"]:
            notes.append(f"the relay rejected {relay.stats['rejected']} frame(s) or connection(s): "
                         + "; ".join(relay.rejections))
        report = RunReport(spec, prog.name, params, duration, stats, dict(relay.stats) if relay else None, notes,
                           interrupted=cluster.interrupted)
        if tracing:
            out = trace or default_trace_path(prog.name)
            paths = {p: cluster.trace_path(p) for p in range(n)}
            report.merged = merge(paths, out, spec, prog.name, params, notes,  # type: ignore[arg-type]
                                  {"model": "actors"} | interrupted_header(cluster))
            report.notes = report.merged.notes
            report.trace = out
        return report


async def _schedule(cluster: Cluster, faults: Faults, duration: float, notes: list[str],
                    progress: Callable[[float], None] | None) -> None:
    """Let the processes run for `duration` seconds, killing and restarting them as planned (the time a restarted
    process takes to start is added to the run); `progress(elapsed)` is called about every PROGRESS_EVERY seconds."""
    plan: list[tuple[float, str, int]] = []
    for c in faults.crashes:
        plan.append((c.at, "kill", c.pid))
        if c.restart is not None:
            plan.append((c.restart, "restart", c.pid))
    plan.sort()
    loop = asyncio.get_running_loop()
    end = loop.time() + duration
    next_report = loop.time() + PROGRESS_EVERY
    for at, what, pid in plan + [(duration, "end", -1)]:
        while True:
            wait = (end if what == "end" else min(end, cluster.loop_time0 + at)) - loop.time()
            if wait <= 0:
                break
            await asyncio.sleep(min(wait, 0.1))
            if progress is not None and loop.time() >= next_report:
                next_report += PROGRESS_EVERY
                progress(cluster.elapsed())
        if what == "end" or at > duration:
            break
        if what == "kill":
            await cluster.kill(pid)
            notes.append(f"process {pid} killed (SIGKILL) at {at:.2f} s")
        else:
            began = loop.time()
            await cluster.restart(pid)
            end += loop.time() - began  # its start-up (slow on a loaded machine) does not shorten the run after it
            notes.append(f"process {pid} restarted at {at:.2f} s")


def run(spec: str, params: dict[str, int], duration: float, faults: Faults | None = None, trace: str | None = None,
        seed: int = 0, tracing: bool = True, progress: Callable[[float], None] | None = None) -> RunReport:
    """Run `spec` as one OS process per actor for `duration` seconds; see `run_async`."""
    return asyncio.run(run_async(spec, params, duration, faults, trace, seed, tracing, progress))
