"""Who is which process in a P-SMR run, and what every process is told (plain data, sent at spawn)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class ServiceConfig:
    """The shape of one run; process ids follow `Layout`."""

    replicas: int = 2
    workers: int = 2
    clients: int = 4
    outstanding: int = 4  # commands each client proxy keeps in flight (each slot is one history process)
    keys: int = 64
    dependent: float = 0.1  # the fraction of commands that are dependent on all others (putall)
    reads: float = 0.5  # among single-key commands, the fraction of gets
    service_ms: float = 1.0  # time to execute one command
    service: str = "io"  # "io": a blocking wait, as a disk access; "cpu": a busy loop
    commands: int = 0  # per client; 0: until told to stop
    seed: int = 0
    cg: str = "keys"  # the command-to-groups function (commands.CG_FUNCTIONS)
    spec_commands: int = 0  # N > 0: one client issues the first N commands of the spec's workload (keys = workers)
    bug: str = ""  # a seeded implementation bug of replica 0's workers (`BUGS`), or none

    def as_dict(self) -> dict:
        return asdict(self)


MAX_RANDOM_VALUE = 999  # a random workload's put and putall write values 1..this

BUGS = {"no_barrier": "replica 0's workers each execute a multi-group command on their own, without the barrier "
                      "(no signal, no go)"}


class Layout:
    """Process ids: sequencers of g_1..g_W, the hub (g_all's sequencer), workers replica by replica, clients."""

    def __init__(self, cfg: ServiceConfig):
        self.cfg = cfg
        w = cfg.workers
        self.hub = w
        self.first_worker = w + 1
        self.first_client = w + 1 + cfg.replicas * w
        self.size = self.first_client + cfg.clients

    def sequencer(self, g: int) -> int:
        return g

    def worker(self, replica: int, w: int) -> int:
        return self.first_worker + replica * self.cfg.workers + w

    def client(self, i: int) -> int:
        return self.first_client + i

    def role(self, pid: int) -> tuple[str, int, int]:
        """("sequencer", g, 0) | ("hub", 0, 0) | ("worker", replica, w) | ("client", i, 0)."""
        if pid < self.hub:
            return ("sequencer", pid, 0)
        if pid == self.hub:
            return ("hub", 0, 0)
        if pid < self.first_client:
            r, w = divmod(pid - self.first_worker, self.cfg.workers)
            return ("worker", r, w)
        return ("client", pid - self.first_client, 0)

    def replica_workers(self, replica: int) -> list[int]:
        return [self.worker(replica, w) for w in range(self.cfg.workers)]
