"""A sender and a receiver over a channel of capacity 1, with an unlogged variable and an internal step:
the spec the conformance tests validate hand-written logs against.

Node 0 sends 1, 2, 3 in order (`send`); node 1 receives them (`receive`), keeping the last value in
`last`, which no log records; `wait` is an internal step of the sender (a timer tick nobody logs), and
`resend_ok` (the sender's confirmation) needs one."""

from lockstep.specs.lang import Int, Seq, Spec, Var, action, invariant, require

Value = Int(1, 3)


class Relay(Spec):
    """Values 1..3 over a channel of capacity 1."""

    sent = Var(Int(0, 3), init=0)
    chan = Seq(Value, 1)
    got = Var(Int(0, 3), init=0)
    last = Var(Int(0, 3), init=0)
    ticks = Var(Int(0, 2), init=0)
    confirmed = Var(Int(0, 3), init=0)

    @action
    def send(s, v: Value):
        require(v == s.sent + 1, s.chan.len() < 1)
        s.sent = v
        s.chan = s.chan.append(v)

    @action
    def receive(s, v: Value):
        require(s.chan.len() == 1, s.chan.head() == v, v == s.last + 1)
        s.chan = s.chan.tail()
        s.got = s.got + 1
        s.last = v

    @action
    def wait(s):
        require(s.ticks < 2)
        s.ticks = s.ticks + 1

    @action
    def confirm(s):
        require(s.ticks >= 1, s.confirmed < s.sent)
        s.confirmed = s.sent
        s.ticks = 0

    @invariant
    def in_order(s):
        return s.got <= s.sent

    @invariant
    def at_most_two_confirmed(s):
        """A property the tests break on purpose: logs that confirm 3 are a behaviour, one that violates it."""
        return s.confirmed <= 2

