"""Specs that exercise the corners of the vector interpreter: wide sets, lazy errors, bad indices."""

from lockstep.specs.lang import And, Bool, If, Implies, Int, Map, Range, Set, Spec, Var, action, constraint, invariant, require

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
