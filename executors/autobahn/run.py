"""Run Autobahn as n replica processes and a client for a while, with a fault plan, and collect what they did."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from lockstep.checker.safejson import JSONInputError, loads, read_text

from ..cluster import Cluster
from ..faults import Faults, FaultsError, parse_faults
from . import client, replica
from .crypto import new_keys
from .replica import BEHAVIOURS, MAX_K, ReplicaConfig


@dataclass
class Plan:
    """A fault plan for Autobahn: partitions and crashes (executors/faults.py) and one Byzantine replica."""

    faults: Faults = field(default_factory=Faults)
    byzantine: dict[int, str] = field(default_factory=dict)


def load_plan(path: str, n: int) -> Plan:
    """Read a fault plan: the common keys `partitions` and `crashes`, and `byzantine`: {"pid": P, "behaviour": B}."""
    try:
        data = loads(read_text(path, "faults file"), path)
    except JSONInputError as e:
        raise FaultsError(str(e)) from None
    return parse_plan(data, n, path)


def parse_plan(data: Any, n: int, where: str = "faults") -> Plan:
    if not isinstance(data, dict):
        raise FaultsError(f"{where}: expected a JSON object\n  fix: write e.g. {{\"crashes\": [{{\"pid\": 1, \"at\": 1.0}}]}}")
    data = dict(data)
    byz = data.pop("byzantine", None)
    for key in ("drop", "duplicate", "reorder", "delay_ms", "reorder_ms"):
        if key in data:
            raise FaultsError(f"{where}: {key!r} is not supported by `lockstep run autobahn`\n"
                              "  fix: use partitions, crashes and byzantine")
    faults = parse_faults(data, n, where)
    if any(c.restart is not None for c in faults.crashes):
        raise FaultsError(f"{where}: an Autobahn replica does not restart after a crash\n  fix: drop \"restart\"")
    plan = Plan(faults)
    if byz is not None:
        ok = isinstance(byz, dict) and set(byz) == {"pid", "behaviour"} and isinstance(byz["pid"], int) \
            and not isinstance(byz["pid"], bool) and 0 <= byz["pid"] < n and byz["behaviour"] in BEHAVIOURS[1:]
        if not ok:
            raise FaultsError(f"{where}: byzantine is {{\"pid\": 0..{n - 1}, \"behaviour\": one of "
                              f"{', '.join(BEHAVIOURS[1:])}}}\n"
                              '  fix: e.g. "byzantine": {"pid": 3, "behaviour": "vote_all"}')
        plan.byzantine[byz["pid"]] = byz["behaviour"]
    return plan


@dataclass
class AutobahnRun:
    """What one run did: the replicas' and the client's reports, and where their traces are."""

    n: int
    seconds: float
    replicas: dict[int, dict[str, Any]]
    client: dict[str, Any]
    traces: dict[int, str]
    byzantine: dict[int, str]
    crashed: list[int]
    notes: list[str] = field(default_factory=list)
    interrupted: float | None = None  # seconds into the run when SIGINT stopped it
    coverage: int = 0  # lanes with new tips a view-1 leader waited for
    lanes: bool = True  # False: the baseline without lanes (leaders propose their own batches)
    k: int = 1  # slots that ran at once

    @property
    def throughput(self) -> float:
        return self.client.get("acked", 0) / self.seconds if self.seconds else 0.0


class AutobahnCluster(Cluster):
    def __init__(self, n: int, trace_dir: str, plan: Plan, rate: int, seed: int, durable: bool = False, bug: str = "",
                 **tuning: Any):
        super().__init__("autobahn", {}, n + 1, trace_dir, seed, durable=durable or bool(plan.faults.crashes))
        self.n, self.plan, self.rate, self.bug, self.tuning = n, plan, rate, bug, tuning
        self.buggy = min(p for p in range(n) if p not in plan.byzantine)  # the replica that runs the seeded bug
        self.private, self.public = new_keys(n)

    def process_for(self, pid: int, restore: bool) -> tuple[Callable[[dict[str, Any]], None], dict[str, Any], str]:
        if pid == self.n:
            return client.main, asdict(client.ClientConfig(pid, self.n, self.control_port, self.rate, seed=self.seed)), \
                "autobahn-client"
        parts = [[p.start, p.end, [sorted(g) for g in p.groups]] for p in self.plan.faults.partitions]
        cfg = ReplicaConfig(pid, self.n, self.control_port, self.trace_path(pid), self.private[pid], self.public,
                            self.plan.byzantine.get(pid, ""), parts, durable=self.durable,
                            bug=self.bug if pid == self.buggy else "", **self.tuning)
        return replica.main, asdict(cfg), f"autobahn-{pid}"


async def run_async(duration: float, trace_dir: str, plan: Plan | None = None, f: int = 1, rate: int = 20_000,
                    seed: int = 0, progress: Callable[[float], None] | None = None,
                    during: Callable[[AutobahnCluster], Awaitable[None]] | None = None, durable: bool = False,
                    bug: str = "", coverage: int | None = None, lanes: bool = True, k: int = replica.K,
                    **tuning: float) -> AutobahnRun:
    """See `run`; `during(cluster)` runs alongside the replicas once they have started (to inject messages);
    `durable`: the replicas write each event through to their traces (crash plans imply it); `bug`: a seeded
    implementation bug (`replica.BUGS`), run by the first replica that is not Byzantine."""
    plan = plan or Plan()
    n = 3 * f + 1
    coverage = 2 * f + 1 if coverage is None else coverage
    if not 1 <= coverage <= n:
        raise ValueError(f"coverage {coverage}: between 1 and n = {n} lanes")
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k {k}: between 1 and {MAX_K} concurrent slots")
    if not lanes and (plan.byzantine or bug):
        raise ValueError("the baseline without lanes runs honest replicas only (no byzantine behaviour, no seeded bug)")
    cluster = AutobahnCluster(n, trace_dir, plan, rate, seed, durable, bug, coverage=coverage, lanes=lanes, k=k,
                             **tuning)
    crashed: list[int] = []
    notes: list[str] = []

    async def go_on() -> None:
        """Let the replicas run for `duration` seconds, killing them as planned, alongside `during`."""
        loop = asyncio.get_running_loop()
        side = asyncio.ensure_future(during(cluster)) if during is not None else None
        try:
            for c in sorted(plan.faults.crashes, key=lambda c: c.at):
                await asyncio.sleep(max(0.0, min(c.at, duration) - cluster.elapsed()))
                if c.at < duration:
                    await cluster.kill(c.pid)
                    crashed.append(c.pid)
                    notes.append(f"replica {c.pid} killed (SIGKILL) at {c.at:.2f} s")
            end = loop.time() + max(0.0, duration - cluster.elapsed())
            while (left := end - loop.time()) > 0:
                await asyncio.sleep(min(left, 1.0))
                if progress is not None:
                    progress(cluster.elapsed())
            if side is not None:
                await side
        finally:
            if side is not None:
                side.cancel()

    try:
        await cluster.start()
        await cluster.drive(go_on())
        seconds = cluster.elapsed()
        await cluster.stop()
    finally:
        cluster.close()
    reps = {p: (m.bye or {}) for p, m in cluster.members.items() if p < n}
    notes.extend(cluster.rejection_notes() + cluster.interruption_note())
    for p, m in sorted(cluster.members.items()):
        if m.exit_note:
            notes.append(f"{'client' if p == n else f'replica {p}'} {m.exit_note}")
    cl = (cluster.members[n].bye or {}).get("stats", {})
    traces = {p: path for p in range(n) if (path := cluster.trace_path(p)) and os.path.exists(path)}
    return AutobahnRun(n, duration if cluster.interrupted is None else seconds, reps, cl, traces, dict(plan.byzantine),
                       crashed, notes, cluster.interrupted, coverage, lanes, k)


def run(duration: float, trace_dir: str, plan: Plan | None = None, f: int = 1, rate: int = 20_000, seed: int = 0,
        progress: Callable[[float], None] | None = None, bug: str = "", coverage: int | None = None, lanes: bool = True,
        k: int = replica.K, **tuning: float) -> AutobahnRun:
    """Run Autobahn with n = 3f+1 replicas and a client sending `rate` tx/s for `duration` seconds (`bug`: a seeded
    implementation bug, run by the first replica that is not Byzantine; `coverage`: lanes with new tips a view-1
    leader waits for, 1..n, None: 2f+1, the paper's; `lanes=False`: the baseline without lanes, where each leader
    proposes a batch of its own transactions; `k`: slots that run at once, 1..MAX_K, slot s opening once slot s-k has
    committed)."""
    return asyncio.run(run_async(duration, trace_dir, plan, f, rate, seed, progress, bug=bug, coverage=coverage,
                                 lanes=lanes, k=k, **tuning))
