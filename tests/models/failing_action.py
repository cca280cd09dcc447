"""Specs whose steps fail: a division by zero, an out-of-type value, an explicit assertion."""

from lockstep.specs.lang import Assert, Int, Max, Spec, Var, action, require


class Divide(Spec):
    """x counts down; the division fails once x reaches 0."""

    x = Var(Int(0, 3), init=3)
    q = Var(Int(0, 12), init=0)

    @action
    def step(s):
        s.q = 12 // s.x
        s.x = Max(s.x - 1, 0)


class Overflow(Spec):
    """n is declared 0..2 but the action counts past it."""

    n = Var(Int(0, 2), init=0)

    @action
    def inc(s):
        s.n = s.n + 1


class Asserting(Spec):
    """An Assert inside an action fails at n == 2."""

    n = Var(Int(0, 5), init=0)

    @action
    def inc(s):
        require(s.n < 5)
        Assert(s.n != 2, "n must skip 2")
        s.n = s.n + 1
