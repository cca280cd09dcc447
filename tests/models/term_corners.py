"""Specs that exercise every term operator, for comparing interpreters: records, unions and options,
nested maps written at state-dependent keys, sets of integers, floor division and modulo of negative
numbers, indices that can leave their map, and initial states chosen by an @initial function."""

from lockstep.specs.lang import (
    ANY,
    Assert,
    Bool,
    Int,
    Map,
    Max,
    Min,
    Not,
    Option,
    Or,
    Range,
    Record,
    Set,
    Spec,
    Union,
    Var,
    action,
    initial,
    invariant,
    require,
)

P = Range("p", default=2)
Ping = Record("Ping", src=P, hops=Int(0, 1))
Ack = Record("Ack", src=P)
Msg = Union(Ping, Ack)


class Messages(Spec):
    """Records, unions and options in sets, fields and nested maps."""

    net = Set(Msg)
    leader = Var(Option(P), init=None)
    seen = Map(P, Map(P, Bool, init=False))
    last = Var(Msg, init=Ack(0))

    @action
    def send(s, p: P):
        require(Not(s.net.contains(Ping(p, 0))))
        s.net = s.net.add(Ping(p, 0))

    @action
    def forward(s, m: Ping):
        require(s.net.contains(m), m.hops < 1)
        s.net = s.net.remove(m).add(Ping(m.src, m.hops + 1))
        s.last = m

    @action
    def elect(s):
        require(s.leader.is_none(), s.last.tag == "Ping")
        s.leader = s.last.src

    @action
    def ack(s, p: P):
        require(s.leader.is_some(), s.leader.get() == p)
        s.net = s.net.add(Ack(p))
        s.seen[s.leader.get()][s.last.src] = True

    @invariant
    def leader_sent(s):
        return Or(s.leader.is_none(), s.net.exists(lambda m: m.src == s.leader.get()))


class Arith(Spec):
    """Integer arithmetic with Python's semantics, and the ways a step can fail."""

    x = Var(Int(-3, 3), init=ANY)
    y = Var(Int(-2, 2), init=0)
    q = Var(Int(-3, 3), init=0)
    xs = Set(Int(0, 2))
    cells = Map(Int(0, 1), Int(0, 2), init=0)

    @initial
    def start(s, d: Int(-2, 2)):
        require(d != 0, s.x != d)
        s.y = d

    @action
    def divide(s):
        s.q = s.x // s.y  # fails where y = 0, or where the quotient leaves q's type

    @action
    def modulo(s):
        s.q = s.x % s.y

    @action
    def lower(s):
        require(s.q != 0)
        s.y = s.y - 1  # leaves y's type below -2

    @action
    def store(s):
        require(s.x != 3)
        s.xs = s.xs.add(s.x)  # a negative element fails

    @action
    def drop(s):
        require(s.xs.card() > 1)
        s.xs = s.xs.remove(Max(s.x, 0))

    @action
    def write(s):
        s.cells[s.x] = Min(s.cells[Max(Min(s.x, 1), 0)] + 1, 2)  # reads stay in range; writes outside do nothing

    @action
    def peek(s):
        require(s.q > 0)
        s.x = s.cells[s.q]  # q = 2 or 3 is outside the map's keys

    @action
    def check(s):
        require(s.y < 0)
        Assert(s.x != s.y, "x must differ from a negative y")
        s.x = -s.x
