"""Specs that exercise the corners of the vector interpreter: wide sets, lazy errors, bad indices, invariants over pairs."""

from lockstep.specs.lang import (
    And,
    Bool,
    Exists,
    ForAll,
    If,
    Implies,
    Int,
    Map,
    Not,
    Range,
    Set,
    Spec,
    Var,
    action,
    constraint,
    invariant,
    require,
)

Big = Range(70)  # a set over 70 elements spans two 63-bit columns


class WideSet(Spec):
    """Tokens move through a 70-element set; `k` walks and is added or removed at its position."""

    k = Var(Int(0, 69), init=0)
    held = Set(Big)
    flag = Var(Bool, init=False)

    @action
    def step(s, d: Int(1, 7)):
        require(s.k + d <= 69)
        s.k = s.k + d

    @action
    def take(s):
        require(s.held.card() < 2, ~s.held.contains(s.k))
        s.held = s.held.add(s.k)

    @action
    def drop(s, e: Big):
        require(s.held.contains(e))
        s.held = s.held.remove(e)
        s.flag = If(s.held.contains(64), ~s.flag, s.flag)

    @invariant
    def few(s):
        return s.held.card() <= 2


class Lazy(Spec):
    """Divisions and indices that would fail, but only in branches that are never taken."""

    x = Var(Int(0, 4), init=0)
    q = Var(Int(0, 12), init=0)
    m = Map(Range(3), Int(0, 2), init=0)

    @action
    def tick(s):
        s.x = (s.x + 1) % 5
        s.q = If(s.x == 0, 0, 12 // s.x)

    @action
    def guarded(s):
        require(s.x != 0, 12 // s.x > 3)
        s.m[s.x - 1] = 1

    @invariant
    def bounded(s):
        return Implies(s.x > 0, And(s.q <= 12, 12 // s.x >= 3))


class BadIndex(Spec):
    """`s.m[s.i]` with i reaching 3 on a map keyed 0..2: an index out of range."""

    i = Var(Int(0, 3), init=0)
    m = Map(Range(3), Int(0, 1), init=0)

    @action
    def bump(s):
        require(s.i < 3)
        s.i = s.i + 1

    @action
    def read(s):
        require(s.i > 0)
        s.m[s.i - 1] = If(s.m[s.i] == 1, 0, 1)


class FailingPredicates(Spec):
    """A constraint and an invariant that fail to evaluate at x == 3."""

    x = Var(Int(0, 6), init=0)

    @action
    def inc(s):
        require(s.x < 6)
        s.x = s.x + 1

    @constraint
    def small(s):
        return 6 // (3 - s.x) < 7

    @invariant
    def sane(s):
        return 12 // (5 - s.x) >= 0


class ChunkedConst(Spec):
    """A two-column set constant ({0}, bit pattern 1) and the integer constant 1 in one program."""

    bag = Set(Range(64))
    x = Var(Int(0, 64), init=0)

    @action
    def put_first(s):
        s.bag = s.bag.add(0)

    @action
    def count(s):
        require(s.x < 64)
        s.x = s.x + 1


Proc = Range(4)


class Split(Spec):
    """Processes step their state up; no process may be at 1 while one (any, itself included) is at 3: the
    invariant unrolls into 16 pairs, a product of two sets of tests."""

    st = Map(Proc, Int(0, 3), init=0)

    @action
    def step(s, p: Proc):
        require(s.st[p] < 3)
        s.st[p] = s.st[p] + 1

    @invariant
    def not_split(s):
        return ForAll(Proc, Proc, lambda a, b: Not(And(s.st[a] == 1, s.st[b] == 3)))


class Exclusive(Split):
    """As `Split`, with mutual exclusion at state 2 instead: the pairs of distinct processes, 12 of them."""

    @invariant
    def not_split(s):
        return True

    @invariant
    def exclusive(s):
        return ForAll(Proc, Proc, lambda a, b: Implies(a != b, Not(And(s.st[a] == 2, s.st[b] == 2))))


class Either(Split):
    """As `Split`, stated as no pair existing (an `or` of the pairs) and with exclusion at 2 likewise: the same
    shapes under `not`."""

    @invariant
    def not_split(s):
        return Not(Exists(Proc, Proc, lambda a, b: And(s.st[a] == 1, s.st[b] == 3)))

    @invariant
    def exclusive(s):
        return Not(Exists(Proc, Proc, lambda a, b: And(a != b, s.st[a] == 2, s.st[b] == 2)))


class Shared(Split):
    """As `Split`, with pairs that share neither shape (one test repeated, one missing): evaluated pair by pair."""

    @invariant
    def not_split(s):
        return True

    @invariant
    def uneven(s):
        return And(*[Not(And(s.st[a] == 1, s.st[b] == 3)) for a in range(4) for b in range(4) if (a, b) != (0, 1)])
