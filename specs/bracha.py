"""Bracha's Byzantine reliable broadcast, n = 3f + 1, as message-passing processes.

Source: G. Bracha, "Asynchronous Byzantine Agreement Protocols", Information and Computation
75(2), 1987, §2, the broadcast primitive (Fig. 1). Process 0 is the sender; `f` processes may be
Byzantine. Every correct process p:

- on (initial, v) from the sender, if it has not echoed: sends (echo, v) to all;
- on (echo, v) from more than (n+f)/2 processes, i.e. ⌈(n+f+1)/2⌉, if it has not sent ready:
  sends (ready, v) to all;
- on (ready, v) from f+1 processes, if it has not sent ready: sends (ready, v) to all;
- on (ready, v) from 2f+1 processes: accepts (delivers) v.

Properties (safety): `agreement` (no two correct processes deliver different values),
`validity` (with a correct sender, a correct process delivers only the sender's value),
`integrity` (a correct process delivers at most once), and `ready_agreement` (Bracha's lemma
behind agreement: correct processes that send ready send the same value).

Variants: `BrachaEquivocatingSender` (the sender is Byzantine: it tells a chosen set of processes 1
and the others 0, in its initial, echo and ready messages alike); `BrachaByzantineRelay`
(the last process is Byzantine: it echoes and readies the opposite of the sender's value);
`BrachaLowEchoQuorum`, a seeded bug: the echo quorum is f+1 instead of ⌈(n+f+1)/2⌉.

Symmetry: the processes other than the sender are interchangeable (the sender is the range's fixed
id: it alone sends initial messages, and validity reads its input), so `--symmetry` checks one state
per relabelling of them. In `BrachaByzantineRelay` the Byzantine last process is fixed as well (an
actor spec's Byzantine processes always are: they run other handlers), leaving processes 1..n-2.
The equivocating sender's chosen set ranges over every subset, so relabelling the receivers maps
each of its choices to another.

Deviations and gaps filled: values are 0 and 1 (Bracha's values are arbitrary; two suffice to
disagree). The sender's value is a choice at start. A message is sent to all processes including
the sender itself, as in the paper's "send to all". Counting is per sender, so a Byzantine
process cannot count twice. Delivery is recorded with a counter (`deliveries`) so that
integrity is a checked property rather than a consequence of the state's type. `totality` is
Bracha's liveness (if a correct process delivers, every correct process delivers), under weakly
fair delivery of every message to a correct process (`fairness`); Byzantine steps are never fair.
It is checked on the whole state graph (`lockstep check bracha --property totality --no-deadlock`): at
f = 0 in the tests, and at f = 1 (n = 4) with an equivocating sender (`lockstep check
bracha_equivocating_sender --property totality --no-deadlock --engine vector`: 12,642,176 states, about
15 s, in the default tests). With every process correct, n = 4 has more than 129 million states, and
neither reduction keeps per-delivery fairness (README, "Liveness and fairness").
"""

from .lang import (
    And,
    Exists,
    ForAll,
    If,
    Implies,
    Int,
    Map,
    Option,
    Param,
    Range,
    Record,
    Set,
    Union,
    invariant,
    leads_to,
    require,
    temporal,
)
from .lang.actors import ActorSpec, Local, broadcast, on_message, on_start, send

F = Param("f", default=1, lo=0, doc="Byzantine processes tolerated")
N = 3 * F + 1
SENDER = 0
Proc = Range(N, symmetric=True, fixed=(SENDER,))

Value = Int(0, 1)
Initial = Record("Initial", v=Value)
Echo = Record("Echo", v=Value)
Ready = Record("Ready", v=Value)


class Bracha(ActorSpec):
    """Bracha's Byzantine reliable broadcast, n = 3f+1, correct processes only.

    Processes 1..n-1 are interchangeable; the sender, process 0, is fixed."""

    Process = Proc
    Message = Union(Initial, Echo, Ready)
    fairness = {"deliver": "weak"}  # every message sent to a correct process is eventually delivered

    input = Local(Value, init=0)  # the sender's value
    echoed = Local(Option(Value))
    readied = Local(Option(Value))
    echoes = Local(Map(Value, Set(Process)))
    readies = Local(Map(Value, Set(Process)))
    delivered = Local(Option(Value))
    deliveries = Local(Int(0, 2), init=0)

    def echo_quorum(n, f):
        """More than (n+f)/2 processes."""
        return (n + f) // 2 + 1

    @on_start
    def start(p, v: Value):
        if p.id == SENDER:
            p.input = v
            broadcast(Initial(v))

    @on_message
    def receive(p, src, m):
        if m.tag == "Initial":
            if src == SENDER:
                first = p.echoed.is_none()
                p.echoed = keep_first(p.echoed, m.v)
                broadcast(Echo(m.v), when=first)
        elif m.tag == "Echo":
            got = p.echoes[m.v].add(src)
            p.echoes[m.v] = got
            Bracha.ready(p, m.v, got.card() >= p.spec.echo_quorum(int(N), p.f))
        else:
            got = p.readies[m.v].add(src)
            p.readies[m.v] = got
            Bracha.ready(p, m.v, got.card() >= p.f + 1)
            accept = And(got.card() >= 2 * p.f + 1, p.delivered.is_none())
            p.delivered = keep_first(p.delivered, m.v, accept)
            p.deliveries = p.deliveries + If(accept, 1, 0)

    def ready(p, v, enough):
        go = And(enough, p.readied.is_none())
        p.readied = keep_first(p.readied, v, go)
        broadcast(Ready(v), when=go)

    @invariant
    def agreement(s):
        """No two correct processes deliver different values."""
        return ForAll(s.honest, s.honest, lambda a, b: Implies(
            And(s.delivered[a].is_some(), s.delivered[b].is_some()), s.delivered[a] == s.delivered[b]))

    @invariant
    def validity(s):
        """With a correct sender, correct processes deliver only the sender's value."""
        if SENDER in s.byzantine:
            return True
        return ForAll(s.honest, lambda p: Implies(s.delivered[p].is_some(), s.delivered[p] == s.input[SENDER]))

    @invariant
    def integrity(s):
        """A correct process delivers at most once."""
        return ForAll(s.honest, lambda p: s.deliveries[p] <= 1)

    @invariant
    def ready_agreement(s):
        """Correct processes that send ready send the same value (Bracha's lemma)."""
        return ForAll(s.honest, s.honest, lambda a, b: Implies(
            And(s.readied[a].is_some(), s.readied[b].is_some()), s.readied[a] == s.readied[b]))

    @temporal
    def totality(s):
        """If a correct process delivers, every correct process eventually delivers."""
        return leads_to(Exists(s.honest, lambda p: s.delivered[p].is_some()),
                        ForAll(s.honest, lambda p: s.delivered[p].is_some()))


def keep_first(current, value, when=True):
    """`current` if it is already set (or `when` fails), else `value`."""
    return If(And(current.is_none(), when), value, current)


class BrachaEquivocatingSender(Bracha):
    """Bracha with a Byzantine sender that equivocates: initial 1 to a chosen set, 0 to the rest.

    Processes 1..n-1 are interchangeable; the sender, process 0, is fixed."""

    byzantine = (SENDER,)

    @on_start(byzantine=True)
    def equivocate(p, ones: Set(Proc)):
        for q in range(1, int(N)):
            v = 1 if q in ones else 0
            send(q, Initial(v))
            send(q, Echo(v))
            send(q, Ready(v))


class BrachaByzantineRelay(Bracha):
    """Bracha with a correct sender and a Byzantine relay (the last process) that lies.

    Processes 1..n-2 are interchangeable; the sender and the relay are fixed."""

    byzantine = (N - 1,)

    @on_message(byzantine=True)
    def lie(p, src, m):
        require(m.tag == "Initial", src == SENDER)  # it ignores the rest: those stay in flight
        broadcast(Echo(1 - m.v), include_self=False)
        broadcast(Ready(1 - m.v), include_self=False)


class BrachaLowEchoQuorum(BrachaEquivocatingSender):
    """Seeded bug: the echo quorum is f+1 instead of ⌈(n+f+1)/2⌉ (with an equivocating sender).

    Processes 1..n-1 are interchangeable; the sender, process 0, is fixed."""

    def echo_quorum(n, f):
        return f + 1
