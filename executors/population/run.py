"""`lockstep run` for population protocols: n agent processes and a scheduler process, then one merged trace.

The runner spawns the agents (each told its start state) and the scheduler through the same
`Cluster` as actor runs (control connections, spawn, clean stop), waits until the scheduler
reports every interaction done, an agent dies, or nothing moves for `STALL` seconds, stops
every process and merges the agents' traces by interaction number.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lockstep.checker.loader import load_protocol
from lockstep.checker.validation.runtrace import MergedRun, merge
from lockstep.specs.lang.population.agents import StateCodec, initial_agents

from ..cluster import Cluster, Member, default_trace_path, interrupted_header
from ..faults import Faults, FaultsError
from .agent import AgentConfig
from .agent import main as agent_main
from .scheduler import SchedulerConfig
from .scheduler import main as scheduler_main

STALL = 10.0  # seconds without progress after which a run is stopped
PROGRESS_EVERY = 2.0


@dataclass
class PopulationRunReport:
    """What happened in a population run."""

    spec: str
    spec_name: str
    params: dict[str, int]
    agents: int
    interactions: int  # asked for
    completed: int  # completed, as the scheduler counted them
    seconds: float  # from the first interaction announced to the last completed (or the stop)
    stats: dict[int, dict[str, Any]]  # pid -> counters reported when it stopped (the scheduler is pid `agents`)
    notes: list[str] = field(default_factory=list)
    trace: str | None = None
    merged: MergedRun | None = None
    interrupted: float | None = None  # seconds into the run when SIGINT stopped it

    @property
    def rate(self) -> float:
        return self.completed / self.seconds if self.seconds > 0 else 0.0


class PopulationCluster(Cluster):
    """Processes 0..n-1 are the agents, process n the scheduler."""

    def __init__(self, spec: str, params: dict[str, int], start_states: list[Any], interactions: int,
                 trace_dir: str | None, seed: int, durable: bool):
        super().__init__(spec, params, len(start_states) + 1, trace_dir, seed, durable=durable)
        self.agents = len(start_states)
        self.start_states = start_states
        self.interactions = interactions

    def process_for(self, pid: int, restore: bool) -> tuple[Any, dict[str, Any], str]:
        if pid < self.agents:
            cfg: Any = AgentConfig(self.spec, self.params, pid, self.agents, self.control_port, self.trace_path(pid),
                                   self.seed, self.start_states[pid], self.durable)
            return agent_main, asdict(cfg), f"lockstep-agent-{pid}"
        cfg = SchedulerConfig(pid, self.control_port, self.seed, self.interactions)
        return scheduler_main, asdict(cfg), "lockstep-scheduler"

    def trace_path(self, pid: int) -> str | None:
        return super().trace_path(pid) if pid < self.agents else None


def check_faults(faults: Faults | None) -> list[tuple[float, int]]:
    """The planned kills (seconds, agent) of a fault plan; a population run injects nothing else."""
    if faults is None:
        return []
    if faults.drop or faults.duplicate or faults.reorder or faults.delay_ms[1] or faults.partitions:
        raise FaultsError("a population run injects only crashes (agents exchange states directly)\n"
                          '  fix: keep only "crashes" in the fault plan, e.g. {"crashes": [{"pid": 3, "at": 0.5}]}')
    if any(c.restart is not None for c in faults.crashes):
        raise FaultsError("a population agent cannot be restarted: its partners have moved on\n"
                          '  fix: remove "restart" from the crashes')
    return sorted((c.at, c.pid) for c in faults.crashes)


async def run_population_async(spec: str, params: dict[str, int], interactions: int, seed: int = 0,
                               start: str | None = None, trace: str | None = None, tracing: bool = True,
                               faults: Faults | None = None, progress: Callable[[int], None] | None = None,
                               on_started: Callable[[Cluster], Awaitable[None]] | None = None
                               ) -> PopulationRunReport:
    """Run `interactions` interactions of a population protocol on n agent processes and a scheduler.

    `on_started(cluster)` is awaited once every process runs."""
    protocol = load_protocol(spec, params)
    params = dict(protocol.params)
    n = protocol.n
    kills = check_faults(faults)
    codec = StateCodec(protocol)
    states = [codec.json[q] for q in initial_agents(protocol, start, seed)]
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="lockstep-population-") as tmp:
        cluster = PopulationCluster(spec, params, states, interactions, tmp if tracing else None, seed, bool(kills))
        sched: Member | None = None
        completed, seconds = 0, 0.0
        try:
            await cluster.start()
            sched = cluster.members[n]
            if on_started is not None:
                await on_started(cluster)
            watched = await cluster.drive(_watch(cluster, sched, kills, notes, progress))
            if watched is not None:
                completed, seconds = watched
            else:
                seconds = cluster.elapsed()
            await cluster.stop()
        finally:
            cluster.close()
        stats = {p: (m.bye or {}).get("stats", {}) for p, m in cluster.members.items()}
        completed = max(completed, stats.get(n, {}).get("completed", 0))  # the scheduler's final count
        for p, m in sorted(cluster.members.items()):
            if m.exit_note and not m.killed:
                notes.append(f"{'the scheduler' if p == n else f'agent {p}'} {m.exit_note}")
        notes += cluster.rejection_notes() + cluster.interruption_note()
        report = PopulationRunReport(spec, protocol.name, params, n, interactions, completed, seconds, stats, notes,
                                     interrupted=cluster.interrupted)
        if tracing:
            out = trace or default_trace_path(protocol.name)
            paths = {p: cluster.trace_path(p) for p in range(n)}
            header = {"model": "population", "seed": seed, "agents": n, "interactions": interactions,
                      "start": start, "complete": completed == interactions and not notes} | interrupted_header(cluster)
            report.merged = merge(paths, out, spec, protocol.name, params, notes, header)  # type: ignore[arg-type]
            report.notes = report.merged.notes
            report.trace = out
        return report


async def _watch(cluster: Cluster, sched: Member, kills: list[tuple[float, int]], notes: list[str],
                 progress: Callable[[int], None] | None) -> tuple[int, float]:
    """Wait for the scheduler's `complete`, carrying out planned kills; stop early if a process dies
    or the run stalls. (completed interactions, seconds the interactions took)"""
    loop = asyncio.get_running_loop()
    t0 = last_move = last_shown = loop.time()
    completed = 0
    kills = list(kills)
    while True:
        try:
            msg = await asyncio.wait_for(sched.reports.get(), 0.05)
        except TimeoutError:
            msg = None
        now = loop.time()
        if msg is not None and msg.get("op") in ("progress", "complete"):
            if msg["completed"] > completed:
                completed, last_move = msg["completed"], now
            if msg["op"] == "complete":
                return completed, now - t0
        if progress is not None and now - last_shown >= PROGRESS_EVERY:
            last_shown = now
            progress(completed)
        while kills and now - t0 >= kills[0][0]:
            at, pid = kills.pop(0)
            await cluster.kill(pid)
            notes.append(f"agent {pid} killed (SIGKILL) at {at:.2f} s")
        dead = cluster.dead()
        if dead or (msg is not None and msg.get("op") == "gone"):
            who = ", ".join("the scheduler" if p == cluster.nproc - 1 else f"agent {p}" for p in dead) or "the scheduler"
            notes.append(f"{who} died (exit code {cluster.members[dead[0]].process.exitcode if dead else '?'}) "
                         f"{now - t0:.2f} s into the run; the run was stopped")
            return completed, now - t0
        if any(cluster.members[p].killed for p in cluster.members) and now - last_move > 1.0:
            notes.append("the run was stopped: agents waited for a killed partner")
            return completed, now - t0
        if now - last_move > STALL:
            notes.append(f"the run was stopped: no interaction completed for {STALL:.0f} s")
            return completed, now - t0


def run_population(spec: str, params: dict[str, int], interactions: int, seed: int = 0, start: str | None = None,
                   trace: str | None = None, tracing: bool = True, faults: Faults | None = None,
                   progress: Callable[[int], None] | None = None) -> PopulationRunReport:
    """Run a population protocol on real processes; see `run_population_async`."""
    return asyncio.run(run_population_async(spec, params, interactions, seed, start, trace, tracing, faults, progress))
