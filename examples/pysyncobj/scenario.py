"""The experiment's runs: client commands, the leader crashed and restarted, the leader cut off by a partition.
Each step waits for what it needs (a leader, commits by a majority, a node catching up), with a deadline."""

from __future__ import annotations

from .cluster import Cluster


def settle(c: Cluster, nodes: list[int], count: int, deadline: float = 60.0) -> int:
    """Have the leader among `nodes` append `count` client commands and wait until a majority of the cluster
    (within `nodes`) has committed them; the leader."""
    leader = c.wait_leader(nodes, deadline)
    c.add(leader, count)
    want = c.status[leader].log + count
    majority = c.n // 2 + 1

    def done():
        if c.status[leader].role != "leader":
            return True  # it lost office: the caller's next step finds the new leader
        return sum(1 for i in nodes if c.committed([i], want)) >= majority

    c.wait(f"{count} commands committed by a majority", done, deadline)
    return leader


def caught_up(c: Cluster, deadline: float = 60.0) -> None:
    """Wait until every live node has the leader's log, committed."""
    def done():
        leader = c.leader()
        if leader is None:
            return False
        want = c.status[leader].log
        return c.committed(list(c.procs), want) and all(c.status[i].log == want for i in c.procs)

    c.wait("every node caught up", done, deadline)


def run(directory: str, n: int, rounds: int = 1, commands: int = 3, faults: bool = True) -> Cluster:
    """A cluster of n nodes through `rounds` rounds of: commands; crash of the leader, commands, its restart;
    a partition cutting the leader off, commands on the majority side, healing. The logs are in `directory`."""
    c = Cluster(n, directory)
    c.start_all()
    try:
        everyone = list(range(n))
        settle(c, everyone, commands)
        for _ in range(rounds):
            if not faults:
                settle(c, everyone, commands)
                continue
            leader = c.wait_leader()
            c.kill(leader)
            rest = [i for i in everyone if i != leader]
            settle(c, rest, commands)
            c.start(leader, restart=True)
            caught_up(c)
            leader = c.wait_leader()
            rest = [i for i in everyone if i != leader]
            c.partition([leader], rest)
            settle(c, rest, commands)
            c.heal()
            caught_up(c)
    finally:
        c.stop_all()
    return c
