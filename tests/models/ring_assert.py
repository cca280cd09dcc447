"""A ring election whose nodes forward every id, and assert when elected that their id is the largest: a failing
step (not an invariant) that partial-order reduction reaches later than the full search."""

from lockstep.specs.lang import Assert, Bool, Range, Record
from lockstep.specs.lang.actors import ActorSpec, Local, on_message, on_start, send

Node = Range("n", default=4)
Elect = Record("Elect", uid=Node)


class RingAssert(ActorSpec):
    """Every id goes round the ring; the node it comes back to asserts that it is the largest."""

    Process = Node
    Message = Elect
    leader = Local(Bool, init=False)

    @on_start
    def start(p):
        send((p.id + 1) % p.n, Elect(p.id))

    @on_message
    def receive(p, src, m):
        if m.uid == p.id:
            Assert(p.id == p.n - 1, "a node other than the largest is elected")
            p.leader = True
        else:
            send((p.id + 1) % p.n, m)
