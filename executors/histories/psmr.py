"""Lockstep's P-SMR key-value service under the harness's fault schedule.

The service runs as `lockstep run psmr` runs it (`executors.psmr.run`), with three replicas so that a schedule
written for etcd's three members applies, single-key commands only (gets and puts, as the etcd clients' reads
and writes), one call at a time per client, and its own client proxies recording the history (`psmr-kv`).
The replicas are peers: a schedule's `leader` is replica 0 and `follower` replica 1. A kill SIGKILLs a replica's
workers, a pause SIGSTOPs them and a resume SIGCONTs them; a P-SMR replica does not restart (it has no state
transfer), so a restart is reported as not done and the replica stays down.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable

from lockstep.checker.linearizability import check, load_model, read_history

from ..psmr.layout import ServiceConfig
from ..psmr.run import PsmrCluster, merge_history, run
from .experiment import Outcome, Strike
from .schedule import Fault

REPLICAS = 3


def replica_of(target: str) -> int:
    """The replica a schedule's target names."""
    return {"leader": 0, "follower": 1}.get(target, int(target) if target.isdigit() else 0)


def nemesis(faults: list[Fault], timeline: list[Strike]) -> Callable[[PsmrCluster], Awaitable[None]]:
    """The schedule as a coroutine beside the clients: each fault at its time on the run's clock."""

    async def strike(cluster: PsmrCluster) -> None:
        paused: set[int] = set()
        killed: set[int] = set()
        try:
            for f in faults:
                await asyncio.sleep(max(0.0, f.at - cluster.elapsed()))
                r = replica_of(f.target)
                pids = cluster.layout.replica_workers(r)
                note, done = "", True
                if f.action == "kill":
                    for pid in pids:
                        await cluster.kill(pid)
                    killed.add(r)
                elif f.action == "restart":
                    note, done = "not done: a P-SMR replica does not restart (no state transfer); it stays down", False
                elif r not in killed:
                    sig = signal.SIGSTOP if f.action == "pause" else signal.SIGCONT
                    for pid in pids:
                        os.kill(cluster.members[pid].process.pid, sig)
                    (paused.add if f.action == "pause" else paused.discard)(r)
                timeline.append(Strike(cluster.elapsed(), f.action, f"replica {r}", "replica", note, done))
            await asyncio.Event().wait()  # until the run ends
        finally:
            for r in paused:
                for pid in cluster.layout.replica_workers(r):
                    os.kill(cluster.members[pid].process.pid, signal.SIGCONT)
                timeline.append(Strike(cluster.elapsed(), "resume", f"replica {r}", "replica", "healing before the end"))

    return strike


def run_psmr(directory: str, duration: float, faults: list[Fault], clients: int = 5, keys: int = 3, seed: int = 0,
             budget: float = 60.0, progress: Callable[[str], None] | None = None) -> Outcome:
    """Run the P-SMR service in `directory` for `duration` seconds under `faults`; check its clients' history."""
    say = progress or (lambda text: None)
    cfg = ServiceConfig(replicas=REPLICAS, workers=2, clients=clients, outstanding=1, keys=max(keys, 2),
                        dependent=0.0, seed=seed)
    timeline: list[Strike] = []
    t = time.monotonic()
    rep = run(cfg, duration, directory, nemesis=nemesis(faults, timeline))
    say(f"{REPLICAS} replicas x {cfg.workers} workers, {cfg.workers} sequencers and a hub, {clients} client proxies: "
        f"{time.monotonic() - t:.1f} s in all")
    path = merge_history(rep, os.path.join(directory, "history.jsonl"))
    counts = {"ok": 0, "fail": 0, "info": 0}
    calls = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            kind = json.loads(line)["type"]
            calls += kind == "invoke"
            counts[kind] = counts.get(kind, 0) + (kind != "invoke")
    counts["info"] += calls - sum(counts.values())  # calls still waiting at the end: their outcome is unknown
    verdict = check(read_history(path), load_model("psmr-kv"), budget=budget)
    return Outcome("P-SMR (Lockstep)", path, rep.seconds, counts, timeline, verdict, "psmr-kv", list(rep.notes))
