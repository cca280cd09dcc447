"""Leader election on a unidirectional ring (Chang & Roberts): the process with the largest id wins.

Source: E. Chang and R. Roberts, "An improved algorithm for decentralized extrema-finding in
circular configurations of processes", CACM 22(5), 1979. Every process starts by sending its id to
its successor on the ring; a process that receives an id larger than its own passes it on, one
smaller than its own is swallowed, and its own id, back after a full lap, makes it the leader.
`one_leader` (at most one process is elected) and `leader_is_max` (only the largest id is) are the
paper's correctness claims.

`ChangRobertsForwardAll` is a seeded bug: a process forwards smaller ids too, so every id comes
back to its owner and every process is elected:

    lockstep check chang_roberts --no-deadlock     # holds (the ring falls quiet once the leader is elected)
    lockstep check chang_roberts_forward_all       # leader_is_max violated: 4 steps, shortened from 13 (POR)

Deviations: ids are the processes' numbers, on a ring 0 -> 1 -> ... -> n-1 -> 0 (the paper's ids
are any distinct values in any order; the order of the ring is what the algorithm depends on, and
here the largest id sits just before the smallest). The elected leader does not announce itself
(the paper's second round is not needed for the claims checked).
"""

from ..lang import Bool, ForAll, Implies, Not, Range, Record, invariant
from ..lang.actors import ActorSpec, Local, on_message, on_start, send

Node = Range("n", default=4)
Elect = Record("Elect", uid=Node)


class ChangRoberts(ActorSpec):
    """Chang–Roberts leader election on a unidirectional ring (CACM 1979)."""

    Process = Node
    Message = Elect
    leader = Local(Bool, init=False)

    @on_start
    def start(p):
        send((p.id + 1) % p.n, Elect(p.id))

    @on_message
    def receive(p, src, m):
        if m.uid == p.id:
            p.leader = True
        elif m.uid > p.id:
            send((p.id + 1) % p.n, m)

    @invariant
    def one_leader(s):
        """At most one process is elected."""
        return ForAll(range(s.n), range(s.n), lambda a, b: Implies(a != b, Not(s.leader[a] & s.leader[b])))

    @invariant
    def leader_is_max(s):
        """Only the process with the largest id is elected."""
        return ForAll(range(s.n - 1), lambda p: Not(s.leader[p]))


class ChangRobertsForwardAll(ChangRoberts):
    """Seeded bug: a process forwards every id but its own, smaller ones too."""

    @on_message
    def receive(p, src, m):
        if m.uid == p.id:
            p.leader = True
        else:
            send((p.id + 1) % p.n, m)
