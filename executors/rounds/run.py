"""Run a rounds spec as one OS process per node, with a round barrier, and merge their traces.

Nodes are started from a fork server that has imported Lockstep once (`forkserver` with
preloading), so hundreds of nodes start in seconds and share the imported code's pages.
The runner drives the rounds: it starts round r once every node has reported round r - 1
done, and stops when every node has terminated (or after the spec's `max_rounds`). A node that
dies is reported; the rounds recorded before it died are merged and can be validated.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lockstep.checker.loader import LoadError, resolve
from lockstep.checker.validation.runtrace import MergedRun, merge
from lockstep.specs.lang.rounds import RoundsSpec, RoundsSystem, rounds_system

from ..cluster import Cluster, Member, default_trace_path, interrupted_header
from .process import RoundsNodeConfig, main

ROUND_TIMEOUT = 60.0  # seconds without a node finishing its round before the run is abandoned


def rounds_class(spec: str) -> type | None:
    """The RoundsSpec class named by `spec`, or None if it names another kind of spec."""
    obj, _ = resolve(spec)
    return obj if isinstance(obj, type) and issubclass(obj, RoundsSpec) else None


@dataclass
class RoundsReport:
    """What happened in a run of a rounds spec."""

    spec: str
    spec_name: str
    params: dict[str, int]
    rounds: int  # rounds completed by every node
    finished: bool  # every node terminated
    seconds: float  # from the first round to the last
    start_seconds: float  # starting and connecting the processes
    stats: dict[int, dict[str, Any]]
    final: dict[int, dict[str, Any]]  # pid -> last recorded local state (JSON)
    memory_kib: dict[int, int] = field(default_factory=dict)  # pid -> proportional set size after round 1 (Linux)
    notes: list[str] = field(default_factory=list)
    trace: str | None = None
    merged: MergedRun | None = None
    interrupted: float | None = None  # seconds into the run when SIGINT stopped it


class RoundsCluster(Cluster):
    """The processes of one run of a rounds spec (started by a preloaded fork server)."""

    def __init__(self, spec: str, params: dict[str, int], nproc: int, trace_dir: str | None, seed: int = 0,
                 start_method: str = "forkserver", controlled: bool = False):
        super().__init__(spec, params, nproc, trace_dir, seed, controlled=controlled)
        self.ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            self.ctx.set_forkserver_preload(["lockstep.executors.rounds.process"])

    def process_for(self, pid: int, restore: bool) -> tuple[Any, dict[str, Any], str]:
        cfg = RoundsNodeConfig(self.spec, self.params, pid, self.control_port, self.trace_path(pid), self.seed,
                               self.controlled)
        return main, asdict(cfg), f"lockstep-node-{pid}"


async def _await_round(cluster: RoundsCluster, r: int, notes: list[str], lost: list[dict[str, Any]],
                       graph: Any) -> tuple[bool, bool]:
    """(every node reported round r, every node has terminated); a dead node is noted, and listed in
    `lost` (its pid, the round, and whether it was killed) for the trace's header. After a death the
    round still ends for every live node that does not wait on a dead neighbour, so what a run records
    does not depend on how fast the death is noticed."""
    finished = True

    async def one(m: Member) -> bool:
        nonlocal finished
        while True:
            rep = await m.reports.get()
            if rep.get("op") == "done" and rep.get("round") == r:
                finished = finished and bool(rep.get("finished"))
                return True
            if rep.get("op") == "gone":
                code = m.process.exitcode
                lost.append({"pid": m.pid, "round": r, "killed": bool(m.killed)})
                notes.append(f"process {m.pid} was killed (SIGKILL) at the start of round {r}" if m.killed else
                             f"process {m.pid} died during round {r}" + (f" (exit code {code})" if code else ""))
                return False

    tasks = {asyncio.ensure_future(one(m)): m.pid for m in cluster.members.values()}
    pending = set(tasks)
    gone: set[int] = set()
    try:
        while pending:  # bounded by progress: a loaded machine makes every round slow, not one node silent
            done, pending = await asyncio.wait(pending, timeout=ROUND_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                late = sorted(tasks[t] for t in pending)
                notes.append(f"round {r} did not complete: no node finished it for {ROUND_TIMEOUT:.0f} s (nodes "
                             f"{', '.join(map(str, late[:10]))}{', ...' if len(late) > 10 else ''} did not)")
                return False, False
            gone |= {tasks[t] for t in done if not t.result()}
            if gone:
                waiting = gone | {q for p in gone for q in graph.neighbors(p)}
                for t in [t for t in pending if tasks[t] in waiting]:
                    t.cancel()
                    pending.discard(t)
    finally:
        for t in pending:
            t.cancel()
    return not gone, finished and not gone


async def run_async(spec: str, params: dict[str, int], trace: str | None = None, seed: int = 0,
                    initiator: int = 0, kill: tuple[int, int] | None = None,
                    progress: Callable[[int], None] | None = None, start_method: str = "forkserver",
                    measure_memory: bool = False) -> RoundsReport:
    cls = rounds_class(spec)
    if cls is None:
        raise LoadError(f"{spec} is not a rounds spec")
    sysm: RoundsSystem = rounds_system(cls, params, [])
    params = dict(sysm.params)
    n = sysm.graph.number_of_nodes()
    if not 0 <= initiator < n:
        raise LoadError(f"initiator {initiator} is not a node (0..{n - 1})")
    if kill is not None and not (0 <= kill[0] < n and 1 <= kill[1] <= sysm.max_rounds):
        raise LoadError(f"--kill {kill[0]}@{kill[1]}: give a node (0..{n - 1}) and a round (1..{sysm.max_rounds}, the "
                        "spec's max_rounds)")
    notes: list[str] = []
    lost: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="lockstep-rounds-") as tmp:
        cluster = RoundsCluster(spec, params, n, tmp, seed, start_method)
        memory: dict[int, int] = {}
        t0 = time.monotonic()
        rounds, finished = 0, False

        async def play() -> None:
            """Drive the rounds until every node has terminated, a round fails, or the spec's max_rounds."""
            nonlocal rounds, finished, memory
            for r in range(1, sysm.max_rounds + 1):
                if kill is not None and kill[1] == r:
                    await cluster.kill(kill[0])
                for p in range(n):
                    cluster.send(p, {"op": "round", "round": r})
                ok, finished = await _await_round(cluster, r, notes, lost, sysm.graph)
                if not ok:
                    return
                rounds = r
                if measure_memory and r == 1:
                    memory = {p: pss_kib(m.process.pid) for p, m in cluster.members.items()}
                if progress is not None:
                    progress(r)
                if finished:
                    return
            notes.append(f"not every node terminated within {sysm.max_rounds} rounds (the spec's max_rounds)")

        def unkilled() -> list[str]:
            if kill is None or any(m.killed for m in cluster.members.values()):
                return []
            return [f"the planned kill of node {kill[0]} at the start of round {kill[1]} did not happen: the run "
                    f"ended after round {rounds}"]

        try:
            await cluster.start({p: {"initiator": p == initiator} for p in range(n)})
            t1 = time.monotonic()
            await cluster.drive(play())
            t2 = time.monotonic()
            await cluster.stop()
        finally:
            cluster.close()
        stats = {p: (m.bye or {}).get("stats", {}) for p, m in cluster.members.items()}
        for p, m in sorted(cluster.members.items()):
            if m.exit_note:
                notes.append(f"process {p} {m.exit_note}")
        notes += cluster.rejection_notes() + cluster.interruption_note() + unkilled()
        out = trace or default_trace_path(sysm.name)
        merged = merge({p: cluster.trace_path(p) for p in range(n)}, out, spec, sysm.name, params, notes,  # type: ignore[misc]
                       {"model": "rounds"} | ({"lost": lost} if lost else {}) | interrupted_header(cluster))
        final: dict[int, dict[str, Any]] = {}
        for e in merged.events:
            if "state" in e:
                final[e["pid"]] = e["state"]
    return RoundsReport(spec, sysm.name, params, rounds, finished, t2 - t1, t1 - t0, stats, final, memory, merged.notes,
                        out, merged, cluster.interrupted)


def pss_kib(pid: int) -> int:
    """A process's proportional set size in KiB (shared pages split among their users); 0 if unknown."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(spec: str, params: dict[str, int], trace: str | None = None, seed: int = 0, initiator: int = 0,
        kill: tuple[int, int] | None = None, progress: Callable[[int], None] | None = None,
        start_method: str = "forkserver", measure_memory: bool = False) -> RoundsReport:
    """Run a rounds spec with one OS process per node until every node terminates; see `run_async`."""
    return asyncio.run(run_async(spec, params, trace, seed, initiator, kill, progress, start_method, measure_memory))
