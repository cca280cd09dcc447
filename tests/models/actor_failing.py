"""An actor spec whose handler fails: process 1 asserts it is never handed a second token."""

from lockstep.specs.lang import Assert, Int, Range, Record
from lockstep.specs.lang.actors import ActorSpec, Local, on_message, on_start, send

Token = Record("Token")


class Fragile(ActorSpec):
    """Two processes pass one token back and forth; process 1 asserts it sees it only once."""

    Process = Range(2)
    Message = Token
    seen = Local(Int(0, 3), init=0)

    @on_start
    def start(p):
        if p.id == 0:
            send(1, Token())

    @on_message
    def receive(p, src, m):
        p.seen = (p.seen + 1) % 3
        if p.id == 1:
            Assert(p.seen < 2, "process 1 got the token twice")
        send(1 - p.id, m)
