"""Specs over sequences: a lossy FIFO channel, and the two ways a sequence operation fails."""

from lockstep.specs.lang import Bool, If, Int, Option, Range, Record, Seq, Spec, Var, action, invariant, require

Data = Range(2)
Msg = Record("Msg", bit=Bool, d=Data)


class Channel(Spec):
    """A FIFO channel of at most 3 messages that may lose any of them; the receiver keeps the last one."""

    q = Seq(Msg, 3)
    got = Var(Option(Msg))
    n = Var(Int(0, 3), init=0)

    @action
    def send(s, b: Bool, d: Data):
        require(s.q.len() < 3)
        s.q = s.q.append(Msg(bit=b, d=d))

    @action
    def receive(s):
        require(Not_empty(s))
        s.got = s.q.head()
        s.q = s.q.tail()
        s.n = If(s.n < 3, s.n + 1, s.n)

    @action
    def lose(s, i: Range(3)):
        require(i < s.q.len())
        s.q = s.q.remove_at(i)

    @action
    def peek_last(s):
        require(s.q.len() >= 2)
        s.got = s.q[s.q.len() - 1]

    @invariant
    def bounded(s):
        return s.q.len() <= 3

    @invariant
    def seen_means_sent(s):
        return If(s.q.contains(Msg(bit=True, d=1)), s.q.len() >= 1, True)


def Not_empty(s):
    return ~s.q.is_empty()


class Overfull(Spec):
    """Appends with no room check: the fourth append is a value outside Seq(Int(0, 1), 3)."""

    q = Seq(Int(0, 1), 3)

    @action
    def push(s, x: Int(0, 1)):
        s.q = s.q.append(x)


class EmptyHead(Spec):
    """Takes the head without checking that there is one."""

    q = Seq(Int(0, 1), 2, init=(1,))
    x = Var(Int(0, 1), init=0)

    @action
    def pop(s):
        s.x = s.q.head()
        s.q = s.q.tail()
