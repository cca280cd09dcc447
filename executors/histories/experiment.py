"""One experiment: a system under test, concurrent clients recording their history, a fault schedule applied by a
nemesis thread, and the history checked for linearizability (`cas-register`, each key on its own).

The clients read, write and compare-and-set a few keys with values 0..4 (as Jepsen's etcd tests do); each client
is one process of the history, one call at a time. The nemesis applies each fault at its time, naming the node it
struck and its role then, and resumes and restarts whatever is still down before the clients stop, so every
call can complete.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lockstep.checker.linearizability import Verdict, check, load_model, read_history

from .etcd import EtcdClient, EtcdCluster, Indeterminate, Node, Unsent
from .recorder import Recorder
from .schedule import UNDO, Fault

VALUES = 5  # values written are 0..VALUES-1
LEADER_SECONDS = 10.0  # a fault on the leader or a follower waits this long at most for a leader to be known


@dataclass
class Strike:
    """A fault as it happened: when, what, on which node, and that node's role then."""

    at: float
    action: str
    node: str
    role: str
    note: str = ""
    done: bool = True  # False: the system cannot undergo it (`note` says why)

    def describe(self) -> str:
        sig = {"kill": "SIGKILL", "pause": "SIGSTOP", "resume": "SIGCONT", "restart": "started again"}[self.action]
        what = "; ".join(x for x in (sig if self.done else "", self.note) if x)
        return f"{self.at:6.2f} s  {self.action:7s} {self.node} ({self.role}; {what})"


@dataclass
class Outcome:
    """What one experiment did and found."""

    system: str
    history: str
    seconds: float
    counts: dict[str, int]
    timeline: list[Strike]
    verdict: Verdict
    model: str = "cas-register"
    notes: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return self.counts.get("ok", 0)

    @property
    def throughput(self) -> float:
        return self.completed / self.seconds if self.seconds > 0 else 0.0


class Nemesis(threading.Thread):
    """Applies a schedule's faults to the cluster at their times (seconds on the recorder's clock)."""

    def __init__(self, cluster: EtcdCluster, faults: list[Fault], clock: Callable[[], float], seed: int):
        super().__init__(name="lockstep-nemesis", daemon=True)
        self.cluster, self.faults, self.clock = cluster, faults, clock
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.timeline: list[Strike] = []
        self.struck: dict[tuple[str, str], Node] = {}  # (action, target) -> the node it struck
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for fault in self.faults:
                if self.stop.wait(max(0.0, fault.at - self.clock())):
                    return
                self.strike(fault)
        except BaseException as e:  # noqa: BLE001 - reported by the experiment
            self.error = e

    def _choose(self, fault: Fault) -> tuple[Node, str]:
        c = self.cluster
        if fault.action in UNDO:
            node = self.struck.pop((UNDO[fault.action], fault.target))
            return node, "was " + fault.target if not fault.target.isdigit() else "node"
        leader = c.leader()
        settle = time.monotonic() + LEADER_SECONDS  # (an election may be under way: wait for its leader)
        while leader is None and not fault.target.isdigit() and time.monotonic() < settle and not self.stop.is_set():
            self.stop.wait(0.05)
            leader = c.leader()
        if fault.target.isdigit():
            node = c.nodes[int(fault.target)]
        elif fault.target == "leader":
            node = leader or self.rng.choice([n for n in c.nodes if n.process is not None and not n.paused])
        else:
            node = self.rng.choice([n for n in c.nodes if n is not leader and n.process is not None and not n.paused])
        role = "leader" if node is leader else "follower" if leader is not None else "no leader known"
        self.struck[(fault.action, fault.target)] = node
        return node, role

    def strike(self, fault: Fault) -> None:
        node, role = self._choose(fault)
        getattr(self.cluster, fault.action)(node)
        self.timeline.append(Strike(self.clock(), fault.action, node.name, role))

    def heal(self) -> None:
        """Resume and restart whatever the schedule left down."""
        for node in self.cluster.nodes:
            if node.paused:
                self.cluster.resume(node)
                self.timeline.append(Strike(self.clock(), "resume", node.name, "paused", "healing before the end"))
            elif node.process is None:
                self.cluster.restart(node)
                self.timeline.append(Strike(self.clock(), "restart", node.name, "killed", "healing before the end"))


def client_loop(client: EtcdClient, process: int, keys: list[str], rec: Recorder, stop: threading.Event,
                seed: int) -> None:
    """Calls until `stop`: half reads, a quarter writes, a quarter compare-and-sets, on random keys."""
    rng = random.Random(seed)
    try:
        while not stop.is_set():
            key = rng.choice(keys)
            r = rng.random()
            if r < 0.5:
                rec.invoke(process, "read", key, None)
                try:
                    got = client.read(key)
                except (Unsent, Indeterminate):
                    rec.complete(process, "fail", "read", key, None)  # a read that did not return did nothing
                    stop.wait(0.01)
                    continue
                rec.complete(process, "ok", "read", key, got)
                continue
            if r < 0.75:
                f, value = "write", rng.randrange(VALUES)
                call = (client.write, key, value)
            else:
                f, value = "cas", [rng.randrange(VALUES), rng.randrange(VALUES)]
                call = (client.cas, key, *value)
            rec.invoke(process, f, key, value)
            try:
                result = call[0](*call[1:])  # type: ignore[operator]
            except Unsent:
                rec.complete(process, "fail", f, key, value)
                stop.wait(0.01)
                continue
            except Indeterminate:
                rec.complete(process, "info", f, key, value)
                continue
            rec.complete(process, "ok", f, key, value, output=result if f == "cas" else None)
    finally:
        client.close()


def run_etcd(directory: str, duration: float, faults: list[Fault], clients: int = 5, keys: int = 3,
             serializable: bool = False, seed: int = 0, budget: float = 60.0,
             progress: Callable[[str], None] | None = None) -> Outcome:
    """Start a 3-node etcd in `directory`, run `clients` clients for `duration` seconds under `faults`, stop, and
    check the history (written to `directory`/history.jsonl)."""
    say = progress or (lambda text: None)
    cluster = EtcdCluster(directory)
    nemesis = None
    try:
        t = time.monotonic()
        cluster.start()
        say(f"3 etcd members serving after {time.monotonic() - t:.1f} s")
        rec = Recorder()
        stop = threading.Event()
        names = [f"k{i}" for i in range(keys)]
        threads = [threading.Thread(target=client_loop, name=f"lockstep-client-{i}", daemon=True,
                                    args=(EtcdClient(cluster, i, serializable), i, names, rec, stop, seed * 1000 + i))
                   for i in range(clients)]
        nemesis = Nemesis(cluster, faults, rec.now, seed)
        for th in threads:
            th.start()
        nemesis.start()
        stop.wait(duration)
        nemesis.stop.set()
        nemesis.join()
        nemesis.heal()
        stop.set()
        for th in threads:
            th.join()
        seconds = rec.now()
        if nemesis.error is not None:
            raise nemesis.error
    finally:
        if nemesis is not None:
            nemesis.stop.set()
        cluster.stop()
    path = rec.write(os.path.join(directory, "history.jsonl"))
    verdict = check(read_history(path), load_model("cas-register"), budget=budget)
    system = "etcd, serializable reads" if serializable else "etcd"
    return Outcome(system, path, seconds, dict(rec.counts), nemesis.timeline, verdict)
