"""A symmetric actor spec: every process says hello to all others and records whom it heard."""

from specs.lang import ForAll, Not, Range, Record, Set, invariant
from specs.lang.actors import ActorSpec, Local, broadcast, on_message, on_start

Proc = Range("n", default=3, symmetric=True)
Hello = Record("Hello")


class Gossip(ActorSpec):
    """Hello to all: `heard` grows to every other process."""

    Process = Proc
    Message = Hello
    heard = Local(Set(Proc))

    @on_start
    def start(p):
        broadcast(Hello(), include_self=False)

    @on_message
    def receive(p, src, m):
        p.heard = p.heard.add(src)

    @invariant
    def not_self(s):
        """No process hears itself."""
        return ForAll(Proc, lambda p: Not(s.heard[p].contains(p)))


class GossipSelfish(Gossip):
    """Seeded bug: a process also says hello to itself."""

    @on_start
    def start(p):
        broadcast(Hello())


class GossipWithForger(Gossip):
    """Process 0 is Byzantine and runs no handlers, but may forge any message once."""

    byzantine = (0,)
    forge = True

    @invariant
    def zero_is_silent(s):
        """Nobody hears from the Byzantine process (false: it can forge a hello)."""
        return ForAll(Proc, lambda p: Not(s.heard[p].contains(0)))
