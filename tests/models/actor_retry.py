"""An actor spec that retransmits: process 0 sends Ping on every timeout until it hears Ack; process 1 answers
each Ping with Ack. Over a lossy relay, a lost Ping is still in flight in the spec when the next one is sent."""

from lockstep.specs.lang import Bool, Enum, If, Not, Param, Range, Record, Union
from lockstep.specs.lang.actors import ActorSpec, Local, on_message, on_start, on_timeout, send, set_timer

Ping, Ack = Record("Ping"), Record("Ack")


class Retry(ActorSpec):
    """Ping until acknowledged."""

    Process = Range(2)
    Message = Union(Ping, Ack)
    Timer = Enum("resend")
    timeouts = {"resend": Param("resend_ms", default=20, lo=1, doc="time between retransmissions when run")}
    acked = Local(Bool, init=False)

    @on_start
    def start(p):
        if p.id == 0:
            send(1, Ping())
            set_timer("resend")

    @on_timeout
    def resend(p, timer):
        send(1, Ping(), when=Not(p.acked))
        set_timer("resend", when=Not(p.acked))

    @on_message
    def receive(p, src, m):
        if p.id == 1:
            send(0, Ack())
        else:
            p.acked = If(m.tag == "Ack", True, p.acked)
