"""A symmetric actor spec: every process says hello to all others and records whom it heard."""

from lockstep.specs.lang import ForAll, Implies, Not, Range, Record, Set, invariant
from lockstep.specs.lang.actors import ActorSpec, Local, broadcast, observe, on_message, on_start

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


Heard = Record("Heard", by=Proc, src=Proc)


class GossipObserved(Gossip):
    """Gossip whose processes report each hello they hear to clients (the history)."""

    Observation = Heard

    @on_message
    def receive(p, src, m):
        observe(Heard(p.id, src), when=Not(p.heard.contains(src)))
        p.heard = p.heard.add(src)

    @invariant
    def history_matches_state(s):
        """A process reported exactly the hellos it has heard."""
        return ForAll(Proc, Proc, lambda p, q: s.history.contains(Heard(p, q)) == s.heard[p].contains(q))


class GossipObservedWrongClaim(GossipObserved):
    """A false claim about the history: only process 0 ever reports."""

    @invariant
    def one_reporter(s):
        """Nobody but process 0 reports (false once another process hears a hello)."""
        return ForAll(Proc, Proc, lambda p, q: Implies(s.history.contains(Heard(p, q)), p == 0))
